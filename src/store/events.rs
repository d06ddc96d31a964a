//! The outbox: events waiting for the merchant's endpoint, and the outcome
//! of each attempt.

use rusqlite::{Connection, params};

use crate::domain::EventState;

/// An event due for a delivery attempt.
#[derive(Debug, Clone)]
pub struct DueEvent {
    pub id: String,
    pub body: String,
    pub created_at: i64,
    pub attempts: u32,
}

pub(super) fn due(conn: &Connection, now: i64, limit: usize) -> rusqlite::Result<Vec<DueEvent>> {
    conn.prepare_cached(
        "SELECT id, body, created_at, attempts FROM events
         WHERE state = ?1 AND next_attempt_at <= ?2
         ORDER BY next_attempt_at LIMIT ?3",
    )?
    .query_map(params![EventState::Pending, now, limit as i64], |r| {
        Ok(DueEvent {
            id: r.get(0)?,
            body: r.get(1)?,
            created_at: r.get(2)?,
            attempts: r.get(3)?,
        })
    })?
    .collect()
}

pub(super) fn next_due(conn: &Connection) -> rusqlite::Result<Option<i64>> {
    conn.query_row(
        "SELECT min(next_attempt_at) FROM events WHERE state = ?1",
        [EventState::Pending],
        |r| r.get(0),
    )
}

pub(super) fn delivered(conn: &Connection, id: &str, now: i64) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE events SET state = ?2, attempts = attempts + 1, delivered_at = ?3, last_error = NULL
         WHERE id = ?1",
        params![id, EventState::Delivered, now],
    )?;
    Ok(())
}

/// A failed attempt: try again at `next`, or give up (`next` is `None`).
pub(super) fn failed(
    conn: &Connection,
    id: &str,
    error: &str,
    next: Option<i64>,
) -> rusqlite::Result<()> {
    let state = if next.is_some() {
        EventState::Pending
    } else {
        EventState::Dead
    };
    conn.execute(
        "UPDATE events SET state = ?2, attempts = attempts + 1, last_error = ?3,
             next_attempt_at = coalesce(?4, next_attempt_at)
         WHERE id = ?1",
        params![id, state, error, next],
    )?;
    Ok(())
}
