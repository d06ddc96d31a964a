//! An order as the admin API and `orders show` read it: its state, the
//! notifications, API calls, decisions (with their reasons) and events
//! about it.

use rusqlite::{Connection, OptionalExtension, params};

use super::admin::{
    DELIVERY_COLUMNS, EVENT_COLUMNS, delivery_summary, event_summary, fetches_of, ts,
};
use crate::store::console_views::event_data;
use crate::store::views::{DecisionView, OrderView, order_kind};
use pointhook_common::clock::rfc3339;

pub(super) fn get_order(
    conn: &Connection,
    account: &str,
    order: &str,
) -> rusqlite::Result<Option<OrderView>> {
    // An order of the Orders API (`ORD…`) or a merchant order: the same
    // history, under its own subject and endpoint.
    let kind = order_kind(order);
    let subject = format!("{kind}:{order}");
    let state = conn
        .query_row(
            "SELECT total_amount, paid_amount, released_at, blocked_at, at_risk_at FROM orders
             WHERE account = ?1 AND order_id = ?2",
            params![account, order],
            |r| {
                Ok((
                    r.get::<_, Option<String>>(0)?,
                    r.get::<_, Option<String>>(1)?,
                    r.get::<_, Option<i64>>(2)?,
                    r.get::<_, Option<i64>>(3)?,
                    r.get::<_, Option<i64>>(4)?,
                ))
            },
        )
        .optional()?;
    // The jobs that touched the order: its own, those that fetched it, and
    // those that decided about it (a payment's, a fraud alert's).
    let related = format!(
        "SELECT id FROM jobs WHERE account = ?1 AND job_key = '{kind}:' || ?2
         UNION SELECT job_id FROM fetches WHERE account = ?1 AND endpoint = '{kind}' AND resource_id = ?2
         UNION SELECT job_id FROM decisions WHERE account = ?1 AND subject = '{kind}:' || ?2"
    );
    let deliveries = conn
        .prepare(&format!(
            "SELECT {DELIVERY_COLUMNS} FROM deliveries d
             WHERE d.account = ?1 AND (d.resource_id = ?2 OR EXISTS (
                 SELECT 1 FROM jobs j WHERE j.account = d.account AND j.job_key = d.job_key
                 AND j.id IN ({related})))
             ORDER BY d.id DESC LIMIT 200"
        ))?
        .query_map(params![account, order], delivery_summary)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let fetches = fetches_of(
        conn,
        &format!("job_id IN ({related})"),
        params![account, order],
    )?;
    let events = conn
        .prepare(&format!(
            "SELECT {EVENT_COLUMNS} FROM events
             WHERE account = ?1 AND (subject = ?3 OR job_id IN ({related}))
             ORDER BY created_at, rowid"
        ))?
        .query_map(params![account, order, subject], event_summary)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    if state.is_none() && deliveries.is_empty() && events.is_empty() {
        return Ok(None);
    }
    let decision = conn
        .query_row(
            "SELECT event_type FROM decisions WHERE account = ?1 AND subject = ?2 AND event_id IS NOT NULL
             ORDER BY id DESC LIMIT 1",
            params![account, subject],
            |r| r.get(0),
        )
        .optional()?;
    let (total, paid, released, blocked, at_risk) = state.unwrap_or_default();
    let decisions = decisions(conn, account, &subject)?;
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
pub(super) fn decisions(
    c: &Connection,
    account: &str,
    subject: &str,
) -> rusqlite::Result<Vec<DecisionView>> {
    c.prepare_cached("SELECT d.id, d.subject, d.key, d.event_type, d.event_id, d.job_id, d.created_at, e.body, d.reason
         FROM decisions d LEFT JOIN events e ON e.id = d.event_id
         WHERE d.account = ?1 AND d.subject = ?2 ORDER BY d.id LIMIT 200")?
    .query_map(params![account, subject], |r| {
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
    })?
    .collect()
}
