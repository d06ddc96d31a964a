//! Job leasing and completion. A job is leased for a
//! while and the lease renewed as it runs; on start-up the leases of an
//! earlier process are released (one process owns the SQLite file). A job
//! finishes in one of three ways, each in one transaction: done (with its
//! decisions and events), back to pending with a backoff, or dead.
//!
//! The lease is fenced by the attempt number: renew, finish, release and a
//! saga's mid-run effects only touch the row while it is still running
//! under the same attempt. A run that lost its lease (expired and taken
//! over) can never overwrite what the run that took it over records.

use std::sync::LazyLock;

use rusqlite::{Connection, OptionalExtension, params};

use super::{decisions, failure};
use crate::domain::verdict::DecisionRules;
use crate::domain::{JobState, Kind, Lane, SignatureStatus};
use crate::store::model::{FetchRow, Finish, JobOutcome, LeasedJob, Take};

pub(super) fn release_all(conn: &Connection) -> rusqlite::Result<usize> {
    conn.execute(
        "UPDATE jobs SET state = ?1, lease_until = NULL, rerun = 0 WHERE state = ?2",
        params![JobState::Pending, JobState::Running],
    )
}

/// Takes up to `take.limit` due jobs (pending and due, or running with an
/// expired lease: their worker is gone): first `take.backlog` of the oldest
/// of them all, then the newest of the live lane (from its own index), then
/// the oldest again. A job taken leaves the live lane: a retry of it waits
/// in the backlog.
pub(super) fn lease(
    conn: &Connection,
    now: i64,
    lease_ms: i64,
    take: Take,
) -> rusqlite::Result<Vec<LeasedJob>> {
    conn.prepare_cached(&LEASE)?
        .query_map(
            params![now, lease_ms, take.limit as i64, take.backlog as i64],
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
                    unauthenticated: r.get::<_, Option<bool>>(8)?.unwrap_or(false),
                })
            },
        )?
        .collect()
}

/// The lease (`?1` now, `?2` the lease's length, `?3` how many, `?4` how
/// many the backlog gets first). The live lane is read from its partial
/// index, newest first: named, because on a young database SQLite would
/// rather walk `jobs_runnable` backwards, through every due job of the
/// backlog when no live one is due. A job in both lists is taken once, at
/// its better place; the running jobs whose lease ran out are looked for
/// among the running ones, as many as the worker's slots.
static LEASE: LazyLock<String> = LazyLock::new(|| {
    let (pending, running) = (JobState::Pending as i16, JobState::Running as i16);
    let (live, backlog) = (Lane::Live as i16, Lane::Backlog as i16);
    let (reconcile, valid) = (Kind::Reconcile as i16, SignatureStatus::Valid as i16);
    format!(
        "WITH oldest AS (
             SELECT id, row_number() OVER (ORDER BY run_at) AS n FROM (
                 SELECT id, run_at FROM (
                     SELECT id, run_at FROM (
                         SELECT id, run_at FROM jobs
                         WHERE state = {pending} AND run_at <= ?1
                         ORDER BY run_at LIMIT ?3)
                     UNION ALL
                     SELECT id, run_at FROM jobs
                     WHERE state = {running} AND lease_until < ?1)
                 ORDER BY run_at LIMIT ?3)
         ), newest AS (
             SELECT id, row_number() OVER (ORDER BY run_at DESC) AS n FROM (
                 SELECT id, run_at FROM jobs INDEXED BY jobs_live
                 WHERE state = {pending} AND lane = {live} AND run_at <= ?1
                 ORDER BY run_at DESC LIMIT ?3)
         ), chosen AS (
             SELECT id FROM (
                 SELECT id, CASE WHEN n <= ?4 THEN n ELSE 2 * ?3 + n END AS place FROM oldest
                 UNION ALL
                 SELECT id, ?3 + n FROM newest)
             GROUP BY id ORDER BY min(place) LIMIT ?3
         )
         UPDATE jobs SET state = {running}, lease_until = ?1 + ?2, attempts = attempts + 1,
                rerun = 0, lane = {backlog}, updated_at = ?1
         WHERE id IN (SELECT id FROM chosen)
         RETURNING id, account, job_key, kind, resource_id, input_delivery_id, attempts, work,
             (SELECT d.kind <> {reconcile} AND d.signature <> {valid}
              FROM deliveries d WHERE d.id = input_delivery_id)"
    )
});

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
            "INSERT INTO fetches (job_id, account, endpoint, resource_id, status, elapsed_ms, at, seen, body)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )?
        .execute(params![
            job.id,
            job.account,
            f.endpoint,
            f.resource_id,
            f.status,
            f.elapsed_ms as i64,
            f.at,
            f.seen,
            f.body
        ])?;
    }
    // Every update below is fenced like the check above: same attempt,
    // still running.
    let fence = "WHERE id = ?1 AND attempts = ?2 AND state = ?3";
    failure::write(conn, job, outcome)?;
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
        JobOutcome::Retry { run_at, error, .. } => {
            conn.execute(
                &format!(
                    "UPDATE jobs SET state = ?4,
                         run_at = CASE WHEN rerun = 1 THEN ?7 ELSE ?5 END,
                         attempts = CASE WHEN rerun = 1 THEN 0 ELSE attempts END,
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
        JobOutcome::Dead { error, .. } => {
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

/// When the next pending job is due, if there is one.
pub(super) fn next_due(conn: &Connection) -> rusqlite::Result<Option<i64>> {
    conn.query_row(
        "SELECT min(run_at) FROM jobs WHERE state = ?1",
        [JobState::Pending],
        |r| r.get(0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each of the lease's lists is read from an index in its order: the
    /// due pending jobs oldest first, the live lane's newest first; no
    /// table scan, whatever the backlog holds.
    #[test]
    fn the_lease_reads_each_list_from_its_index() {
        let mut conn = Connection::open_in_memory().unwrap();
        super::super::migrations::migrate(&mut conn).unwrap();
        let plan: Vec<String> = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {}", *LEASE))
            .unwrap()
            .query_map(params![1, 2, 3, 1], |r| r.get::<_, String>(3))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        for seek in [
            "INDEX jobs_live (run_at<?)",
            "INDEX jobs_runnable (state=? AND run_at<?)",
        ] {
            assert!(plan.iter().any(|l| l.ends_with(seek)), "{seek}: {plan:?}");
        }
        assert!(!plan.iter().any(|l| l.starts_with("SCAN jobs")), "{plan:?}");
    }
}
