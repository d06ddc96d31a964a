use rusqlite::{Connection, OpenFlags};

fn assert_intact(conn: &Connection) {
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
}

/// Fifty commits through `conn`, each read whole by `other` at once.
fn each_commit_is_seen(conn: &Connection, other: &Connection) {
    for k in 0..50i64 {
        conn.execute("INSERT INTO t (k, v) VALUES (?1, randomblob(700))", [k])
            .unwrap();
        let (n, sum): (i64, i64) = other
            .query_row("SELECT count(*), sum(k) FROM t", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!((n, sum), (k + 1, k * (k + 1) / 2));
    }
}

/// Write system calls made so far by this thread.
#[cfg(target_os = "linux")]
fn writes_so_far() -> u64 {
    let io = std::fs::read_to_string("/proc/thread-self/io").expect("per-thread I/O counters");
    io.lines()
        .find_map(|l| l.strip_prefix("syscw: "))
        .and_then(|n| n.trim().parse().ok())
        .expect("syscw in /proc/thread-self/io")
}

fn open(path: &std::path::Path, gather: bool) -> Connection {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE;
    let conn = if gather {
        Connection::open_with_flags_and_vfs(path, flags, super::name().unwrap()).unwrap()
    } else {
        Connection::open_with_flags(path, flags).unwrap()
    };
    conn.pragma_update(None, "journal_mode", "wal").unwrap();
    conn.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
    conn.execute_batch("CREATE TABLE IF NOT EXISTS t (k INTEGER PRIMARY KEY, v BLOB NOT NULL)")
        .unwrap();
    conn
}

/// One transaction that dirties some twenty pages (less than one
/// gathered run); its write calls.
#[cfg(target_os = "linux")]
fn commit_many_pages(conn: &Connection, from: i64) -> u64 {
    let before = writes_so_far();
    conn.execute_batch("BEGIN").unwrap();
    for k in from..from + 20 {
        conn.execute("INSERT INTO t (k, v) VALUES (?1, zeroblob(3000))", [k])
            .unwrap();
    }
    conn.execute_batch("COMMIT").unwrap();
    writes_so_far() - before
}

#[cfg(target_os = "linux")]
#[test]
fn a_commit_reaches_the_wal_in_one_write() {
    let dir = tempfile::tempdir().unwrap();
    let plain = commit_many_pages(&open(&dir.path().join("plain.db"), false), 0);
    let gathered = commit_many_pages(&open(&dir.path().join("gathered.db"), true), 0);
    assert!(
        plain >= 40,
        "the plain VFS writes each of ~20 frames in two calls: {plain}"
    );
    assert!(gathered <= 2, "gathered into one write, not {gathered}");
}

#[test]
fn a_transaction_past_the_run_and_the_cache_reads_back_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gathered.db");
    let conn = open(&path, true);
    // A transaction larger than the gathering bound and than the page
    // cache: frames go out before the commit and are read back.
    conn.pragma_update(None, "cache_size", 10).unwrap();
    conn.execute_batch("BEGIN").unwrap();
    for k in 0..1100 {
        conn.execute("INSERT INTO t (k, v) VALUES (?1, randomblob(1500))", [k])
            .unwrap();
    }
    conn.execute("UPDATE t SET v = zeroblob(10) WHERE k % 7 = 0", [])
        .unwrap();
    conn.execute_batch("COMMIT").unwrap();

    // Another connection through the platform VFS sees it all, intact.
    let other = open(&path, false);
    let (n, small): (i64, i64) = other
        .query_row("SELECT count(*), sum(length(v) = 10) FROM t", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!((n, small), (1100, 158));
    assert_intact(&other);
    drop(conn);
    drop(other);
    let reopened = open(&path, true);
    assert_intact(&reopened);
}

/// Without a sync at commit, nothing else would write the gathered
/// frames before SQLite publishes the commit to other connections: the
/// commit frame's page must end the run.
#[test]
fn a_commit_without_a_sync_is_in_the_file_when_others_see_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nosync.db");
    let conn = open(&path, true);
    conn.pragma_update(None, "synchronous", "off").unwrap();
    let other = open(&path, false);
    each_commit_is_seen(&conn, &other);
    assert_intact(&other);
}

/// A page written twice in one transaction (spilled, then changed)
/// makes SQLite rewrite the frame headers after the commit frame, the
/// commit's header last, with no page after it. Without a sync at
/// commit, that header must still be in the file: a crash copy of the
/// database and its WAL recovers the commit.
#[test]
fn a_commit_whose_checksums_were_mended_survives_a_crash_without_a_sync() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mended.db");
    let conn = open(&path, true);
    conn.pragma_update(None, "synchronous", "normal").unwrap();
    conn.pragma_update(None, "cache_size", 10).unwrap();
    conn.execute_batch("BEGIN").unwrap();
    for k in 0..300i64 {
        conn.execute("INSERT INTO t (k, v) VALUES (?1, randomblob(1000))", [k])
            .unwrap();
    }
    conn.execute("UPDATE t SET v = randomblob(900)", [])
        .unwrap();
    conn.execute_batch("COMMIT").unwrap();

    // The files as a crash would leave them: the writer is still open.
    let crashed = dir.path().join("crashed");
    std::fs::create_dir(&crashed).unwrap();
    for suffix in ["", "-wal"] {
        let name = format!("mended.db{suffix}");
        std::fs::copy(dir.path().join(&name), crashed.join(&name)).unwrap();
    }
    let recovered = open(&crashed.join("mended.db"), false);
    let n: i64 = recovered
        .query_row("SELECT count(*) FROM t WHERE length(v) = 900", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(n, 300);
    drop(conn);
}

/// Without power-safe overwrite SQLite pads each commit to a sector,
/// splitting a frame around a sync and publishing what follows it
/// unsynced: nothing is gathered there.
#[test]
fn a_wal_padded_to_sectors_is_written_as_it_comes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("padded.db");
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_URI;
    let uri = format!("file:{}?psow=0", path.display());
    let conn = Connection::open_with_flags_and_vfs(&uri, flags, super::name().unwrap()).unwrap();
    conn.pragma_update(None, "journal_mode", "wal").unwrap();
    conn.pragma_update(None, "synchronous", "full").unwrap();
    conn.execute_batch("CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB NOT NULL)")
        .unwrap();
    let other = open(&path, false);
    each_commit_is_seen(&conn, &other);
    assert_intact(&other);
}
