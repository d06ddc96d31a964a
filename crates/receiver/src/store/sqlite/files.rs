//! The database file: one process owns it (a lock beside it), it and its
//! companions are created readable by the owner only, and each connection
//! is opened with the pragmas the store relies on.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::store::StoreError;

/// Locks `{path}.lock` for this process, so that a second server on the
/// same file refuses to start instead of releasing the first one's leases.
/// The lock goes with the process, however it ends.
pub(super) fn take_ownership(path: &Path) -> Result<std::fs::File, StoreError> {
    let mut lock_path = path.as_os_str().to_owned();
    lock_path.push(".lock");
    let lock_path = PathBuf::from(lock_path);
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&lock_path)
        .map_err(|source| StoreError::Io {
            context: format!("cannot open {}", lock_path.display()),
            source,
        })?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(StoreError::Locked {
            path: path.display().to_string(),
        }),
        Err(std::fs::TryLockError::Error(source)) => Err(StoreError::Io {
            context: format!("cannot lock {}", lock_path.display()),
            source,
        }),
    }
}

/// Opens a connection with the settings every connection needs.
pub(super) fn open_connection(path: &Path) -> Result<Connection, StoreError> {
    let open_failed = |message: String| StoreError::Open {
        target: path.display().to_string(),
        message,
    };
    let open_err = |e: rusqlite::Error| open_failed(e.to_string());
    create_private(path).map_err(|e| open_failed(e.to_string()))?;
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    #[cfg(feature = "wal-gather")]
    let conn = {
        let vfs = super::wal_gather::name().map_err(open_failed)?;
        Connection::open_with_flags_and_vfs(path, flags, vfs).map_err(open_err)?
    };
    #[cfg(not(feature = "wal-gather"))]
    let conn = Connection::open_with_flags(path, flags).map_err(open_err)?;
    conn.pragma_update(None, "journal_mode", "wal")
        .map_err(open_err)?;
    conn.pragma_update(None, "synchronous", "full")
        .map_err(open_err)?;
    // The schema's one foreign key (a job's input delivery) is kept by
    // pruning itself, as on PostgreSQL. Enforced, it would cost a lookup on
    // every job written and a scan of every job for each delivery deleted.
    conn.pragma_update(None, "foreign_keys", "off")
        .map_err(open_err)?;
    conn.busy_timeout(Duration::from_secs(5))
        .map_err(open_err)?;
    Ok(conn)
}

/// Creates the database file, readable by its owner only, unless it
/// exists. It holds every body and header received; SQLite gives its
/// `-wal` and `-shm` files the database file's mode.
pub(super) fn create_private(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}
