//! Pruning on PostgreSQL (one instance at a time, under an advisory
//! lock), its estimate, and the refusal of `backup` (pg_dump's job).

use deadpool_postgres::Client;

use super::PgStore;
use crate::domain::{EventState, JobState};
use crate::store::views::Pruned;
use crate::store::{BackupProgress, StoreError};

impl PgStore {
    pub async fn prune_batch(&self, cutoff: i64, batch: usize) -> Result<Pruned, StoreError> {
        prune_batch(&mut self.client().await?, cutoff, batch).await
    }

    /// The rows old enough for each statement of `prune_batch`, by the
    /// same bounds (an upper bound: unfinished work among them stays).
    pub async fn prune_estimate(&self, cutoff: i64) -> Result<Pruned, StoreError> {
        let row = self
            .client()
            .await?
            .query_one(
                "SELECT
                   (SELECT count(*) FROM deliveries WHERE received_at < $1),
                   (SELECT count(*) FROM jobs WHERE state = $2 AND run_at < $1 AND updated_at < $1),
                   (SELECT count(*) FROM events WHERE state IN ($3, $4, $5)
                      AND next_attempt_at < $1 AND created_at < $1),
                   (SELECT count(*) FROM fetches WHERE at < $1)",
                &[
                    &cutoff,
                    &JobState::Done,
                    &EventState::Delivered,
                    &EventState::Dead,
                    &EventState::Stored,
                ],
            )
            .await?;
        let n = |i| row.try_get::<_, i64>(i).map(|n| n as usize);
        Ok(Pruned {
            deliveries: n(0)?,
            jobs: n(1)?,
            events: n(2)?,
            fetches: n(3)?,
        })
    }

    pub async fn backup(
        &self,
        _dest: std::path::PathBuf,
        _progress: BackupProgress,
    ) -> Result<(), StoreError> {
        Err(StoreError::Unsupported(
            "a PostgreSQL database is backed up with pg_dump (or the server's own backups)",
        ))
    }
}

/// The advisory lock pruning holds: one instance prunes at a time.
const PRUNE_LOCK: i64 = 0x7074_486c;

/// One batch of pruning, if no other instance is pruning now; same rules as
/// the SQLite backend's (never unfinished work, never decisions).
async fn prune_batch(c: &mut Client, cutoff: i64, batch: usize) -> Result<Pruned, StoreError> {
    let tx = c.transaction().await?;
    let ours: bool = tx
        .query_one("SELECT pg_try_advisory_xact_lock($1)", &[&PRUNE_LOCK])
        .await?
        .get(0);
    if !ours {
        return Ok(Pruned::default());
    }
    // The statements below are cheap but estimated dear, which made
    // PostgreSQL compile each one (170 ms of a 200 ms batch).
    tx.batch_execute("SET LOCAL jit = off").await?;
    let limit = batch as i64;
    // `= ANY(ARRAY(subquery))`, not `IN (subquery)`: the batch is chosen
    // first and its rows then found by their primary key. With `IN`, the
    // planner could guess one row for the batch and join it against a scan
    // of the whole table, 20 s a batch at 200,000 deliveries. A delivery
    // goes when the job of its key is finished or gone and does not decide
    // from it (only a job of its own key names it as input): one seek.
    // A pass that finds nothing reads only what is old: see the SQLite
    // backend's statements for why each bound holds. A fetch's job is a
    // scalar subquery, one seek per fetch: as `NOT EXISTS` it was planned
    // as an anti-join reading every job, 140 ms a batch at a million.
    let jobs = tx
        .execute(
            "DELETE FROM jobs WHERE id = ANY(ARRAY(
                 SELECT id FROM jobs WHERE state = $1 AND run_at < $2 AND updated_at < $2
                 LIMIT $3))",
            &[&JobState::Done, &cutoff, &limit],
        )
        .await? as usize;
    let deliveries = tx
        .execute(
            "DELETE FROM deliveries WHERE id = ANY(ARRAY(
                 SELECT d.id FROM deliveries d
                 WHERE d.received_at < $1
                   AND (d.job_key IS NULL OR NOT EXISTS (
                       SELECT 1 FROM jobs j WHERE j.account = d.account AND j.job_key = d.job_key
                       AND (j.state != $2 OR j.input_delivery_id = d.id)))
                 LIMIT $3))",
            &[&cutoff, &JobState::Done, &limit],
        )
        .await? as usize;
    // An event goes with its queue rows.
    let events = tx
        .query_one(
            "WITH gone AS (
                 DELETE FROM events WHERE id = ANY(ARRAY(
                     SELECT id FROM events WHERE state IN ($1, $2, $3)
                       AND next_attempt_at < $4 AND created_at < $4 LIMIT $5))
                 RETURNING id),
             queued AS (DELETE FROM outbox WHERE event_id IN (SELECT id FROM gone))
             SELECT count(*) FROM gone",
            &[
                &EventState::Delivered,
                &EventState::Dead,
                &EventState::Stored,
                &cutoff,
                &limit,
            ],
        )
        .await?
        .try_get::<_, i64>(0)? as usize;
    let fetches = tx
        .execute(
            "DELETE FROM fetches WHERE id = ANY(ARRAY(
                 SELECT f.id FROM fetches f WHERE f.at < $1
                   AND coalesce((SELECT j.state FROM jobs j WHERE j.id = f.job_id), $2) = $2
                 LIMIT $3))",
            &[&cutoff, &JobState::Done, &limit],
        )
        .await? as usize;
    tx.commit().await?;
    Ok(Pruned {
        deliveries,
        jobs,
        events,
        fetches,
    })
}
