//! Storage: the only module that runs SQL. It owns the SQLite file, its
//! migrations, the single writer thread (group commit), a small pool of read
//! connections, and a background checkpointer.
//!
//! Durability: WAL with `synchronous=FULL`, so a commit is on disk (the WAL
//! is fsynced) before `write` returns. Checkpoints run on their own thread
//! (`wal_autocheckpoint` is off for the writer) so that a commit never waits
//! for one.

pub mod admin;
mod decisions;
mod deliveries;
mod events;
mod jobs;
pub mod maintenance;
mod migrations;
pub mod reviews;
pub(crate) mod sql_enum;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};
use tokio::sync::Notify;

pub use decisions::{event_id, rfc3339};
pub use deliveries::{Ingested, NewDelivery, NewJob, fingerprint};
pub use events::DueEvent;
pub use jobs::{FetchRow, Finish, JobOutcome, LeasedJob};
pub use migrations::LATEST as SCHEMA_VERSION;
pub use reviews::{Answer, ReviewView};

use writer::Writer;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The change was not committed: the caller must not acknowledge it.
    #[error("storage is unavailable: {0}")]
    Unavailable(String),
    #[error("database error: {0}")]
    Sql(#[from] rusqlite::Error),
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Open {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("database schema version {found} is newer than this pointhook knows ({known})")]
    TooNew { found: i64, known: i64 },
    #[error(
        "another pointhook is serving {path} (it holds {path}.lock); one process owns a SQLite database"
    )]
    Locked { path: String },
}

/// A handle to the database; cheap to clone.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    /// Held (locked) for as long as this process serves the database.
    _owner: std::fs::File,
    writer: Writer,
    readers: Mutex<Vec<Connection>>,
    threads: Mutex<Threads>,
    /// Signalled when a job may have become runnable.
    jobs_ready: Notify,
    /// Signalled when an event may be due.
    events_ready: Notify,
    /// The last readiness check: when, and whether storage took a write.
    readiness: Mutex<Option<(std::time::Instant, bool)>>,
}

#[derive(Default)]
struct Threads {
    writer: Option<JoinHandle<()>>,
    checkpointer: Option<(std::sync::mpsc::Sender<()>, JoinHandle<()>)>,
}

const READ_POOL: usize = 8;
/// How long a readiness answer is kept.
const READY_CACHE: Duration = Duration::from_secs(1);
/// How long a readiness write may take.
const READY_TIMEOUT: Duration = Duration::from_secs(2);
const CHECKPOINT_EVERY: Duration = Duration::from_millis(250);

impl Store {
    /// Opens (creating if needed) and migrates the database at `path`, then
    /// starts the writer and checkpointer threads.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let owner = take_ownership(path)?;
        let mut conn = open_connection(path)?;
        migrations::migrate(&mut conn)?;
        conn.pragma_update(None, "wal_autocheckpoint", 0)?;
        let (writer, writer_thread) = Writer::spawn(conn)?;
        let checkpointer = spawn_checkpointer(open_connection(path)?)?;
        Ok(Store {
            inner: Arc::new(Inner {
                path: path.to_path_buf(),
                _owner: owner,
                writer,
                readers: Mutex::new(Vec::new()),
                threads: Mutex::new(Threads {
                    writer: Some(writer_thread),
                    checkpointer: Some(checkpointer),
                }),
                jobs_ready: Notify::new(),
                events_ready: Notify::new(),
                readiness: Mutex::new(None),
            }),
        })
    }

    /// Applies the migrations to the database at `path` and returns the
    /// schema version, without starting anything.
    pub fn migrate(path: &Path) -> Result<i64, StoreError> {
        let mut conn = open_connection(path)?;
        migrations::migrate(&mut conn)
    }

    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Stores a delivery and its job in one durable transaction.
    pub async fn ingest(&self, delivery: NewDelivery) -> Result<Ingested, StoreError> {
        let wakes = delivery.job.is_some();
        let ingested = self
            .inner
            .writer
            .write(move |conn| deliveries::ingest(conn, &delivery))
            .await?;
        if wakes {
            self.inner.jobs_ready.notify_one();
        }
        Ok(ingested)
    }

    /// Proves the database takes a durable write (for `/readyz`).
    pub async fn check_writable(&self) -> Result<(), StoreError> {
        self.inner
            .writer
            .write(|conn| {
                conn.execute(
                    "INSERT INTO health (id, checked_at) VALUES (1, ?1)
                     ON CONFLICT (id) DO UPDATE SET checked_at = excluded.checked_at",
                    [unix_ms_now()],
                )
                .map(|_| ())
            })
            .await
    }

    /// Whether storage takes durable writes now (for `/readyz`): a failing
    /// commit says no at once; otherwise a write is tried at most once a
    /// second, and the answer kept meanwhile.
    pub async fn ready(&self) -> bool {
        if self.inner.writer.health().failing() {
            return false;
        }
        let fresh = |at: std::time::Instant| at.elapsed() < READY_CACHE;
        if let Some((at, ok)) = *self
            .inner
            .readiness
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            && fresh(at)
        {
            return ok;
        }
        let ok = tokio::time::timeout(READY_TIMEOUT, self.check_writable())
            .await
            .is_ok_and(|r| r.is_ok());
        *self
            .inner
            .readiness
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some((std::time::Instant::now(), ok));
        ok
    }

    /// Waits until a job may have become runnable.
    pub async fn job_ready(&self) {
        self.inner.jobs_ready.notified().await
    }

    /// Waits until an event may be due.
    pub async fn event_ready(&self) {
        self.inner.events_ready.notified().await
    }

    /// Makes pending again every job an earlier process left running.
    pub async fn release_all_leases(&self) -> Result<usize, StoreError> {
        self.write(jobs::release_all).await
    }

    /// Leases up to `limit` due jobs.
    pub async fn lease_jobs(
        &self,
        now: i64,
        lease_ms: i64,
        limit: usize,
    ) -> Result<Vec<LeasedJob>, StoreError> {
        self.write(move |c| jobs::lease(c, now, lease_ms, limit))
            .await
    }

    /// `false`: the lease is no longer this run's.
    pub async fn renew_lease(&self, job: LeasedJob, until: i64) -> Result<bool, StoreError> {
        self.write(move |c| jobs::renew(c, &job, until)).await
    }

    /// Records how a run ended, with the API calls it made, if it still
    /// holds its lease.
    pub async fn finish_job(
        &self,
        job: LeasedJob,
        outcome: JobOutcome,
        fetches: Vec<FetchRow>,
        now: i64,
        deliver_events: bool,
    ) -> Result<Finish, StoreError> {
        let finish = self
            .write(move |c| jobs::finish(c, &job, &outcome, &fetches, now, deliver_events))
            .await?;
        if matches!(&finish, Finish::Recorded(emitted) if !emitted.is_empty()) {
            self.inner.events_ready.notify_one();
        }
        // A re-run requested while it ran may have made it pending again.
        self.inner.jobs_ready.notify_one();
        Ok(finish)
    }

    /// Records effects now, in the middle of a job (a step of a saga that
    /// must be durable before the next call), if the run still holds its
    /// lease.
    pub async fn record_effects(
        &self,
        job: LeasedJob,
        effects: crate::domain::Effects,
        now: i64,
        deliver_events: bool,
    ) -> Result<Finish, StoreError> {
        let finish = self
            .write(move |c| {
                if !jobs::holds_lease(c, &job)? {
                    return Ok(Finish::LeaseLost);
                }
                decisions::apply(c, &job, &effects, now, deliver_events).map(Finish::Recorded)
            })
            .await?;
        if matches!(&finish, Finish::Recorded(emitted) if !emitted.is_empty()) {
            self.inner.events_ready.notify_one();
        }
        Ok(finish)
    }

    /// Whether a merchant order is (released, blocked).
    pub async fn order_flags(
        &self,
        account: String,
        order: String,
    ) -> Result<(bool, bool), StoreError> {
        self.read(move |c| decisions::order_flags(c, &account, &order))
            .await
    }

    /// Fraud alerts held for a person, newest first (`None`: every state).
    pub async fn reviews(
        &self,
        state: Option<crate::domain::Review>,
        limit: usize,
    ) -> Result<Vec<ReviewView>, StoreError> {
        let limit = limit.clamp(1, admin::MAX_LIMIT) as i64;
        self.read(move |c| reviews::list(c, state, limit)).await
    }

    /// The person's review of the alert behind a job, if it was held.
    pub async fn review_state(
        &self,
        account: String,
        job_key: String,
    ) -> Result<Option<crate::domain::Review>, StoreError> {
        self.read(move |c| reviews::state_of(c, &account, &job_key))
            .await
    }

    /// A person confirms a held alert: its job runs the cancel or refund.
    pub async fn confirm_review(&self, id: i64, now: i64) -> Result<Answer, StoreError> {
        let answer = self.write(move |c| reviews::confirm(c, id, now)).await?;
        self.inner.jobs_ready.notify_one();
        Ok(answer)
    }

    /// A person dismisses a held alert: the block goes, the order is
    /// looked at again.
    pub async fn dismiss_review(
        &self,
        id: i64,
        now: i64,
        deliver_events: bool,
    ) -> Result<Answer, StoreError> {
        let (answer, emitted) = self
            .write(move |c| reviews::dismiss(c, id, now, deliver_events))
            .await?;
        if !emitted.is_empty() {
            self.inner.events_ready.notify_one();
        }
        self.inner.jobs_ready.notify_one();
        Ok(answer)
    }

    pub async fn release_job(&self, job: LeasedJob, now: i64) -> Result<(), StoreError> {
        self.write(move |c| jobs::release(c, &job, now)).await
    }

    pub async fn next_job_due(&self) -> Result<Option<i64>, StoreError> {
        self.read(jobs::next_due).await
    }

    pub async fn due_events(&self, now: i64, limit: usize) -> Result<Vec<DueEvent>, StoreError> {
        self.read(move |c| events::due(c, now, limit)).await
    }

    pub async fn next_event_due(&self) -> Result<Option<i64>, StoreError> {
        self.read(events::next_due).await
    }

    pub async fn event_delivered(&self, id: String, now: i64) -> Result<(), StoreError> {
        self.write(move |c| events::delivered(c, &id, now)).await
    }

    pub async fn event_failed(
        &self,
        id: String,
        error: String,
        next: Option<i64>,
    ) -> Result<(), StoreError> {
        self.write(move |c| events::failed(c, &id, &error, next))
            .await
    }

    /// Prunes what finished before `cutoff` (unix ms), a batch per
    /// transaction so that acks never wait long behind it.
    pub async fn prune(&self, cutoff: i64) -> Result<maintenance::Pruned, StoreError> {
        let mut total = maintenance::Pruned::default();
        loop {
            let batch = self
                .write(move |c| maintenance::prune_batch(c, cutoff, maintenance::PRUNE_BATCH))
                .await?;
            total.add(batch);
            if batch.total() == 0 {
                return Ok(total);
            }
        }
    }

    /// Jobs by state and the outbox backlog, for `/metrics`.
    pub async fn metrics_snapshot(&self, now: i64) -> Result<admin::MetricsSnapshot, StoreError> {
        self.read(move |c| admin::metrics_snapshot(c, now)).await
    }

    /// Wakes the worker (a job was made due from outside, e.g. a retry).
    pub fn wake_worker(&self) {
        self.inner.jobs_ready.notify_one();
    }

    /// Wakes the outbox (an event was made due from outside).
    pub fn wake_outbox(&self) {
        self.inner.events_ready.notify_one();
    }

    pub(crate) async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: Fn(&Connection) -> Result<T, rusqlite::Error> + Send + 'static,
    {
        self.inner.writer.write(f).await
    }

    /// Runs `f` on a read connection off the async runtime.
    pub async fn read<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, rusqlite::Error> + Send + 'static,
    {
        let inner = self.inner.clone();
        let span = tracing::Span::current();
        tokio::task::spawn_blocking(move || {
            let _entered = span.enter();
            let conn = match inner.readers.lock().ok().and_then(|mut p| p.pop()) {
                Some(c) => c,
                None => open_connection(&inner.path)?,
            };
            let out = f(&conn).map_err(StoreError::from);
            if let Ok(mut pool) = inner.readers.lock()
                && pool.len() < READ_POOL
            {
                pool.push(conn);
            }
            out
        })
        .await
        .map_err(|e| StoreError::Unavailable(format!("read task failed: {e}")))?
    }

    /// Makes every commit fail (test builds only), to prove nothing that
    /// was not committed is acknowledged.
    #[cfg(feature = "fault-injection")]
    pub fn fail_commits(&self, fail: bool) {
        self.inner
            .writer
            .faults()
            .fail_commits
            .store(fail, std::sync::atomic::Ordering::Relaxed);
    }

    /// Caps the database at `pages` pages (test builds only): a portable
    /// full disk. `None` lifts the cap.
    #[cfg(feature = "fault-injection")]
    pub async fn limit_pages(&self, pages: Option<i64>) -> Result<i64, StoreError> {
        self.write(move |c| {
            let now: i64 = c.query_row("PRAGMA page_count", [], |r| r.get(0))?;
            let cap = pages.unwrap_or(i64::from(u32::MAX - 1));
            c.query_row(&format!("PRAGMA max_page_count = {cap}"), [], |_| Ok(()))?;
            Ok(now)
        })
        .await
    }

    /// Answers what is queued, stops the threads and checkpoints the WAL.
    /// Later writes fail with `Unavailable`.
    pub async fn close(&self) {
        self.inner.writer.close().await;
        let threads =
            std::mem::take(&mut *self.inner.threads.lock().unwrap_or_else(|p| p.into_inner()));
        let _ = tokio::task::spawn_blocking(move || {
            if let Some(w) = threads.writer {
                let _ = w.join();
            }
            if let Some((stop, handle)) = threads.checkpointer {
                drop(stop);
                let _ = handle.join();
            }
        })
        .await;
    }
}

/// Opens an existing, migrated database for the CLI, next to a running
/// server: reads never wait (WAL), and writes wait for the server's writer
/// for up to 5 seconds rather than failing with "database is locked".
pub fn open_existing(path: &Path) -> Result<Connection, StoreError> {
    if !path.exists() {
        return Err(StoreError::Io {
            context: format!("no database at {}", path.display()),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        });
    }
    let conn = open_connection(path)?;
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if version != migrations::LATEST {
        return Err(StoreError::Unavailable(format!(
            "{} is at schema version {version}, this pointhook needs {}: run `pointhook migrate`",
            path.display(),
            migrations::LATEST
        )));
    }
    Ok(conn)
}

/// Locks `{path}.lock` for this process, so that a second server on the
/// same file refuses to start instead of releasing the first one's leases.
/// The lock goes with the process, however it ends.
fn take_ownership(path: &Path) -> Result<std::fs::File, StoreError> {
    let mut lock_path = path.as_os_str().to_owned();
    lock_path.push(".lock");
    let lock_path = PathBuf::from(lock_path);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
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
fn open_connection(path: &Path) -> Result<Connection, StoreError> {
    let open_err = |source| StoreError::Open {
        path: path.to_path_buf(),
        source,
    };
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(open_err)?;
    conn.pragma_update(None, "journal_mode", "wal")
        .map_err(open_err)?;
    conn.pragma_update(None, "synchronous", "full")
        .map_err(open_err)?;
    conn.pragma_update(None, "foreign_keys", "on")
        .map_err(open_err)?;
    conn.busy_timeout(Duration::from_secs(5))
        .map_err(open_err)?;
    Ok(conn)
}

fn spawn_checkpointer(
    conn: Connection,
) -> Result<(std::sync::mpsc::Sender<()>, JoinHandle<()>), StoreError> {
    let (stop, stopped) = std::sync::mpsc::channel::<()>();
    let handle = std::thread::Builder::new()
        .name("pointhook-checkpoint".into())
        .spawn(move || {
            // Ends when the sender is dropped.
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                stopped.recv_timeout(CHECKPOINT_EVERY)
            {
                // PASSIVE never blocks the writer; a busy database simply
                // gets checkpointed on a later round.
                if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
                    tracing::warn!(error = %e, "WAL checkpoint failed");
                }
            }
        })
        .map_err(|e| StoreError::Io {
            context: "cannot start the checkpoint thread".into(),
            source: e,
        })?;
    Ok((stop, handle))
}

pub fn unix_ms_now() -> i64 {
    unix_ms(std::time::SystemTime::now())
}

pub fn unix_ms(t: std::time::SystemTime) -> i64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
