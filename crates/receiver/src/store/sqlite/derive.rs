//! When the writer derives the inbox (`store/ingest.rs`): in a small
//! batch's own commit, or once rows have waited long enough or grown many
//! enough, or when the writer has nothing else to do. The derivation is an
//! operation of the batch like any other, so one that fails is run alone
//! and takes no acknowledgement down with it.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use tokio::sync::{Notify, mpsc};

use super::writer::Op;
use crate::store::StoreError;
use crate::store::ingest::{DERIVE_AFTER, DERIVE_AT, DERIVE_MAX, Derived, INLINE_MAX, derive};
use crate::store::sql::run_sqlite;

/// How long an idle writer with rows waiting waits for company before it
/// derives them alone.
const IDLE: Duration = Duration::from_millis(1);
/// After a derivation failed (a full disk), how long before the next try.
const RETRY: Duration = Duration::from_millis(100);

/// The writer's account of the inbox.
pub struct Derivation {
    /// Told when a derivation's commit holds a job.
    jobs_ready: Option<Arc<Notify>>,
    /// Never derive (a fault injected by tests, or a writer with no inbox).
    hold: bool,
    /// Appends committed since the inbox was last seen empty.
    pending: usize,
    /// When the oldest of them was committed.
    since: Option<Instant>,
    /// When the last derivation failed, if it did.
    failed: Option<Instant>,
    /// What the last derivation's commit did, told by its operation.
    outcome: Arc<Mutex<Option<Derived>>>,
}

impl Derivation {
    pub fn new(jobs_ready: Option<Arc<Notify>>, hold: bool) -> Derivation {
        Derivation {
            jobs_ready,
            hold,
            pending: 0,
            since: None,
            failed: None,
            outcome: Arc::default(),
        }
    }

    /// A writer that never derives (one with no inbox).
    #[cfg(test)]
    pub fn none() -> Derivation {
        Derivation::new(None, true)
    }

    /// Whether rows wait to be derived, and may be now.
    pub fn waiting(&self) -> bool {
        !self.hold && self.pending > 0 && self.failed.is_none_or(|t| t.elapsed() >= RETRY)
    }

    /// Whether a batch of `appends` acknowledgements derives in its commit.
    pub fn due(&self, appends: usize) -> bool {
        let total = self.pending + appends;
        !self.hold
            && total > 0
            && self.failed.is_none_or(|t| t.elapsed() >= RETRY)
            && (total <= INLINE_MAX
                || self.pending >= DERIVE_AT
                || self.since.is_some_and(|t| t.elapsed() >= DERIVE_AFTER))
    }

    /// The derivation, as an operation of the batch.
    pub fn op(&self) -> Box<dyn Op> {
        Box::new(DeriveOp {
            out: None,
            outcome: self.outcome.clone(),
            jobs_ready: self.jobs_ready.clone(),
        })
    }

    /// After a batch with `appends` acknowledgements was answered.
    pub fn answered(&mut self, appends: usize, derived: bool) {
        if appends > 0 {
            self.pending += appends;
            self.since.get_or_insert_with(Instant::now);
        }
        if !derived {
            return;
        }
        match lock(&self.outcome).take() {
            Some(d) => {
                self.failed = None;
                if !d.more {
                    self.pending = 0;
                    self.since = None;
                }
            }
            None => self.failed = Some(Instant::now()),
        }
    }

    /// The next message; with rows waiting, `Some(None)` once nothing came
    /// for `IDLE` (derive them now). `None`: the queue is closed and empty.
    pub fn next<M>(&self, rx: &mut mpsc::Receiver<M>) -> Option<Option<M>> {
        if !self.waiting() {
            return rx.blocking_recv().map(Some);
        }
        let until = Instant::now() + IDLE;
        loop {
            match rx.try_recv() {
                Ok(m) => return Some(Some(m)),
                Err(mpsc::error::TryRecvError::Disconnected) => return None,
                Err(mpsc::error::TryRecvError::Empty) if Instant::now() >= until => {
                    return Some(None);
                }
                Err(mpsc::error::TryRecvError::Empty) => {
                    std::thread::sleep(Duration::from_micros(100))
                }
            }
        }
    }
}

struct DeriveOp {
    out: Option<Result<Derived, StoreError>>,
    outcome: Arc<Mutex<Option<Derived>>>,
    jobs_ready: Option<Arc<Notify>>,
}

impl Op for DeriveOp {
    fn apply(&mut self, conn: &Mutex<Connection>) -> bool {
        let out = run_sqlite(conn, |c| Box::pin(derive(c, DERIVE_MAX)));
        let ok = out.is_ok();
        self.out = Some(out);
        ok
    }

    fn out_of_space(&self) -> bool {
        matches!(self.out, Some(Err(StoreError::DiskFull(_))))
    }

    fn finish(self: Box<Self>, commit: Result<(), &str>) {
        match (commit, self.out) {
            (Ok(()), Some(Ok(derived))) => {
                if derived.jobs > 0
                    && let Some(ready) = &self.jobs_ready
                {
                    ready.notify_one();
                }
                *lock(&self.outcome) = Some(derived);
            }
            (Ok(()), Some(Err(e))) => {
                tracing::error!(error = %e, "the inbox was not derived; trying again")
            }
            // The batch's failure is logged where it failed.
            (Err(_), _) | (Ok(()), None) => {}
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Derives the whole inbox on `conn`, outside the writer (at start, before
/// serving: what a crash left between an acknowledgement and its
/// derivation); each round its own transaction. How many rows.
pub fn derive_all(conn: Connection) -> Result<(Connection, usize), StoreError> {
    let conn = Mutex::new(conn);
    let mut total = 0;
    loop {
        super::writer::lock(&conn).execute_batch("BEGIN IMMEDIATE")?;
        let out = run_sqlite(&conn, |c| Box::pin(derive(c, DERIVE_MAX)));
        let c = super::writer::lock(&conn);
        match out {
            Ok(d) => {
                c.execute_batch("COMMIT")?;
                total += d.deliveries;
                if !d.more {
                    break;
                }
            }
            Err(e) => {
                if !c.is_autocommit() {
                    c.execute_batch("ROLLBACK")?;
                }
                return Err(e);
            }
        }
    }
    let conn = conn.into_inner().unwrap_or_else(|p| p.into_inner());
    Ok((conn, total))
}
