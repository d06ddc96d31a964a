//! The store's surface for the operator console: operators and their
//! sessions, the audit, acknowledgements, the inbox, an order's timeline,
//! the search, paged lists and the health charts' samples. Each call runs
//! on whichever backend this is (`console_views` says what comes back).

use super::console_views::*;
use super::views::{DeliveryFilter, DeliverySummary, EventSummary, JobSummary, ReviewView};
use super::{Backend, Store, StoreError};
use crate::domain::AuditOutcome;

impl Store {
    /// `false`: an operator of that name exists already.
    pub async fn add_operator(
        &self,
        name: String,
        hash: String,
        now: i64,
    ) -> Result<bool, StoreError> {
        on!(self, b => b.add_operator(name, hash, now).await)
    }

    /// A new password; the operator's sessions end. `false`: no such one.
    pub async fn reset_operator(
        &self,
        name: String,
        hash: String,
        now: i64,
    ) -> Result<bool, StoreError> {
        on!(self, b => b.reset_operator(name, hash, now).await)
    }

    /// The operator and their sessions go. `false`: no such one.
    pub async fn remove_operator(&self, name: String) -> Result<bool, StoreError> {
        on!(self, b => b.remove_operator(name).await)
    }

    pub async fn operators(&self) -> Result<Vec<OperatorView>, StoreError> {
        on!(self, b => b.operators().await)
    }

    /// The operator's password hash (a PHC string), if the operator exists.
    pub async fn password_hash(&self, name: String) -> Result<Option<String>, StoreError> {
        on!(self, b => b.password_hash(name).await)
    }

    pub async fn open_session(
        &self,
        token_hash: Vec<u8>,
        operator: String,
        csrf: String,
        now: i64,
    ) -> Result<(), StoreError> {
        on!(self, b => b.open_session(token_hash, operator, csrf, now).await)
    }

    /// The session whose token hashes to `token_hash`, while its operator
    /// exists.
    pub async fn session(&self, token_hash: Vec<u8>) -> Result<Option<Session>, StoreError> {
        on!(self, b => b.session(token_hash).await)
    }

    pub async fn touch_session(&self, token_hash: Vec<u8>, now: i64) -> Result<(), StoreError> {
        on!(self, b => b.touch_session(token_hash, now).await)
    }

    pub async fn close_session(&self, token_hash: Vec<u8>) -> Result<(), StoreError> {
        on!(self, b => b.close_session(token_hash).await)
    }

    /// Ends the sessions not seen since `seen_before`.
    pub async fn close_idle_sessions(&self, seen_before: i64) -> Result<usize, StoreError> {
        on!(self, b => b.close_idle_sessions(seen_before).await)
    }

    /// Records an action before it runs; `end_audit` records how it ended.
    pub async fn begin_audit(&self, entry: NewAudit) -> Result<i64, StoreError> {
        on!(self, b => b.begin_audit(entry).await)
    }

    pub async fn end_audit(
        &self,
        id: i64,
        outcome: AuditOutcome,
        result: String,
        now: i64,
    ) -> Result<(), StoreError> {
        on!(self, b => b.end_audit(id, outcome, result, now).await)
    }

    /// Newest first.
    pub async fn audit(&self, filter: AuditFilter) -> Result<Vec<AuditView>, StoreError> {
        on!(self, b => b.audit(filter).await)
    }

    /// `false`: acknowledged already.
    pub async fn acknowledge(
        &self,
        item: String,
        actor: String,
        now: i64,
    ) -> Result<bool, StoreError> {
        on!(self, b => b.acknowledge(item, actor, now).await)
    }

    pub async fn is_acknowledged(&self, item: String) -> Result<bool, StoreError> {
        on!(self, b => b.is_acknowledged(item).await)
    }

    pub async fn record_samples(&self, samples: Vec<Sample>) -> Result<(), StoreError> {
        if samples.is_empty() {
            return Ok(());
        }
        on!(self, b => b.record_samples(samples).await)
    }

    pub async fn prune_samples(&self, before: i64) -> Result<usize, StoreError> {
        on!(self, b => b.prune_samples(before).await)
    }

    /// Every sample since `since` (unix ms), oldest first.
    pub async fn samples(&self, since: i64) -> Result<Vec<Sample>, StoreError> {
        on!(self, b => b.samples(since).await)
    }

    /// Decisions recorded after the one with id `id`: how many, and the
    /// newest id (`id` when none).
    pub async fn decisions_after(&self, id: i64) -> Result<(i64, i64), StoreError> {
        on!(self, b => b.decisions_after(id).await)
    }

    /// Changes found missed per UTC day since `since`.
    pub async fn missed_per_day(&self, since: i64) -> Result<Vec<(i64, i64)>, StoreError> {
        on!(self, b => b.missed_per_day(since).await)
    }

    /// Runs each of these jobs again that is dead; returns those that were.
    pub async fn retry_jobs(&self, ids: Vec<i64>, now: i64) -> Result<Vec<i64>, StoreError> {
        let retried = on!(self, b => b.retry_jobs(ids, now).await)?;
        self.wake_worker();
        Ok(retried)
    }

    /// What needs a person; `limit` bounds each kind but dead jobs and
    /// destinations (disabled, or every attempt failing).
    pub async fn inbox(&self, limit: usize, now: i64) -> Result<Inbox, StoreError> {
        let limit = super::views::clamp(limit);
        let mut inbox = on!(self, b => b.inbox(limit).await)?;
        inbox.destinations = self
            .destinations(now)
            .await?
            .into_iter()
            .filter(|d| d.state == "disabled" || d.failing_since.is_some())
            .collect();
        Ok(inbox)
    }

    /// A fraud review with its evidence, in any state.
    pub async fn review(&self, id: i64) -> Result<Option<ReviewDetail>, StoreError> {
        on!(self, b => b.review(id).await)
    }

    pub async fn review_of(&self, id: i64) -> Result<Option<ReviewView>, StoreError> {
        on!(self, b => b.review_of(id).await)
    }

    /// The story of a merchant order, an Orders API order, a payment
    /// intent or a payment (`kind`), oldest first; `None` when nothing is
    /// known of it.
    pub async fn timeline(
        &self,
        account: String,
        kind: &'static str,
        id: String,
    ) -> Result<Option<Timeline>, StoreError> {
        on!(self, b => b.timeline(account, kind, id).await)
    }

    /// What `text` names in any of `accounts`: a merchant order, a
    /// payment's order, an intent, an Orders API order, an external
    /// reference's orders.
    pub async fn search(
        &self,
        accounts: Vec<String>,
        text: String,
    ) -> Result<Vec<Found>, StoreError> {
        on!(self, b => b.search(accounts, text).await)
    }

    pub async fn order_list(
        &self,
        list: OrderList,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<Page<OrderRow>, StoreError> {
        on!(self, b => b.order_list(list, cursor, limit).await)
    }

    /// Jobs in one state (dead when none is given), newest first.
    pub async fn job_page(&self, filter: JobFilter) -> Result<Page<JobSummary>, StoreError> {
        on!(self, b => b.job_page(filter).await)
    }

    pub async fn event_page(&self, filter: EventFilter) -> Result<Page<EventSummary>, StoreError> {
        on!(self, b => b.event_page(filter).await)
    }

    /// Newest first; `filter.before` is the cursor.
    pub async fn delivery_page(
        &self,
        filter: DeliveryFilter,
    ) -> Result<Page<DeliverySummary>, StoreError> {
        on!(self, b => b.delivery_page(filter).await)
    }

    /// The times a job died and ran again, oldest first.
    pub async fn job_deaths(&self, job: i64) -> Result<Vec<DeathView>, StoreError> {
        on!(self, b => b.job_deaths(job).await)
    }

    /// Each delivery attempt of an event, oldest first.
    pub async fn event_attempts(&self, event: String) -> Result<Vec<AttemptView>, StoreError> {
        on!(self, b => b.event_attempts(event).await)
    }
}
