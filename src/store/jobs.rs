//! Job leasing and completion (DESIGN section 3). A job is leased for a
//! while and the lease renewed as it runs; on start-up the leases of an
//! earlier process are released (one process owns the SQLite file). A job
//! finishes in one of three ways, each in one transaction: done (with its
//! decisions and events), back to pending with a backoff, or dead.

use rusqlite::{Connection, OptionalExtension, params};

use super::decisions::{self, Effects};
use crate::domain::{JobKind, JobState};

/// A job the worker holds.
#[derive(Debug, Clone)]
pub struct LeasedJob {
    pub id: i64,
    pub account: String,
    pub key: String,
    pub kind: JobKind,
    pub resource_id: String,
    pub input_delivery_id: Option<i64>,
    /// This run's number, from 1.
    pub attempt: u32,
}

pub(super) fn release_all(conn: &Connection) -> rusqlite::Result<usize> {
    conn.execute(
        "UPDATE jobs SET state = ?1, lease_until = NULL, rerun = 0 WHERE state = ?2",
        params![JobState::Pending, JobState::Running],
    )
}

/// Takes up to `limit` due jobs, oldest first: pending and due, or running
/// with an expired lease (their worker is gone).
pub(super) fn lease(
    conn: &Connection,
    now: i64,
    lease_ms: i64,
    limit: usize,
) -> rusqlite::Result<Vec<LeasedJob>> {
    conn.prepare_cached(
        "UPDATE jobs SET state = ?1, lease_until = ?3 + ?4, attempts = attempts + 1,
                rerun = 0, updated_at = ?3
         WHERE id IN (
             SELECT id FROM jobs
             WHERE (state = ?2 AND run_at <= ?3) OR (state = ?1 AND lease_until < ?3)
             ORDER BY run_at LIMIT ?5)
         RETURNING id, account, job_key, kind, resource_id, input_delivery_id, attempts",
    )?
    .query_map(
        params![
            JobState::Running,
            JobState::Pending,
            now,
            lease_ms,
            limit as i64
        ],
        |r| {
            Ok(LeasedJob {
                id: r.get(0)?,
                account: r.get(1)?,
                key: r.get(2)?,
                kind: r.get(3)?,
                resource_id: r.get(4)?,
                input_delivery_id: r.get(5)?,
                attempt: r.get(6)?,
            })
        },
    )?
    .collect()
}

pub(super) fn renew(conn: &Connection, id: i64, until: i64) -> rusqlite::Result<bool> {
    Ok(conn.execute(
        "UPDATE jobs SET lease_until = ?2 WHERE id = ?1 AND state = ?3",
        params![id, until, JobState::Running],
    )? == 1)
}

/// Done: the effects are applied, then the job is done, or pending again
/// at once when a notification asked for a re-run while it ran.
pub(super) fn complete(
    conn: &Connection,
    job: &LeasedJob,
    effects: &Effects,
    now: i64,
    deliver_events: bool,
) -> rusqlite::Result<Vec<String>> {
    let emitted = decisions::apply(conn, job, effects, now, deliver_events)?;
    conn.execute(
        "UPDATE jobs SET
             state = CASE WHEN rerun = 1 THEN ?2 ELSE ?3 END,
             attempts = CASE WHEN rerun = 1 THEN 0 ELSE attempts END,
             run_at = ?4, rerun = 0, lease_until = NULL, last_error = NULL, updated_at = ?4
         WHERE id = ?1",
        params![job.id, JobState::Pending, JobState::Done, now],
    )?;
    Ok(emitted)
}

/// Failed for now: pending again at `run_at` (sooner if re-run was asked).
pub(super) fn retry(
    conn: &Connection,
    id: i64,
    run_at: i64,
    error: &str,
    now: i64,
) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE jobs SET state = ?2,
             run_at = CASE WHEN rerun = 1 THEN ?5 ELSE ?3 END,
             rerun = 0, lease_until = NULL, last_error = ?4, updated_at = ?5
         WHERE id = ?1",
        params![id, JobState::Pending, run_at, error, now],
    )?;
    Ok(())
}

/// Failed for good (or out of attempts).
pub(super) fn kill(conn: &Connection, id: i64, error: &str, now: i64) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE jobs SET state = ?2, rerun = 0, lease_until = NULL, last_error = ?3, updated_at = ?4
         WHERE id = ?1",
        params![id, JobState::Dead, error, now],
    )?;
    Ok(())
}

/// Interrupted by shutdown: pending again, and the attempt does not count.
pub(super) fn release(conn: &Connection, id: i64, now: i64) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE jobs SET state = ?2, attempts = max(attempts - 1, 0), lease_until = NULL,
             run_at = ?3, updated_at = ?3
         WHERE id = ?1 AND state = ?4",
        params![id, JobState::Pending, now, JobState::Running],
    )?;
    Ok(())
}

/// When the next pending job is due, if there is one.
pub(super) fn next_due(conn: &Connection) -> rusqlite::Result<Option<i64>> {
    conn.query_row(
        "SELECT min(run_at) FROM jobs WHERE state = ?1",
        [JobState::Pending],
        |r| r.get(0),
    )
}

/// The body of the delivery a job decides from (fraud alert, intent body).
pub(super) fn input_body(
    conn: &Connection,
    delivery_id: i64,
) -> rusqlite::Result<Option<(Vec<u8>, crate::domain::SignatureStatus)>> {
    conn.query_row(
        "SELECT coalesce(body, x''), signature FROM deliveries WHERE id = ?1",
        [delivery_id],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .optional()
}
