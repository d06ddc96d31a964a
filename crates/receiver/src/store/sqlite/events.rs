//! The outbox: events waiting for the merchant's endpoint, leased for an
//! attempt and fenced by their attempt count, so that an outcome is
//! recorded once however many senders there are.

use rusqlite::{Connection, params};

use crate::domain::EventState;
use crate::store::model::{Attempted, EventOutcome, LeasedEvent};

/// Takes up to `limit` due events for `lease_ms`: pending, due, and not
/// leased (or the lease ran out).
pub(super) fn lease(
    conn: &Connection,
    now: i64,
    lease_ms: i64,
    limit: usize,
) -> rusqlite::Result<Vec<LeasedEvent>> {
    conn.prepare_cached(
        "UPDATE events SET lease_until = ?2 + ?3
         WHERE rowid IN (
             SELECT rowid FROM events
             WHERE state = ?1 AND next_attempt_at <= ?2
               AND (lease_until IS NULL OR lease_until < ?2)
             ORDER BY next_attempt_at LIMIT ?4)
         RETURNING id, body, created_at, attempts",
    )?
    .query_map(
        params![EventState::Pending, now, lease_ms, limit as i64],
        |r| {
            Ok(LeasedEvent {
                id: r.get(0)?,
                body: r.get(1)?,
                created_at: r.get(2)?,
                attempts: r.get(3)?,
            })
        },
    )?
    .collect()
}

pub(super) fn next_due(conn: &Connection) -> rusqlite::Result<Option<i64>> {
    conn.query_row(
        "SELECT min(max(next_attempt_at, coalesce(lease_until, 0))) FROM events WHERE state = ?1",
        [EventState::Pending],
        |r| r.get(0),
    )
}

/// `false`: another attempt recorded its outcome first.
/// Records each attempt; per outcome, whether its fence still held.
pub(super) fn record(conn: &Connection, outcomes: &[EventOutcome]) -> rusqlite::Result<Vec<bool>> {
    outcomes
        .iter()
        .map(|o| match &o.attempted {
            Attempted::Delivered { at } => delivered(conn, &o.event, *at),
            Attempted::Failed { error, next } => failed(conn, &o.event, error, *next),
        })
        .collect()
}

fn delivered(conn: &Connection, e: &LeasedEvent, now: i64) -> rusqlite::Result<bool> {
    Ok(conn.execute(
        "UPDATE events SET state = ?3, attempts = attempts + 1, delivered_at = ?4,
             last_error = NULL, lease_until = NULL
         WHERE id = ?1 AND attempts = ?2 AND state = ?5",
        params![
            e.id,
            e.attempts,
            EventState::Delivered,
            now,
            EventState::Pending
        ],
    )? == 1)
}

/// A failed attempt: try again at `next`, or give up (`next` is `None`).
fn failed(
    conn: &Connection,
    e: &LeasedEvent,
    error: &str,
    next: Option<i64>,
) -> rusqlite::Result<bool> {
    let state = if next.is_some() {
        EventState::Pending
    } else {
        EventState::Dead
    };
    Ok(conn.execute(
        "UPDATE events SET state = ?3, attempts = attempts + 1, last_error = ?4,
             next_attempt_at = coalesce(?5, next_attempt_at), lease_until = NULL
         WHERE id = ?1 AND attempts = ?2 AND state = ?6",
        params![e.id, e.attempts, state, error, next, EventState::Pending],
    )? == 1)
}
