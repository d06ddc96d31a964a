//! Online backups of a SQLite file (PostgreSQL has pg_dump); pruning is
//! written once for both, in `store/maintenance.rs`.

use std::path::{Path, PathBuf};

use rusqlite::Connection;

use super::SqliteStore;
use crate::store::{BackupProgress, StoreError};

/// Pages copied per step of a backup, between two reports of progress.
const BACKUP_STEP: i32 = 1024;

impl SqliteStore {
    /// A consistent copy at `dest` (one read transaction, so one moment).
    pub async fn backup(&self, dest: PathBuf, progress: BackupProgress) -> Result<(), StoreError> {
        self.read_raw(move |c| backup(c, &dest, &*progress)).await
    }
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
