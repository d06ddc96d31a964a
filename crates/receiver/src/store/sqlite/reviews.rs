//! Fraud alerts a person must see: held ones, listed,
//! confirmed (the alert's job runs again and the cancel or refund goes
//! ahead) or dismissed (the alert's block is lifted, `fraud_alert.dismissed`
//! is told, and the order's release rule runs again); rejected ones, kept
//! to be seen. Each review is one round of its alert's key.

use pointhook_common::clock::rfc3339;
use rusqlite::{Connection, OptionalExtension, params};

use super::decisions;
use super::deliveries;
use crate::domain::verdict::{DecisionRules, DismissedReview};
use crate::domain::{JobState, MerchantOrderId, Review, ReviewSeen, Work};
use crate::store::model::NewJob;
use crate::store::views::{Answer, ReviewView};

const COLUMNS: &str = "id, account, state, merchant_order, payment, reason, job_key, created_at, \
                       decided_at, round, alert, delivery_id";

fn view(r: &rusqlite::Row<'_>) -> rusqlite::Result<ReviewView> {
    let state: Review = r.get(2)?;
    Ok(ReviewView {
        id: r.get(0)?,
        account: r.get(1)?,
        state: state.as_str(),
        round: r.get(9)?,
        alert: r.get(10)?,
        delivery_id: r.get(11)?,
        merchant_order_id: r.get(3)?,
        payment_id: r.get(4)?,
        reason: r.get(5)?,
        job_key: r.get(6)?,
        created_at: rfc3339(r.get(7)?),
        decided_at: r.get::<_, Option<i64>>(8)?.map(rfc3339),
    })
}

/// Newest first; `None`: every state.
pub(super) fn list(
    conn: &Connection,
    state: Option<Review>,
    before: i64,
    limit: i64,
) -> rusqlite::Result<Vec<ReviewView>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM fraud_reviews WHERE (?1 IS NULL OR state = ?1) AND id < ?3
         ORDER BY id DESC LIMIT ?2"
    ))?
    .query_map(params![state, limit, before], view)?
    .collect()
}

pub(super) fn get(conn: &Connection, id: i64) -> rusqlite::Result<Option<ReviewView>> {
    conn.query_row(
        &format!("SELECT {COLUMNS} FROM fraud_reviews WHERE id = ?1"),
        [id],
        view,
    )
    .optional()
}

/// The latest review of the alert behind `job_key`, if there is one.
pub(super) fn latest(
    conn: &Connection,
    account: &str,
    job_key: &str,
) -> rusqlite::Result<Option<ReviewSeen>> {
    conn.prepare_cached(
        "SELECT state, round, delivery_id FROM fraud_reviews
         WHERE account = ?1 AND job_key = ?2 ORDER BY round DESC LIMIT 1",
    )?
    .query_row(params![account, job_key], |r| {
        Ok(ReviewSeen {
            state: r.get(0)?,
            round: r.get(1)?,
            delivery_id: r.get(2)?,
        })
    })
    .optional()
}

/// Marks the review decided; `Err` when it is not held any more.
fn decide(
    conn: &Connection,
    id: i64,
    to: Review,
    now: i64,
) -> rusqlite::Result<Result<ReviewView, Answer>> {
    let Some(current) = get(conn, id)? else {
        return Ok(Err(Answer::NotFound));
    };
    if current.state != Review::Held.as_str() {
        return Ok(Err(Answer::AlreadyDecided(current.state)));
    }
    use crate::store::reviews::{DECIDE, KIND, hold_state};
    use crate::store::sql::Text;
    conn.prepare_cached(&DECIDE.sqlite())?.execute(params![
        id,
        hold_state(to),
        now,
        KIND,
        crate::domain::HoldState::Held
    ])?;
    Ok(Ok(ReviewView {
        state: to.as_str(),
        decided_at: Some(rfc3339(now)),
        ..current
    }))
}

/// A person confirms the alert: its job runs again, now allowed to cancel
/// or refund.
pub(super) fn confirm(conn: &Connection, id: i64, now: i64) -> rusqlite::Result<Answer> {
    let review = match decide(conn, id, Review::Confirmed, now)? {
        Ok(r) => r,
        Err(answer) => return Ok(answer),
    };
    conn.execute(
        "UPDATE jobs SET
             rerun = CASE WHEN state = ?3 THEN 1 ELSE rerun END,
             attempts = CASE WHEN state = ?3 THEN attempts ELSE 0 END,
             state = CASE WHEN state = ?3 THEN state ELSE ?4 END,
             run_at = ?5, last_error = NULL, updated_at = ?5
         WHERE account = ?1 AND job_key = ?2",
        params![
            review.account,
            review.job_key,
            JobState::Running,
            JobState::Pending,
            now
        ],
    )?;
    Ok(Answer::Done(Box::new(review)))
}

/// A person dismisses the alert: its block is lifted (the order stays
/// blocked if another alert's block stands), `fraud_alert.dismissed` is
/// told, and the merchant order is fetched again so the release rule runs.
pub(super) fn dismiss(
    conn: &Connection,
    id: i64,
    now: i64,
    rules: &DecisionRules,
) -> rusqlite::Result<(Answer, Vec<String>)> {
    let review = match decide(conn, id, Review::Dismissed, now)? {
        Ok(r) => r,
        Err(answer) => return Ok((answer, Vec::new())),
    };
    let order = review
        .merchant_order_id
        .as_deref()
        .and_then(|o| MerchantOrderId::parse(o).ok());
    let mut emitted = Vec::new();
    let decision = (rules.dismissal)(&DismissedReview {
        review_id: review.id,
        alert: review.alert.clone(),
        merchant_order: review.merchant_order_id.clone(),
        payment: review.payment_id.clone(),
        reason: review.reason.clone(),
    });
    if let Some(e) = decisions::decide(conn, &review.account, None, &decision, now, rules)? {
        emitted.push(e);
    }
    if let Some(order) = order {
        decisions::lift_block(conn, &review.account, order.as_str(), &review.alert, now)?;
        let work = Work::MerchantOrder { id: order };
        deliveries::enqueue(conn, &review.account, &NewJob::for_work(&work), None, now)?;
    }
    Ok((Answer::Done(Box::new(review)), emitted))
}
