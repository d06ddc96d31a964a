//! Keeping the database small and safe: pruning what is old and finished,
//! and online backups.
//!
//! Pruning never touches unfinished work: pending, running and dead jobs
//! stay with their deliveries, and events not yet delivered stay. Decisions
//! are never pruned: they are what makes every effect happen once.

use std::path::Path;

use rusqlite::{Connection, params};

use crate::domain::{EventState, JobState};
use crate::store::StoreError;
use crate::store::views::Pruned;

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

/// One batch of pruning of everything finished before `cutoff` (unix ms);
/// call until it deletes nothing.
pub(super) fn prune_batch(
    conn: &Connection,
    cutoff: i64,
    batch: usize,
) -> rusqlite::Result<Pruned> {
    let limit = batch as i64;
    let jobs = conn.execute(
        "DELETE FROM jobs WHERE id IN (
             SELECT id FROM jobs WHERE state = ?1 AND updated_at < ?2 LIMIT ?3)",
        params![JobState::Done, cutoff, limit],
    )?;
    let deliveries = conn.execute(PRUNE_DELIVERIES, params![cutoff, JobState::Done, limit])?;
    let events = conn.execute(
        "DELETE FROM events WHERE rowid IN (
             SELECT rowid FROM events WHERE state IN (?1, ?2, ?3) AND created_at < ?4 LIMIT ?5)",
        params![
            EventState::Delivered,
            EventState::Dead,
            EventState::Stored,
            cutoff,
            limit
        ],
    )?;
    let fetches = conn.execute(
        "DELETE FROM fetches WHERE id IN (
             SELECT f.id FROM fetches f WHERE f.at < ?1
               AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = f.job_id AND j.state != ?2)
             LIMIT ?3)",
        params![cutoff, JobState::Done, limit],
    )?;
    Ok(Pruned {
        deliveries,
        jobs,
        events,
        fetches,
    })
}

/// A consistent copy of the database at `dest`, taken while it is in use
/// (one read transaction, so the copy is a single moment).
pub(super) fn backup(conn: &Connection, dest: &Path) -> Result<(), StoreError> {
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
    let backup = rusqlite::backup::Backup::new(conn, &mut target)?;
    // -1: every page in one step, under one read lock.
    backup.step(-1)?;
    drop(backup);
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
        let mut conn = super::super::open_connection(&dir.path().join("p.db")).unwrap();
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
}
