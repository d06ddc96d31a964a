//! The platform API client: reads payments, merchant orders, chargebacks,
//! payment intents and Orders API orders with the account's own token,
//! rate-limited per account and timed out, records each call of a job's run
//! in its `CallLog`, and classifies every failure (`error.rs`). The calls that
//! move money are in `actions.rs`, reconciliation's searches in `search.rs`.

pub mod actions;
pub mod calls;
pub mod endpoint;
pub mod error;
pub mod search;
pub mod wire;

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use reqwest::StatusCode;
use serde::de::DeserializeOwned;
use url::Url;

use crate::config::{Account, ApiConfig};
use crate::domain::platform::{Chargeback, MerchantOrder, Payment, PaymentIntent, PlatformOrder};
use crate::domain::{ChargebackId, Id, IntentId, MerchantOrderId, PaymentId, PlatformOrderId};
use crate::retry::retry_after;
use calls::{CallLog, Fetch, MAX_KEPT_BODY};
use endpoint::{Endpoint, Priority, version_of};
use error::{ApiError, transport_error};
use pointhook_common::clock::{Clock, SystemClock};
use wire::{Identified, PlatformError};

/// A client for every configured account.
pub struct ApiClient {
    http: reqwest::Client,
    base: Url,
    intent_path: String,
    cancel_path: String,
    refund_path: String,
    accounts: HashMap<String, AccountClient>,
    metrics: crate::metrics::SharedMetrics,
    /// Stamps each call's time in the log.
    clock: Arc<dyn Clock>,
}

/// One request to the API.
struct Call<'a> {
    account: &'a str,
    endpoint: Endpoint,
    method: reqwest::Method,
    url: Url,
    /// The resource's id, for errors and the log ("" for a search).
    id: &'a str,
    body: Option<serde_json::Value>,
    idempotency_key: Option<&'a str>,
    priority: Priority,
    /// The run it is recorded in, if any.
    log: Option<&'a CallLog>,
}

impl<'a> Call<'a> {
    fn body(mut self, body: serde_json::Value) -> Self {
        self.body = Some(body);
        self
    }

    fn idempotent(mut self, key: &'a str) -> Self {
        self.idempotency_key = Some(key);
        self
    }
}

struct AccountClient {
    token: crate::config::Secret,
    limiter: DefaultDirectRateLimiter,
    /// Calls of `Priority::Notification` waiting for the limiter.
    waiting: AtomicUsize,
}

impl AccountClient {
    async fn take_slot(&self, priority: Priority) {
        match priority {
            Priority::Notification => {
                self.waiting.fetch_add(1, Ordering::SeqCst);
                self.limiter.until_ready().await;
                self.waiting.fetch_sub(1, Ordering::SeqCst);
            }
            Priority::Reconcile => loop {
                if self.waiting.load(Ordering::SeqCst) == 0 && self.limiter.check().is_ok() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            },
        }
    }
}

impl ApiClient {
    pub fn new(
        config: &ApiConfig,
        accounts: &[Account],
        metrics: crate::metrics::SharedMetrics,
    ) -> anyhow::Result<ApiClient> {
        pointhook_common::tls::install_default_provider();
        // A redirect is an answer, never followed: a 307 on a refund would
        // send the POST, token and all, wherever the answer points.
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(config.timeout_secs))
            .connect_timeout(Duration::from_secs(config.timeout_secs.min(5)))
            .user_agent(concat!("pointhook/", env!("CARGO_PKG_VERSION")))
            .build()?;
        let rps = NonZeroU32::new(config.requests_per_second).unwrap_or(NonZeroU32::MIN);
        let accounts = accounts
            .iter()
            .map(|a| {
                (
                    a.name.clone(),
                    AccountClient {
                        token: a.access_token.clone(),
                        limiter: RateLimiter::direct(Quota::per_second(rps)),
                        waiting: AtomicUsize::new(0),
                    },
                )
            })
            .collect();
        Ok(ApiClient {
            http,
            base: config.base_url.clone(),
            intent_path: config.payment_intent_path.clone(),
            cancel_path: config.payment_cancel_path.clone(),
            refund_path: config.payment_refund_path.clone(),
            accounts,
            metrics,
            clock: Arc::new(SystemClock),
        })
    }

    /// The clock that stamps each call (the system's by default).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> ApiClient {
        self.clock = clock;
        self
    }

    pub async fn payment(
        &self,
        log: &CallLog,
        account: &str,
        id: &PaymentId,
    ) -> Result<Payment, ApiError> {
        self.get::<wire::Payment, _, _>(log, account, Endpoint::Payment, "/v1/payments/{id}", id)
            .await
    }

    pub async fn merchant_order(
        &self,
        log: &CallLog,
        account: &str,
        id: &MerchantOrderId,
    ) -> Result<MerchantOrder, ApiError> {
        self.get::<wire::MerchantOrder, _, _>(
            log,
            account,
            Endpoint::MerchantOrder,
            "/merchant_orders/{id}",
            id,
        )
        .await
    }

    pub async fn chargeback(
        &self,
        log: &CallLog,
        account: &str,
        id: &ChargebackId,
    ) -> Result<Chargeback, ApiError> {
        self.get::<wire::Chargeback, _, _>(
            log,
            account,
            Endpoint::Chargeback,
            "/v1/chargebacks/{id}",
            id,
        )
        .await
    }

    pub async fn payment_intent(
        &self,
        log: &CallLog,
        account: &str,
        id: &IntentId,
    ) -> Result<PaymentIntent, ApiError> {
        self.get::<wire::PaymentIntent, _, _>(
            log,
            account,
            Endpoint::PaymentIntent,
            &self.intent_path,
            id,
        )
        .await
    }

    /// An order of the Orders API.
    pub async fn platform_order(
        &self,
        log: &CallLog,
        account: &str,
        id: &PlatformOrderId,
    ) -> Result<PlatformOrder, ApiError> {
        self.get::<wire::PlatformOrder, _, _>(
            log,
            account,
            Endpoint::PlatformOrder,
            "/v1/orders/{id}",
            id,
        )
        .await
    }

    /// A call of a job's run on the resource `id` at `template`.
    fn at<'a>(
        &self,
        log: &'a CallLog,
        account: &'a str,
        endpoint: Endpoint,
        method: reqwest::Method,
        template: &str,
        id: &'a str,
    ) -> Call<'a> {
        Call {
            account,
            endpoint,
            method,
            url: resource_url(&self.base, template, id),
            id,
            body: None,
            idempotency_key: None,
            priority: Priority::Notification,
            log: Some(log),
        }
    }

    /// A GET with a query (values encoded), at reconciliation's priority
    /// and in no job's log.
    async fn search<T: DeserializeOwned>(
        &self,
        account: &str,
        endpoint: Endpoint,
        path: &str,
        query: &[(&str, String)],
    ) -> Result<T, ApiError> {
        let mut url = resource_url(&self.base, path, "");
        url.query_pairs_mut()
            .extend_pairs(query.iter().map(|(k, v)| (*k, v.as_str())));
        self.send(Call {
            account,
            endpoint,
            method: reqwest::Method::GET,
            url,
            id: "",
            body: None,
            idempotency_key: None,
            priority: Priority::Reconcile,
            log: None,
        })
        .await
    }

    /// GETs the resource `id` at `template` and checks that the answer is
    /// that resource.
    async fn get<W: DeserializeOwned + Identified + Into<D>, D, K>(
        &self,
        log: &CallLog,
        account: &str,
        endpoint: Endpoint,
        template: &str,
        id: &Id<K>,
    ) -> Result<D, ApiError> {
        let call = self.at(
            log,
            account,
            endpoint,
            reqwest::Method::GET,
            template,
            id.as_str(),
        );
        let resource: W = self.send(call).await?;
        if resource.id_text() != id.as_str() {
            return Err(ApiError::WrongResource {
                endpoint: endpoint.as_str(),
                id: id.to_string(),
                got: resource.id_text().to_string(),
            });
        }
        Ok(resource.into())
    }

    /// Sends one request with the account's token, records it, and
    /// classifies the answer.
    async fn send<T: DeserializeOwned>(&self, call: Call<'_>) -> Result<T, ApiError> {
        let Call {
            account,
            endpoint,
            method,
            url,
            id,
            body,
            idempotency_key,
            priority,
            log,
        } = call;
        let client = self
            .accounts
            .get(account)
            .ok_or_else(|| ApiError::UnknownAccount(account.to_string()))?;
        client.take_slot(priority).await;
        let name = endpoint.as_str();
        let started = std::time::Instant::now();
        let read = method == reqwest::Method::GET;
        let record = |status: u16, answer: Option<&[u8]>| {
            self.metrics.api_call(name, status, started.elapsed());
            let Some(log) = log else { return };
            let ok = (200..300).contains(&status);
            log.push(Fetch {
                endpoint: name,
                resource_id: id.to_string(),
                status,
                elapsed_ms: started.elapsed().as_millis() as u64,
                at: pointhook_common::clock::unix_ms(self.clock.now()),
                seen: answer.filter(|_| ok).and_then(|b| version_of(endpoint, b)),
                body: answer
                    .filter(|b| ok && read && b.len() <= MAX_KEPT_BODY)
                    .map(<[u8]>::to_vec),
            });
        };
        let mut request = self
            .http
            .request(method, url)
            .bearer_auth(client.token.expose())
            .header("accept", "application/json");
        if let Some(body) = body {
            request = request.json(&body);
        }
        if let Some(key) = idempotency_key {
            request = request.header("x-idempotency-key", key);
        }
        let response = request.send().await.map_err(|e| {
            record(0, None);
            transport_error(name, id, e)
        })?;
        let status = response.status();
        let retry_after = retry_after(response.headers());
        let body = response.bytes().await.map_err(|e| {
            record(0, None);
            transport_error(name, id, e)
        })?;
        record(status.as_u16(), Some(&body));
        tracing::debug!(
            endpoint = name,
            %id,
            status = status.as_u16(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "API call"
        );
        if status.is_success() {
            return serde_json::from_slice(&body).map_err(|e| ApiError::Decode {
                endpoint: name,
                id: id.to_string(),
                message: e.to_string(),
            });
        }
        let error: PlatformError =
            serde_json::from_slice(&body).unwrap_or_else(|_| PlatformError {
                message: Some(String::from_utf8_lossy(&body).chars().take(200).collect()),
                ..Default::default()
            });
        let id = id.to_string();
        Err(match status {
            StatusCode::TOO_MANY_REQUESTS => ApiError::RateLimited {
                endpoint: name,
                id,
                retry_after,
            },
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => ApiError::Unauthorized {
                endpoint: name,
                id,
                account: account.to_string(),
                status: status.as_u16(),
                error,
            },
            StatusCode::NOT_FOUND => ApiError::NotFound {
                endpoint: name,
                id,
                error,
            },
            s if s.is_server_error() || s == StatusCode::REQUEST_TIMEOUT => ApiError::Server {
                endpoint: name,
                id,
                status: s.as_u16(),
                error,
            },
            s => ApiError::Refused {
                endpoint: name,
                id,
                status: s.as_u16(),
                error,
            },
        })
    }
}

/// `base` joined with `template`, whose `{id}` segment becomes `id` as one
/// percent-encoded path segment: an id can never add a segment or climb
/// out of its path, whatever it holds. A path prefix of `base` is kept.
pub fn resource_url(base: &Url, template: &str, id: &str) -> Url {
    let mut url = base.clone();
    if let Ok(mut segments) = url.path_segments_mut() {
        segments.pop_if_empty();
        for segment in template.split('/').filter(|s| !s.is_empty()) {
            segments.push(if segment == "{id}" { id } else { segment });
        }
    }
    url
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_keep_a_base_path_and_encode_the_id() {
        let base = Url::parse("http://h:1/api/").unwrap();
        assert_eq!(
            resource_url(&base, "/v1/payments/{id}", "1").as_str(),
            "http://h:1/api/v1/payments/1"
        );
        let base = Url::parse("http://h:1").unwrap();
        assert_eq!(
            resource_url(&base, "/v1/payments/{id}/refunds", "1").as_str(),
            "http://h:1/v1/payments/1/refunds"
        );
        assert_eq!(
            resource_url(&base, "/v1/chargebacks/{id}", "../../v1/payments/9").as_str(),
            "http://h:1/v1/chargebacks/..%2F..%2Fv1%2Fpayments%2F9"
        );
        assert_eq!(
            resource_url(&base, "/x/{id}", "a?b#c d").as_str(),
            "http://h:1/x/a%3Fb%23c%20d"
        );
    }
}
