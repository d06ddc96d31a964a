//! The reads of the admin API, the CLI and the console's item pages:
//! deliveries, jobs, orders and events, health and the metrics snapshot,
//! each on a pooled connection, never the writer's.

use super::listen::Channel;
use super::{PgStore, order_reads, reads};
use crate::domain::{EventState, JobState};
use crate::store::StoreError;
use crate::store::views::*;

impl PgStore {
    pub async fn list_deliveries(
        &self,
        filter: DeliveryFilter,
    ) -> Result<Vec<DeliverySummary>, StoreError> {
        reads::list_deliveries(&self.client().await?, &filter).await
    }

    pub async fn get_delivery(&self, id: i64) -> Result<Option<DeliveryDetail>, StoreError> {
        reads::get_delivery(&self.client().await?, id).await
    }

    pub async fn list_jobs_in(
        &self,
        state: JobState,
        limit: i64,
    ) -> Result<Vec<JobSummary>, StoreError> {
        reads::list_jobs_in(&self.client().await?, state, limit).await
    }

    pub async fn get_job(&self, id: i64) -> Result<Option<JobDetail>, StoreError> {
        reads::get_job(&self.client().await?, id).await
    }

    pub async fn job_by_key(
        &self,
        account: String,
        key: String,
    ) -> Result<Option<JobSummary>, StoreError> {
        reads::job_by_key(&self.client().await?, &account, &key).await
    }

    pub async fn retry_job(&self, id: i64, now: i64) -> Result<bool, StoreError> {
        let c = self.client().await?;
        let retried = reads::retry_job(&c, id, now).await?;
        drop(c);
        self.wake(Channel::Jobs).await;
        Ok(retried)
    }

    pub async fn retry_dead_jobs(&self, now: i64) -> Result<usize, StoreError> {
        let c = self.client().await?;
        let n = reads::retry_dead_jobs(&c, now).await?;
        drop(c);
        self.wake(Channel::Jobs).await;
        Ok(n)
    }

    pub async fn get_order(
        &self,
        account: String,
        order: String,
    ) -> Result<Option<OrderView>, StoreError> {
        order_reads::get_order(&self.client().await?, &account, &order).await
    }

    pub async fn list_events(
        &self,
        event_type: Option<String>,
        state: Option<EventState>,
        limit: usize,
    ) -> Result<Vec<EventSummary>, StoreError> {
        reads::list_events(&self.client().await?, event_type.as_deref(), state, limit).await
    }

    pub async fn get_event(&self, id: String) -> Result<Option<EventDetail>, StoreError> {
        reads::get_event(&self.client().await?, &id).await
    }

    pub async fn health(&self) -> Result<Health, StoreError> {
        reads::health(&self.client().await?).await
    }

    pub async fn metrics_snapshot(&self, now: i64) -> Result<MetricsSnapshot, StoreError> {
        reads::metrics_snapshot(&self.client().await?, now).await
    }
}
