//! What a search listed (`Change`), and the delivery of kind `reconcile`
//! a change nobody told of becomes; the retry of a search call.

use std::time::Duration;

use jiff::Timestamp;

use crate::api::error::{ApiError, ErrorClass};
use crate::domain::{Kind, PaymentId, SignatureStatus, Work};
use crate::retry::{backoff, clamp_retry_after};
use crate::store::{NewDelivery, NewJob, Sighting, fingerprint};

/// Tries of one search call that the platform asks to repeat (429, 5xx).
const TRIES: u32 = 6;

/// A change a search listed.
pub(super) struct Change {
    pub topic: &'static str,
    pub sighting: Sighting,
    /// When the platform says it happened (`None`: not said).
    pub updated_at: Option<i64>,
}

pub(super) fn payment_work(id: PaymentId) -> Work {
    Work::Payment { id }
}

pub(super) fn sighting(endpoint: &'static str, version: String, work: Work) -> Sighting {
    Sighting {
        endpoint,
        resource_id: work.resource_id(),
        version,
        job: NewJob::for_work(&work).in_backlog(),
        changed_at: None,
    }
}

/// A platform time (`2026-11-23T01:02:03.000-04:00`) in unix milliseconds.
pub(super) fn instant(text: &str) -> Option<i64> {
    text.parse::<Timestamp>().ok().map(|t| t.as_millisecond())
}

/// The record of a change found with no notification: a delivery of kind
/// `reconcile` whose body says what was listed.
pub(super) fn delivery(account: &str, change: &Change, now: i64) -> NewDelivery {
    let s = &change.sighting;
    let body = serde_json::json!({
        "found_by": "reconciliation",
        "topic": change.topic,
        "id": s.resource_id,
        "version": s.version,
    })
    .to_string();
    NewDelivery {
        received_at: now,
        account: account.to_string(),
        kind: Kind::Reconcile,
        topic: change.topic.to_string(),
        resource_id: s.resource_id.clone(),
        notification_id: None,
        source_news: None,
        query: String::new(),
        headers: "{}".into(),
        fingerprint: fingerprint(
            account,
            Kind::Reconcile,
            change.topic,
            &s.resource_id,
            body.as_bytes(),
        ),
        body: body.into(),
        body_size: None,
        body_sha256: None,
        remote_addr: String::new(),
        signature: SignatureStatus::NotChecked,
        signature_key: None,
        job: Some(s.job.clone()),
    }
}

/// Runs a search call, again after a 429 or 5xx as the worker would: after
/// the platform's `Retry-After`, else the backoff schedule.
pub(super) async fn retrying<T, F, Fut>(mut call: F) -> Result<T, ApiError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, ApiError>>,
{
    let mut attempt = 1;
    loop {
        match call().await {
            Err(e) if attempt < TRIES => match e.class() {
                ErrorClass::Retry(after) => {
                    let wait = after.map_or_else(|| backoff(attempt), clamp_retry_after);
                    tracing::info!(error = %e, wait_ms = wait.as_millis() as u64, "reconciliation: search retried");
                    tokio::time::sleep(wait.max(Duration::from_millis(1))).await;
                    attempt += 1;
                }
                _ => return Err(e),
            },
            other => return other,
        }
    }
}
