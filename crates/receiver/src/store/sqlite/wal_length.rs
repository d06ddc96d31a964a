//! The length of the WAL's content, told by SQLite after each commit: what
//! the writer reads to know when to finish a checkpoint's work.

use rusqlite::Connection;

/// The length of the WAL's content as of the last commit, told by SQLite
/// after each commit (`sqlite3_wal_hook`), at no cost. The file's length
/// would not do: it is kept longer than the content (`WAL_KEEP_BYTES`), and
/// stays so once the content starts over.
pub(super) struct WalLength {
    db: *mut rusqlite::ffi::sqlite3,
    frames: Box<std::cell::Cell<i64>>,
    frame_bytes: u64,
}

impl WalLength {
    /// Registers the hook on `conn`, whose `wal_autocheckpoint` (the
    /// hook's other user) is off; unregistered when this is dropped, which
    /// must be before `conn` is.
    pub(super) fn watch(conn: &Connection) -> WalLength {
        let page: i64 = conn
            .pragma_query_value(None, "page_size", |r| r.get(0))
            .unwrap_or(4096);
        let frames = Box::new(std::cell::Cell::new(0));
        // SAFETY: the handle is this open connection's, used on this thread
        // only; the cell outlives the registration (see Drop).
        let db = unsafe { conn.handle() };
        unsafe {
            rusqlite::ffi::sqlite3_wal_hook(
                db,
                Some(on_wal_commit),
                &*frames as *const std::cell::Cell<i64> as *mut std::ffi::c_void,
            );
        }
        WalLength {
            db,
            frames,
            // Each frame is a page with a 24-byte header.
            frame_bytes: page as u64 + 24,
        }
    }

    pub(super) fn bytes(&self) -> u64 {
        self.frames.get() as u64 * self.frame_bytes
    }
}

impl Drop for WalLength {
    fn drop(&mut self) {
        // SAFETY: as in `watch`; the connection is still open.
        unsafe { rusqlite::ffi::sqlite3_wal_hook(self.db, None, std::ptr::null_mut()) };
    }
}

unsafe extern "C" fn on_wal_commit(
    frames: *mut std::ffi::c_void,
    _db: *mut rusqlite::ffi::sqlite3,
    _name: *const std::ffi::c_char,
    count: std::ffi::c_int,
) -> std::ffi::c_int {
    // SAFETY: registered in `WalLength::watch` with its cell, which lives
    // until the hook is unregistered.
    unsafe { (*(frames as *const std::cell::Cell<i64>)).set(i64::from(count)) };
    rusqlite::ffi::SQLITE_OK
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wal_length_is_its_content_not_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.db");
        let conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "journal_mode", "wal").unwrap();
        conn.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        conn.execute_batch("CREATE TABLE t (v BLOB)").unwrap();
        let wal = WalLength::watch(&conn);
        for _ in 0..50 {
            conn.execute("INSERT INTO t VALUES (zeroblob(8000))", [])
                .unwrap();
        }
        let long = wal.bytes();
        assert!(long > 50 * 8000, "{long}");
        // Checkpointed whole, the WAL starts over at the next commit.
        conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
            .unwrap();
        conn.execute("INSERT INTO t VALUES (1)", []).unwrap();
        assert!(wal.bytes() < 4 * 4120, "{}", wal.bytes());
        let file = std::fs::metadata(dir.path().join("w.db-wal"))
            .unwrap()
            .len();
        assert!(file >= long, "the file keeps its length: {file}");
        drop(wal);
        conn.execute("INSERT INTO t VALUES (2)", []).unwrap();
    }
}
