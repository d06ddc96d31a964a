//! What the operator console reads, on either backend: the inbox and a
//! fraud review with its evidence, each by an index and as far as it
//! shows (the search is in `search.rs`, the paged lists in `lists.rs`).

use serde_json::Value;

use crate::domain::{EventState, JobState, Review};
use crate::store::StoreError;
use crate::store::admin_reads::{
    DELIVERY_COLUMNS, JOB_COLUMNS, delivery_summary, event_order, job_summary, list_events,
};
use crate::store::console_views::*;
use crate::store::sql::{Conn, Row, sql};
use crate::store::views::{DeliverySummary, ReviewView};
use pointhook_common::clock::rfc3339;

/// Dead jobs the inbox reads at most (it groups them by cause).
const DEAD_JOBS: i64 = 5000;

/// A fraud review's columns, as `review_row` reads them (the same
/// columns and meaning as the reviews' own module reads).
pub(super) const REVIEW_COLUMNS: &str = "id, account, state, merchant_order, payment, reason, \
     job_key, created_at, decided_at, round, alert, delivery_id";

pub(super) fn review_row(r: &Row<'_>) -> Result<ReviewView, StoreError> {
    let state: Review = r.get(2)?;
    Ok(ReviewView {
        id: r.get(0)?,
        account: r.get(1)?,
        state: state.as_str(),
        merchant_order_id: r.get(3)?,
        payment_id: r.get(4)?,
        reason: r.get(5)?,
        job_key: r.get(6)?,
        created_at: rfc3339(r.get(7)?),
        decided_at: r.get::<Option<i64>>(8)?.map(rfc3339),
        round: u32::try_from(r.get::<i64>(9)?).unwrap_or(0),
        alert: r.get(10)?,
        delivery_id: r.get(11)?,
    })
}

pub(super) async fn inbox(c: &Conn<'_>, limit: i64) -> Result<Inbox, StoreError> {
    let held = c
        .query(
            &format!(
                "SELECT {REVIEW_COLUMNS} FROM fraud_reviews WHERE state = $1
                 ORDER BY id DESC LIMIT $2"
            ),
            &[&Review::Held, &limit],
            review_row,
        )
        .await?;
    let mut reviews = Vec::with_capacity(held.len());
    for r in held {
        reviews.push(detail(c, r).await?);
    }
    let index = c.indexed_by("decisions_after_release");
    let after_release = c
        .query(
            &format!(
                "SELECT d.id, d.account, d.subject_id, d.created_at, e.body
                 FROM decisions d {index}
                 LEFT JOIN events e ON e.id = d.event_id
                 WHERE d.event_type = 'order.fraud_after_release' AND NOT EXISTS (
                     SELECT 1 FROM acknowledgements a WHERE a.item = 'after_release:' || d.id)
                 ORDER BY d.id DESC LIMIT $1"
            ),
            &[&limit],
            |r| {
                Ok(Flagged {
                    item: crate::domain::ItemKey::AfterRelease(r.get(0)?).to_string(),
                    account: r.get(1)?,
                    order_id: r.get(2)?,
                    at: rfc3339(r.get(3)?),
                    data: event_data(r.get(4)?),
                })
            },
        )
        .await?;
    let (index, seq) = (c.indexed_by("orders_at_risk"), event_order(c));
    let at_risk = c
        .query(
            &format!(
                "SELECT o.account, o.order_id, o.at_risk_at,
                        (SELECT e.body FROM events e WHERE e.account = o.account
                           AND e.subject = 'merchant_order:' || o.order_id
                           AND e.type = 'order.at_risk'
                         ORDER BY e.{seq} DESC LIMIT 1)
                 FROM orders o {index}
                 WHERE o.at_risk_at IS NOT NULL AND NOT EXISTS (
                     SELECT 1 FROM acknowledgements a
                     WHERE a.item = 'at_risk:' || o.account || ':' || o.order_id)
                 ORDER BY o.at_risk_at DESC LIMIT $1"
            ),
            &[&limit],
            |r| {
                let (account, order): (String, String) = (r.get(0)?, r.get(1)?);
                Ok(Flagged {
                    item: crate::domain::ItemKey::AtRisk {
                        account: account.clone(),
                        order: order.clone(),
                    }
                    .to_string(),
                    account,
                    order_id: order,
                    at: rfc3339(r.get(2)?),
                    data: event_data(r.get(3)?),
                })
            },
        )
        .await?;
    let dead_jobs = c
        .query(
            &format!(
                "SELECT {JOB_COLUMNS} FROM jobs WHERE state = $1
                 ORDER BY run_at DESC, id DESC LIMIT $2"
            ),
            &[&JobState::Dead, &DEAD_JOBS],
            job_summary,
        )
        .await?;
    let dead_events = list_events(c, None, Some(EventState::Dead), limit as usize).await?;
    let index = c.indexed_by("deliveries_missed");
    let found = c
        .query(
            &format!(
                "SELECT {DELIVERY_COLUMNS} FROM deliveries {index}
                 WHERE kind = 4 AND NOT EXISTS (
                     SELECT 1 FROM acknowledgements a WHERE a.item = 'missed:' || deliveries.id)
                 ORDER BY received_at DESC LIMIT $1"
            ),
            &[&limit],
            delivery_summary,
        )
        .await?;
    let mut missed = Vec::with_capacity(found.len());
    for d in found {
        let job_state = job_state(c, &d).await?;
        missed.push(Missed {
            delivery: d,
            job_state,
        });
    }
    Ok(Inbox {
        reviews,
        after_release,
        at_risk,
        dead_jobs,
        dead_events,
        missed,
        // `Store::inbox` adds them, from its destinations' read.
        destinations: Vec::new(),
    })
}

async fn job_state(c: &Conn<'_>, d: &DeliverySummary) -> Result<Option<&'static str>, StoreError> {
    let Some(key) = &d.job_key else {
        return Ok(None);
    };
    Ok(c.query_opt(
        sql!("SELECT state FROM jobs WHERE account = $1 AND job_key = $2"),
        &[&d.account, key],
        |r| r.get::<JobState>(0),
    )
    .await?
    .map(JobState::as_str))
}

pub(super) async fn review_view(c: &Conn<'_>, id: i64) -> Result<Option<ReviewView>, StoreError> {
    c.query_opt(
        &format!("SELECT {REVIEW_COLUMNS} FROM fraud_reviews WHERE id = $1"),
        &[&id],
        review_row,
    )
    .await
}

pub(super) async fn review(c: &Conn<'_>, id: i64) -> Result<Option<ReviewDetail>, StoreError> {
    match review_view(c, id).await? {
        Some(r) => Ok(Some(detail(c, r).await?)),
        None => Ok(None),
    }
}

async fn detail(c: &Conn<'_>, review: ReviewView) -> Result<ReviewDetail, StoreError> {
    let notifications = alert_deliveries(c, &review.account, &review.job_key).await?;
    let payment = match &review.payment_id {
        Some(p) => payment_seen(c, &review.account, p, &review.alert).await?,
        None => None,
    };
    let order = match &review.merchant_order_id {
        Some(o) => order_state(c, &review.account, o).await?,
        None => None,
    };
    Ok(ReviewDetail {
        review,
        notifications,
        payment,
        order,
    })
}

/// A fraud alert's notifications, by the index kept for them on SQLite
/// (PostgreSQL's planner takes its job-key index unasked).
pub(super) async fn alert_deliveries(
    c: &Conn<'_>,
    account: &str,
    job_key: &str,
) -> Result<Vec<DeliverySummary>, StoreError> {
    let index = c.indexed_by("deliveries_fraud");
    c.query(
        &format!(
            "SELECT {DELIVERY_COLUMNS} FROM deliveries {index}
             WHERE account = $1 AND job_key = $2 AND substr(job_key, 1, 6) = 'fraud:'
             ORDER BY id LIMIT 100"
        ),
        &[&account, &job_key],
        delivery_summary,
    )
    .await
}

/// The payment as the latest event about it told it.
/// The payment as the latest event about it told it, or as the alert's
/// hold read it (`fraud_alert.unverified` keeps its status and amount),
/// whichever is newer.
async fn payment_seen(
    c: &Conn<'_>,
    account: &str,
    payment: &str,
    alert: &str,
) -> Result<Option<PaymentSeen>, StoreError> {
    let seq = event_order(c);
    let row: Option<(String, i64)> = c
        .query_opt(
            &format!(
                "SELECT body, created_at FROM events
                 WHERE account = $1
                   AND ((subject = 'payment:' || $2
                         AND type IN ('payment.updated', 'payment.cancelled', 'payment.refunded'))
                        OR (subject = $3 AND type = 'fraud_alert.unverified'))
                 ORDER BY {seq} DESC LIMIT 1"
            ),
            &[&account, &payment, &alert],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .await?;
    Ok(row.and_then(|(body, at)| {
        let data = event_data(Some(body))?;
        Some(PaymentSeen {
            status: data
                .get("status")
                .or_else(|| data.get("payment_status"))?
                .as_str()?
                .to_string(),
            amount: data
                .get("amount")
                .and_then(Value::as_str)
                .map(str::to_string),
            currency: data
                .get("currency_id")
                .and_then(Value::as_str)
                .map(str::to_string),
            at: rfc3339(at),
        })
    }))
}

pub(super) async fn order_state(
    c: &Conn<'_>,
    account: &str,
    order: &str,
) -> Result<Option<OrderState>, StoreError> {
    c.query_opt(
        sql!(
            "SELECT total_amount, paid_amount, released_at, blocked_at, at_risk_at FROM orders
             WHERE account = $1 AND order_id = $2"
        ),
        &[&account, &order],
        |r| {
            Ok(OrderState {
                total_amount: r.get(0)?,
                paid_amount: r.get(1)?,
                released_at: r.get::<Option<i64>>(2)?.map(rfc3339),
                blocked_at: r.get::<Option<i64>>(3)?.map(rfc3339),
                at_risk_at: r.get::<Option<i64>>(4)?.map(rfc3339),
            })
        },
    )
    .await
}
