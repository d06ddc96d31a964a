//! What an operator reads and replays: deliveries, jobs, merchant orders and
//! events, for the admin API and the CLI alike. Every function takes a
//! plain connection, so the CLI can use them on the database file while the
//! server runs (WAL: readers never wait for the writer).

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

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

/// Newest first. An unknown `kind` matches nothing.
pub(super) fn list_deliveries(
    conn: &Connection,
    f: &DeliveryFilter,
) -> rusqlite::Result<Vec<DeliverySummary>> {
    let kind = match f.kind.as_deref() {
        None => None,
        Some(k) => match Kind::parse(k) {
            Some(k) => Some(k as i16),
            None => return Ok(Vec::new()),
        },
    };
    conn.prepare_cached(&format!(
        "SELECT {DELIVERY_COLUMNS} FROM deliveries
         WHERE (?1 IS NULL OR account = ?1) AND (?2 IS NULL OR kind = ?2)
           AND (?3 IS NULL OR topic = ?3) AND (?4 IS NULL OR received_at >= ?4)
           AND (?5 IS NULL OR id < ?5)
         ORDER BY id DESC LIMIT ?6"
    ))?
    .query_map(
        params![f.account, kind, f.topic, f.since, f.before, clamp(f.limit)],
        delivery_summary,
    )?
    .collect()
}

pub(super) fn get_delivery(conn: &Connection, id: i64) -> rusqlite::Result<Option<DeliveryDetail>> {
    let row = conn
        .query_row(
            &format!(
                "SELECT {DELIVERY_COLUMNS}, notification_id, source_news, remote_addr, query, headers, body, body_size,
                        body_sha256
                 FROM deliveries WHERE id = ?1"
            ),
            [id],
            |r| {
                Ok((
                    delivery_summary(r)?,
                    r.get::<_, Option<String>>(9)?,
                    r.get::<_, Option<String>>(10)?,
                    r.get::<_, String>(11)?,
                    r.get::<_, String>(12)?,
                    r.get::<_, String>(13)?,
                    r.get::<_, Option<Vec<u8>>>(14)?,
                    r.get::<_, Option<i64>>(15)?,
                    r.get::<_, Option<Vec<u8>>>(16)?,
                ))
            },
        )
        .optional()?;
    let Some((
        summary,
        notification_id,
        source_news,
        remote_addr,
        query,
        headers,
        body,
        body_size,
        body_sha256,
    )) = row
    else {
        return Ok(None);
    };
    let job = match &summary.job_key {
        Some(key) => conn
            .query_row(
                &format!("SELECT {JOB_COLUMNS} FROM jobs WHERE account = ?1 AND job_key = ?2"),
                params![summary.account, key],
                job_summary,
            )
            .optional()?,
        None => None,
    };
    let (body, body_base64) = match body {
        None => (None, None),
        Some(bytes) => match String::from_utf8(bytes) {
            Ok(text) => (Some(text), None),
            Err(e) => {
                use base64::Engine;
                (
                    None,
                    Some(base64::engine::general_purpose::STANDARD.encode(e.as_bytes())),
                )
            }
        },
    };
    Ok(Some(DeliveryDetail {
        summary,
        notification_id,
        source_news,
        remote_addr,
        query,
        headers: serde_json::from_str(&headers).unwrap_or(Value::Null),
        body,
        body_base64,
        body_size,
        body_sha256: body_sha256.map(hex::encode),
        job,
    }))
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

/// The newest `limit` jobs in `state`. A done job's `run_at` is when it
/// finished, so the runnable index gives done jobs in that order, read
/// only as far as the limit.
pub(super) fn list_jobs_in(
    conn: &Connection,
    state: JobState,
    limit: i64,
) -> rusqlite::Result<Vec<JobSummary>> {
    let order = match state {
        JobState::Done => "run_at DESC, id DESC",
        _ => "updated_at DESC, id DESC",
    };
    conn.prepare_cached(&format!(
        "SELECT {JOB_COLUMNS} FROM jobs WHERE state = ?1 ORDER BY {order} LIMIT ?2"
    ))?
    .query_map(params![state, limit], job_summary)?
    .collect()
}

pub(super) fn get_job(conn: &Connection, id: i64) -> rusqlite::Result<Option<JobDetail>> {
    let row = conn
        .query_row(
            &format!(
                "SELECT {JOB_COLUMNS}, created_at, lease_until, rerun, input_delivery_id FROM jobs WHERE id = ?1"
            ),
            [id],
            |r| {
                Ok((
                    job_summary(r)?,
                    r.get::<_, i64>(9)?,
                    r.get::<_, Option<i64>>(10)?,
                    r.get::<_, bool>(11)?,
                    r.get::<_, Option<i64>>(12)?,
                ))
            },
        )
        .optional()?;
    let Some((summary, created_at, lease_until, rerun, input)) = row else {
        return Ok(None);
    };
    // By an index: a fraud alert's by the one kept for them; the others'
    // by their resource (a job's notifications name what it fetches).
    let sql = if summary.key.starts_with("fraud:") {
        "SELECT id FROM deliveries INDEXED BY deliveries_fraud
         WHERE account = ?1 AND job_key = ?2 AND substr(job_key, 1, 6) = 'fraud:'
           AND ?3 = ?3 ORDER BY id DESC LIMIT 100"
    } else {
        "SELECT id FROM deliveries WHERE account = ?1 AND resource_id = ?3 AND job_key = ?2
         ORDER BY id DESC LIMIT 100"
    };
    let resource: String =
        conn.query_row("SELECT resource_id FROM jobs WHERE id = ?1", [id], |r| {
            r.get(0)
        })?;
    let deliveries = conn
        .prepare_cached(sql)?
        .query_map(params![summary.account, summary.key, resource], |r| {
            r.get(0)
        })?
        .collect::<rusqlite::Result<Vec<i64>>>()?;
    let fetches = fetches_of(conn, "job_id = ?1", params![id])?;
    Ok(Some(JobDetail {
        summary,
        created_at: rfc3339(created_at),
        lease_until: ts(lease_until),
        rerun_requested: rerun,
        input_delivery_id: input,
        deliveries,
        fetches,
    }))
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

/// The job with `key` in `account`.
pub(super) fn job_by_key(
    conn: &Connection,
    account: &str,
    key: &str,
) -> rusqlite::Result<Option<JobSummary>> {
    conn.query_row(
        &format!("SELECT {JOB_COLUMNS} FROM jobs WHERE account = ?1 AND job_key = ?2"),
        params![account, key],
        job_summary,
    )
    .optional()
}

/// A dead job runs again, with fresh attempts. `false`: no such dead job.
pub(super) fn retry_job(conn: &Connection, id: i64, now: i64) -> rusqlite::Result<bool> {
    Ok(conn.execute(
        "UPDATE jobs SET state = ?2, attempts = 0, run_at = ?3, last_error = NULL, updated_at = ?3
         WHERE id = ?1 AND state = ?4",
        params![id, JobState::Pending, now, JobState::Dead],
    )? == 1)
}

pub(super) fn retry_dead_jobs(conn: &Connection, now: i64) -> rusqlite::Result<usize> {
    conn.execute(
        "UPDATE jobs SET state = ?1, attempts = 0, run_at = ?2, last_error = NULL, updated_at = ?2
         WHERE state = ?3",
        params![JobState::Pending, now, JobState::Dead],
    )
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

pub(super) fn get_event(conn: &Connection, id: &str) -> rusqlite::Result<Option<EventDetail>> {
    conn.query_row(
        &format!("SELECT {EVENT_COLUMNS}, job_id, next_attempt_at, body FROM events WHERE id = ?1"),
        [id],
        |r| {
            let summary = event_summary(r)?;
            let pending = summary.state == EventState::Pending.as_str();
            Ok(EventDetail {
                destinations: Vec::new(),
                summary,
                job_id: r.get(9)?,
                next_attempt_at: if pending { ts(r.get(10)?) } else { None },
                body: serde_json::from_str(&r.get::<_, String>(11)?).unwrap_or(Value::Null),
            })
        },
    )
    .optional()
}

/// A merchant order's state and its history. `None` when nothing is known
/// of it.
pub(super) fn metrics_snapshot(conn: &Connection, now: i64) -> rusqlite::Result<MetricsSnapshot> {
    let mut jobs: Vec<(&'static str, i64)> = [
        JobState::Pending,
        JobState::Running,
        JobState::Done,
        JobState::Dead,
    ]
    .iter()
    .map(|s| (s.as_str(), 0))
    .collect();
    let mut stmt = conn.prepare_cached("SELECT state, count(*) FROM jobs GROUP BY state")?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, JobState>(0)?, r.get::<_, i64>(1)?)))?;
    for row in rows {
        let (state, n) = row?;
        if let Some(slot) = jobs.iter_mut().find(|(s, _)| *s == state.as_str()) {
            slot.1 = n;
        }
    }
    let (backlog, oldest): (i64, Option<i64>) = conn.query_row(
        "SELECT count(*), min(created_at) FROM events WHERE state = ?1",
        [EventState::Pending],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    Ok(MetricsSnapshot {
        destinations: Vec::new(),
        jobs,
        outbox_backlog: backlog,
        outbox_oldest_ms: oldest.map_or(0, |t| (now - t).max(0)),
    })
}

pub(super) fn health(conn: &Connection) -> rusqlite::Result<Health> {
    let last_api_call = fetches_of(conn, "1 = 1", [])?.into_iter().next();
    // The delivered event attempted last, by the due index (max() over the
    // column read every event: 100 ms at a million).
    let last_delivered_at = conn
        .query_row(
            "SELECT delivered_at FROM events INDEXED BY events_due WHERE state = ?1
             ORDER BY next_attempt_at DESC LIMIT 1",
            [EventState::Delivered],
            |r| r.get::<_, Option<i64>>(0),
        )
        .optional()?
        .flatten()
        .map(rfc3339);
    let merchant_failing = conn
        .query_row(
            "SELECT last_error FROM events WHERE state = ?1 AND attempts > 0 ORDER BY next_attempt_at LIMIT 1",
            [EventState::Pending],
            |r| r.get::<_, Option<String>>(0),
        )
        .optional()?
        .flatten();
    Ok(Health {
        last_api_call,
        last_delivered_at,
        merchant_failing,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    /// How many thousands of SQLite's instructions `f` takes on `conn`.
    fn work(conn: &Connection, f: impl FnOnce(&Connection)) -> u64 {
        let n = Arc::new(AtomicU64::new(0));
        let counter = n.clone();
        conn.progress_handler(
            1000,
            Some(move || {
                counter.fetch_add(1, Ordering::Relaxed);
                false
            }),
        );
        f(conn);
        conn.progress_handler(1000, None::<fn() -> bool>);
        n.load(Ordering::Relaxed)
    }

    /// With 20,000 done jobs and delivered events, the status page's and
    /// the admin API's listings read what they show, not the tables: read
    /// and sorted whole, each takes hundreds of thousands of instructions.
    #[test]
    fn listings_read_what_they_show() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = super::super::files::open_connection(&dir.path().join("l.db")).unwrap();
        super::super::migrations::migrate(&mut conn).unwrap();
        let (done, dead) = (JobState::Done as i64, JobState::Dead as i64);
        let (delivered, pending) = (EventState::Delivered as i64, EventState::Pending as i64);
        conn.execute_batch(&format!(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
             INSERT INTO jobs (account, job_key, kind, resource_id, state, run_at,
                               created_at, updated_at)
                 SELECT 'a', 'k' || i, 1, i, CASE WHEN i % 2000 = 0 THEN {dead} ELSE {done} END,
                        i, i, i FROM n;
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
             INSERT INTO events (id, account, type, subject, body, created_at, state,
                                 next_attempt_at)
                 SELECT 'evt_' || i, 'a', 't', 's', '{{}}', i,
                        CASE WHEN i % 2000 = 0 THEN {pending} ELSE {delivered} END, i FROM n;"
        ))
        .unwrap();

        let mut jobs = Vec::new();
        assert!(
            work(&conn, |c| jobs =
                list_jobs_in(c, JobState::Dead, 5).unwrap())
                < 20
        );
        let ids: Vec<i64> = jobs.iter().map(|j| j.id).collect();
        assert_eq!(
            ids,
            [20_000, 18_000, 16_000, 14_000, 12_000],
            "newest first"
        );
        assert!(
            work(&conn, |c| jobs =
                list_jobs_in(c, JobState::Done, 3).unwrap())
                < 20
        );
        let ids: Vec<i64> = jobs.iter().map(|j| j.id).collect();
        assert_eq!(ids, [19_999, 19_998, 19_997], "newest first");

        let mut events = Vec::new();
        assert!(work(&conn, |c| events = list_events(c, None, None, 3).unwrap()) < 20);
        let ids: Vec<&str> = events.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["evt_20000", "evt_19999", "evt_19998"]);
        let pending_only = work(&conn, |c| {
            events = list_events(c, None, Some(EventState::Pending), 50).unwrap()
        });
        assert!(pending_only < 20, "{pending_only}");
        assert_eq!(events.len(), 10);
    }
}
