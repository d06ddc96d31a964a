//! Job leasing and completion (DESIGN section 3). A job is leased for a
//! while and the lease renewed as it runs; on start-up the leases of an
//! earlier process are released (one process owns the SQLite file). A job
//! finishes in one of three ways, each in one transaction: done (with its
//! decisions and events), back to pending with a backoff, or dead.
//!
//! The lease is fenced by the attempt number: renew, finish, release and a
//! saga's mid-run effects only touch the row while it is still running
//! under the same attempt. A run that lost its lease (expired and taken
//! over) can never overwrite what the run that took it over records.

use rusqlite::{Connection, OptionalExtension, params};

use super::decisions;
use crate::domain::JobState;
use crate::domain::verdict::DecisionRules;
use crate::store::model::{FetchRow, Finish, JobOutcome, LeasedJob};

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
         RETURNING id, account, job_key, kind, resource_id, input_delivery_id, attempts, work",
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
                work: LeasedJob::read_work(r.get(7)?),
            })
        },
    )?
    .collect()
}

/// `false`: the lease is no longer this run's.
pub(super) fn renew(conn: &Connection, job: &LeasedJob, until: i64) -> rusqlite::Result<bool> {
    Ok(conn.execute(
        "UPDATE jobs SET lease_until = ?3 WHERE id = ?1 AND attempts = ?2 AND state = ?4",
        params![job.id, job.attempt, until, JobState::Running],
    )? == 1)
}

/// Whether the job is still running under this run's lease.
pub(super) fn holds_lease(conn: &Connection, job: &LeasedJob) -> rusqlite::Result<bool> {
    Ok(rerun_if_held(conn, job)?.is_some())
}

/// Whether the job was notified again while it ran, if this run still
/// holds its lease.
fn rerun_if_held(conn: &Connection, job: &LeasedJob) -> rusqlite::Result<Option<bool>> {
    conn.prepare_cached("SELECT rerun FROM jobs WHERE id = ?1 AND attempts = ?2 AND state = ?3")?
        .query_row(params![job.id, job.attempt, JobState::Running], |r| {
            r.get(0)
        })
        .optional()
}

/// Records a run's outcome and its API calls, if the run still holds its
/// lease. Also answers whether the job is pending again (to run again, or
/// to retry).
pub(super) fn finish(
    conn: &Connection,
    job: &LeasedJob,
    outcome: &JobOutcome,
    fetches: &[FetchRow],
    now: i64,
    rules: &DecisionRules,
) -> rusqlite::Result<(Finish, bool)> {
    let Some(rerun) = rerun_if_held(conn, job)? else {
        return Ok((Finish::LeaseLost, false));
    };
    for f in fetches {
        conn.prepare_cached(
            "INSERT INTO fetches (job_id, account, endpoint, resource_id, status, elapsed_ms, at, seen)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?
        .execute(params![
            job.id,
            job.account,
            f.endpoint,
            f.resource_id,
            f.status,
            f.elapsed_ms as i64,
            f.at,
            f.seen
        ])?;
    }
    // Every update below is fenced like the check above: same attempt,
    // still running.
    let fence = "WHERE id = ?1 AND attempts = ?2 AND state = ?3";
    match outcome {
        JobOutcome::Done(effects) => {
            let emitted = decisions::apply(conn, job, effects, now, rules)?;
            conn.execute(
                &format!(
                    "UPDATE jobs SET
                         state = CASE WHEN rerun = 1 THEN ?4 ELSE ?5 END,
                         attempts = CASE WHEN rerun = 1 THEN 0 ELSE attempts END,
                         run_at = ?6, rerun = 0, lease_until = NULL, last_error = NULL, updated_at = ?6
                     {fence}"
                ),
                params![job.id, job.attempt, JobState::Running, JobState::Pending, JobState::Done, now],
            )?;
            Ok((Finish::Recorded(emitted), rerun))
        }
        JobOutcome::Retry { run_at, error } => {
            conn.execute(
                &format!(
                    "UPDATE jobs SET state = ?4,
                         run_at = CASE WHEN rerun = 1 THEN ?7 ELSE ?5 END,
                         rerun = 0, lease_until = NULL, last_error = ?6, updated_at = ?7
                     {fence}"
                ),
                params![
                    job.id,
                    job.attempt,
                    JobState::Running,
                    JobState::Pending,
                    run_at,
                    error,
                    now
                ],
            )?;
            Ok((Finish::Recorded(Vec::new()), true))
        }
        // A re-run asked for while it ran means a notification came after
        // the run began: the platform will not send it again, so the job
        // starts over instead of dying.
        JobOutcome::Dead { error } => {
            conn.execute(
                &format!(
                    "UPDATE jobs SET
                         state = CASE WHEN rerun = 1 THEN ?4 ELSE ?5 END,
                         attempts = CASE WHEN rerun = 1 THEN 0 ELSE attempts END,
                         run_at = ?7, rerun = 0, lease_until = NULL, last_error = ?6, updated_at = ?7
                     {fence}"
                ),
                params![job.id, job.attempt, JobState::Running, JobState::Pending, JobState::Dead, error, now],
            )?;
            Ok((Finish::Recorded(Vec::new()), rerun))
        }
    }
}

/// Interrupted by shutdown: pending again, and the attempt does not count.
pub(super) fn release(conn: &Connection, job: &LeasedJob, now: i64) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE jobs SET state = ?4, attempts = max(attempts - 1, 0), lease_until = NULL,
             run_at = ?5, updated_at = ?5
         WHERE id = ?1 AND attempts = ?2 AND state = ?3",
        params![
            job.id,
            job.attempt,
            JobState::Running,
            JobState::Pending,
            now
        ],
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
