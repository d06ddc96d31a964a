//! One destination's queue: leases its due events in batches, POSTs them
//! side by side (at most its `max_in_flight` at once), and records how
//! each ended with what the answers say of the destination's health. Each
//! destination has its own, so a slow or failing one never holds another.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::sign::signatures;
use crate::config::Destination;
use crate::retry::{backoff, clamp_retry_after, retry_after};
use crate::store::StoreError;
use crate::store::{self, Attempted, BatchHealth, EventOutcome, Lease, LeasedEvent, Store};
use pointhook_common::clock::Clock;

/// Batches out at once (see `Dispatcher::run`).
const ROUNDS: usize = 2;
const IDLE_MAX: Duration = Duration::from_secs(1);

/// How many batches are out at once, and how many events each leases, so
/// that together they never exceed `max_in_flight` POSTs. Leasing only
/// what can be posted now keeps each lease's clock from running while an
/// event waits its turn.
pub(super) fn shares(max_in_flight: usize) -> (usize, usize) {
    let rounds = ROUNDS.min(max_in_flight).max(1);
    (rounds, (max_in_flight / rounds).max(1))
}

pub(super) struct Dispatcher {
    store: Store,
    http: reqwest::Client,
    clock: Arc<dyn Clock>,
    pub(super) destination: Destination,
    /// Woken when an event may be due for it.
    pub(super) ready: Arc<Notify>,
    /// How long an event is leased for one attempt.
    lease_ms: i64,
    rounds: usize,
    batch: usize,
}

/// How one attempt ended, as the destination's health reads it.
struct Attempt {
    outcome: EventOutcome,
    /// The endpoint answered `410 Gone`.
    gone: bool,
}

impl Dispatcher {
    pub(super) fn new(
        store: Store,
        clock: Arc<dyn Clock>,
        destination: Destination,
    ) -> anyhow::Result<Dispatcher> {
        // A redirect is not a delivery: it is a failed attempt, retried
        // (and an event never follows a redirect to another host).
        let http = reqwest::Client::builder()
            .timeout(destination.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("pointhook/", env!("CARGO_PKG_VERSION")))
            .build()?;
        let (rounds, batch) = shares(destination.max_in_flight);
        Ok(Dispatcher {
            store,
            http,
            clock,
            // An attempt may take the whole timeout; the lease outlasts it.
            lease_ms: (destination.timeout.as_millis() as i64)
                .saturating_mul(2)
                .max(10_000),
            destination,
            ready: Arc::new(Notify::new()),
            rounds,
            batch,
        })
    }

    fn now(&self) -> i64 {
        store::unix_ms(self.clock.now())
    }

    fn name(&self) -> &str {
        &self.destination.name
    }

    async fn lease(&self) -> Result<Lease<LeasedEvent>, StoreError> {
        self.store
            .lease_events(self.name(), self.now(), self.lease_ms, self.batch)
            .await
    }

    /// Attempts one batch of the events due now; returns how many.
    pub(super) async fn deliver_due(self: &Arc<Self>) -> Result<usize, StoreError> {
        let due = self.lease().await?;
        self.attempt_all(due.taken).await
    }

    /// Attempts leased events side by side and records how each ended, and
    /// what the answers say of the destination, in one store call.
    async fn attempt_all(self: &Arc<Self>, due: Vec<LeasedEvent>) -> Result<usize, StoreError> {
        let n = due.len();
        let mut attempts = JoinSet::new();
        for event in due {
            let me = self.clone();
            attempts.spawn(async move { me.attempt(event).await });
        }
        let mut outcomes = Vec::with_capacity(n);
        let mut gone = false;
        while let Some(done) = attempts.join_next().await {
            match done {
                Ok(a) => {
                    gone |= a.gone;
                    outcomes.push(a.outcome);
                }
                // Its lease runs out and the event is attempted again.
                Err(e) => tracing::error!(error = %e, "delivery attempt failed to run"),
            }
        }
        let now = self.now();
        let hours = self.destination.disable_after.as_secs() / 3600;
        let health = BatchHealth {
            now,
            gone: gone.then(|| "the endpoint answered 410 Gone".to_string()),
            failing_cutoff: now - self.destination.disable_after.as_millis() as i64,
            failing_reason: format!("every attempt failed for {hours} hours"),
        };
        let ids: Vec<String> = outcomes.iter().map(|o| o.event.id.clone()).collect();
        let recorded = self
            .store
            .record_event_outcomes(self.name(), outcomes, health)
            .await?;
        for (id, held) in ids.iter().zip(recorded.held) {
            if !held {
                tracing::warn!(destination = %self.name(), event_id = %id, "another attempt recorded this event first");
            }
        }
        if recorded.disabled {
            tracing::error!(destination = %self.name(), "destination disabled; its events wait, paused, for a person to recover them");
        }
        Ok(n)
    }

    /// Leases and attempts batches until `shutdown`. Up to `rounds` batches
    /// are out at once, so an event decided while a batch waits for its
    /// answers (a slow endpoint, or only the round trip and the record) is
    /// leased and posted at once rather than after them. A batch still out
    /// at shutdown is dropped: its leases lapse and its events are attempted
    /// again, with the same id.
    pub(super) async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        let mut rounds: JoinSet<Result<usize, StoreError>> = JoinSet::new();
        'lease: loop {
            while let Some(done) = rounds.try_join_next() {
                self.log_round(done);
            }
            if rounds.len() >= self.rounds {
                tokio::select! {
                    Some(done) = rounds.join_next() => self.log_round(done),
                    () = shutdown.cancelled() => break,
                }
                continue;
            }
            let leased = tokio::select! {
                r = self.lease() => r,
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
                    tracing::error!(destination = %self.name(), error = %e, "cannot read the outbox");
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
                    () = self.ready.notified() => break,
                    () = tokio::time::sleep_until(until) => break,
                    Some(done) = rounds.join_next(), if !rounds.is_empty() => self.log_round(done),
                    () = shutdown.cancelled() => break 'lease,
                }
            }
        }
    }

    fn log_round(&self, done: Result<Result<usize, StoreError>, tokio::task::JoinError>) {
        match done {
            Ok(Ok(_)) => {}
            // The batch's leases lapse and its events are attempted again.
            Ok(Err(e)) => {
                tracing::error!(destination = %self.name(), error = %e, "cannot record the outcomes of a batch of events")
            }
            Err(e) => {
                tracing::error!(destination = %self.name(), error = %e, "a batch of events failed to run")
            }
        }
    }

    /// Posts one event; the outcome is recorded with its batch's.
    async fn attempt(&self, event: LeasedEvent) -> Attempt {
        let timestamp = self.now() / 1000;
        let mut request = self
            .http
            .post(self.destination.url.clone())
            .header("content-type", "application/json")
            .header("webhook-id", &event.id)
            .header("webhook-timestamp", timestamp.to_string());
        if !self.destination.keys.is_empty() {
            request = request.header(
                "webhook-signature",
                signatures(&self.destination.keys, &event.id, timestamp, &event.body),
            );
        }
        let result = request.body(event.body.clone()).send().await;
        let (error, wait, gone) = match result {
            Ok(r) if r.status().is_success() => {
                tracing::info!(destination = %self.name(), event_id = %event.id, status = r.status().as_u16(), "event delivered");
                let at = self.now();
                return Attempt {
                    outcome: EventOutcome {
                        event,
                        attempted: Attempted::Delivered { at },
                    },
                    gone: false,
                };
            }
            Ok(r) => {
                let status = r.status().as_u16();
                // 429 and 503 say when to come back, up to the longest
                // backoff.
                let wait = matches!(status, 429 | 503)
                    .then(|| retry_after(r.headers()))
                    .flatten()
                    .map(clamp_retry_after);
                (
                    format!("the endpoint answered {}", r.status()),
                    wait,
                    status == 410,
                )
            }
            Err(e) if e.is_timeout() => ("the endpoint did not answer in time".into(), None, false),
            // The URL can hold credentials: it is not repeated in the error.
            Err(e) => (
                format!("cannot reach the endpoint: {}", e.without_url()),
                None,
                false,
            ),
        };
        let now = self.now();
        let attempt = event.attempts + 1;
        let wait = wait.unwrap_or_else(|| backoff(attempt));
        let next = now.saturating_add(wait.as_millis() as i64);
        let give_up_ms = self.destination.give_up_after.as_millis() as i64;
        let next = (next - event.queued_at < give_up_ms).then_some(next);
        match next {
            Some(_) => {
                tracing::warn!(destination = %self.name(), event_id = %event.id, attempt, error = %error, "event not delivered; will retry")
            }
            None => {
                tracing::error!(destination = %self.name(), event_id = %event.id, attempt, error = %error, "event given up")
            }
        }
        Attempt {
            outcome: EventOutcome {
                event,
                attempted: Attempted::Failed { error, next },
            },
            gone,
        }
    }
}
