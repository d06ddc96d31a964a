//! An order as the admin API and `orders show` read it, on either
//! backend: its state, the notifications, API calls, decisions (with their
//! reasons) and events about it.

use super::StoreError;
use super::admin_reads::{DELIVERY_COLUMNS, delivery_summary, event_order, fetches_of, ts};
use super::console_views::event_data;
use super::event_rows::{EVENT_COLUMNS, event_summary};
use super::sql::{Conn, sql};
use super::views::{DecisionView, OrderView, order_kind};
use pointhook_common::clock::rfc3339;

type StateRow = (
    Option<String>,
    Option<String>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
);

/// A merchant order's state and its history. `None` when nothing is known
/// of it.
pub(super) async fn get_order(
    c: &Conn<'_>,
    account: &str,
    order: &str,
) -> Result<Option<OrderView>, StoreError> {
    // An order of the Orders API (`ORD…`) or a merchant order: the same
    // history, under its own subject and endpoint.
    let kind = order_kind(order);
    let subject = format!("{kind}:{order}");
    let state: Option<StateRow> = c
        .query_opt(
            sql!(
                "SELECT total_amount, paid_amount, released_at, blocked_at, at_risk_at FROM orders
                 WHERE account = $1 AND order_id = $2"
            ),
            &[&account, &order],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
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
            delivery_summary,
        )
        .await?;
    let fetches = fetches_of(c, &format!("job_id IN ({related})"), &[&account, &order]).await?;
    let seq = event_order(c);
    let events = c
        .query(
            &format!(
                "SELECT {EVENT_COLUMNS} FROM events
                 WHERE account = $1 AND (subject = $3 OR job_id IN ({related}))
                 ORDER BY created_at, {seq}"
            ),
            &[&account, &order, &subject],
            event_summary,
        )
        .await?;
    if state.is_none() && deliveries.is_empty() && events.is_empty() {
        return Ok(None);
    }
    let decision = c
        .query_opt(
            sql!(
                "SELECT event_type FROM decisions
                 WHERE account = $1 AND subject = $2 AND event_id IS NOT NULL
                 ORDER BY id DESC LIMIT 1"
            ),
            &[&account, &subject],
            |r| r.get::<String>(0),
        )
        .await?;
    let (total, paid, released, blocked, at_risk) = state.unwrap_or_default();
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
    c: &Conn<'_>,
    account: &str,
    subject: &str,
) -> Result<Vec<DecisionView>, StoreError> {
    c.query(
        sql!(
            "SELECT d.id, d.subject, d.key, d.event_type, d.event_id, d.job_id, d.created_at,
                    e.body, d.reason
             FROM decisions d LEFT JOIN events e ON e.id = d.event_id
             WHERE d.account = $1 AND d.subject = $2 ORDER BY d.id LIMIT 200"
        ),
        &[&account, &subject],
        |r| {
            Ok(DecisionView {
                id: r.get(0)?,
                subject: r.get(1)?,
                key: r.get(2)?,
                event_type: r.get(3)?,
                event_id: r.get(4)?,
                job_id: r.get(5)?,
                created_at: rfc3339(r.get(6)?),
                data: event_data(r.get(7)?),
                reason: r.get(8)?,
            })
        },
    )
    .await
}
