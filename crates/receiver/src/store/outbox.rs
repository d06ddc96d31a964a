//! The outbox's and the destinations' part of `Store`: a queue per
//! destination leased and recorded with its health, each destination's
//! state and a person's enable, disable and recovery, and an event with
//! every destination's attempts.

use super::{
    Backend, BatchHealth, DestinationView, EventDetail, EventOutcome, Lease, LeasedEvent, Recorded,
    Recovery, Store, StoreError,
};

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

    /// Marks the configured destinations (name, URL as shown), creating
    /// the new ones enabled; writes nothing when the store says so already.
    pub async fn register_destinations(
        &self,
        configured: Vec<(String, String)>,
        now: i64,
    ) -> Result<(), StoreError> {
        let known = self.destinations(now).await?;
        let same = known.len() == configured.len()
            && known.iter().all(|d| {
                configured
                    .iter()
                    .any(|(name, url)| *name == d.name && Some(url) == d.url.as_ref())
            });
        if same {
            return Ok(());
        }
        on!(self, b => b.register_destinations(configured, now).await)
    }

    /// The configured destinations, by name, with what waits for each.
    pub async fn destinations(&self, now: i64) -> Result<Vec<DestinationView>, StoreError> {
        on!(self, b => b.destinations(None, now).await)
    }

    pub async fn destination(
        &self,
        name: &str,
        now: i64,
    ) -> Result<Option<DestinationView>, StoreError> {
        let name = Some(name.to_string());
        Ok(on!(self, b => b.destinations(name, now).await)?.pop())
    }

    /// Enabled again: new events are sent (what was paused waits for a
    /// recovery). `false`: no such destination.
    pub async fn enable_destination(&self, name: &str, now: i64) -> Result<bool, StoreError> {
        let found = on!(self, b => b.enable_destination(name.to_string(), now).await)?;
        self.inner.events_ready.notify_one();
        Ok(found)
    }

    /// Disabled by a person, for `reason`: its events wait as paused.
    /// `false`: no such destination.
    pub async fn disable_destination(
        &self,
        name: &str,
        reason: &str,
        now: i64,
    ) -> Result<bool, StoreError> {
        let (name, reason) = (name.to_string(), reason.to_string());
        on!(self, b => b.disable_destination(name, reason, now).await)
    }

    /// Sends again every event for `name` decided since `since` (unix ms)
    /// that failed, was paused or gave up, oldest first.
    pub async fn recover_destination(
        &self,
        name: &str,
        since: i64,
        now: i64,
    ) -> Result<Recovery, StoreError> {
        let name = name.to_string();
        let answer = on!(self, b => b.recover_destination(name, since, now).await)?;
        self.inner.events_ready.notify_one();
        Ok(answer)
    }

    /// An event, with each destination's attempts and state.
    pub async fn get_event(&self, id: String) -> Result<Option<EventDetail>, StoreError> {
        let Some(mut detail) = self.event(id.clone()).await? else {
            return Ok(None);
        };
        detail.destinations = on!(self, b => b.event_deliveries(id).await)?;
        Ok(Some(detail))
    }

    /// Sends an event again, with the same id, to every destination that
    /// takes it now (and any it was queued for). `false`: no such event.
    pub async fn redeliver_event(&self, id: String, now: i64) -> Result<bool, StoreError> {
        let Some(event) = self.event(id.clone()).await? else {
            return Ok(false);
        };
        let rules = &self.inner.rules;
        let mut destinations = match crate::domain::EventType::parse(&event.summary.event_type) {
            Some(t) => (rules.route)(&rules.events, &event.summary.account, t),
            None => Vec::new(),
        };
        for queued in on!(self, b => b.event_deliveries(id.clone()).await)? {
            if !destinations.contains(&queued.destination) {
                destinations.push(queued.destination);
            }
        }
        let found = on!(self, b => b.redeliver_event(id, destinations, now).await)?;
        self.inner.events_ready.notify_one();
        Ok(found)
    }
}
