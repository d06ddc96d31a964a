//! The SQLite backend: one file, one owning process. It owns the file's
//! migrations, the single writer thread (group commit), a small pool of read
//! connections, and a background checkpointer.
//!
//! Durability: WAL with `synchronous=FULL`, so a commit is on disk (the WAL
//! is fsynced) before a write returns. Checkpoints run on their own thread
//! (`wal_autocheckpoint` is off for the writer) so that a commit never waits
//! for one.
//!
//! A server opens the file as its owner (a lock file beside it, the writer
//! thread). The CLI opens it as a client, next to a running server: reads
//! never wait (WAL), and a write is one short transaction of its own that
//! waits for the server's writer for up to 5 seconds.

pub(super) mod copy;
pub(in crate::store) mod decisions;
mod deliveries;
mod events;
mod failure;
mod files;
mod jobs;
mod maintenance;
pub(in crate::store) mod migrations;
mod review_join;
mod reviews;
mod runners;
mod space;
#[cfg(feature = "wal-gather")]
mod wal_gather;
mod wal_length;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::Connection;
use tokio::sync::Notify;

use super::StoreError;
use super::model::{FetchRow, Finish, Ingested, JobOutcome, Lease, LeasedJob, NewDelivery, Take};
use super::views::{Answer, ReviewView};
use crate::domain::verdict::DecisionRules;
use crate::domain::{Effects, Review, ReviewSeen};
use files::{open_connection, take_ownership};
use pointhook_common::clock::unix_ms_now;
use writer::Writer;

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> StoreError {
        match e {
            rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::DiskFull => {
                StoreError::DiskFull(e.to_string())
            }
            rusqlite::Error::SqliteFailure(f, _)
                if matches!(
                    f.code,
                    rusqlite::ErrorCode::DatabaseBusy
                        | rusqlite::ErrorCode::DatabaseLocked
                        | rusqlite::ErrorCode::SystemIoFailure
                        | rusqlite::ErrorCode::CannotOpen
                ) =>
            {
                StoreError::Unavailable(e.to_string())
            }
            other => StoreError::Database(other.to_string()),
        }
    }
}

pub struct SqliteStore {
    path: PathBuf,
    writes: Writes,
    readers: Mutex<Vec<Connection>>,
    threads: Mutex<Threads>,
    /// Held (locked) for as long as this process serves the database.
    _owner: Option<std::fs::File>,
    /// The worker's wake-up, told of each job ingested (the server's).
    jobs_ready: Option<Arc<Notify>>,
}

/// How writes reach the file.
enum Writes {
    /// The server's writer thread: group commit.
    Thread(Writer),
    /// A client's own connection: one transaction per write.
    Direct(Arc<Mutex<Connection>>),
}

#[derive(Default)]
struct Threads {
    writer: Option<JoinHandle<()>>,
    checkpointer: Option<(std::sync::mpsc::Sender<()>, JoinHandle<()>)>,
}

const READ_POOL: usize = 8;
/// Rarer checkpoints copy each hot page once, not once per round, and keep
/// the disk free for the commits' fsyncs (tail latency).
const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);

impl SqliteStore {
    /// Opens (creating if needed) and migrates the database at `path` as
    /// its owner, then starts the writer and checkpointer threads.
    pub fn open_server(path: &Path, jobs_ready: Arc<Notify>) -> Result<SqliteStore, StoreError> {
        let owner = take_ownership(path)?;
        let mut conn = open_connection(path)?;
        migrations::migrate(&mut conn)?;
        conn.pragma_update(None, "wal_autocheckpoint", 0)?;
        let (writer, writer_thread) = Writer::spawn(conn, path)?;
        let checkpointer = spawn_checkpointer(open_connection(path)?)?;
        Ok(SqliteStore {
            path: path.to_path_buf(),
            writes: Writes::Thread(writer),
            readers: Mutex::new(Vec::new()),
            threads: Mutex::new(Threads {
                writer: Some(writer_thread),
                checkpointer: Some(checkpointer),
            }),
            _owner: Some(owner),
            jobs_ready: Some(jobs_ready),
        })
    }

    /// Opens an existing, migrated database next to a running server (the
    /// CLI): no lock, no threads.
    pub fn open_client(path: &Path) -> Result<SqliteStore, StoreError> {
        if !path.exists() {
            return Err(StoreError::Io {
                context: format!("no database at {}", path.display()),
                source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
            });
        }
        let conn = open_connection(path)?;
        let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if version != migrations::LATEST {
            return Err(StoreError::Behind {
                found: version,
                known: migrations::LATEST,
            });
        }
        Ok(SqliteStore {
            path: path.to_path_buf(),
            writes: Writes::Direct(Arc::new(Mutex::new(conn))),
            readers: Mutex::new(Vec::new()),
            threads: Mutex::new(Threads::default()),
            _owner: None,
            jobs_ready: None,
        })
    }

    /// Applies the migrations to the database at `path` and returns the
    /// schema version, without starting anything.
    pub fn migrate(path: &Path) -> Result<i64, StoreError> {
        let mut conn = open_connection(path)?;
        migrations::migrate(&mut conn)
    }

    pub fn describe(&self) -> String {
        self.path.display().to_string()
    }

    /// How long the writer's commits have failed with none succeeding.
    pub fn commits_failing_for(&self) -> Option<std::time::Duration> {
        match &self.writes {
            Writes::Thread(w) => w.health().failing_for(),
            Writes::Direct(_) => None,
        }
    }

    /// Whether the last commit failed for a full disk.
    pub fn disk_full(&self) -> bool {
        match &self.writes {
            Writes::Thread(w) => w.health().disk_full(),
            Writes::Direct(_) => false,
        }
    }

    /// Whether the last commit failed (the writer's own record).
    pub fn commits_failing(&self) -> bool {
        match &self.writes {
            Writes::Thread(w) => w.health().failing(),
            Writes::Direct(_) => false,
        }
    }

    /// Stores a delivery and its job; the writer wakes the worker once the
    /// job is committed, even if the request was cancelled meanwhile.
    pub async fn ingest(&self, delivery: NewDelivery) -> Result<Ingested, StoreError> {
        let wake = self.jobs_ready.clone().filter(|_| delivery.job.is_some());
        let op = move |conn: &Connection| deliveries::ingest(conn, &delivery);
        match &self.writes {
            Writes::Thread(w) => w.write_then_notify(op, wake).await,
            // A client has no worker to wake.
            Writes::Direct(_) => self.write(op).await,
        }
    }

    pub async fn check_writable(&self) -> Result<(), StoreError> {
        self.write(|conn| {
            conn.execute(
                "INSERT INTO health (id, checked_at) VALUES (1, ?1)
                 ON CONFLICT (id) DO UPDATE SET checked_at = excluded.checked_at",
                [unix_ms_now()],
            )
            .map(|_| ())
        })
        .await
    }

    pub async fn release_all_leases(&self) -> Result<usize, StoreError> {
        self.write(jobs::release_all).await
    }

    pub async fn lease_jobs(
        &self,
        now: i64,
        lease_ms: i64,
        take: Take,
    ) -> Result<Lease<LeasedJob>, StoreError> {
        self.write(move |c| {
            lease_telling_next_due(
                c,
                take.limit,
                |c| jobs::lease(c, now, lease_ms, take),
                jobs::next_due,
            )
        })
        .await
    }

    pub async fn finish_job(
        &self,
        job: LeasedJob,
        outcome: JobOutcome,
        fetches: Vec<FetchRow>,
        now: i64,
        rules: DecisionRules,
    ) -> Result<(Finish, bool), StoreError> {
        self.write(move |c| jobs::finish(c, &job, &outcome, &fetches, now, &rules))
            .await
    }

    pub async fn record_effects(
        &self,
        job: LeasedJob,
        effects: Effects,
        now: i64,
        rules: DecisionRules,
    ) -> Result<Finish, StoreError> {
        self.write(move |c| {
            if !jobs::holds_lease(c, &job)? {
                return Ok(Finish::LeaseLost);
            }
            decisions::apply(c, &job, &effects, now, &rules).map(Finish::Recorded)
        })
        .await
    }

    pub async fn block_state(
        &self,
        account: String,
        order: String,
        alert: String,
    ) -> Result<(bool, bool), StoreError> {
        self.read(move |c| decisions::block_state(c, &account, &order, &alert))
            .await
    }

    pub async fn latest_review(
        &self,
        account: String,
        job_key: String,
    ) -> Result<Option<ReviewSeen>, StoreError> {
        self.read(move |c| reviews::latest(c, &account, &job_key))
            .await
    }

    pub async fn order_reviews(
        &self,
        account: String,
        order: String,
        payment: Option<String>,
        since: i64,
    ) -> Result<crate::domain::OrderReviews, StoreError> {
        self.read(move |c| {
            review_join::order_reviews(c, &account, &order, payment.as_deref(), since)
        })
        .await
    }

    pub async fn reviews(
        &self,
        state: Option<Review>,
        before: i64,
        limit: i64,
    ) -> Result<Vec<ReviewView>, StoreError> {
        self.read(move |c| reviews::list(c, state, before, limit))
            .await
    }

    pub async fn confirm_review(&self, id: i64, now: i64) -> Result<Answer, StoreError> {
        self.write(move |c| reviews::confirm(c, id, now)).await
    }

    pub async fn dismiss_review(
        &self,
        id: i64,
        now: i64,
        rules: DecisionRules,
    ) -> Result<(Answer, Vec<String>), StoreError> {
        self.write(move |c| reviews::dismiss(c, id, now, &rules))
            .await
    }

    /// Makes every commit fail (test builds only).
    #[cfg(feature = "fault-injection")]
    pub fn fail_commits(&self, fail: bool) {
        if let Writes::Thread(w) = &self.writes {
            w.faults()
                .fail_commits
                .store(fail, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// Caps the database at `pages` pages (test builds only); returns the
    /// pages it has.
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
        if let Writes::Thread(w) = &self.writes {
            w.close().await;
        }
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(|p| p.into_inner()));
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

/// A migrated connection opened as the store opens its own, for tests of
/// the SQL written once.
#[cfg(test)]
pub(crate) fn test_connection(path: &Path) -> Connection {
    let mut conn = open_connection(path).unwrap();
    migrations::migrate(&mut conn).unwrap();
    conn
}

/// Runs `lease` and, when it took fewer than `limit`, `next_due` after it
/// in the same transaction (what is due once the lease is taken).
fn lease_telling_next_due<T>(
    conn: &Connection,
    limit: usize,
    lease: impl Fn(&Connection) -> rusqlite::Result<Vec<T>>,
    next_due: fn(&Connection) -> rusqlite::Result<Option<i64>>,
) -> rusqlite::Result<Lease<T>> {
    let taken = lease(conn)?;
    let next_due = if taken.len() < limit {
        next_due(conn)?
    } else {
        None
    };
    Ok(Lease { taken, next_due })
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
