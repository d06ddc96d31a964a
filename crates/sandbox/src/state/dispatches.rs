//! The dispatch queue: each notification with its schedule and state, the
//! log of every attempt, and the armed faults that drop notifications.

use rusqlite::{Connection, params};

use super::{Result, Tx};
use crate::model::{AttemptEntry, DispatchState, Form, LogEntry, Outgoing};
use pointhook_common::clock::rfc3339;

/// Attempts cut short by a restart are due again.
pub(super) fn reset_sending(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE dispatches SET state = ?1 WHERE state = ?2",
        params![DispatchState::Pending, DispatchState::Sending],
    )?;
    Ok(())
}

/// Headers as the table keeps them: a JSON object.
pub fn headers_json(headers: &[(String, String)]) -> String {
    serde_json::Value::Object(
        headers
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::from(v.as_str())))
            .collect(),
    )
    .to_string()
}

fn headers_of(json: &str) -> Vec<(String, String)> {
    serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(json)
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, v.as_str().unwrap_or_default().to_string()))
        .collect()
}

/// Arms a fault that drops the next `n` notifications (of `topic`, or any).
pub fn add_drop(tx: &Tx<'_>, topic: Option<&str>, n: u32) -> Result<()> {
    tx.0.execute(
        "INSERT INTO drops (topic, remaining) VALUES (?1, ?2)",
        params![topic, n],
    )?;
    Ok(())
}

/// Disarms every drop.
pub fn clear_drops(tx: &Tx<'_>) -> Result<()> {
    tx.0.execute("DELETE FROM drops", [])?;
    Ok(())
}

/// Whether an armed drop takes a notification of `topic` (it is used up).
pub fn take_drop(tx: &Tx<'_>, topic: &str) -> Result<bool> {
    let taken = tx.0.execute(
        "UPDATE drops SET remaining = remaining - 1 WHERE id = (
             SELECT id FROM drops WHERE remaining > 0 AND (topic IS NULL OR topic = ?1)
             ORDER BY id LIMIT 1)",
        params![topic],
    )? == 1;
    tx.0.execute("DELETE FROM drops WHERE remaining <= 0", [])?;
    Ok(taken)
}

/// Queues `out`, first due at `now`; its id.
pub fn insert(
    tx: &Tx<'_>,
    account: &str,
    out: &Outgoing,
    now: i64,
    state: DispatchState,
) -> Result<i64> {
    Ok(tx.0.query_row(
        "INSERT INTO dispatches (account, url, form, topic, resource_id, body, headers, first_at, next_due_at, state)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8, ?9) RETURNING id",
        params![
            account,
            out.url,
            out.form,
            out.topic,
            out.resource_id,
            out.body.to_string(),
            headers_json(&out.headers),
            now,
            state
        ],
        |r| r.get(0),
    )?)
}

/// A second copy of dispatch `id` with other headers, due with it.
pub fn duplicate(tx: &Tx<'_>, id: i64, headers: &[(String, String)]) -> Result<()> {
    tx.0.execute(
        "INSERT INTO dispatches (account, url, form, topic, resource_id, body, headers, first_at, next_due_at, state)
         SELECT account, url, form, topic, resource_id, body, ?2, first_at, next_due_at, state
         FROM dispatches WHERE id = ?1",
        params![id, headers_json(headers)],
    )?;
    Ok(())
}

/// The notifications of one resource to one URL not sent yet, newest first.
pub fn unsent(
    tx: &Tx<'_>,
    account: &str,
    url: &str,
    topic: &str,
    resource_id: &str,
) -> Result<Vec<i64>> {
    Ok(tx
        .0
        .prepare(
            "SELECT id FROM dispatches
             WHERE account = ?1 AND url = ?2 AND topic = ?3 AND resource_id = ?4
               AND state = ?5 AND attempts = 0
             ORDER BY id DESC",
        )?
        .query_map(
            params![account, url, topic, resource_id, DispatchState::Pending],
            |r| r.get(0),
        )?
        .collect::<rusqlite::Result<_>>()?)
}

/// Moves a dispatch's first attempt to `at`.
pub fn reschedule(tx: &Tx<'_>, id: i64, at: i64) -> Result<()> {
    tx.0.execute(
        "UPDATE dispatches SET first_at = ?2, next_due_at = ?2 WHERE id = ?1",
        params![id, at],
    )?;
    Ok(())
}

/// An attempt to make now.
pub struct Due {
    pub id: i64,
    pub url: String,
    pub topic: String,
    pub body: String,
    pub headers: Vec<(String, String)>,
    /// The account's secret, to sign each attempt anew.
    pub secret: Option<String>,
    pub resource_id: String,
    pub first_at: i64,
    pub attempt: u32,
}

/// Every attempt due at `now`, in order, each marked as in flight.
pub fn take_due(tx: &Tx<'_>, now: i64) -> Result<Vec<Due>> {
    let due: Vec<Due> =
        tx.0.prepare(
            "SELECT d.id, d.url, d.body, d.headers, d.first_at, d.attempts, d.topic,
                    a.webhook_secret, d.resource_id
             FROM dispatches d LEFT JOIN accounts a ON a.name = d.account
             WHERE d.state = ?1 AND d.next_due_at <= ?2 ORDER BY d.next_due_at, d.id",
        )?
        .query_map(params![DispatchState::Pending, now], |r| {
            Ok(Due {
                id: r.get(0)?,
                url: r.get(1)?,
                body: r.get(2)?,
                headers: headers_of(&r.get::<_, String>(3)?),
                first_at: r.get(4)?,
                attempt: r.get::<_, u32>(5)? + 1,
                topic: r.get(6)?,
                secret: r.get(7)?,
                resource_id: r.get(8)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    for d in &due {
        tx.0.execute(
            "UPDATE dispatches SET state = ?2 WHERE id = ?1",
            params![d.id, DispatchState::Sending],
        )?;
    }
    Ok(due)
}

/// What one attempt came to.
pub struct Attempted {
    pub id: i64,
    pub n: u32,
    pub at: i64,
    pub status: Option<u16>,
    pub acked: bool,
    pub latency_ms: i64,
    pub error: Option<String>,
    /// The dispatch's state after it, and its next attempt.
    pub state: DispatchState,
    pub next_due_at: Option<i64>,
    /// The headers it went with (each attempt's signature is kept).
    pub headers: Vec<(String, String)>,
}

pub fn record_attempt(tx: &Tx<'_>, a: &Attempted) -> Result<()> {
    tx.0.execute(
        "INSERT INTO attempts (dispatch_id, n, at, status, acked, latency_ms, error)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![a.id, a.n, a.at, a.status, a.acked, a.latency_ms, a.error],
    )?;
    tx.0.execute(
        "UPDATE dispatches SET attempts = ?2, state = ?3, next_due_at = ?4, headers = ?5
         WHERE id = ?1",
        params![a.id, a.n, a.state, a.next_due_at, headers_json(&a.headers)],
    )?;
    Ok(())
}

/// When the next pending attempt falls due (after `after`, when given).
pub fn next_due_at(tx: &Tx<'_>, after: Option<i64>) -> Result<Option<i64>> {
    Ok(tx.0.query_row(
        "SELECT min(next_due_at) FROM dispatches WHERE state = ?1 AND (?2 IS NULL OR next_due_at > ?2)",
        params![DispatchState::Pending, after],
        |r| r.get(0),
    )?)
}

/// Every dispatch with its attempts, newest first.
pub fn log(tx: &Tx<'_>, limit: usize) -> Result<Vec<LogEntry>> {
    let mut entries: Vec<LogEntry> =
        tx.0.prepare(
            "SELECT id, account, url, form, topic, resource_id, state, first_at, next_due_at
             FROM dispatches ORDER BY id DESC LIMIT ?1",
        )?
        .query_map([limit as i64], |r| {
            let state: DispatchState = r.get(6)?;
            let form: Form = r.get(3)?;
            Ok(LogEntry {
                id: r.get(0)?,
                account: r.get(1)?,
                url: r.get(2)?,
                form: form.as_str(),
                topic: r.get(4)?,
                resource_id: r.get(5)?,
                state: state.as_str(),
                first_at: rfc3339(r.get(7)?),
                next_attempt_at: if state == DispatchState::Pending {
                    r.get::<_, Option<i64>>(8)?.map(rfc3339)
                } else {
                    None
                },
                attempts: Vec::new(),
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    let mut stmt = tx.0.prepare(
        "SELECT n, at, status, acked, latency_ms, error FROM attempts WHERE dispatch_id = ?1 ORDER BY n",
    )?;
    for e in &mut entries {
        e.attempts = stmt
            .query_map([e.id], |r| {
                Ok(AttemptEntry {
                    n: r.get(0)?,
                    at: rfc3339(r.get(1)?),
                    status: r.get(2)?,
                    acked: r.get(3)?,
                    latency_ms: r.get(4)?,
                    error: r.get(5)?,
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
    }
    Ok(entries)
}
