//! The platform API client: reads payments, merchant orders, chargebacks and
//! payment intents with the account's own token, rate-limited per account
//! and timed out, and classifies every failure as retryable, not found, or
//! permanent.

pub mod search;
pub mod wire;

use std::collections::HashMap;
use std::num::NonZeroU32;
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
use wire::{Identified, PlatformError};

/// One API call, kept for the operator's history of a job.
#[derive(Debug, Clone)]
pub struct Fetch {
    pub endpoint: &'static str,
    pub resource_id: String,
    /// The HTTP status, or 0 when no answer came.
    pub status: u16,
    pub elapsed_ms: u64,
    pub at: std::time::SystemTime,
    /// The version of the resource the answer showed (`version_of`).
    pub seen: Option<String>,
}

tokio::task_local! {
    static FETCHES: std::cell::RefCell<Vec<Fetch>>;
}

/// Runs `f`, collecting the API calls it makes.
pub async fn recording<F: std::future::Future>(f: F) -> (F::Output, Vec<Fetch>) {
    FETCHES
        .scope(std::cell::RefCell::new(Vec::new()), async {
            let out = f.await;
            (out, FETCHES.with(|v| v.take()))
        })
        .await
}

fn record(
    endpoint: &'static str,
    id: &str,
    status: u16,
    started: std::time::Instant,
    seen: Option<String>,
) {
    let _ = FETCHES.try_with(|v| {
        v.borrow_mut().push(Fetch {
            endpoint,
            resource_id: id.to_string(),
            status,
            elapsed_ms: started.elapsed().as_millis() as u64,
            at: std::time::SystemTime::now(),
            seen,
        })
    });
}

/// What says which version of a resource an answer shows: the stamp of
/// its last update, or an intent's state (intents carry no stamp). The
/// reconciliation compares it with what a search lists.
pub fn version_of(endpoint: Endpoint, body: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Version {
        date_last_updated: Option<String>,
        last_updated: Option<String>,
        last_updated_date: Option<String>,
        state: Option<String>,
    }
    let v: Version = serde_json::from_slice(body).ok()?;
    match endpoint {
        Endpoint::Payment | Endpoint::Chargeback => v.date_last_updated.map(|t| stamp(&t)),
        Endpoint::MerchantOrder => v.last_updated.map(|t| stamp(&t)),
        Endpoint::PaymentIntent => v.state,
        Endpoint::PlatformOrder => v.last_updated_date.map(|t| stamp(&t)),
        _ => None,
    }
}

/// A last-update stamp as one text per instant: the platform writes the
/// same instant as `…000-04:00` in one answer and `…000Z` in another.
/// Unix milliseconds when it reads as a time, else the text as it came.
pub fn stamp(text: &str) -> String {
    text.parse::<jiff::Timestamp>()
        .map(|t| t.as_millisecond().to_string())
        .unwrap_or_else(|_| text.to_string())
}

/// What was asked of the API, for logs and the job's error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Payment,
    MerchantOrder,
    Chargeback,
    PaymentIntent,
    PlatformOrder,
    Cancel,
    Refund,
    PlatformOrderCancel,
    PlatformOrderRefund,
    PaymentSearch,
    MerchantOrderSearch,
    IntentEvents,
    ChargebackSearch,
    PlatformOrderSearch,
}

/// Who is waiting for the account's rate limit: the worker (notifications)
/// goes first; reconciliation takes a slot only when nobody else waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Priority {
    Notification,
    Reconcile,
}

impl Endpoint {
    pub fn as_str(self) -> &'static str {
        match self {
            Endpoint::Payment => "payment",
            Endpoint::MerchantOrder => "merchant_order",
            Endpoint::Chargeback => "chargeback",
            Endpoint::PaymentIntent => "payment_intent",
            Endpoint::PlatformOrder => "platform_order",
            Endpoint::PlatformOrderCancel => "platform_order_cancel",
            Endpoint::PlatformOrderRefund => "platform_order_refund",
            Endpoint::Cancel => "cancel",
            Endpoint::Refund => "refund",
            Endpoint::PaymentSearch => "payment_search",
            Endpoint::MerchantOrderSearch => "merchant_order_search",
            Endpoint::IntentEvents => "payment_intent_events",
            Endpoint::ChargebackSearch => "chargeback_search",
            Endpoint::PlatformOrderSearch => "platform_order_search",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{endpoint} {id}: rate limited by the platform")]
    RateLimited {
        endpoint: &'static str,
        id: String,
        retry_after: Option<Duration>,
    },
    #[error("{endpoint} {id}: the platform answered {status}: {error}")]
    Server {
        endpoint: &'static str,
        id: String,
        status: u16,
        error: PlatformError,
    },
    #[error("{endpoint} {id}: no answer within the timeout")]
    Timeout { endpoint: &'static str, id: String },
    #[error("{endpoint} {id}: cannot reach the platform: {message}")]
    Connect {
        endpoint: &'static str,
        id: String,
        message: String,
    },
    #[error(
        "{endpoint} {id}: the access token of account {account:?} was refused ({status}): {error}"
    )]
    Unauthorized {
        endpoint: &'static str,
        id: String,
        account: String,
        status: u16,
        error: PlatformError,
    },
    #[error("{endpoint} {id}: not found: {error}")]
    NotFound {
        endpoint: &'static str,
        id: String,
        error: PlatformError,
    },
    #[error("{endpoint} {id}: refused ({status}): {error}")]
    Refused {
        endpoint: &'static str,
        id: String,
        status: u16,
        error: PlatformError,
    },
    #[error("{endpoint} {id}: unexpected answer: {message}")]
    Decode {
        endpoint: &'static str,
        id: String,
        message: String,
    },
    #[error("{endpoint} {id}: the platform answered with {got:?}, not the resource asked for")]
    WrongResource {
        endpoint: &'static str,
        id: String,
        got: String,
    },
    #[error("no such account {0:?}")]
    UnknownAccount(String),
}

/// What the worker should do about an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// Try again later (after this long, when the platform said so).
    Retry(Option<Duration>),
    /// Not readable yet, perhaps: retried a few times (`rules::wait`), then
    /// given up.
    NotFound,
    Permanent,
}

impl ApiError {
    pub fn class(&self) -> ErrorClass {
        match self {
            ApiError::RateLimited { retry_after, .. } => ErrorClass::Retry(*retry_after),
            ApiError::Server { .. } | ApiError::Timeout { .. } | ApiError::Connect { .. } => {
                ErrorClass::Retry(None)
            }
            ApiError::NotFound { .. } => ErrorClass::NotFound,
            ApiError::Unauthorized { .. }
            | ApiError::Refused { .. }
            | ApiError::Decode { .. }
            | ApiError::WrongResource { .. }
            | ApiError::UnknownAccount(_) => ErrorClass::Permanent,
        }
    }
}

/// A client for every configured account.
pub struct ApiClient {
    http: reqwest::Client,
    base: Url,
    intent_path: String,
    cancel_path: String,
    refund_path: String,
    accounts: HashMap<String, AccountClient>,
    metrics: crate::metrics::SharedMetrics,
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
        crate::tls::install_default_provider();
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
        })
    }

    pub async fn payment(&self, account: &str, id: &PaymentId) -> Result<Payment, ApiError> {
        self.get::<wire::Payment, _, _>(account, Endpoint::Payment, "/v1/payments/{id}", id)
            .await
    }

    pub async fn merchant_order(
        &self,
        account: &str,
        id: &MerchantOrderId,
    ) -> Result<MerchantOrder, ApiError> {
        self.get::<wire::MerchantOrder, _, _>(
            account,
            Endpoint::MerchantOrder,
            "/merchant_orders/{id}",
            id,
        )
        .await
    }

    pub async fn chargeback(
        &self,
        account: &str,
        id: &ChargebackId,
    ) -> Result<Chargeback, ApiError> {
        self.get::<wire::Chargeback, _, _>(
            account,
            Endpoint::Chargeback,
            "/v1/chargebacks/{id}",
            id,
        )
        .await
    }

    pub async fn payment_intent(
        &self,
        account: &str,
        id: &IntentId,
    ) -> Result<PaymentIntent, ApiError> {
        self.get::<wire::PaymentIntent, _, _>(
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
        account: &str,
        id: &PlatformOrderId,
    ) -> Result<PlatformOrder, ApiError> {
        self.get::<wire::PlatformOrder, _, _>(
            account,
            Endpoint::PlatformOrder,
            "/v1/orders/{id}",
            id,
        )
        .await
    }

    /// Cancels an order of the Orders API. `idempotency_key` makes a
    /// repeated call return the same answer rather than act twice.
    pub async fn cancel_platform_order(
        &self,
        account: &str,
        id: &PlatformOrderId,
        idempotency_key: &str,
    ) -> Result<serde_json::Value, ApiError> {
        self.call(
            account,
            Endpoint::PlatformOrderCancel,
            reqwest::Method::POST,
            "/v1/orders/{id}/cancel",
            id.as_str(),
            None,
            Some(idempotency_key),
        )
        .await
    }

    /// Refunds an order in full, or `amount` of its payment `transaction`.
    pub async fn refund_platform_order(
        &self,
        account: &str,
        id: &PlatformOrderId,
        partial: Option<(&str, crate::money::Money)>,
        idempotency_key: &str,
    ) -> Result<serde_json::Value, ApiError> {
        let body = partial.map(|(transaction, amount)| {
            serde_json::json!({"transactions": [{"id": transaction, "amount": amount.to_string()}]})
        });
        self.call(
            account,
            Endpoint::PlatformOrderRefund,
            reqwest::Method::POST,
            "/v1/orders/{id}/refund",
            id.as_str(),
            body,
            Some(idempotency_key),
        )
        .await
    }

    /// Cancels a payment that is still pending (`PUT {"status":"cancelled"}`).
    pub async fn cancel_payment(
        &self,
        account: &str,
        id: &PaymentId,
    ) -> Result<serde_json::Value, ApiError> {
        let body = serde_json::json!({"status": "cancelled"});
        self.call(
            account,
            Endpoint::Cancel,
            reqwest::Method::PUT,
            &self.cancel_path,
            id.as_str(),
            Some(body),
            None,
        )
        .await
    }

    /// Refunds a payment in full. `idempotency_key` makes a retry of the same
    /// refund a no-op at the platform.
    pub async fn refund_payment(
        &self,
        account: &str,
        id: &PaymentId,
        idempotency_key: &str,
    ) -> Result<serde_json::Value, ApiError> {
        let body = serde_json::json!({});
        self.call(
            account,
            Endpoint::Refund,
            reqwest::Method::POST,
            &self.refund_path,
            id.as_str(),
            Some(body),
            Some(idempotency_key),
        )
        .await
    }

    /// One page of the payments whose `date_last_updated` falls in
    /// `[begin, end]`, oldest change first.
    pub async fn search_payments(
        &self,
        account: &str,
        begin: jiff::Timestamp,
        end: jiff::Timestamp,
        offset: u64,
        limit: u64,
    ) -> Result<search::PaymentPage, ApiError> {
        let query = [
            ("sort", "date_last_updated".to_string()),
            ("criteria", "asc".to_string()),
            ("range", "date_last_updated".to_string()),
            ("begin_date", search_time(begin)),
            ("end_date", search_time(end)),
            ("offset", offset.to_string()),
            ("limit", limit.to_string()),
        ];
        self.search(
            account,
            Endpoint::PaymentSearch,
            "/v1/payments/search",
            &query,
        )
        .await
    }

    /// One page of the merchant orders last updated in `[begin, end]`.
    pub async fn search_merchant_orders(
        &self,
        account: &str,
        begin: jiff::Timestamp,
        end: jiff::Timestamp,
        offset: u64,
        limit: u64,
    ) -> Result<search::OrderPage, ApiError> {
        let query = [
            ("last_updated_from", search_time(begin)),
            ("last_updated_to", search_time(end)),
            ("offset", offset.to_string()),
            ("limit", limit.to_string()),
        ];
        self.search(
            account,
            Endpoint::MerchantOrderSearch,
            "/merchant_orders/search",
            &query,
        )
        .await
    }

    /// The payment-intent events of the days from `start` to `end`.
    pub async fn intent_events(
        &self,
        account: &str,
        start: jiff::civil::Date,
        end: jiff::civil::Date,
    ) -> Result<search::IntentEvents, ApiError> {
        let query = [
            ("startDate", start.to_string()),
            ("endDate", end.to_string()),
        ];
        let path = format!("{}/events", self.intent_path.trim_end_matches("/{id}"));
        self.search(account, Endpoint::IntentEvents, &path, &query)
            .await
    }

    /// One page (from 1) of the Orders API's orders of `[begin, end]`, a
    /// window of at most 30 days.
    pub async fn search_platform_orders(
        &self,
        account: &str,
        begin: jiff::Timestamp,
        end: jiff::Timestamp,
        page: u64,
        page_size: u64,
    ) -> Result<search::PlatformOrderPage, ApiError> {
        let query = [
            ("begin_date", search_time(begin)),
            ("end_date", search_time(end)),
            ("page", page.to_string()),
            ("page_size", page_size.to_string()),
        ];
        self.search(account, Endpoint::PlatformOrderSearch, "/v1/orders", &query)
            .await
    }

    /// The chargebacks of a payment.
    pub async fn search_chargebacks(
        &self,
        account: &str,
        payment: &PaymentId,
    ) -> Result<search::ChargebackPage, ApiError> {
        let query = [("payment_id", payment.to_string())];
        self.search(
            account,
            Endpoint::ChargebackSearch,
            "/v1/chargebacks/search",
            &query,
        )
        .await
    }

    /// A GET with a query (values encoded), at reconciliation's priority.
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
        self.exchange(
            account,
            endpoint,
            reqwest::Method::GET,
            url,
            "",
            None,
            None,
            Priority::Reconcile,
        )
        .await
    }

    /// GETs the resource `id` at `template` and checks that the answer is
    /// that resource.
    async fn get<W: DeserializeOwned + Identified + Into<D>, D, K>(
        &self,
        account: &str,
        endpoint: Endpoint,
        template: &str,
        id: &Id<K>,
    ) -> Result<D, ApiError> {
        let resource: W = self
            .call(
                account,
                endpoint,
                reqwest::Method::GET,
                template,
                id.as_str(),
                None,
                None,
            )
            .await?;
        if resource.id_text() != id.as_str() {
            return Err(ApiError::WrongResource {
                endpoint: endpoint.as_str(),
                id: id.to_string(),
                got: resource.id_text().to_string(),
            });
        }
        Ok(resource.into())
    }

    #[allow(clippy::too_many_arguments)]
    async fn call<T: DeserializeOwned>(
        &self,
        account: &str,
        endpoint: Endpoint,
        method: reqwest::Method,
        template: &str,
        id: &str,
        body: Option<serde_json::Value>,
        idempotency_key: Option<&str>,
    ) -> Result<T, ApiError> {
        let url = resource_url(&self.base, template, id);
        self.exchange(
            account,
            endpoint,
            method,
            url,
            id,
            body,
            idempotency_key,
            Priority::Notification,
        )
        .await
    }

    /// Sends one request with the account's token and classifies the answer.
    #[allow(clippy::too_many_arguments)]
    async fn exchange<T: DeserializeOwned>(
        &self,
        account: &str,
        endpoint: Endpoint,
        method: reqwest::Method,
        url: Url,
        id: &str,
        body: Option<serde_json::Value>,
        idempotency_key: Option<&str>,
        priority: Priority,
    ) -> Result<T, ApiError> {
        let client = self
            .accounts
            .get(account)
            .ok_or_else(|| ApiError::UnknownAccount(account.to_string()))?;
        client.take_slot(priority).await;
        let name = endpoint.as_str();
        let started = std::time::Instant::now();
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
        let result = request.send().await;
        let response = result.map_err(|e| {
            record(name, id, 0, started, None);
            self.metrics.api_call(name, 0, started.elapsed());
            transport_error(name, id, e)
        })?;
        let status = response.status();
        let retry_after = retry_after(response.headers());
        let body = response.bytes().await.map_err(|e| {
            record(name, id, 0, started, None);
            self.metrics.api_call(name, 0, started.elapsed());
            transport_error(name, id, e)
        })?;
        let seen = status
            .is_success()
            .then(|| version_of(endpoint, &body))
            .flatten();
        record(name, id, status.as_u16(), started, seen);
        self.metrics
            .api_call(name, status.as_u16(), started.elapsed());
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

/// The API's base URL can hold credentials: errors never repeat it.
fn transport_error(endpoint: &'static str, id: &str, e: reqwest::Error) -> ApiError {
    let e = e.without_url();
    if e.is_timeout() {
        ApiError::Timeout {
            endpoint,
            id: id.to_string(),
        }
    } else {
        ApiError::Connect {
            endpoint,
            id: id.to_string(),
            message: error_chain(&e),
        }
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

/// A time as the search APIs take it: milliseconds and an offset.
fn search_time(t: jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%S%.3f%:z").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_name_one_instant_whatever_its_offset() {
        assert_eq!(
            stamp("2026-11-23T01:02:03.000-04:00"),
            stamp("2026-11-23T05:02:03.000Z")
        );
        assert_eq!(stamp("not a time"), "not a time");
        let t: jiff::Timestamp = "2026-11-23T05:02:03.5Z".parse().unwrap();
        assert_eq!(search_time(t), "2026-11-23T05:02:03.500+00:00");
    }

    fn after(value: &str) -> Option<Duration> {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(reqwest::header::RETRY_AFTER, value.parse().unwrap());
        retry_after(&headers)
    }

    #[test]
    fn retry_after_in_seconds_or_as_a_date() {
        assert_eq!(after("7"), Some(Duration::from_secs(7)));
        assert_eq!(
            after("18446744073709551615"),
            Some(Duration::from_secs(u64::MAX))
        );
        assert_eq!(after("Wed, 21 Oct 2015 07:28:00 GMT"), Some(Duration::ZERO));
        let later =
            httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(120));
        let d = after(&later).unwrap();
        assert!(
            d > Duration::from_secs(100) && d <= Duration::from_secs(120),
            "{d:?}"
        );
        assert_eq!(after("soon"), None);
        assert_eq!(after("-1"), None);
    }

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
