//! Keeping the database small and safe: pruning what is old and finished,
//! and online backups.
//!
//! Pruning never touches unfinished work: pending, running and dead jobs
//! stay with their deliveries, and events not yet delivered stay. Decisions
//! are never pruned: they are what makes every effect happen once.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, params};

use super::SqliteStore;
use crate::domain::{EventState, JobState};
use crate::store::views::Pruned;
use crate::store::{BackupProgress, StoreError};

/// Pages copied per step of a backup, between two reports of progress.
const BACKUP_STEP: i32 = 1024;

impl SqliteStore {
    pub async fn prune_batch(&self, cutoff: i64, batch: usize) -> Result<Pruned, StoreError> {
        self.write(move |c| prune_batch(c, cutoff, batch)).await
    }

    pub async fn prune_estimate(&self, cutoff: i64) -> Result<Pruned, StoreError> {
        self.read(move |c| prune_estimate(c, cutoff)).await
    }

    /// A consistent copy at `dest` (one read transaction, so one moment).
    pub async fn backup(&self, dest: PathBuf, progress: BackupProgress) -> Result<(), StoreError> {
        self.read_raw(move |c| backup(c, &dest, &*progress)).await
    }
}

/// A delivery goes when the job of its key (at most one: the key is
/// unique) is finished or gone and does not decide from this delivery's
/// body. Only a job of the delivery's own key ever names it as its input,
/// so one seek of that key answers both.
const PRUNE_DELIVERIES: &str = "DELETE FROM deliveries WHERE id IN (
     SELECT d.id FROM deliveries d
     WHERE d.received_at < ?1
       AND (d.job_key IS NULL OR NOT EXISTS (
           SELECT 1 FROM jobs j WHERE j.account = d.account AND j.job_key = d.job_key
             AND (j.state != ?2 OR j.input_delivery_id = d.id)))
     LIMIT ?3)";

// Pruning runs hourly on the writer, so a pass that finds nothing must not
// read every finished row: at a million of each that held the writer (and
// every acknowledgement) for over half a second. Each statement below
// reaches only what is old.

/// A done job ran when it finished (`run_at` and `updated_at` are set
/// together), so the runnable index's range finds the old ones.
const PRUNE_JOBS: &str = "DELETE FROM jobs WHERE id IN (
     SELECT id FROM jobs WHERE state = ?1 AND run_at < ?2 AND updated_at < ?2 LIMIT ?3)";

/// An event's last attempt was due at `next_attempt_at`, never before it
/// was created: the due index's range finds the old ones, and an event
/// goes once its last attempt is older than the retention, too.
const PRUNE_EVENTS: &str = "DELETE FROM events WHERE rowid IN (
     SELECT rowid FROM events WHERE state IN (?1, ?2, ?3)
       AND next_attempt_at < ?4 AND created_at < ?4 LIMIT ?5)";

/// Old fetches by their time's index; each one's job is one seek.
const PRUNE_FETCHES: &str = "DELETE FROM fetches WHERE id IN (
     SELECT f.id FROM fetches f WHERE f.at < ?1
       AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = f.job_id AND j.state != ?2)
     LIMIT ?3)";

/// What each statement above would reach: the old rows, by the same
/// indexes (so a large store counts in milliseconds), before the checks
/// that keep unfinished work.
const PRUNE_ESTIMATE: &str = "SELECT
     (SELECT count(*) FROM deliveries WHERE received_at < ?1),
     (SELECT count(*) FROM jobs WHERE state = ?2 AND run_at < ?1 AND updated_at < ?1),
     (SELECT count(*) FROM events INDEXED BY events_due WHERE state IN (?3, ?4, ?5)
        AND next_attempt_at < ?1 AND created_at < ?1),
     (SELECT count(*) FROM fetches WHERE at < ?1)";

fn prune_estimate(conn: &Connection, cutoff: i64) -> rusqlite::Result<Pruned> {
    conn.query_row(
        PRUNE_ESTIMATE,
        params![
            cutoff,
            JobState::Done,
            EventState::Delivered,
            EventState::Dead,
            EventState::Stored
        ],
        |r| {
            let n = |i| r.get::<_, i64>(i).map(|n| n as usize);
            Ok(Pruned {
                deliveries: n(0)?,
                jobs: n(1)?,
                events: n(2)?,
                fetches: n(3)?,
            })
        },
    )
}

/// One batch of pruning of everything finished before `cutoff` (unix ms);
/// call until it deletes nothing.
pub(super) fn prune_batch(
    conn: &Connection,
    cutoff: i64,
    batch: usize,
) -> rusqlite::Result<Pruned> {
    let limit = batch as i64;
    let jobs = conn.execute(PRUNE_JOBS, params![JobState::Done, cutoff, limit])?;
    let deliveries = conn.execute(PRUNE_DELIVERIES, params![cutoff, JobState::Done, limit])?;
    let events = conn.execute(
        PRUNE_EVENTS,
        params![
            EventState::Delivered,
            EventState::Dead,
            EventState::Stored,
            cutoff,
            limit
        ],
    )?;
    let fetches = conn.execute(PRUNE_FETCHES, params![cutoff, JobState::Done, limit])?;
    Ok(Pruned {
        deliveries,
        jobs,
        events,
        fetches,
    })
}

/// A consistent copy of the database at `dest`, taken while it is in use
/// (one read transaction, so the copy is a single moment), `BACKUP_STEP`
/// pages at a time with the progress told after each.
fn backup(
    conn: &Connection,
    dest: &Path,
    progress: &(dyn Fn(u64, u64) + Send + Sync),
) -> Result<(), StoreError> {
    // The copy holds every body and secret-bearing header: only its owner
    // may read it. Created here, new, so it never inherits wider rights.
    {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(dest)
            .map_err(|source| StoreError::Io {
                context: format!("cannot create {}", dest.display()),
                source,
            })?;
    }
    let mut target = Connection::open(dest)?;
    // The read transaction held across the steps keeps the source at one
    // moment: a backup step that opens its own would start over whenever
    // the server commits in between (WAL: the writer never waits on it).
    conn.execute_batch("BEGIN")?;
    let copied = (|| {
        conn.query_row("SELECT count(*) FROM sqlite_schema", [], |_| Ok(()))?;
        let backup = rusqlite::backup::Backup::new(conn, &mut target)?;
        loop {
            let more = backup.step(BACKUP_STEP)? == rusqlite::backup::StepResult::More;
            let p = backup.progress();
            let total = p.pagecount.max(0) as u64;
            progress(total.saturating_sub(p.remaining.max(0) as u64), total);
            if !more {
                return Ok::<_, rusqlite::Error>(());
            }
        }
    })();
    let ended = conn.execute_batch("COMMIT");
    copied?;
    ended?;
    target.pragma_update(None, "journal_mode", "delete")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each delivery looked at costs one seek, never a pass over every
    /// job: with a scan (and the foreign key enforced, a second one per
    /// row deleted), a batch took minutes on a few hundred thousand jobs,
    /// and held the writer all that time.
    #[test]
    fn pruning_deliveries_seeks_and_never_scans_the_jobs() {
        // Opened as the store opens its connections (foreign keys off).
        let dir = tempfile::tempdir().unwrap();
        let mut conn = super::super::files::open_connection(&dir.path().join("p.db")).unwrap();
        super::super::migrations::migrate(&mut conn).unwrap();
        let plan: Vec<String> = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {PRUNE_DELIVERIES}"))
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
        let mut conn = super::super::files::open_connection(&dir.path().join("p.db")).unwrap();
        super::super::migrations::migrate(&mut conn).unwrap();
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
            (PRUNE_JOBS, params![done, cutoff, 1000]),
            (
                PRUNE_EVENTS,
                params![
                    delivered,
                    EventState::Dead,
                    EventState::Stored,
                    cutoff,
                    1000
                ],
            ),
            (PRUNE_FETCHES, params![cutoff, done, 1000]),
        ];
        for (sql, params) in statements {
            let mut stmt = conn.prepare(sql).unwrap();
            assert_eq!(stmt.execute(params).unwrap(), 0, "{sql}");
            let steps = stmt.get_status(rusqlite::StatementStatus::VmStep);
            assert!(steps < 200, "{steps} steps: {sql}");
        }
    }
}
