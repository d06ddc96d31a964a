//! The reads of the admin API, the CLI and the console's item pages, and
//! a person's retry of a dead job.

use super::views::*;
use super::{Backend, Store, StoreError, views};
use crate::domain::{EventState, JobState};

impl Store {
    /// Whether any event goes to a destination (the event policy it was
    /// opened with): without one, events are only stored and none can be
    /// sent again.
    pub fn delivers_events(&self) -> bool {
        self.inner.rules.events.delivers()
    }

    /// Newest first. An unknown `kind` matches nothing.
    pub async fn list_deliveries(
        &self,
        filter: DeliveryFilter,
    ) -> Result<Vec<DeliverySummary>, StoreError> {
        on!(self, b => b.list_deliveries(filter).await)
    }

    pub async fn get_delivery(&self, id: i64) -> Result<Option<DeliveryDetail>, StoreError> {
        on!(self, b => b.get_delivery(id).await)
    }

    /// Dead first, then running, pending and done; newest first within each.
    /// One state at a time, so a listing reads only what it shows: the few
    /// unfinished jobs, and the many done ones only as far as the limit.
    pub async fn list_jobs(
        &self,
        state: Option<JobState>,
        limit: usize,
    ) -> Result<Vec<JobSummary>, StoreError> {
        use JobState::*;
        let states = state.map_or_else(|| vec![Dead, Running, Pending, Done], |s| vec![s]);
        let limit = views::clamp(limit);
        let mut jobs = Vec::new();
        for state in states {
            let left = limit - jobs.len() as i64;
            if left <= 0 {
                break;
            }
            jobs.extend(on!(self, b => b.list_jobs_in(state, left).await)?);
        }
        Ok(jobs)
    }

    pub async fn get_job(&self, id: i64) -> Result<Option<JobDetail>, StoreError> {
        on!(self, b => b.get_job(id).await)
    }

    /// The job with `key` in `account`, if there is one.
    pub async fn job_by_key(
        &self,
        account: String,
        key: String,
    ) -> Result<Option<JobSummary>, StoreError> {
        on!(self, b => b.job_by_key(account, key).await)
    }

    /// A dead job runs again, with fresh attempts. `false`: no such dead job.
    pub async fn retry_job(&self, id: i64, now: i64) -> Result<bool, StoreError> {
        let retried = on!(self, b => b.retry_job(id, now).await)?;
        self.inner.jobs_ready.notify_one();
        Ok(retried)
    }

    pub async fn retry_dead_jobs(&self, now: i64) -> Result<usize, StoreError> {
        let n = on!(self, b => b.retry_dead_jobs(now).await)?;
        self.inner.jobs_ready.notify_one();
        Ok(n)
    }

    /// A merchant order's state and its history; `None` when nothing is
    /// known of it.
    pub async fn get_order(
        &self,
        account: String,
        order: String,
    ) -> Result<Option<OrderView>, StoreError> {
        on!(self, b => b.get_order(account, order).await)
    }

    /// Newest first, in the order recorded.
    pub async fn list_events(
        &self,
        event_type: Option<String>,
        state: Option<EventState>,
        limit: usize,
    ) -> Result<Vec<EventSummary>, StoreError> {
        on!(self, b => b.list_events(event_type, state, limit).await)
    }

    /// The last API call and how the merchant's endpoint answers.
    pub async fn health(&self) -> Result<Health, StoreError> {
        on!(self, b => b.health().await)
    }

    /// Jobs by state and the outbox backlog, for `/metrics`.
    pub async fn metrics_snapshot(&self, now: i64) -> Result<MetricsSnapshot, StoreError> {
        let mut snapshot = on!(self, b => b.metrics_snapshot(now).await)?;
        snapshot.destinations = self.destinations(now).await?;
        Ok(snapshot)
    }
}
