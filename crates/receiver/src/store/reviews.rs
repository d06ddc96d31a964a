//! Fraud reviews: the latest of an alert, the held list, and a person's
//! confirmation or dismissal (which wake the worker and the outbox).

use super::views::{Answer, ReviewView};
use super::{Backend, MAX_LIMIT, Store, StoreError};
use crate::domain::{OrderReviews, Review, ReviewSeen};

impl Store {
    /// The latest review of the alert behind a job, if there is one.
    pub async fn latest_review(
        &self,
        account: String,
        job_key: String,
    ) -> Result<Option<ReviewSeen>, StoreError> {
        on!(self, b => b.latest_review(account, job_key).await)
    }

    /// How `order` stands with the reviews: the key of a review held for
    /// it and `payment` (any, when `None`), and how many reviews the
    /// account opened since `since` (unix ms).
    pub async fn order_reviews(
        &self,
        account: String,
        order: String,
        payment: Option<String>,
        since: i64,
    ) -> Result<OrderReviews, StoreError> {
        on!(self, b => b.order_reviews(account, order, payment, since).await)
    }

    /// Fraud alerts held for a person, newest first (`None`: every state),
    /// older than the review `before` when given (the next page).
    pub async fn reviews(
        &self,
        state: Option<Review>,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<ReviewView>, StoreError> {
        let limit = limit.clamp(1, MAX_LIMIT) as i64;
        let before = before.unwrap_or(i64::MAX);
        on!(self, b => b.reviews(state, before, limit).await)
    }

    /// A person confirms a held alert: its job runs the cancel or refund.
    pub async fn confirm_review(&self, id: i64, now: i64) -> Result<Answer, StoreError> {
        let answer = on!(self, b => b.confirm_review(id, now).await)?;
        self.inner.jobs_ready.notify_one();
        Ok(answer)
    }

    /// A person dismisses a held alert: the block goes, the order is
    /// looked at again.
    pub async fn dismiss_review(&self, id: i64, now: i64) -> Result<Answer, StoreError> {
        let rules = self.inner.rules.clone();
        let (answer, emitted) = on!(self, b => b.dismiss_review(id, now, rules).await)?;
        if !emitted.is_empty() {
            self.inner.events_ready.notify_one();
        }
        self.inner.jobs_ready.notify_one();
        Ok(answer)
    }
}
