//! An order as the admin API and `orders show` read it: its state, the
//! notifications, API calls, decisions (with their reasons) and events
//! about it.

use deadpool_postgres::Client;

use super::reads::{
    DELIVERY_COLUMNS, EVENT_COLUMNS, delivery_summary, event_summary, fetches_of, ts,
};
use crate::store::StoreError;
use crate::store::console_views::event_data;
use crate::store::views::{DecisionView, OrderView, order_kind};
use pointhook_common::clock::rfc3339;

pub async fn get_order(
    c: &Client,
    account: &str,
    order: &str,
) -> Result<Option<OrderView>, StoreError> {
    // An order of the Orders API (`ORD…`) or a merchant order: the same
    // history, under its own subject and endpoint.
    let kind = order_kind(order);
    let subject = format!("{kind}:{order}");
    let state = c
        .query_opt(
            "SELECT total_amount, paid_amount, released_at, blocked_at, at_risk_at FROM orders
             WHERE account = $1 AND order_id = $2",
            &[&account, &order],
        )
        .await?;
    // The jobs that touched the order: its own, those that fetched it, and
    // those that decided about it (a payment's, a fraud alert's).
    let related = format!(
        "SELECT id FROM jobs WHERE account = $1 AND job_key = '{kind}:' || $2
         UNION SELECT job_id FROM fetches WHERE account = $1 AND endpoint = '{kind}' AND resource_id = $2
         UNION SELECT job_id FROM decisions WHERE account = $1 AND subject = '{kind}:' || $2"
    );
    let deliveries = c
        .query(
            &format!(
                "SELECT {DELIVERY_COLUMNS} FROM deliveries d
                 WHERE d.account = $1 AND (d.resource_id = $2 OR EXISTS (
                     SELECT 1 FROM jobs j WHERE j.account = d.account AND j.job_key = d.job_key
                     AND j.id IN ({related})))
                 ORDER BY d.id DESC LIMIT 200"
            ),
            &[&account, &order],
        )
        .await?
        .iter()
        .map(delivery_summary)
        .collect::<Result<Vec<_>, _>>()?;
    let fetches = fetches_of(c, &format!("job_id IN ({related})"), &[&account, &order]).await?;
    let events = c
        .query(
            &format!(
                "SELECT {EVENT_COLUMNS} FROM events
                 WHERE account = $1 AND (subject = $3 OR job_id IN ({related}))
                 ORDER BY created_at, seq"
            ),
            &[&account, &order, &subject],
        )
        .await?
        .iter()
        .map(event_summary)
        .collect::<Result<Vec<_>, _>>()?;
    if state.is_none() && deliveries.is_empty() && events.is_empty() {
        return Ok(None);
    }
    let decision = c
        .query_opt(
            "SELECT event_type FROM decisions WHERE account = $1 AND subject = $2 AND event_id IS NOT NULL
             ORDER BY id DESC LIMIT 1",
            &[&account, &subject],
        )
        .await?
        .map(|r| r.try_get::<_, String>(0))
        .transpose()?;
    let (total, paid, released, blocked, at_risk) = match &state {
        Some(r) => (
            r.try_get(0)?,
            r.try_get(1)?,
            r.try_get::<_, Option<i64>>(2)?,
            r.try_get::<_, Option<i64>>(3)?,
            r.try_get::<_, Option<i64>>(4)?,
        ),
        None => Default::default(),
    };
    let decisions = decisions(c, account, &subject).await?;
    Ok(Some(OrderView {
        account: account.to_string(),
        kind,
        merchant_order_id: order.to_string(),
        total_amount: total,
        paid_amount: paid,
        decision,
        released_at: ts(released),
        blocked: blocked.is_some(),
        blocked_at: ts(blocked),
        at_risk_at: ts(at_risk),
        deliveries,
        fetches,
        decisions,
        events,
    }))
}

/// The decisions about `subject`, oldest first, each with its reason.
pub(super) async fn decisions(
    c: &Client,
    account: &str,
    subject: &str,
) -> Result<Vec<DecisionView>, StoreError> {
    c.query(
        "SELECT d.id, d.subject, d.key, d.event_type, d.event_id, d.job_id, d.created_at, e.body, d.reason
             FROM decisions d LEFT JOIN events e ON e.id = d.event_id
             WHERE d.account = $1 AND d.subject = $2 ORDER BY d.id LIMIT 200",
        &[&account, &subject],
    )
    .await?
    .iter()
    .map(|r| {
        Ok(DecisionView {
            id: r.try_get(0)?,
            subject: r.try_get(1)?,
            key: r.try_get(2)?,
            event_type: r.try_get(3)?,
            event_id: r.try_get(4)?,
            job_id: r.try_get(5)?,
            created_at: rfc3339(r.try_get(6)?),
            data: event_data(r.try_get(7)?),
            reason: r.try_get(8)?,
        })
    })
    .collect()
}
