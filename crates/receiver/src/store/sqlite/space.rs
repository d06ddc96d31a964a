//! The disk under the database: how much of it the WAL may keep. The
//! writer keeps the WAL file long (its blocks are overwritten rather than
//! allocated again by each commit, which is faster) and lets its content
//! grow between restarts; on a disk short of space either would take the
//! room the database needs, and a full disk would stay full after space was
//! freed (the WAL growing back over it). So both lengths are bounded by the
//! free space, looked at once a second. A write that fails for lack of
//! space stops the writes until the WAL's room is given back whole (every
//! frame copied home, the file cut to nothing): a commit tried meanwhile
//! would grow the WAL over whatever space is freed, and the checkpoint
//! could then never grow the database. The writer tries again every
//! `RETRY_EVERY`; once it works, writes go on, with no restart.

use std::path::{Path, PathBuf};

use rusqlite::Connection;

/// The share of the free space the WAL may keep as its file's length.
const KEEP_SHARE: u64 = 4;
/// The share of the free space the WAL's content may reach before the
/// writer restarts it.
const RESTART_SHARE: u64 = 8;
/// How often, while the disk is full, giving the WAL back is tried.
const RETRY_EVERY: std::time::Duration = std::time::Duration::from_millis(200);
/// Below this, nothing is kept beyond what a commit needs.
const FLOOR: u64 = 64 << 10;

/// The writer's view of the disk, and what it told SQLite last.
pub struct Space {
    dir: PathBuf,
    keep_limit: u64,
    restart_limit: u64,
    kept: Option<u64>,
    /// Since when writes wait for space (the last try to give it back).
    full: Option<std::time::Instant>,
}

impl Space {
    /// For the database at `path`, the WAL kept at most `keep_limit` and
    /// restarted past `restart_limit` when the disk has room for that.
    pub fn new(path: &Path, keep_limit: u64, restart_limit: u64) -> Space {
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf();
        Space {
            dir,
            keep_limit,
            restart_limit,
            kept: None,
            full: None,
        }
    }

    /// Looks at the free space, tells SQLite how long the WAL file may
    /// stay (when that changed by a quarter or more), and returns the WAL
    /// content past which the writer should restart it.
    pub fn look(&mut self, conn: &Connection) -> u64 {
        let Some(free) = free_bytes(&self.dir) else {
            return self.restart_limit;
        };
        let keep = (free / KEEP_SHARE).min(self.keep_limit).max(FLOOR);
        let changed = self
            .kept
            .is_none_or(|k| keep.abs_diff(k) >= k / 4 || (keep == FLOOR) != (k == FLOOR));
        if changed {
            match conn.pragma_update(None, "journal_size_limit", keep as i64) {
                Ok(()) => self.kept = Some(keep),
                Err(e) => tracing::warn!(error = %e, "cannot bound the WAL's kept length"),
            }
        }
        (free / RESTART_SHARE).min(self.restart_limit).max(FLOOR)
    }

    /// A write failed for lack of space.
    pub fn mark_full(&mut self) {
        let now = std::time::Instant::now();
        self.full = Some(now.checked_sub(RETRY_EVERY).unwrap_or(now));
    }

    /// Whether writes wait for space.
    pub fn full(&self) -> bool {
        self.full.is_some()
    }

    /// Gives the WAL's room back: keeps no WAL beyond what is used and
    /// copies every frame home, cutting the file to nothing. `true` once
    /// that worked (writes may go on); tried at most every `RETRY_EVERY`.
    pub fn give_back(&mut self, conn: &Connection) -> bool {
        match self.full {
            Some(at) if at.elapsed() < RETRY_EVERY => return false,
            _ => {}
        }
        self.full = Some(std::time::Instant::now());
        if let Err(e) = conn.pragma_update(None, "journal_size_limit", 0) {
            tracing::warn!(error = %e, "cannot shorten the WAL");
        }
        self.kept = Some(0);
        let done = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))
        });
        match done {
            Ok((0, 0)) => {
                self.full = None;
                self.kept = None;
                tracing::info!("space again: the WAL was given back, writes go on");
                true
            }
            Ok(_) => false,
            Err(e) => {
                tracing::debug!(error = %e, "the WAL could not be given back yet");
                false
            }
        }
    }
}

/// What an unprivileged writer may still use on the file system of `dir`.
fn free_bytes(dir: &Path) -> Option<u64> {
    let st = rustix::fs::statvfs(dir).ok()?;
    Some(st.f_bavail.saturating_mul(st.f_frsize))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_disk_under_a_file_has_room() {
        let dir = tempfile::tempdir().unwrap();
        assert!(free_bytes(dir.path()).is_some_and(|n| n > 0));
        let mut space = Space::new(&dir.path().join("x.db"), u64::MAX, u64::MAX);
        let conn = Connection::open(dir.path().join("x.db")).unwrap();
        let before = free_bytes(dir.path()).unwrap();
        let restart = space.look(&conn);
        // Other processes write to the same disk meanwhile: the bound is
        // checked against the free space on either side of the look.
        let free = before.max(free_bytes(dir.path()).unwrap());
        let kept: i64 = conn
            .query_row("PRAGMA journal_size_limit", [], |r| r.get(0))
            .unwrap();
        assert!(restart >= FLOOR && kept as u64 >= FLOOR, "{restart} {kept}");
        assert!(kept as u64 <= free / KEEP_SHARE + 1, "{kept} {free}");
    }
}
