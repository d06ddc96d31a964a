//! The single writer: one thread owns the write connection and commits
//! whatever has queued in one transaction (group commit), so many concurrent
//! requests share one fsync and no async task ever blocks on SQLite.
//!
//! Each queued operation runs inside its own savepoint, so one failing
//! operation rolls back alone; its caller hears of the outcome only after the
//! whole batch is committed (or hears the commit failed).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use rusqlite::{Connection, TransactionBehavior};
use tokio::sync::{mpsc, oneshot};

use super::StoreError;

/// Operations queued beyond this wait (backpressure on the callers).
const QUEUE: usize = 4096;
/// The most operations committed together.
const MAX_BATCH: usize = 1024;

enum Msg {
    Op(Box<dyn Op>),
    /// Answer what is queued, refuse what comes after, and stop.
    Close,
}

trait Op: Send {
    /// Runs the operation; `false` means it failed and must be rolled back.
    fn apply(&mut self, conn: &Connection) -> bool;
    /// Tells the caller, once the batch's fate is known.
    fn finish(self: Box<Self>, commit: Result<(), &str>);
}

struct TypedOp<T, F> {
    f: Option<F>,
    out: Option<Result<T, rusqlite::Error>>,
    reply: oneshot::Sender<Result<T, StoreError>>,
}

impl<T, F> Op for TypedOp<T, F>
where
    T: Send,
    F: FnOnce(&Connection) -> Result<T, rusqlite::Error> + Send,
{
    fn apply(&mut self, conn: &Connection) -> bool {
        let Some(f) = self.f.take() else {
            return false;
        };
        let out = f(conn);
        let ok = out.is_ok();
        self.out = Some(out);
        ok
    }

    fn finish(self: Box<Self>, commit: Result<(), &str>) {
        let result = match (commit, self.out) {
            (Err(e), _) => Err(StoreError::Unavailable(e.to_string())),
            (Ok(()), Some(Ok(v))) => Ok(v),
            (Ok(()), Some(Err(e))) => Err(StoreError::Sql(e)),
            (Ok(()), None) => Err(StoreError::Unavailable("operation did not run".into())),
        };
        // The caller may have gone (request cancelled): nothing to tell.
        let _ = self.reply.send(result);
    }
}

/// The handle callers use; cloning it is cheap.
#[derive(Clone)]
pub struct Writer {
    tx: mpsc::Sender<Msg>,
    #[cfg_attr(not(feature = "fault-injection"), allow(dead_code))]
    faults: Arc<Faults>,
}

/// Test-only failure injection (compiled in only with `fault-injection`).
#[derive(Default)]
pub struct Faults {
    pub fail_commits: AtomicBool,
}

impl Writer {
    /// Starts the writer thread over `conn`.
    pub fn spawn(conn: Connection) -> Result<(Writer, JoinHandle<()>), StoreError> {
        let (tx, rx) = mpsc::channel(QUEUE);
        let faults = Arc::new(Faults::default());
        let thread_faults = faults.clone();
        let handle = std::thread::Builder::new()
            .name("pointhook-writer".into())
            .spawn(move || run(conn, rx, thread_faults))
            .map_err(|e| StoreError::Io {
                context: "cannot start the writer thread".into(),
                source: e,
            })?;
        Ok((Writer { tx, faults }, handle))
    }

    /// Runs `f` in the next group-committed transaction; resolves after the
    /// commit, so `Ok` means the change is durable.
    pub async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, rusqlite::Error> + Send + 'static,
    {
        let (reply, rx) = oneshot::channel();
        let op = Box::new(TypedOp {
            f: Some(f),
            out: None,
            reply,
        });
        self.tx
            .send(Msg::Op(op))
            .await
            .map_err(|_| StoreError::Unavailable("the writer has stopped".into()))?;
        rx.await
            .map_err(|_| StoreError::Unavailable("the writer has stopped".into()))?
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

fn run(mut conn: Connection, mut rx: mpsc::Receiver<Msg>, faults: Arc<Faults>) {
    let mut batch: Vec<Box<dyn Op>> = Vec::with_capacity(MAX_BATCH);
    while let Some(first) = rx.blocking_recv() {
        let mut next = Some(first);
        while let Some(msg) = next.take() {
            match msg {
                Msg::Op(op) => batch.push(op),
                // Queued messages are still received after `close`.
                Msg::Close => rx.close(),
            }
            if batch.len() < MAX_BATCH {
                next = rx.try_recv().ok();
            }
        }
        if batch.is_empty() {
            continue;
        }
        let outcome = commit_batch(&mut conn, &mut batch, &faults);
        if let Err(e) = &outcome {
            tracing::error!(error = %e, ops = batch.len(), "storage commit failed");
        }
        let commit = outcome.as_ref().map(|_| ()).map_err(String::as_str);
        for op in batch.drain(..) {
            op.finish(commit);
        }
    }
    if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())) {
        tracing::warn!(error = %e, "final WAL checkpoint failed");
    }
    tracing::debug!("writer stopped: every queued operation was answered");
}

fn commit_batch(
    conn: &mut Connection,
    batch: &mut [Box<dyn Op>],
    faults: &Faults,
) -> Result<(), String> {
    let mut tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| format!("cannot begin a transaction: {e}"))?;
    for op in batch.iter_mut() {
        let sp = tx
            .savepoint()
            .map_err(|e| format!("cannot open a savepoint: {e}"))?;
        // A failed operation's savepoint is dropped, which rolls it back.
        if op.apply(&sp) {
            sp.commit()
                .map_err(|e| format!("cannot release a savepoint: {e}"))?;
        }
    }
    if faults.fail_commits.load(Ordering::Relaxed) {
        return Err("injected storage fault".into());
    }
    tx.commit().map_err(|e| format!("cannot commit: {e}"))
}
