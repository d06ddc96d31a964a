//! The outbox dispatcher: POSTs each decided event to `[fulfillment] url`,
//! signed the Standard Webhooks way, until a 2xx; retries with backoff and
//! gives up after `give_up_after_hours`. The event id is the `webhook-id`,
//! the same on every attempt, so the merchant can drop repeats.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use url::Url;

use crate::clock::Clock;
use crate::config::Secret;
use crate::retry::backoff;
use crate::store::{self, Attempted, EventOutcome, Lease, LeasedEvent, Store, StoreError};

/// Batches out at once (see `Outbox::run`).
const ROUNDS: usize = 2;
const IDLE_MAX: Duration = Duration::from_secs(1);

pub struct OutboxSettings {
    pub url: Url,
    pub secret: Option<Secret>,
    pub timeout: Duration,
    pub give_up_after: Duration,
    /// The most POSTs out at once (`fulfillment.max_in_flight`).
    pub max_in_flight: usize,
}

/// How many batches are out at once, and how many events each leases, so
/// that together they never exceed `max_in_flight` POSTs. Leasing only
/// what can be posted now keeps each lease's clock from running while an
/// event waits its turn.
fn shares(max_in_flight: usize) -> (usize, usize) {
    let rounds = ROUNDS.min(max_in_flight).max(1);
    (rounds, (max_in_flight / rounds).max(1))
}

pub struct Outbox {
    store: Store,
    http: reqwest::Client,
    clock: Arc<dyn Clock>,
    url: Url,
    key: Option<Vec<u8>>,
    give_up_after_ms: i64,
    /// How long an event is leased for one attempt.
    lease_ms: i64,
    /// Batches out at once, and the events each one leases (`shares`).
    rounds: usize,
    batch: usize,
}

impl Outbox {
    pub fn new(
        store: Store,
        clock: Arc<dyn Clock>,
        settings: OutboxSettings,
    ) -> anyhow::Result<Outbox> {
        crate::tls::install_default_provider();
        // A redirect is not a delivery: it is a failed attempt, retried
        // (and an event never follows a redirect to another host).
        let http = reqwest::Client::builder()
            .timeout(settings.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("pointhook/", env!("CARGO_PKG_VERSION")))
            .build()?;
        let (rounds, batch) = shares(settings.max_in_flight);
        Ok(Outbox {
            rounds,
            batch,
            store,
            http,
            clock,
            url: settings.url,
            key: settings
                .secret
                .as_ref()
                .map(|s| signing_key(s.expose()))
                .transpose()?,
            give_up_after_ms: settings.give_up_after.as_millis() as i64,
            // An attempt may take the whole timeout; the lease outlasts it.
            lease_ms: (settings.timeout.as_millis() as i64)
                .saturating_mul(2)
                .max(10_000),
        })
    }

    fn now(&self) -> i64 {
        store::unix_ms(self.clock.now())
    }

    /// Attempts one batch of the events due now, side by side, and records
    /// how each ended in one store call; returns how many were attempted.
    pub async fn deliver_due(self: &Arc<Self>) -> Result<usize, StoreError> {
        let due = self
            .store
            .lease_events(self.now(), self.lease_ms, self.batch)
            .await?;
        self.attempt_all(due.taken).await
    }

    /// Attempts leased events side by side and records how each ended.
    async fn attempt_all(self: &Arc<Self>, due: Vec<LeasedEvent>) -> Result<usize, StoreError> {
        let n = due.len();
        let mut attempts = JoinSet::new();
        for event in due {
            let me = self.clone();
            attempts.spawn(async move { me.attempt(event).await });
        }
        let mut outcomes = Vec::with_capacity(n);
        while let Some(done) = attempts.join_next().await {
            match done {
                Ok(outcome) => outcomes.push(outcome),
                // Its lease runs out and the event is attempted again.
                Err(e) => tracing::error!(error = %e, "delivery attempt failed to run"),
            }
        }
        let ids: Vec<String> = outcomes.iter().map(|o| o.event.id.clone()).collect();
        let recorded = self.store.record_event_outcomes(outcomes).await?;
        for (id, held) in ids.iter().zip(recorded) {
            if !held {
                tracing::warn!(event_id = %id, "another attempt recorded this event first");
            }
        }
        Ok(n)
    }

    /// Leases and attempts batches until `shutdown`. Up to `rounds` batches
    /// are out at once, so an event decided while a batch waits for its
    /// answers (a slow endpoint, or only the round trip and the record) is
    /// leased and posted at once rather than after them. A batch still out
    /// at shutdown is dropped: its leases lapse and its events are attempted
    /// again, with the same id.
    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        let mut rounds: JoinSet<Result<usize, StoreError>> = JoinSet::new();
        'lease: loop {
            while let Some(done) = rounds.try_join_next() {
                log_round(done);
            }
            if rounds.len() >= self.rounds {
                tokio::select! {
                    Some(done) = rounds.join_next() => log_round(done),
                    () = shutdown.cancelled() => break,
                }
                continue;
            }
            let leased = tokio::select! {
                r = self.store.lease_events(self.now(), self.lease_ms, self.batch) => r,
                () = shutdown.cancelled() => break,
            };
            let next_due = match leased {
                Ok(Lease { taken, next_due }) => {
                    // Fewer than asked: nothing else is due now; wait as
                    // when none was (an event queued meanwhile has left a
                    // wake-up).
                    let full = taken.len() == self.batch;
                    if !taken.is_empty() {
                        let me = self.clone();
                        rounds.spawn(async move { me.attempt_all(taken).await });
                    }
                    if full {
                        continue;
                    }
                    next_due
                }
                Err(e) => {
                    tracing::error!(error = %e, "cannot read the outbox");
                    None
                }
            };
            let wait = next_due.map_or(IDLE_MAX, |at| {
                Duration::from_millis(
                    at.saturating_sub(self.now())
                        .clamp(0, IDLE_MAX.as_millis() as i64) as u64,
                )
            });
            let until = tokio::time::Instant::now() + wait;
            // A batch that ends makes nothing due within the wait (a failed
            // attempt backs off about a second), so it is only collected.
            loop {
                tokio::select! {
                    () = self.store.event_ready() => break,
                    () = tokio::time::sleep_until(until) => break,
                    Some(done) = rounds.join_next(), if !rounds.is_empty() => log_round(done),
                    () = shutdown.cancelled() => break 'lease,
                }
            }
        }
        tracing::info!("outbox stopped");
    }

    /// Posts one event; the outcome is recorded with its batch's.
    async fn attempt(&self, event: LeasedEvent) -> EventOutcome {
        let timestamp = self.now() / 1000;
        let mut request = self
            .http
            .post(self.url.clone())
            .header("content-type", "application/json")
            .header("webhook-id", &event.id)
            .header("webhook-timestamp", timestamp.to_string());
        if let Some(key) = &self.key {
            request = request.header(
                "webhook-signature",
                sign(key, &event.id, timestamp, &event.body),
            );
        }
        let result = request.body(event.body.clone()).send().await;
        let error = match result {
            Ok(r) if r.status().is_success() => {
                tracing::info!(event_id = %event.id, status = r.status().as_u16(), "event delivered");
                let at = self.now();
                return EventOutcome {
                    event,
                    attempted: Attempted::Delivered { at },
                };
            }
            Ok(r) => format!("the endpoint answered {}", r.status()),
            Err(e) if e.is_timeout() => "the endpoint did not answer in time".to_string(),
            // The URL can hold credentials: it is not repeated in the error.
            Err(e) => format!("cannot reach the endpoint: {}", e.without_url()),
        };
        let now = self.now();
        let attempt = event.attempts + 1;
        let next = now.saturating_add(backoff(attempt).as_millis() as i64);
        let next = (next - event.created_at < self.give_up_after_ms).then_some(next);
        match next {
            Some(_) => {
                tracing::warn!(event_id = %event.id, attempt, error = %error, "event not delivered; will retry")
            }
            None => {
                tracing::error!(event_id = %event.id, attempt, error = %error, "event given up")
            }
        }
        EventOutcome {
            event,
            attempted: Attempted::Failed { error, next },
        }
    }
}

fn log_round(done: Result<Result<usize, StoreError>, tokio::task::JoinError>) {
    match done {
        Ok(Ok(_)) => {}
        // The batch's leases lapse and its events are attempted again.
        Ok(Err(e)) => {
            tracing::error!(error = %e, "cannot record the outcomes of a batch of events")
        }
        Err(e) => tracing::error!(error = %e, "a batch of events failed to run"),
    }
}

/// The HMAC key: a `whsec_` secret is base64 after the prefix (and one that
/// is not is an error, not silently another key); anything else is used as
/// its bytes.
pub fn signing_key(secret: &str) -> Result<Vec<u8>, InvalidSecret> {
    match secret.strip_prefix("whsec_") {
        Some(b64) => BASE64.decode(b64).map_err(|_| InvalidSecret),
        None => Ok(secret.as_bytes().to_vec()),
    }
}

#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("a whsec_ secret must be base64 after the prefix")]
pub struct InvalidSecret;

/// `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`.
pub fn sign(key: &[u8], id: &str, timestamp: i64, body: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any size");
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body.as_bytes());
    format!("v1,{}", BASE64.encode(mac.finalize().into_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_batches_out_at_once_never_exceed_max_in_flight() {
        for max in 1..=1024 {
            let (rounds, batch) = shares(max);
            assert!(rounds * batch <= max, "{max}: {rounds} x {batch}");
            assert!(rounds >= 1 && batch >= 1);
        }
        // The default: two batches of 32, as before the setting.
        assert_eq!(shares(64), (2, 32));
        assert_eq!(shares(1), (1, 1));
    }

    #[test]
    fn whsec_secrets_are_base64_after_the_prefix() {
        assert_eq!(signing_key("whsec_aGVsbG8=").unwrap(), b"hello");
        assert_eq!(signing_key("plain").unwrap(), b"plain");
        assert!(signing_key("whsec_not base64!").is_err());
    }

    #[test]
    fn signatures_verify_with_an_independent_implementation() {
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let body = r#"{"id":"evt_1","type":"order.released"}"#;
        let ts = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let signature = sign(&signing_key(secret).unwrap(), "evt_1", ts, body);
        let wh = standardwebhooks::Webhook::new(secret).unwrap();
        let mut headers = http::HeaderMap::new();
        headers.insert("webhook-id", "evt_1".parse().unwrap());
        headers.insert("webhook-timestamp", ts.to_string().parse().unwrap());
        headers.insert("webhook-signature", signature.parse().unwrap());
        wh.verify(body.as_bytes(), &headers).expect("verifies");
        headers.insert("webhook-id", "evt_2".parse().unwrap());
        assert!(wh.verify(body.as_bytes(), &headers).is_err());
    }
}
