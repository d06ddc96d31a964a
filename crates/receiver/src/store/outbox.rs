//! The outbox's part of `Store`: a queue per destination leased and
//! recorded with its health (each backend's own statements, tuned for
//! their locking), an event with every destination's attempts, and an
//! event sent again to the destinations that gave it up or failed it, or
//! to every one when a person asks for that. The destinations' state and
//! recoveries are in `destinations.rs`.

use super::{
    Backend, BatchHealth, EventDetail, EventOutcome, Lease, LeasedEvent, Recorded, Store,
    StoreError,
};
use crate::domain::EventState;

/// Where "deliver again" sends an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Again {
    /// Only the destinations that gave it up or failed it (tried, not
    /// delivered): one that took it is not sent it twice.
    Unfinished,
    /// Every destination that takes it now, and any it was queued for.
    Everywhere,
}

/// What a "deliver again" did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Redelivered {
    /// Queued again at these destinations, by name.
    To(Vec<String>),
    NoSuchEvent,
    /// No destination gave it up or failed it (`Again::Unfinished`).
    NothingFailed,
}

impl Store {
    /// Leases up to `limit` of `destination`'s events due for a delivery
    /// attempt (none while it is disabled); with fewer, tells when its
    /// next is due.
    pub async fn lease_events(
        &self,
        destination: &str,
        now: i64,
        lease_ms: i64,
        limit: usize,
    ) -> Result<Lease<LeasedEvent>, StoreError> {
        let destination = destination.to_string();
        on!(self, b => b.lease_events(destination, now, lease_ms, limit).await)
    }

    /// Records the attempts of one lease batch at `destination` together
    /// (one statement on PostgreSQL, one commit on SQLite), and what they
    /// say of its health: a `410`, or failing every attempt since the
    /// cutoff, disables it and pauses what waits for it.
    pub async fn record_event_outcomes(
        &self,
        destination: &str,
        outcomes: Vec<EventOutcome>,
        health: BatchHealth,
    ) -> Result<Recorded, StoreError> {
        if outcomes.is_empty() {
            return Ok(Recorded {
                held: Vec::new(),
                disabled: false,
            });
        }
        let destination = destination.to_string();
        on!(self, b => b.record_event_outcomes(destination, outcomes, health).await)
    }

    /// An event, with each destination's attempts and state.
    pub async fn get_event(&self, id: String) -> Result<Option<EventDetail>, StoreError> {
        let Some(mut detail) = self.event(id.clone()).await? else {
            return Ok(None);
        };
        detail.destinations = self.event_deliveries(id).await?;
        Ok(Some(detail))
    }

    /// Sends an event again, with the same id: to the destinations that
    /// gave it up or failed it, or (`Again::Everywhere`) to every
    /// destination that takes it now and any it was queued for.
    pub async fn redeliver_event(
        &self,
        id: String,
        again: Again,
        now: i64,
    ) -> Result<Redelivered, StoreError> {
        let Some(event) = self.get_event(id.clone()).await? else {
            return Ok(Redelivered::NoSuchEvent);
        };
        let destinations: Vec<String> = match again {
            Again::Unfinished => event
                .destinations
                .iter()
                .filter(|d| {
                    d.state == EventState::Dead.as_str()
                        || (d.state == EventState::Pending.as_str() && d.attempts > 0)
                })
                .map(|d| d.destination.clone())
                .collect(),
            Again::Everywhere => {
                let rules = &self.inner.rules;
                let mut all = match crate::domain::EventType::parse(&event.summary.event_type) {
                    Some(t) => (rules.route)(&rules.events, &event.summary.account, t),
                    None => Vec::new(),
                };
                for queued in &event.destinations {
                    if !all.contains(&queued.destination) {
                        all.push(queued.destination.clone());
                    }
                }
                all
            }
        };
        if destinations.is_empty() && again == Again::Unfinished {
            return Ok(Redelivered::NothingFailed);
        }
        let sent = destinations.clone();
        let found = on!(self, b => b.redeliver_event(id, destinations, now).await)?;
        self.wake_outboxes().await;
        Ok(if found {
            Redelivered::To(sent)
        } else {
            Redelivered::NoSuchEvent
        })
    }

    /// Wakes this instance's outboxes, and on PostgreSQL the others'.
    pub(super) async fn wake_outboxes(&self) {
        self.inner.events_ready.notify_one();
        if let Backend::Postgres(b) = &self.inner.backend {
            b.wake_events().await;
        }
    }
}
