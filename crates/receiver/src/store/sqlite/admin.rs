//! What an operator reads and replays: deliveries, jobs, merchant orders and
//! events, for the admin API and the CLI alike. Every function takes a
//! plain connection, so the CLI can use them on the database file while the
//! server runs (WAL: readers never wait for the writer).

use rusqlite::{Connection, params};

use crate::domain::{EventState, JobKind, JobState, Kind, SignatureStatus};
use crate::store::views::*;
use pointhook_common::clock::rfc3339;

pub(super) fn ts(ms: Option<i64>) -> Option<String> {
    ms.map(rfc3339)
}

pub(super) const DELIVERY_COLUMNS: &str =
    "id, received_at, account, kind, topic, resource_id, duplicate_of, signature, job_key";

pub(super) fn delivery_summary(r: &rusqlite::Row<'_>) -> rusqlite::Result<DeliverySummary> {
    Ok(DeliverySummary {
        id: r.get(0)?,
        received_at: rfc3339(r.get(1)?),
        account: r.get(2)?,
        kind: r.get::<_, Kind>(3)?.as_str(),
        topic: r.get(4)?,
        resource_id: r.get(5)?,
        duplicate_of: r.get(6)?,
        signature: r.get::<_, SignatureStatus>(7)?.as_str(),
        job_key: r.get(8)?,
    })
}

pub(super) const JOB_COLUMNS: &str =
    "id, account, job_key, kind, state, attempts, run_at, last_error, updated_at";

pub(super) fn job_summary(r: &rusqlite::Row<'_>) -> rusqlite::Result<JobSummary> {
    let state: JobState = r.get(4)?;
    let kind: JobKind = r.get(3)?;
    Ok(JobSummary {
        id: r.get(0)?,
        account: r.get(1)?,
        key: r.get(2)?,
        kind: kind.as_str(),
        state: state.as_str(),
        attempts: r.get(5)?,
        next_run: (state == JobState::Pending)
            .then(|| r.get(6).map(rfc3339))
            .transpose()?,
        last_error: r.get(7)?,
        updated_at: rfc3339(r.get(8)?),
    })
}

pub(super) fn fetches_of(
    conn: &Connection,
    condition: &str,
    p: impl rusqlite::Params,
) -> rusqlite::Result<Vec<FetchView>> {
    conn.prepare(&format!(
        "SELECT job_id, endpoint, resource_id, status, elapsed_ms, at, body FROM fetches
         WHERE {condition} ORDER BY id DESC LIMIT 200"
    ))?
    .query_map(p, |r| {
        Ok(FetchView {
            job_id: r.get(0)?,
            endpoint: r.get(1)?,
            resource_id: r.get(2)?,
            status: r.get(3)?,
            elapsed_ms: r.get(4)?,
            at: rfc3339(r.get(5)?),
            body: r
                .get::<_, Option<Vec<u8>>>(6)?
                .and_then(|b| serde_json::from_slice(&b).ok()),
        })
    })?
    .collect()
}

/// A dead job runs again, with fresh attempts. `false`: no such dead job.
pub(super) fn retry_job(conn: &Connection, id: i64, now: i64) -> rusqlite::Result<bool> {
    Ok(conn.execute(
        "UPDATE jobs SET state = ?2, attempts = 0, run_at = ?3, last_error = NULL, updated_at = ?3
         WHERE id = ?1 AND state = ?4",
        params![id, JobState::Pending, now, JobState::Dead],
    )? == 1)
}

pub(super) const EVENT_COLUMNS: &str =
    "id, account, type, subject, state, attempts, created_at, delivered_at, last_error";

pub(super) fn event_summary(r: &rusqlite::Row<'_>) -> rusqlite::Result<EventSummary> {
    let state: EventState = r.get(4)?;
    Ok(EventSummary {
        id: r.get(0)?,
        account: r.get(1)?,
        event_type: r.get(2)?,
        subject: r.get(3)?,
        state: state.as_str(),
        attempts: r.get(5)?,
        created_at: rfc3339(r.get(6)?),
        delivered_at: ts(r.get(7)?),
        last_error: r.get(8)?,
    })
}

/// Newest first, in the order recorded (the rowid's). Without a state,
/// the rowid read backwards stops at `limit`; with one, the state's rows
/// come from the due index and only they are sorted (read backwards, a
/// rare state such as pending meant passing every delivered event).
pub(super) fn list_events(
    conn: &Connection,
    event_type: Option<&str>,
    state: Option<EventState>,
    limit: usize,
) -> rusqlite::Result<Vec<EventSummary>> {
    let (source, state_is) = match state {
        Some(_) => ("events INDEXED BY events_due", "state = ?2"),
        // ?2 (no state) is still bound, so the statement keeps its three.
        None => ("events", "?2 IS NULL"),
    };
    conn.prepare_cached(&format!(
        "SELECT {EVENT_COLUMNS} FROM {source}
         WHERE (?1 IS NULL OR type = ?1) AND {state_is}
         ORDER BY rowid DESC LIMIT ?3"
    ))?
    .query_map(params![event_type, state, clamp(limit)], event_summary)?
    .collect()
}
