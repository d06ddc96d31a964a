//! The notification endpoint: read the body (bounded in size and time),
//! pick the account, classify, check the signature, persist, and only then
//! answer 200.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode, header};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;

use super::classify::{Classified, classify};
use super::record;
use super::refusal::Refusal;
use crate::config::Account;
use crate::domain::{Kind, SignatureStatus};
use crate::store::{self, NewDelivery, NewJob, Store};
use pointhook_common::clock::Clock;
use pointhook_common::query::Query;
use pointhook_common::response::{self, Body};
use pointhook_common::signature::{self as verify, SignedParts};

/// What the endpoint needs; built once at start-up.
pub struct Ingest {
    pub store: Store,
    pub accounts: Accounts,
    pub max_body_bytes: usize,
    pub read_timeout: Duration,
    pub clock: Arc<dyn Clock>,
    pub metrics: crate::metrics::SharedMetrics,
}

/// The configured accounts, and which one a request without `customer` gets.
pub struct Accounts {
    list: Vec<Account>,
    default: Option<usize>,
}

impl Accounts {
    pub fn new(list: Vec<Account>) -> Accounts {
        let default = list
            .iter()
            .position(|a| a.name == "default")
            .or((list.len() == 1).then_some(0));
        Accounts { list, default }
    }

    /// The account a request that names none gets, if any.
    pub fn default_name(&self) -> Option<String> {
        self.default.map(|i| self.list[i].name.clone())
    }

    pub fn select(&self, customer: Option<&str>) -> Result<&Account, String> {
        match customer {
            Some(name) => self
                .list
                .iter()
                .find(|a| a.name == name)
                .ok_or_else(|| {
                    format!("no account named {name:?} (query parameter customer, cliente or client)")
                }),
            None => self.default.map(|i| &self.list[i]).ok_or_else(|| {
                "no account named in the query (customer, cliente or client) and no account named \"default\""
                    .to_string()
            }),
        }
    }
}

impl Ingest {
    pub async fn handle(&self, req: Request<Incoming>, peer: SocketAddr) -> hyper::Response<Body> {
        let started = Instant::now();
        match self.accept(req, peer).await {
            Ok((answer, kind, result)) => {
                self.metrics.delivery(kind, result);
                self.metrics.acked_in(started.elapsed());
                tracing::debug!(
                    elapsed_us = started.elapsed().as_micros() as u64,
                    "acknowledged"
                );
                answer
            }
            Err(r) => {
                self.metrics.delivery("unknown", r.code());
                tracing::info!(status = r.status().as_u16(), error = r.code(), message = %pointhook_common::text::printable(&r.to_string()), %peer, "notification refused");
                r.answer()
            }
        }
    }

    async fn accept(
        &self,
        req: Request<Incoming>,
        peer: SocketAddr,
    ) -> Result<(hyper::Response<Body>, &'static str, &'static str), Refusal> {
        let received_at = self.clock.now();
        let raw_query = record::query(req.uri().query().unwrap_or(""))?.to_string();
        let query = Query::parse(&raw_query);
        let account = self
            .accounts
            .select(query.account())
            .map_err(Refusal::UnknownAccount)?;

        let (parts, body) = req.into_parts();
        let headers = record::kept_headers(&parts.headers)?;
        let body = self.read_body(&parts.headers, body).await?;
        let mut classified = classify(&query, &body)?;
        let (signature, signature_key) = self.check_signature(
            account,
            &mut classified,
            &query,
            &parts.headers,
            received_at,
        )?;

        let resource_id = classified.resource_id.as_ref().map_or("", |r| r.as_str());
        let fingerprint = store::fingerprint(
            &account.name,
            classified.kind,
            &classified.topic,
            resource_id,
            &body,
        );
        let kept = record::body(&classified, body);
        let delivery = NewDelivery {
            received_at: store::unix_ms(received_at),
            account: account.name.clone(),
            kind: classified.kind,
            fingerprint,
            topic: record::text(&classified.topic),
            resource_id: resource_id.to_string(),
            notification_id: classified.notification_id.as_deref().map(record::text),
            source_news: query.get("source_news").map(record::text),
            query: raw_query,
            headers,
            body_size: kept.cut.map(|(size, _)| size),
            body_sha256: kept.cut.map(|(_, hash)| hash),
            body: kept.bytes,
            remote_addr: peer.to_string(),
            signature,
            signature_key,
            job: classified.work.as_ref().map(NewJob::for_work),
        };

        let ingested = self.store.ingest(delivery).await.map_err(|e| {
            tracing::error!(error = %e, "delivery not stored: answering 503 so the platform sends it again");
            Refusal::StorageUnavailable
        })?;

        let ignored = classified.work.is_none();
        tracing::info!(
            delivery_id = ingested.delivery_id,
            job_id = ingested.job_id,
            account = %account.name,
            kind = classified.kind.as_str(),
            topic = %pointhook_common::text::printable(&classified.topic),
            resource_id = resource_id,
            duplicate = ingested.duplicate,
            ignored,
            "delivery stored"
        );
        let body = format!(
            r#"{{"status":"accepted","delivery_id":{},"duplicate":{}{}}}"#,
            ingested.delivery_id,
            ingested.duplicate,
            if ignored { r#","ignored":true"# } else { "" }
        );
        let result = match (ignored, ingested.duplicate) {
            (true, _) => "ignored",
            (false, true) => "duplicate",
            (false, false) => "accepted",
        };
        Ok((
            response::json(StatusCode::OK, body),
            classified.kind.as_str(),
            result,
        ))
    }

    async fn read_body(&self, headers: &HeaderMap, body: Incoming) -> Result<Bytes, Refusal> {
        let too_large = || Refusal::BodyTooLarge(self.max_body_bytes);
        let declared = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > self.max_body_bytes as u64) {
            return Err(too_large());
        }
        let collected = tokio::time::timeout(
            self.read_timeout,
            Limited::new(body, self.max_body_bytes).collect(),
        )
        .await
        .map_err(|_| Refusal::ReadTimeout)?;
        match collected {
            Ok(c) => Ok(c.to_bytes()),
            Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(too_large()),
            Err(e) => Err(Refusal::UnreadableBody(e.to_string())),
        }
    }

    /// Webhooks to an account with secrets must be signed (unless it says
    /// `require_signature = false`). A fraud alert that fails is kept as
    /// unverified rather than refused, because the platform never sends it
    /// again; a payment-intent body is only a pointer, so it is kept too.
    /// A signature binds the query's `data.id` and nothing else: with no
    /// `data.id` it vouches for nothing, and the webhook is answered as an
    /// unsigned one. A valid signature authenticates a fraud alert only
    /// when that id is the alert's resource (`data.id`) and it was made
    /// within `FRAUD_FRESHNESS` (the platform never resends a fraud alert);
    /// its `{ts}:{v1}` is kept, so the worker can refuse a signature seen on
    /// another delivery.
    fn check_signature(
        &self,
        account: &Account,
        classified: &mut Classified,
        query: &Query,
        headers: &HeaderMap,
        now: std::time::SystemTime,
    ) -> Result<(SignatureStatus, Option<String>), Refusal> {
        if account.webhook_secrets.is_empty() || classified.kind == Kind::Ipn {
            return Ok((SignatureStatus::NotChecked, None));
        }
        let kept_anyway = classified.is_fraud_alert() || classified.kind == Kind::IntentWebhook;
        let header = headers
            .get("x-signature")
            .map(|v| v.as_bytes())
            .filter(|v| !v.trim_ascii().is_empty());
        let data_id = query.get("data.id").filter(|d| !d.trim().is_empty());
        let Some((data_id, signature)) = data_id.zip(header) else {
            // A webhook with no data.id of a type nothing acts on (Card
            // Updater's has none to sign) asks for nothing a signature
            // could vouch for: it is kept as an unsigned one, not refused.
            let asks_nothing = data_id.is_none() && classified.work.is_none();
            if !account.require_signature || kept_anyway || asks_nothing {
                if classified.is_fraud_alert() && account.require_signature {
                    self.metrics.signature_failed();
                    tracing::warn!(account = %account.name, "fraud alert without a signature over its data.id: stored as unverified");
                    return Ok((SignatureStatus::Invalid, None));
                }
                return Ok((SignatureStatus::Unsigned, None));
            }
            self.metrics.signature_failed();
            let error = match header {
                None => verify::SignatureError::Missing,
                Some(_) => verify::SignatureError::Unbound,
            };
            return Err(Refusal::BadSignature(error));
        };
        let secrets: Vec<&[u8]> = account
            .webhook_secrets
            .iter()
            .map(|s| s.expose().as_bytes())
            .collect();
        let parts = SignedParts {
            data_id,
            request_id: headers.get("x-request-id").map(|v| v.as_bytes()),
            signature: Some(signature),
        };
        match verify::verify(&secrets, parts, now, account.signature_tolerance) {
            Ok(v) => {
                tracing::debug!(id_form = ?v.id_form, secret = v.secret, "signature verified");
                classified.authenticate(data_id, v.fresh(now, FRAUD_FRESHNESS));
                Ok((SignatureStatus::Valid, Some(v.key)))
            }
            Err(e) if kept_anyway => {
                self.metrics.signature_failed();
                tracing::warn!(error = %e, account = %account.name, topic = %pointhook_common::text::printable(&classified.topic), "bad signature: stored as unverified");
                Ok((SignatureStatus::Invalid, None))
            }
            Err(e) => {
                self.metrics.signature_failed();
                Err(Refusal::BadSignature(e))
            }
        }
    }
}

/// How old a fraud alert's signature may be and still authenticate it:
/// the platform sends an alert once, so an honest signature is fresh,
/// whatever `signature_tolerance_secs` allows for other webhooks.
const FRAUD_FRESHNESS: std::time::Duration = std::time::Duration::from_secs(300);
