//! The reads of the admin API, the CLI and the console's item pages, and
//! a person's retry of a dead job: each one query function (`admin_reads`,
//! `order_reads`) run on whichever backend this is.

use super::admin_reads as reads;
use super::views::*;
use super::{Backend, Store, StoreError, order_reads, views};
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
        self.read(move |c| Box::pin(async move { reads::list_deliveries(c, &filter).await }))
            .await
    }

    pub async fn get_delivery(&self, id: i64) -> Result<Option<DeliveryDetail>, StoreError> {
        self.read(move |c| Box::pin(reads::get_delivery(c, id)))
            .await
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
            jobs.extend(
                self.read(move |c| Box::pin(reads::list_jobs_in(c, state, left)))
                    .await?,
            );
        }
        Ok(jobs)
    }

    pub async fn get_job(&self, id: i64) -> Result<Option<JobDetail>, StoreError> {
        self.read(move |c| Box::pin(reads::get_job(c, id))).await
    }

    /// The job with `key` in `account`, if there is one.
    pub async fn job_by_key(
        &self,
        account: String,
        key: String,
    ) -> Result<Option<JobSummary>, StoreError> {
        self.read(move |c| Box::pin(async move { reads::job_by_key(c, &account, &key).await }))
            .await
    }

    /// A dead job runs again, with fresh attempts. `false`: no such dead job.
    pub async fn retry_job(&self, id: i64, now: i64) -> Result<bool, StoreError> {
        let retried = self
            .write(move |c| Box::pin(reads::retry_job(c, id, now)))
            .await?;
        self.jobs_made_due().await;
        Ok(retried)
    }

    pub async fn retry_dead_jobs(&self, now: i64) -> Result<usize, StoreError> {
        let n = self
            .write(move |c| Box::pin(reads::retry_dead_jobs(c, now)))
            .await?;
        self.jobs_made_due().await;
        Ok(n)
    }

    /// A merchant order's state and its history; `None` when nothing is
    /// known of it.
    pub async fn get_order(
        &self,
        account: String,
        order: String,
    ) -> Result<Option<OrderView>, StoreError> {
        self.read(move |c| {
            Box::pin(async move { order_reads::get_order(c, &account, &order).await })
        })
        .await
    }

    /// Newest first, in the order recorded.
    pub async fn list_events(
        &self,
        event_type: Option<String>,
        state: Option<EventState>,
        limit: usize,
    ) -> Result<Vec<EventSummary>, StoreError> {
        self.read(move |c| {
            Box::pin(
                async move { reads::list_events(c, event_type.as_deref(), state, limit).await },
            )
        })
        .await
    }

    /// An event's own row, without its destinations' attempts.
    pub(super) async fn event(&self, id: String) -> Result<Option<EventDetail>, StoreError> {
        self.read(move |c| Box::pin(async move { reads::get_event(c, &id).await }))
            .await
    }

    /// The last API call and how the merchant's endpoint answers.
    pub async fn health(&self) -> Result<Health, StoreError> {
        self.read(|c| Box::pin(reads::health(c))).await
    }

    /// Jobs by state and the outbox backlog, for `/metrics`.
    pub async fn metrics_snapshot(&self, now: i64) -> Result<MetricsSnapshot, StoreError> {
        let mut snapshot = self
            .read(move |c| Box::pin(reads::metrics_snapshot(c, now)))
            .await?;
        snapshot.destinations = self.destinations(now).await?;
        Ok(snapshot)
    }

    /// Wakes this process's worker and, on PostgreSQL, the other
    /// instances' (a job was made due from outside, e.g. a retry): the
    /// one part of a person's retry that differs by backend.
    pub(super) async fn jobs_made_due(&self) {
        match &self.inner.backend {
            // One process owns the file: the notify below reaches its worker.
            Backend::Sqlite(_) => {}
            Backend::Postgres(b) => b.wake_jobs().await,
        }
        self.inner.jobs_ready.notify_one();
    }
}
