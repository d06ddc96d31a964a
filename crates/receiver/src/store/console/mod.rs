//! The store's surface for the operator console: operators and their
//! sessions, the audit, acknowledgements, the inbox, an order's timeline,
//! the search, paged lists and the health charts' samples
//! (`console_views` says what comes back). Each call runs one query
//! function of the modules below, the same on either backend.

mod audit;
mod lists;
mod operators;
mod reads;
mod search;
mod timeline;

use super::console_views::*;
use super::views::{DeliveryFilter, DeliverySummary, EventSummary, JobSummary, ReviewView};
use super::{Store, StoreError, admin_reads};
use crate::domain::AuditOutcome;

impl Store {
    /// `false`: an operator of that name exists already.
    pub async fn add_operator(
        &self,
        name: String,
        hash: String,
        now: i64,
    ) -> Result<bool, StoreError> {
        self.write(move |c| {
            let (name, hash) = (name.clone(), hash.clone());
            Box::pin(async move { operators::add(c, &name, &hash, now).await })
        })
        .await
    }

    /// A new password; the operator's sessions end. `false`: no such one.
    pub async fn reset_operator(
        &self,
        name: String,
        hash: String,
        now: i64,
    ) -> Result<bool, StoreError> {
        self.write(move |c| {
            let (name, hash) = (name.clone(), hash.clone());
            Box::pin(async move { operators::reset(c, &name, &hash, now).await })
        })
        .await
    }

    /// The operator and their sessions go. `false`: no such one.
    pub async fn remove_operator(&self, name: String) -> Result<bool, StoreError> {
        self.write(move |c| {
            let name = name.clone();
            Box::pin(async move { operators::remove(c, &name).await })
        })
        .await
    }

    /// Dead jobs that died in `[from, to)` (unix ms), newest first.
    pub async fn dead_jobs_between(
        &self,
        from: i64,
        to: i64,
    ) -> Result<Vec<JobSummary>, StoreError> {
        self.read(move |c| Box::pin(lists::dead_between(c, from, to)))
            .await
    }

    pub async fn operators(&self) -> Result<Vec<OperatorView>, StoreError> {
        self.read(|c| Box::pin(operators::list(c))).await
    }

    /// The operator's password hash (a PHC string), if the operator exists.
    pub async fn password_hash(&self, name: String) -> Result<Option<String>, StoreError> {
        self.read(move |c| Box::pin(async move { operators::password_hash(c, &name).await }))
            .await
    }

    pub async fn open_session(
        &self,
        token_hash: Vec<u8>,
        operator: String,
        csrf: String,
        now: i64,
    ) -> Result<(), StoreError> {
        self.write(move |c| {
            let (token, operator, csrf) = (token_hash.clone(), operator.clone(), csrf.clone());
            Box::pin(async move { operators::open_session(c, &token, &operator, &csrf, now).await })
        })
        .await
    }

    /// The session whose token hashes to `token_hash`, while its operator
    /// exists.
    pub async fn session(&self, token_hash: Vec<u8>) -> Result<Option<Session>, StoreError> {
        self.read(move |c| Box::pin(async move { operators::session(c, &token_hash).await }))
            .await
    }

    pub async fn touch_session(&self, token_hash: Vec<u8>, now: i64) -> Result<(), StoreError> {
        self.write(move |c| {
            let token = token_hash.clone();
            Box::pin(async move { operators::touch_session(c, &token, now).await })
        })
        .await
    }

    pub async fn close_session(&self, token_hash: Vec<u8>) -> Result<(), StoreError> {
        self.write(move |c| {
            let token = token_hash.clone();
            Box::pin(async move { operators::close_session(c, &token).await })
        })
        .await
    }

    /// Ends the sessions not seen since `seen_before`.
    pub async fn close_idle_sessions(&self, seen_before: i64) -> Result<usize, StoreError> {
        self.write(move |c| Box::pin(operators::close_idle_sessions(c, seen_before)))
            .await
    }

    /// Records an action before it runs; `end_audit` records how it ended.
    pub async fn begin_audit(&self, entry: NewAudit) -> Result<i64, StoreError> {
        self.write(move |c| {
            let entry = entry.clone();
            Box::pin(async move { audit::begin(c, &entry).await })
        })
        .await
    }

    pub async fn end_audit(
        &self,
        id: i64,
        outcome: AuditOutcome,
        result: String,
        now: i64,
    ) -> Result<(), StoreError> {
        self.write(move |c| {
            let result = result.clone();
            Box::pin(async move { audit::end(c, id, outcome, &result, now).await })
        })
        .await
    }

    /// Newest first.
    pub async fn audit(&self, filter: AuditFilter) -> Result<Vec<AuditView>, StoreError> {
        self.read(move |c| Box::pin(async move { audit::list(c, &filter).await }))
            .await
    }

    /// `false`: acknowledged already.
    pub async fn acknowledge(
        &self,
        item: String,
        actor: String,
        now: i64,
    ) -> Result<bool, StoreError> {
        self.write(move |c| {
            let (item, actor) = (item.clone(), actor.clone());
            Box::pin(async move { operators::acknowledge(c, &item, &actor, now).await })
        })
        .await
    }

    pub async fn is_acknowledged(&self, item: String) -> Result<bool, StoreError> {
        self.read(move |c| Box::pin(async move { operators::is_acknowledged(c, &item).await }))
            .await
    }

    pub async fn record_samples(&self, samples: Vec<Sample>) -> Result<(), StoreError> {
        if samples.is_empty() {
            return Ok(());
        }
        self.write(move |c| {
            let samples = samples.clone();
            Box::pin(async move { operators::record_samples(c, &samples).await })
        })
        .await
    }

    pub async fn prune_samples(&self, before: i64) -> Result<usize, StoreError> {
        self.write(move |c| Box::pin(operators::prune_samples(c, before)))
            .await
    }

    /// Every sample since `since` (unix ms), oldest first.
    pub async fn samples(&self, since: i64) -> Result<Vec<Sample>, StoreError> {
        self.read(move |c| Box::pin(operators::samples(c, since)))
            .await
    }

    /// Decisions recorded after the one with id `id`: how many, and the
    /// newest id (`id` when none).
    pub async fn decisions_after(&self, id: i64) -> Result<(i64, i64), StoreError> {
        self.read(move |c| Box::pin(operators::decisions_after(c, id)))
            .await
    }

    /// Changes found missed per UTC day since `since`.
    pub async fn missed_per_day(&self, since: i64) -> Result<Vec<(i64, i64)>, StoreError> {
        self.read(move |c| Box::pin(lists::missed_per_day(c, since)))
            .await
    }

    /// Runs each of these jobs again that is dead; returns those that were.
    pub async fn retry_jobs(&self, ids: Vec<i64>, now: i64) -> Result<Vec<i64>, StoreError> {
        let retried = self
            .write(move |c| {
                let ids = ids.clone();
                Box::pin(async move {
                    let mut retried = Vec::new();
                    for id in ids {
                        if admin_reads::retry_job(c, id, now).await? {
                            retried.push(id);
                        }
                    }
                    Ok(retried)
                })
            })
            .await?;
        self.jobs_made_due().await;
        Ok(retried)
    }

    /// What needs a person; `limit` bounds each kind but dead jobs and
    /// destinations (disabled, or every attempt failing).
    pub async fn inbox(&self, limit: usize, now: i64) -> Result<Inbox, StoreError> {
        let limit = super::views::clamp(limit);
        let mut inbox = self.read(move |c| Box::pin(reads::inbox(c, limit))).await?;
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
        self.read(move |c| Box::pin(reads::review(c, id))).await
    }

    pub async fn review_of(&self, id: i64) -> Result<Option<ReviewView>, StoreError> {
        self.read(move |c| Box::pin(reads::review_view(c, id)))
            .await
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
        self.read(move |c| {
            Box::pin(async move { timeline::timeline(c, &account, kind, &id).await })
        })
        .await
    }

    /// What `text` names in any of `accounts`: a merchant order, a
    /// payment's order, an intent, an Orders API order, an external
    /// reference's orders.
    pub async fn search(
        &self,
        accounts: Vec<String>,
        text: String,
    ) -> Result<Vec<Found>, StoreError> {
        self.read(move |c| Box::pin(async move { search::search(c, &accounts, &text).await }))
            .await
    }

    pub async fn order_list(
        &self,
        list: OrderList,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<Page<OrderRow>, StoreError> {
        self.read(move |c| {
            Box::pin(async move { lists::order_list(c, list, cursor.as_deref(), limit).await })
        })
        .await
    }

    /// Jobs in one state (dead when none is given), newest first.
    pub async fn job_page(&self, filter: JobFilter) -> Result<Page<JobSummary>, StoreError> {
        self.read(move |c| Box::pin(async move { lists::job_page(c, &filter).await }))
            .await
    }

    pub async fn event_page(&self, filter: EventFilter) -> Result<Page<EventSummary>, StoreError> {
        self.read(move |c| Box::pin(async move { lists::event_page(c, &filter).await }))
            .await
    }

    /// Newest first; `filter.before` is the cursor.
    pub async fn delivery_page(
        &self,
        filter: DeliveryFilter,
    ) -> Result<Page<DeliverySummary>, StoreError> {
        self.read(move |c| Box::pin(async move { lists::delivery_page(c, &filter).await }))
            .await
    }

    /// The times a job died and ran again, oldest first.
    pub async fn job_deaths(&self, job: i64) -> Result<Vec<DeathView>, StoreError> {
        self.read(move |c| Box::pin(lists::job_deaths(c, job)))
            .await
    }

    /// Each delivery attempt of an event, oldest first.
    pub async fn event_attempts(&self, event: String) -> Result<Vec<AttemptView>, StoreError> {
        self.read(move |c| Box::pin(async move { lists::event_attempts(c, &event).await }))
            .await
    }
}

#[cfg(test)]
#[path = "lists_tests.rs"]
mod lists_tests;
