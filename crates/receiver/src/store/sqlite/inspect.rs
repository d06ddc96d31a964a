//! The reads of the admin API, the CLI and the console's item pages:
//! deliveries, jobs, orders and events, health and the metrics snapshot,
//! each on a pooled connection, never the writer's.

use super::{SqliteStore, admin, order_reads};
use crate::domain::{EventState, JobState};
use crate::store::StoreError;
use crate::store::views::*;

impl SqliteStore {
    pub async fn list_deliveries(
        &self,
        filter: DeliveryFilter,
    ) -> Result<Vec<DeliverySummary>, StoreError> {
        self.read(move |c| admin::list_deliveries(c, &filter)).await
    }

    pub async fn get_delivery(&self, id: i64) -> Result<Option<DeliveryDetail>, StoreError> {
        self.read(move |c| admin::get_delivery(c, id)).await
    }

    pub async fn list_jobs_in(
        &self,
        state: JobState,
        limit: i64,
    ) -> Result<Vec<JobSummary>, StoreError> {
        self.read(move |c| admin::list_jobs_in(c, state, limit))
            .await
    }

    pub async fn get_job(&self, id: i64) -> Result<Option<JobDetail>, StoreError> {
        self.read(move |c| admin::get_job(c, id)).await
    }

    pub async fn job_by_key(
        &self,
        account: String,
        key: String,
    ) -> Result<Option<JobSummary>, StoreError> {
        self.read(move |c| admin::job_by_key(c, &account, &key))
            .await
    }

    pub async fn retry_job(&self, id: i64, now: i64) -> Result<bool, StoreError> {
        self.write(move |c| admin::retry_job(c, id, now)).await
    }

    pub async fn retry_dead_jobs(&self, now: i64) -> Result<usize, StoreError> {
        self.write(move |c| admin::retry_dead_jobs(c, now)).await
    }

    pub async fn get_order(
        &self,
        account: String,
        order: String,
    ) -> Result<Option<OrderView>, StoreError> {
        self.read(move |c| order_reads::get_order(c, &account, &order))
            .await
    }

    pub async fn list_events(
        &self,
        event_type: Option<String>,
        state: Option<EventState>,
        limit: usize,
    ) -> Result<Vec<EventSummary>, StoreError> {
        self.read(move |c| admin::list_events(c, event_type.as_deref(), state, limit))
            .await
    }

    pub async fn get_event(&self, id: String) -> Result<Option<EventDetail>, StoreError> {
        self.read(move |c| admin::get_event(c, &id)).await
    }

    pub async fn health(&self) -> Result<Health, StoreError> {
        self.read(admin::health).await
    }

    pub async fn metrics_snapshot(&self, now: i64) -> Result<MetricsSnapshot, StoreError> {
        self.read(move |c| admin::metrics_snapshot(c, now)).await
    }
}
