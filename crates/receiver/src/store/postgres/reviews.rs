//! Fraud alerts a person must see, on PostgreSQL (as SQLite's
//! `reviews.rs`): listed, the latest of a key read by the saga, confirmed
//! (the alert's job runs again, allowed to move money) or dismissed (its
//! block lifted, `fraud_alert.dismissed` told, the order looked at again).

use deadpool_postgres::Transaction;
use pointhook_common::clock::rfc3339;
use tokio_postgres::Row;

use super::PgStore;
use super::decisions;
use super::listen::Channel;
use super::prepared::prepared;
use super::work::enqueue;
use crate::domain::verdict::{DecisionRules, DismissedReview};
use crate::domain::{Effects, JobState, MerchantOrderId, Review, ReviewSeen, Work};
use crate::store::StoreError;
use crate::store::model::NewJob;
use crate::store::views::{Answer, ReviewView};

const PENDING: i16 = JobState::Pending as i16;
const RUNNING: i16 = JobState::Running as i16;

pub(super) const COLUMNS: &str = "id, account, state, merchant_order, payment, reason, job_key, created_at, \
                       decided_at, round, alert, delivery_id";

pub(super) fn view(r: &Row) -> Result<ReviewView, StoreError> {
    let state: Review = r.try_get(2)?;
    Ok(ReviewView {
        id: r.try_get(0)?,
        account: r.try_get(1)?,
        state: state.as_str(),
        merchant_order_id: r.try_get(3)?,
        payment_id: r.try_get(4)?,
        reason: r.try_get(5)?,
        job_key: r.try_get(6)?,
        created_at: rfc3339(r.try_get(7)?),
        decided_at: r.try_get::<_, Option<i64>>(8)?.map(rfc3339),
        round: u32::try_from(r.try_get::<_, i32>(9)?).unwrap_or(0),
        alert: r.try_get(10)?,
        delivery_id: r.try_get(11)?,
    })
}

pub async fn list(
    tx: &Transaction<'_>,
    state: Option<Review>,
    before: i64,
    limit: i64,
) -> Result<Vec<ReviewView>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM fraud_reviews WHERE ($1::smallint IS NULL OR state = $1)
           AND id < $3
         ORDER BY id DESC LIMIT $2"
    );
    tx.query(&prepared(tx, &sql).await?, &[&state, &limit, &before])
        .await?
        .iter()
        .map(view)
        .collect()
}

/// The latest review of the alert behind `job_key`, if there is one.
pub async fn latest(
    tx: &Transaction<'_>,
    account: &str,
    job_key: &str,
) -> Result<Option<ReviewSeen>, StoreError> {
    let sql = "SELECT state, round, delivery_id FROM fraud_reviews
               WHERE account = $1 AND job_key = $2 ORDER BY round DESC LIMIT 1";
    tx.query_opt(&prepared(tx, sql).await?, &[&account, &job_key])
        .await?
        .map(|r| {
            Ok(ReviewSeen {
                state: r.try_get(0)?,
                round: u32::try_from(r.try_get::<_, i32>(1)?).unwrap_or(0),
                delivery_id: r.try_get(2)?,
            })
        })
        .transpose()
}

/// Marks a held review decided (locking it); `Err` holds the answer when it
/// is not held any more.
async fn decide(
    tx: &Transaction<'_>,
    id: i64,
    to: Review,
    now: i64,
) -> Result<Result<ReviewView, Answer>, StoreError> {
    // The review's hold is locked, then read through the view.
    let lock = "SELECT id FROM holds WHERE id = $1 FOR UPDATE";
    tx.query_opt(&prepared(tx, lock).await?, &[&id]).await?;
    let sql = format!("SELECT {COLUMNS} FROM fraud_reviews WHERE id = $1");
    let Some(row) = tx.query_opt(&prepared(tx, &sql).await?, &[&id]).await? else {
        return Ok(Err(Answer::NotFound));
    };
    let current = view(&row)?;
    if current.state != Review::Held.as_str() {
        return Ok(Err(Answer::AlreadyDecided(current.state)));
    }
    use crate::store::reviews::{DECIDE, KIND, hold_state};
    crate::store::sql::Conn::PgTx(tx)
        .execute(
            &DECIDE,
            &[
                &id,
                &hold_state(to),
                &now,
                &KIND,
                &crate::domain::HoldState::Held,
            ],
        )
        .await?;
    Ok(Ok(ReviewView {
        state: to.as_str(),
        decided_at: Some(rfc3339(now)),
        ..current
    }))
}

/// A person confirms: the alert's job runs again, now allowed to move money.
pub async fn confirm(tx: &Transaction<'_>, id: i64, now: i64) -> Result<Answer, StoreError> {
    let review = match decide(tx, id, Review::Confirmed, now).await? {
        Ok(r) => r,
        Err(answer) => return Ok(answer),
    };
    let sql = format!(
        "UPDATE jobs SET
             rerun = CASE WHEN state = {RUNNING} THEN true ELSE rerun END,
             attempts = CASE WHEN state = {RUNNING} THEN attempts ELSE 0 END,
             state = CASE WHEN state = {RUNNING} THEN state ELSE {PENDING} END,
             run_at = $3, last_error = NULL, updated_at = $3
         WHERE account = $1 AND job_key = $2"
    );
    tx.execute(
        &prepared(tx, &sql).await?,
        &[&review.account, &review.job_key, &now],
    )
    .await?;
    Ok(Answer::Done(Box::new(review)))
}

/// A person dismisses: the alert's block goes, the dismissal is told, and
/// the merchant order is fetched again.
pub async fn dismiss(
    tx: &Transaction<'_>,
    id: i64,
    now: i64,
    rules: &DecisionRules,
) -> Result<(Answer, Vec<String>), StoreError> {
    let review = match decide(tx, id, Review::Dismissed, now).await? {
        Ok(r) => r,
        Err(answer) => return Ok((answer, Vec::new())),
    };
    let decision = (rules.dismissal)(&DismissedReview {
        review_id: review.id,
        alert: review.alert.clone(),
        merchant_order: review.merchant_order_id.clone(),
        payment: review.payment_id.clone(),
        reason: review.reason.clone(),
    });
    let emitted = decisions::apply(
        tx,
        &review.account,
        None,
        &Effects::one(decision),
        now,
        rules,
        None,
    )
    .await?;
    if let Some(order) = review
        .merchant_order_id
        .as_deref()
        .and_then(|o| MerchantOrderId::parse(o).ok())
    {
        decisions::lift_block(tx, &review.account, order.as_str(), &review.alert, now).await?;
        let work = Work::MerchantOrder { id: order };
        enqueue(tx, &review.account, &NewJob::for_work(&work), now).await?;
    }
    Ok((Answer::Done(Box::new(review)), emitted))
}

/// How an order stands for one alert: released, and whether this alert's
/// block stands.
pub async fn block_state(
    tx: &Transaction<'_>,
    account: &str,
    order: &str,
    alert: &str,
) -> Result<(bool, bool), StoreError> {
    let sql = "SELECT coalesce((SELECT released_at IS NOT NULL FROM orders
                                WHERE account = $1 AND order_id = $2), false),
                      EXISTS (SELECT 1 FROM order_blocks
                              WHERE account = $1 AND order_id = $2 AND alert = $3
                                AND lifted_at IS NULL)";
    let row = tx
        .query_one(&prepared(tx, sql).await?, &[&account, &order, &alert])
        .await?;
    Ok((row.try_get(0)?, row.try_get(1)?))
}

impl PgStore {
    pub async fn block_state(
        &self,
        account: String,
        order: String,
        alert: String,
    ) -> Result<(bool, bool), StoreError> {
        let mut c = self.client().await?;
        let tx = c.transaction().await?;
        block_state(&tx, &account, &order, &alert).await
    }

    pub async fn latest_review(
        &self,
        account: String,
        job_key: String,
    ) -> Result<Option<ReviewSeen>, StoreError> {
        let mut c = self.client().await?;
        let tx = c.transaction().await?;
        latest(&tx, &account, &job_key).await
    }

    pub async fn order_reviews(
        &self,
        account: String,
        order: String,
        payment: Option<String>,
        since: i64,
    ) -> Result<crate::domain::OrderReviews, StoreError> {
        let mut c = self.client().await?;
        let tx = c.transaction().await?;
        super::review_join::order_reviews(&tx, &account, &order, payment.as_deref(), since).await
    }

    pub async fn reviews(
        &self,
        state: Option<Review>,
        before: i64,
        limit: i64,
    ) -> Result<Vec<ReviewView>, StoreError> {
        let mut c = self.client().await?;
        let tx = c.transaction().await?;
        list(&tx, state, before, limit).await
    }

    pub async fn confirm_review(&self, id: i64, now: i64) -> Result<Answer, StoreError> {
        let mut c = self.client().await?;
        let tx = c.transaction().await?;
        let answer = confirm(&tx, id, now).await?;
        tx.commit().await?;
        self.wake(Channel::Jobs).await;
        Ok(answer)
    }

    pub async fn dismiss_review(
        &self,
        id: i64,
        now: i64,
        rules: DecisionRules,
    ) -> Result<(Answer, Vec<String>), StoreError> {
        let mut c = self.client().await?;
        let tx = c.transaction().await?;
        let (answer, emitted) = dismiss(&tx, id, now, &rules).await?;
        tx.commit().await?;
        self.wake(Channel::Jobs).await;
        self.wake_outboxes(&emitted, &rules).await;
        Ok((answer, emitted))
    }
}
