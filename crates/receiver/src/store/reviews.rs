//! Fraud reviews: the latest of an alert, the held list, and a person's
//! confirmation or dismissal (which wake the worker and the outbox).

use super::model::HoldDone;
use super::sql::{Conn, Sql, Text, sql};
use super::views::{Answer, ReviewView};
use super::{Backend, MAX_LIMIT, Store, StoreError};
use crate::domain::{HoldAnswer, HoldState, OrderReviews, Review, ReviewMark, ReviewSeen};

impl Store {
    /// A person answers a fraud review through the holds' one route:
    /// approving confirms it, rejecting dismisses it; the hold then names
    /// who decided.
    pub(super) async fn answer_review(
        &self,
        id: i64,
        answer: HoldAnswer,
        by: String,
        now: i64,
    ) -> Result<HoldDone, StoreError> {
        let answered = match answer {
            HoldAnswer::Approve => self.confirm_review(id, by, now).await?,
            HoldAnswer::Reject => self.dismiss_review(id, by, now).await?,
        };
        Ok(match (answered, self.hold(id).await?) {
            (_, None) => HoldDone::NotFound,
            (Answer::Done(_), Some(h)) => HoldDone::Done(Box::new(h)),
            (_, Some(h)) => HoldDone::AlreadyDecided(h.state),
        })
    }

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

    /// A person (`by`) confirms a held alert: its job runs the cancel or
    /// refund.
    pub async fn confirm_review(
        &self,
        id: i64,
        by: String,
        now: i64,
    ) -> Result<Answer, StoreError> {
        let answer = on!(self, b => b.confirm_review(id, now).await)?;
        self.decided_by(&answer, id, by).await?;
        self.inner.jobs_ready.notify_one();
        Ok(answer)
    }

    /// A person (`by`) dismisses a held alert: the block goes, the order
    /// is looked at again.
    pub async fn dismiss_review(
        &self,
        id: i64,
        by: String,
        now: i64,
    ) -> Result<Answer, StoreError> {
        let rules = self.inner.rules.clone();
        let (answer, emitted) = on!(self, b => b.dismiss_review(id, now, rules).await)?;
        self.decided_by(&answer, id, by).await?;
        if !emitted.is_empty() {
            self.inner.events_ready.notify_one();
        }
        self.inner.jobs_ready.notify_one();
        Ok(answer)
    }

    /// The review's hold names who decided it, whichever door they came
    /// through (the review's buttons, the holds' route, the API, the CLI).
    async fn decided_by(&self, answer: &Answer, id: i64, by: String) -> Result<(), StoreError> {
        if !matches!(answer, Answer::Done(_)) {
            return Ok(());
        }
        self.write(move |c| {
            let by = by.clone();
            Box::pin(async move {
                c.execute(
                    sql!("UPDATE holds SET decided_by = $2 WHERE id = $1"),
                    &[&id, &by],
                )
                .await
            })
        })
        .await?;
        Ok(())
    }
}

/// The kind of hold a fraud review is (`holds.kind`). A review is kept in
/// `holds` under its alert's subject for its round (`fraud_alert:X` or
/// `fraud_alert:X#n`), with what it is about as its evidence (the job's key,
/// the round, the merchant order, the payment, the delivery); the
/// `fraud_reviews` view reads it back as the review columns.
pub const KIND: &str = crate::rules::holds::FRAUD_REVIEW.name;

/// A review's state as a hold's: confirmed is approved, dismissed is
/// rejected, and an alert the API did not confirm (nothing for a person
/// to decide) is closed as expired. The numbers are the same, so the view
/// passes them through.
pub(super) fn hold_state(r: Review) -> HoldState {
    match r {
        Review::Held => HoldState::Held,
        Review::Confirmed => HoldState::Approved,
        Review::Dismissed => HoldState::Rejected,
        Review::Rejected => HoldState::Expired,
    }
}

static EVIDENCE: Sql =
    Sql::new("SELECT evidence FROM holds WHERE account = $1 AND kind = $2 AND subject = $3");

/// A review of a round: placed, or (while held or rejected) replaced by
/// the later word on it; a decided review is never changed.
static UPSERT: Sql = Sql::new(
    "INSERT INTO holds (account, kind, subject, state, reason, evidence, job_id, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     ON CONFLICT (account, kind, subject) DO UPDATE SET
         state = excluded.state, reason = excluded.reason, evidence = excluded.evidence
     WHERE holds.state IN ($9, $10)",
);

/// The review's evidence; what the earlier word on the round named is kept
/// where this one names nothing.
fn evidence(r: &ReviewMark, before: Option<String>) -> String {
    let before: serde_json::Value = before
        .and_then(|b| serde_json::from_str(&b).ok())
        .unwrap_or_else(|| serde_json::json!({}));
    let kept = |new: Option<&str>, key: &str| {
        new.map(str::to_string)
            .or_else(|| before[key].as_str().map(str::to_string))
    };
    serde_json::json!({
        "job_key": r.job_key,
        "round": r.round,
        "merchant_order": kept(r.merchant_order.as_ref().map(|o| o.as_str()), "merchant_order"),
        "payment": kept(r.payment.as_ref().map(|p| p.as_str()), "payment"),
        "delivery_id": r.delivery_id,
    })
    .to_string()
}

/// A review's mark on SQLite's writer connection.
pub(super) fn place_sqlite(
    conn: &rusqlite::Connection,
    account: &str,
    r: &ReviewMark,
    job_id: Option<i64>,
    now: i64,
) -> rusqlite::Result<()> {
    use rusqlite::OptionalExtension;
    let before: Option<String> = conn
        .prepare_cached(&EVIDENCE.sqlite())?
        .query_row(rusqlite::params![account, KIND, r.alert], |row| row.get(0))
        .optional()?;
    conn.prepare_cached(&UPSERT.sqlite())?
        .execute(rusqlite::params![
            account,
            KIND,
            r.alert,
            hold_state(r.state),
            r.reason,
            evidence(r, before),
            job_id,
            now,
            HoldState::Held,
            HoldState::Expired,
        ])?;
    Ok(())
}

/// A review's mark in a PostgreSQL transaction.
pub(super) async fn place_pg(
    tx: &deadpool_postgres::Transaction<'_>,
    account: &str,
    r: &ReviewMark,
    job_id: Option<i64>,
    now: i64,
) -> Result<(), StoreError> {
    let c = Conn::PgTx(tx);
    let before: Option<String> = c
        .query_opt(&EVIDENCE, &[&account, &KIND, &r.alert], |row| row.get(0))
        .await?;
    c.execute(
        &UPSERT,
        &[
            &account,
            &KIND,
            &r.alert,
            &hold_state(r.state),
            &r.reason,
            &evidence(r, before),
            &job_id,
            &now,
            &HoldState::Held,
            &HoldState::Expired,
        ],
    )
    .await?;
    Ok(())
}

/// Marks a held review decided ($1 id, $2 `hold_state`, $3 when, $4
/// `KIND`, $5 held); it changes nothing when the review is not held.
pub(super) static DECIDE: Sql = Sql::new(
    "UPDATE holds SET state = $2, decided_at = $3 WHERE id = $1 AND kind = $4 AND state = $5",
);
