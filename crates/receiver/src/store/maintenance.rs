//! The store's part for keeping it small and safe: pruning what is old and
//! finished (with an estimate first, for a progress bar), and backups, each
//! able to report its progress.

use std::path::Path;
use std::sync::Arc;

use super::sql::{Conn, Dialect, Param, sql};
use super::views::{PRUNE_BATCH, Pruned};
use super::{Backend, Store, StoreError};
use crate::domain::{EventState, JobState};

/// Told the pages copied so far and the pages in all.
pub type BackupProgress = Arc<dyn Fn(u64, u64) + Send + Sync>;

impl Store {
    /// Prunes what finished before `cutoff` (unix ms), a batch per
    /// transaction so that acks never wait long behind it. Pruning never
    /// touches unfinished work, and decisions are never pruned.
    pub async fn prune(&self, cutoff: i64) -> Result<Pruned, StoreError> {
        self.prune_observed(cutoff, &mut |_| {}).await
    }

    /// `prune`, telling `batch` what each batch deleted.
    pub async fn prune_observed(
        &self,
        cutoff: i64,
        batch: &mut (dyn FnMut(&Pruned) + Send),
    ) -> Result<Pruned, StoreError> {
        let mut total = Pruned::default();
        loop {
            let done = self
                .write(move |c| Box::pin(prune_batch(c, cutoff, PRUNE_BATCH as i64)))
                .await?;
            total.add(done);
            batch(&done);
            if done.total() == 0 {
                return Ok(total);
            }
        }
    }

    /// At most what `prune(cutoff)` will delete: the rows old enough, each
    /// counted by the index pruning reads (unfinished work among them is
    /// kept, so the count may be more than what goes).
    pub async fn prune_estimate(&self, cutoff: i64) -> Result<Pruned, StoreError> {
        self.read(move |c| Box::pin(prune_estimate(c, cutoff)))
            .await
    }

    /// A consistent copy of the database at `dest`, taken while it is in
    /// use, readable by its owner only.
    pub async fn backup(&self, dest: &Path) -> Result<(), StoreError> {
        self.backup_observed(dest, Arc::new(|_, _| {})).await
    }

    /// `backup`, telling `progress` the pages copied as it goes.
    pub async fn backup_observed(
        &self,
        dest: &Path,
        progress: BackupProgress,
    ) -> Result<(), StoreError> {
        match &self.inner.backend {
            Backend::Sqlite(b) => b.backup(dest.to_path_buf(), progress).await,
            Backend::Postgres(_) => Err(StoreError::Unsupported(
                "a PostgreSQL database is backed up with pg_dump (or the server's own backups)",
            )),
        }
    }
}

/// What each statement of `prune_batch` would reach: the old rows, by the
/// same indexes (so a large store counts in milliseconds), before the
/// checks that keep unfinished work (an upper bound).
async fn prune_estimate(c: &Conn<'_>, cutoff: i64) -> Result<Pruned, StoreError> {
    let events_due = c.indexed_by("events_due");
    c.query_one(
        &format!(
            "SELECT
               (SELECT count(*) FROM deliveries WHERE received_at < $1),
               (SELECT count(*) FROM jobs WHERE state = $2 AND run_at < $1 AND updated_at < $1),
               (SELECT count(*) FROM events {events_due} WHERE state IN ($3, $4, $5)
                  AND next_attempt_at < $1 AND created_at < $1),
               (SELECT count(*) FROM fetches WHERE at < $1)"
        ),
        &[
            &cutoff,
            &JobState::Done,
            &EventState::Delivered,
            &EventState::Dead,
            &EventState::Stored,
        ],
        |r| {
            let n = |i| r.get::<u64>(i).map(|n| n as usize);
            Ok(Pruned {
                deliveries: n(0)?,
                jobs: n(1)?,
                events: n(2)?,
                fetches: n(3)?,
            })
        },
    )
    .await
}

/// The advisory lock pruning holds on PostgreSQL: one instance prunes at
/// a time (a SQLite file has one owner).
const PRUNE_LOCK: i64 = 0x7074_486c;

/// One batch of pruning of everything finished before `cutoff` (unix ms);
/// call until it deletes nothing. Pruning never touches unfinished work
/// (pending, running and dead jobs stay with their deliveries; events not
/// yet delivered stay), and never decisions: they are what makes every
/// effect happen once.
///
/// Pruning runs hourly on SQLite's writer, so a pass that finds nothing
/// must not read every finished row (at a million of each that held every
/// acknowledgement for over half a second): each statement reaches only
/// what is old. A done job ran when it finished (`run_at` and `updated_at`
/// are set together), so the runnable index's range finds the old ones; an
/// event's last attempt was due at `next_attempt_at`, never before it was
/// created, so the due index's range does; a delivery goes when the job of
/// its key is finished or gone and does not decide from its body (only a
/// job of its own key names it as input: one seek answers both).
///
/// The dialects differ in how the batch is chosen. PostgreSQL takes
/// `= ANY(ARRAY(subquery))`, not `IN (subquery)`: the batch is chosen
/// first and its rows then found by their primary key (with `IN` the
/// planner could join a one-row guess against a scan of the table, 20 s a
/// batch at 200,000 deliveries), a fetch's job is a scalar subquery (as
/// `NOT EXISTS` it was planned as an anti-join reading every job), an event
/// takes its queue rows with it (SQLite's foreign key cascades), and JIT is
/// off (the statements are cheap but estimated dear).
async fn prune_batch(c: &Conn<'_>, cutoff: i64, limit: i64) -> Result<Pruned, StoreError> {
    let pg = c.dialect() == Dialect::Postgres;
    if pg {
        let ours: bool = c
            .query_one(
                sql!("SELECT pg_try_advisory_xact_lock($1)"),
                &[&PRUNE_LOCK],
                |r| r.get(0),
            )
            .await?;
        if !ours {
            return Ok(Pruned::default());
        }
        c.execute(sql!("SET LOCAL jit = off"), &[]).await?;
    }
    let q = PruneSql::of(c.dialect());
    let jobs = c
        .execute(&q.jobs, &[&JobState::Done, &cutoff, &limit])
        .await? as usize;
    let deliveries = c
        .execute(&q.deliveries, &[&cutoff, &JobState::Done, &limit])
        .await? as usize;
    let events_params: [&dyn Param; 5] = [
        &EventState::Delivered,
        &EventState::Dead,
        &EventState::Stored,
        &cutoff,
        &limit,
    ];
    let events = if pg {
        c.query_one(&q.events, &events_params, |r| r.get::<u64>(0))
            .await? as usize
    } else {
        c.execute(&q.events, &events_params).await? as usize
    };
    let fetches = c
        .execute(&q.fetches, &[&cutoff, &JobState::Done, &limit])
        .await? as usize;
    Ok(Pruned {
        deliveries,
        jobs,
        events,
        fetches,
    })
}

/// The statements of a batch of pruning, in a dialect.
struct PruneSql {
    /// `$1` done, `$2` cutoff, `$3` limit.
    jobs: String,
    /// `$1` cutoff, `$2` done, `$3` limit.
    deliveries: String,
    /// `$1`..`$3` finished states, `$4` cutoff, `$5` limit; on PostgreSQL
    /// a query of the count deleted.
    events: String,
    /// `$1` cutoff, `$2` done, `$3` limit.
    fetches: String,
}

impl PruneSql {
    fn of(dialect: Dialect) -> PruneSql {
        let pg = dialect == Dialect::Postgres;
        let (open, close) = if pg {
            ("= ANY(ARRAY(", "))")
        } else {
            ("IN (", ")")
        };
        let old_events = "FROM events WHERE state IN ($1, $2, $3)
                          AND next_attempt_at < $4 AND created_at < $4 LIMIT $5";
        let job_finished = if pg {
            "coalesce((SELECT j.state FROM jobs j WHERE j.id = f.job_id), $2) = $2"
        } else {
            "NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = f.job_id AND j.state != $2)"
        };
        PruneSql {
            jobs: format!(
                "DELETE FROM jobs WHERE id {open}
                 SELECT id FROM jobs WHERE state = $1 AND run_at < $2 AND updated_at < $2
                 LIMIT $3{close}"
            ),
            deliveries: format!(
                "DELETE FROM deliveries WHERE id {open}
                 SELECT d.id FROM deliveries d
                 WHERE d.received_at < $1
                   AND (d.job_key IS NULL OR NOT EXISTS (
                       SELECT 1 FROM jobs j WHERE j.account = d.account AND j.job_key = d.job_key
                       AND (j.state != $2 OR j.input_delivery_id = d.id)))
                 LIMIT $3{close}"
            ),
            events: if pg {
                format!(
                    "WITH gone AS (
                         DELETE FROM events WHERE id = ANY(ARRAY(SELECT id {old_events}))
                         RETURNING id),
                     queued AS (DELETE FROM outbox WHERE event_id IN (SELECT id FROM gone))
                     SELECT count(*) FROM gone"
                )
            } else {
                format!("DELETE FROM events WHERE rowid IN (SELECT rowid {old_events})")
            },
            fetches: format!(
                "DELETE FROM fetches WHERE id {open}
                 SELECT f.id FROM fetches f WHERE f.at < $1 AND {job_finished}
                 LIMIT $3{close}"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sql::Text;
    use crate::store::sqlite::test_connection;
    use rusqlite::params;

    /// Each delivery looked at costs one seek, never a pass over every
    /// job: with a scan (and the foreign key enforced, a second one per
    /// row deleted), a batch took minutes on a few hundred thousand jobs,
    /// and held the writer all that time.
    #[test]
    fn pruning_deliveries_seeks_and_never_scans_the_jobs() {
        // Opened as the store opens its connections (foreign keys off).
        let dir = tempfile::tempdir().unwrap();
        let conn = test_connection(&dir.path().join("p.db"));
        let deliveries = PruneSql::of(Dialect::Sqlite).deliveries;
        let plan: Vec<String> = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {}", Text::sqlite(&deliveries)))
            .unwrap()
            .query_map(params![1, 2, 3], |r| r.get::<_, String>(3))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert!(
            plan.iter()
                .any(|l| l.contains("INDEX sqlite_autoindex_jobs_1 (account=? AND job_key=?)")),
            "{plan:#?}"
        );
        assert!(!plan.iter().any(|l| l.starts_with("SCAN")), "{plan:#?}");
    }

    /// With 20,000 recent finished rows of each kind, a pass deletes
    /// nothing and reads next to nothing; reading every row takes over a
    /// hundred thousand steps of SQLite's machine per statement.
    #[test]
    fn a_pass_with_nothing_old_reads_almost_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let conn = test_connection(&dir.path().join("p.db"));
        let q = PruneSql::of(Dialect::Sqlite);
        let (now, cutoff) = (2_000_000_000_000_i64, 1_000_000_000_000_i64);
        let (done, delivered) = (JobState::Done as i64, EventState::Delivered as i64);
        conn.execute_batch(&format!(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
             INSERT INTO jobs (account, job_key, kind, resource_id, state, run_at,
                               created_at, updated_at)
                 SELECT 'a', 'k' || i, 1, i, {done}, {now} + i, {now}, {now} + i FROM n;
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
             INSERT INTO events (id, account, type, subject, body, created_at, state,
                                 next_attempt_at)
                 SELECT 'evt_' || i, 'a', 't', 's', '{{}}', {now}, {delivered}, {now} + i FROM n;
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
             INSERT INTO fetches (job_id, account, endpoint, resource_id, status, elapsed_ms, at)
                 SELECT i, 'a', 'payment', i, 200, 1, {now} + i FROM n;"
        ))
        .unwrap();
        let statements = [
            (&q.jobs, params![done, cutoff, 1000]),
            (
                &q.events,
                params![
                    delivered,
                    EventState::Dead,
                    EventState::Stored,
                    cutoff,
                    1000
                ],
            ),
            (&q.fetches, params![cutoff, done, 1000]),
        ];
        for (sql, params) in statements {
            let mut stmt = conn.prepare(&Text::sqlite(sql.as_str())).unwrap();
            assert_eq!(stmt.execute(params).unwrap(), 0, "{sql}");
            let steps = stmt.get_status(rusqlite::StatementStatus::VmStep);
            assert!(steps < 200, "{steps} steps: {sql}");
        }
    }
}
