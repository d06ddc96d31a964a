//! The single writer: one thread owns the write connection and commits
//! whatever has queued in one transaction (group commit), so many concurrent
//! requests share one fsync and no async task ever blocks on SQLite.
//!
//! A batch runs without savepoints (they copy every page an operation
//! touches). If any operation fails, the batch is rolled back and each
//! operation is run again in a transaction of its own, so one failure never
//! takes its neighbours down; that is why operations are `Fn`. A caller hears
//! of the outcome only after its commit (or hears the commit failed).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use std::path::Path;
use std::sync::Mutex;

use rusqlite::Connection;
use tokio::sync::{Notify, mpsc, oneshot};

use super::space::Space;
use super::wal_length::WalLength;
use crate::store::sql::{Conn, Run, run_sqlite};
use crate::store::{CommitHealth, StoreError};

/// Operations queued beyond this wait (backpressure on the callers).
const QUEUE: usize = 4096;
/// The most operations committed together.
const MAX_BATCH: usize = 1024;
/// How often the writer looks at the WAL's length.
const CATCH_UP_EVERY: std::time::Duration = std::time::Duration::from_secs(1);
/// The WAL content past which the writer finishes the background
/// checkpoint's work, so the WAL starts over. Each catch-up pauses the
/// writes for a few milliseconds; at this length it comes every second
/// under heavy load and never under a light one.
const WAL_RESTART_BYTES: u64 = 64 << 20;
/// The WAL file is cut back to this length when the WAL starts over, and
/// otherwise keeps its length, so that the next round overwrites blocks the
/// file has. A commit that extends the file makes its fsync allocate blocks
/// and write the inode too, which costs about as much again as the commit's
/// own pages. It leaves room for a second of the heaviest load past
/// `WAL_RESTART_BYTES` (about 130 MB/s here).
const WAL_KEEP_BYTES: u64 = 256 << 20;

enum Msg {
    Op(Box<dyn Op>),
    /// Answer what is queued, refuse what comes after, and stop.
    Close,
}

trait Op: Send {
    /// Runs the operation; `false` means it failed and must be rolled back.
    fn apply(&mut self, conn: &Mutex<Connection>) -> bool;
    /// Whether it failed for lack of space.
    fn out_of_space(&self) -> bool;
    /// Tells the caller, once the batch's fate is known.
    fn finish(self: Box<Self>, commit: Result<(), &str>);
}

struct TypedOp<T, F> {
    f: F,
    out: Option<Result<T, StoreError>>,
    reply: oneshot::Sender<Result<T, StoreError>>,
    /// Told once the operation is committed, whether or not anyone still
    /// waits for the answer.
    committed: Option<Arc<Notify>>,
}

impl<T, F> Op for TypedOp<T, F>
where
    T: Send,
    F: Fn(&Mutex<Connection>) -> Result<T, StoreError> + Send,
{
    fn apply(&mut self, conn: &Mutex<Connection>) -> bool {
        let out = (self.f)(conn);
        let ok = out.is_ok();
        self.out = Some(out);
        ok
    }

    fn out_of_space(&self) -> bool {
        matches!(self.out, Some(Err(StoreError::DiskFull(_))))
    }

    fn finish(self: Box<Self>, commit: Result<(), &str>) {
        let result = match (commit, self.out) {
            (Err(e), _) => Err(StoreError::Unavailable(e.to_string())),
            (Ok(()), Some(Ok(v))) => Ok(v),
            (Ok(()), Some(Err(e))) => Err(e),
            (Ok(()), None) => Err(StoreError::Unavailable("operation did not run".into())),
        };
        if let (Ok(_), Some(committed)) = (&result, &self.committed) {
            committed.notify_one();
        }
        // The caller may have gone (request cancelled): nothing to tell.
        let _ = self.reply.send(result);
    }
}

/// The handle callers use; cloning it is cheap.
#[derive(Clone)]
pub struct Writer {
    tx: mpsc::Sender<Msg>,
    health: Arc<CommitHealth>,
    #[cfg_attr(not(feature = "fault-injection"), allow(dead_code))]
    faults: Arc<Faults>,
}

/// Test-only failure injection (compiled in only with `fault-injection`).
#[derive(Default)]
pub struct Faults {
    pub fail_commits: AtomicBool,
    /// The writer thread panics at its next batch.
    pub panic_writer: AtomicBool,
}

impl Writer {
    /// Starts the writer thread over `conn`.
    pub fn spawn(conn: Connection, path: &Path) -> Result<(Writer, JoinHandle<()>), StoreError> {
        // A WAL that starts over is written from its beginning but keeps its
        // length; with this limit the file is cut back to it then, so it does
        // not stay at the longest it ever grew (a reader that held the WAL
        // for minutes). The disk's free space bounds it further.
        let mut space = Space::new(path, WAL_KEEP_BYTES, WAL_RESTART_BYTES);
        space.look(&conn);
        let (tx, rx) = mpsc::channel(QUEUE);
        let faults = Arc::new(Faults::default());
        // Reachable from the binary's environment, so never in a release
        // build: building the benchmarks (`--examples`) unifies the tests'
        // `fault-injection` feature into the release binary.
        #[cfg(all(feature = "fault-injection", debug_assertions))]
        if std::env::var_os("POINTHOOK_FAULT_PANIC_WRITER").is_some() {
            faults.panic_writer.store(true, Ordering::Relaxed);
        }
        let thread_faults = faults.clone();
        let health = Arc::new(CommitHealth::default());
        let thread_health = health.clone();
        let handle = std::thread::Builder::new()
            .name("pointhook-writer".into())
            .spawn(move || {
                let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    run(conn, rx, thread_faults, &thread_health, space)
                }));
                if let Err(panic) = ran {
                    // Without its writer the process could only answer 503
                    // for ever: end it, and the service manager starts a
                    // fresh one. What was acknowledged is committed.
                    let message = panic
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_default();
                    tracing::error!(error = %message, "the storage writer died; exiting so that pointhook is restarted");
                    eprintln!("pointhook: the storage writer died ({message}); exiting");
                    std::process::exit(70);
                }
            })
            .map_err(|e| StoreError::Io {
                context: "cannot start the writer thread".into(),
                source: e,
            })?;
        Ok((Writer { tx, faults, health }, handle))
    }

    /// Runs `f` in the next group-committed transaction; resolves after the
    /// commit, so `Ok` means the change is durable.
    pub async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: Fn(&Connection) -> Result<T, rusqlite::Error> + Send + 'static,
    {
        self.write_then_notify(f, None).await
    }

    /// As `write`, for a query function written for both backends.
    pub async fn write_conn<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: for<'c> Fn(&'c Conn<'c>) -> Run<'c, T> + Send + 'static,
    {
        self.queue(move |conn: &Mutex<Connection>| run_sqlite(conn, &f), None)
            .await
    }

    /// As `write`, and notifies `committed` once `f` is committed, from the
    /// writer: a caller cancelled while it waited (a request whose client
    /// hung up) still has its commit announced.
    pub async fn write_then_notify<T, F>(
        &self,
        f: F,
        committed: Option<Arc<Notify>>,
    ) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: Fn(&Connection) -> Result<T, rusqlite::Error> + Send + 'static,
    {
        self.queue(
            move |conn: &Mutex<Connection>| Ok(f(&lock(conn))?),
            committed,
        )
        .await
    }

    async fn queue<T, F>(&self, f: F, committed: Option<Arc<Notify>>) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: Fn(&Mutex<Connection>) -> Result<T, StoreError> + Send + 'static,
    {
        let (reply, rx) = oneshot::channel();
        let op = Box::new(TypedOp {
            f,
            out: None,
            reply,
            committed,
        });
        self.tx
            .send(Msg::Op(op))
            .await
            .map_err(|_| StoreError::Unavailable("the writer has stopped".into()))?;
        rx.await
            .map_err(|_| StoreError::Unavailable("the writer has stopped".into()))?
    }

    pub fn health(&self) -> &CommitHealth {
        &self.health
    }

    /// Stops the writer once everything queued before now is answered.
    pub async fn close(&self) {
        let _ = self.tx.send(Msg::Close).await;
    }

    #[cfg(feature = "fault-injection")]
    pub fn faults(&self) -> &Faults {
        &self.faults
    }
}

fn run(
    conn: Connection,
    mut rx: mpsc::Receiver<Msg>,
    faults: Arc<Faults>,
    health: &CommitHealth,
    mut space: Space,
) {
    let mut batch: Vec<Box<dyn Op>> = Vec::with_capacity(MAX_BATCH);
    let wal = WalLength::watch(&conn);
    let conn = Mutex::new(conn);
    let mut last_look = std::time::Instant::now();
    while let Some(first) = rx.blocking_recv() {
        take(&mut rx, &mut batch, first);
        // No waiting for company: whatever queued during the last commit is
        // the next batch, so batches grow with the load by themselves.
        drain(&mut rx, &mut batch);
        if batch.is_empty() {
            continue;
        }
        if faults.panic_writer.load(Ordering::Relaxed) {
            panic!("injected writer panic");
        }
        // Out of space: nothing is written until the WAL is given back
        // whole; a commit tried meanwhile would grow the WAL file over any
        // space freed, and the checkpoint that gives it back could never
        // grow the database.
        if space.full() && !space.give_back(&lock(&conn)) {
            health.record_disk_full();
            batch
                .drain(..)
                .for_each(|op| op.finish(Err("disk full: waiting for space")));
            continue;
        }
        commit_batch(&conn, &mut batch, &faults, health);
        if health.disk_full() {
            space.mark_full();
        }
        if last_look.elapsed() >= CATCH_UP_EVERY {
            let restart = space.look(&lock(&conn));
            // Busy means the checkpoint thread is at it: try after the next batch.
            if wal.bytes() <= restart || catch_up_checkpoint(&lock(&conn)) {
                last_look = std::time::Instant::now();
            }
        }
    }
    drop(wal);
    if let Err(e) = lock(&conn).query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())) {
        tracing::warn!(error = %e, "final WAL checkpoint failed");
    }
    tracing::debug!("writer stopped: every queued operation was answered");
}

/// Commits `batch` and answers every operation in it.
fn commit_batch(
    conn: &Mutex<Connection>,
    batch: &mut Vec<Box<dyn Op>>,
    faults: &Faults,
    health: &CommitHealth,
) {
    let all_applied = run_in_transaction(conn, batch.iter_mut(), faults);
    match all_applied {
        Ok(true) => {
            health.record(true);
            batch.drain(..).for_each(|op| op.finish(Ok(())));
        }
        Ok(false) => {
            // Rolled back: each operation again, alone. One that fails
            // alone too (a full disk) means storage is not taking writes.
            let (mut all_alone, mut out_of_space) = (true, false);
            for mut op in batch.drain(..) {
                let one = run_in_transaction(conn, std::iter::once(&mut op), faults);
                all_alone &= matches!(one, Ok(true));
                out_of_space |= op.out_of_space() || matches!(&one, Err(f) if f.disk_full);
                let commit = one.map(|_| ()).map_err(|f| f.text);
                log_failure(&commit, 1);
                op.finish(commit.as_ref().map(|_| ()).map_err(String::as_str));
            }
            match (all_alone, out_of_space) {
                (false, true) => health.record_disk_full(),
                (ok, _) => health.record(ok),
            }
        }
        Err(e) => {
            if e.disk_full {
                health.record_disk_full();
            } else {
                health.record(false);
            }
            let commit: Result<(), String> = Err(e.text);
            log_failure(&commit, batch.len());
            let commit = commit.as_ref().map(|_| ()).map_err(String::as_str);
            batch.drain(..).for_each(|op| op.finish(commit));
        }
    }
}

/// Applies `ops` in one transaction and commits when every one succeeded;
/// `Ok(false)`: one failed and the transaction was rolled back. It stops at
/// the first failure: SQLite may have rolled the transaction back by itself
/// (a full disk, an I/O error), and what ran after would run outside any
/// transaction, committed one statement at a time.
fn run_in_transaction<'a>(
    conn: &Mutex<Connection>,
    ops: impl Iterator<Item = &'a mut Box<dyn Op>>,
    faults: &Faults,
) -> Result<bool, Failure> {
    lock(conn)
        .execute_batch("BEGIN IMMEDIATE")
        .map_err(|e| Failure::of("cannot begin a transaction", &e))?;
    for op in ops {
        if !op.apply(conn) {
            // Rolled back by SQLite already, or by us now.
            roll_back(conn)?;
            return Ok(false);
        }
    }
    if faults.fail_commits.load(Ordering::Relaxed) {
        roll_back(conn)?;
        return Err(Failure {
            text: "injected storage fault".into(),
            disk_full: false,
        });
    }
    let committed = lock(conn).execute_batch("COMMIT");
    if let Err(e) = committed {
        roll_back(conn)?;
        return Err(Failure::of("cannot commit", &e));
    }
    Ok(true)
}

/// Why a transaction did not commit, and whether for lack of space.
struct Failure {
    text: String,
    disk_full: bool,
}

impl Failure {
    fn of(what: &str, e: &rusqlite::Error) -> Failure {
        Failure {
            text: format!("{what}: {e}"),
            disk_full: e.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull),
        }
    }
}

fn roll_back(conn: &Mutex<Connection>) -> Result<(), Failure> {
    let c = lock(conn);
    if !c.is_autocommit() {
        c.execute_batch("ROLLBACK")
            .map_err(|e| Failure::of("cannot roll back", &e))?;
    }
    Ok(())
}

/// The writer's connection: locked per statement, never contended (one
/// thread owns it; the mutex lets a query function's future be `Send`).
pub(super) fn lock(conn: &Mutex<Connection>) -> std::sync::MutexGuard<'_, Connection> {
    conn.lock().unwrap_or_else(|p| p.into_inner())
}

fn log_failure(commit: &Result<(), String>, ops: usize) {
    if let Err(e) = commit {
        tracing::error!(error = %e, ops, "storage commit failed");
    }
}

/// The checkpoint thread copies the WAL into the database without blocking
/// anyone, but under a steady write load it never catches the last frames,
/// and the WAL can only start over once every frame is copied. Between two
/// batches nothing is being written, so here the remainder is short work and
/// the next transaction restarts the WAL: it stays near `WAL_RESTART_BYTES`.
fn catch_up_checkpoint(conn: &Connection) -> bool {
    match conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get::<_, i64>(0)) {
        Ok(busy) => busy == 0,
        Err(e) => {
            tracing::warn!(error = %e, "WAL checkpoint failed");
            true
        }
    }
}

/// Moves whatever is queued now into `batch`, up to `MAX_BATCH`.
fn drain(rx: &mut mpsc::Receiver<Msg>, batch: &mut Vec<Box<dyn Op>>) {
    while batch.len() < MAX_BATCH {
        match rx.try_recv() {
            Ok(msg) => take(rx, batch, msg),
            Err(_) => break,
        }
    }
}

fn take(rx: &mut mpsc::Receiver<Msg>, batch: &mut Vec<Box<dyn Op>>, msg: Msg) {
    match msg {
        Msg::Op(op) => batch.push(op),
        // Queued messages are still received after `close`.
        Msg::Close => rx.close(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_failing_operation_does_not_take_its_batch_down() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (v INTEGER NOT NULL UNIQUE)")
            .unwrap();
        let (writer, thread) = Writer::spawn(conn, std::path::Path::new(":memory:")).unwrap();
        let insert = |v: i64| {
            let writer = writer.clone();
            async move {
                writer
                    .write(move |c| c.execute("INSERT INTO t (v) VALUES (?1)", [v]))
                    .await
            }
        };
        // Queued together, so they share a batch; 1 is inserted twice.
        let (a, b, c, d) = tokio::join!(insert(1), insert(2), insert(1), insert(3));
        assert!(a.is_ok() && b.is_ok() && d.is_ok(), "{a:?} {b:?} {d:?}");
        assert!(matches!(c, Err(StoreError::Database(_))), "{c:?}");
        let count = writer
            .write(|c| c.query_row("SELECT count(*) FROM t", [], |r| r.get::<_, i64>(0)))
            .await
            .unwrap();
        assert_eq!(count, 3);
        writer.close().await;
        thread.join().unwrap();
        assert!(matches!(insert(9).await, Err(StoreError::Unavailable(_))));
    }
}
