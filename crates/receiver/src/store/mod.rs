//! Storage: the only module that sees a database. `Store` is its one typed
//! surface (deliveries and their jobs, leases, decisions, the outbox, fraud
//! reviews, what operators read, maintenance); behind it, a backend per
//! database: `sqlite/` (the embedded default: one file, one process) and
//! `postgres/` (several instances on one server). Both keep the same
//! invariants (ARCHITECTURE.md); `model` and `views` are what goes in and
//! comes out, with no database type in them.

mod admin_reads;
pub mod alert_views;
mod commit_health;
pub mod console_views;
pub mod copy;
pub mod model;
mod postgres;
pub(crate) mod sql;
mod sqlite;
pub mod tables;
pub mod views;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

pub(crate) use commit_health::CommitHealth;

pub use maintenance::BackupProgress;
pub use model::{
    Attempted, BACKLOG_TURN, BatchHealth, EventOutcome, FetchRow, Finish, Ingested, JobOutcome,
    Lease, LeasedEvent, LeasedJob, NewDelivery, NewJob, Recorded, Recovery, Sighting, Take,
    fingerprint,
};
pub use outbox::{Again, Redelivered};
pub use pointhook_common::clock::{rfc3339, unix_ms, unix_ms_now};
pub use views::{
    Answer, DEFAULT_LIMIT, DeliveryDetail, DeliveryFilter, DeliverySummary, DestinationView,
    EventAt, EventDelivery, EventDetail, EventSummary, Health, JobDetail, JobSummary, MAX_LIMIT,
    MetricsSnapshot, OrderView, PRUNE_BATCH, Pruned, RecoveryView, ReviewView,
};

use crate::domain::Effects;
use crate::domain::verdict::DecisionRules;

/// Why storage failed, whatever the backend.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Nothing was committed (the database is down, full, busy): the caller
    /// must not acknowledge anything.
    #[error("storage is unavailable: {0}")]
    Unavailable(String),
    /// Nothing was committed because the disk (or the database's size
    /// cap) is full: as `Unavailable`, and said in those words.
    #[error("disk full: {0}")]
    DiskFull(String),
    /// A query failed.
    #[error("database error: {0}")]
    Database(String),
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
    #[error("cannot open {target}: {message}")]
    Open { target: String, message: String },
    #[error("database schema version {found} is newer than this pointhook knows ({known})")]
    TooNew { found: i64, known: i64 },
    #[error(
        "the database is at schema version {found}, this pointhook needs {known}: run `pointhook migrate`"
    )]
    Behind { found: i64, known: i64 },
    #[error(
        "another pointhook is serving {path} (it holds {path}.lock); one process owns a SQLite database"
    )]
    Locked { path: String },
    #[error("{0}")]
    Unsupported(&'static str),
    #[error("{target} holds data already (table {table}): a copy goes into an empty store")]
    NotEmpty { target: String, table: &'static str },
    #[error(
        "{what} is in use by a running pointhook ({sessions} sessions): stop every instance first"
    )]
    InUse { what: String, sessions: i64 },
    #[error(
        "the copy does not add up: {table} has {in_source} rows in the source, {in_target} in the target"
    )]
    CopyMismatch {
        table: &'static str,
        in_source: u64,
        in_target: u64,
    },
}

/// Where the data lives, from `[storage]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    Sqlite(PathBuf),
    /// A `postgres://` URL.
    Postgres(String),
}

impl Location {
    /// A `postgres://` (or `postgresql://`) URL, or else a SQLite file.
    pub fn parse(s: &str) -> Location {
        if s.starts_with("postgres://") || s.starts_with("postgresql://") {
            Location::Postgres(s.to_string())
        } else {
            Location::Sqlite(PathBuf::from(s))
        }
    }

    /// For a person: the path, or the URL without its password.
    pub fn describe(&self) -> String {
        match self {
            Location::Sqlite(path) => path.display().to_string(),
            Location::Postgres(url) => url::Url::parse(url)
                .map(|u| crate::config::redacted::text(&u))
                .unwrap_or_else(|_| "a PostgreSQL URL".into()),
        }
    }
}

/// Held while this process leads (`Store::lead`); give it back with
/// `release`. Dropped, it is given back too, if less politely.
pub struct Leadership(Option<postgres::Leader>);

impl Leadership {
    pub async fn release(self) {
        if let Some(l) = self.0 {
            l.release().await;
        }
    }
}

/// A handle to the database; cheap to clone.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    backend: Backend,
    /// What decisions are made with, fixed at open.
    rules: DecisionRules,
    /// Signalled when a job may have become runnable.
    jobs_ready: Arc<Notify>,
    /// Signalled when an event may be due.
    events_ready: Arc<Notify>,
    /// The last readiness check: when, and whether storage took a write.
    readiness: Mutex<Option<(std::time::Instant, bool)>>,
    /// Jobs leased through this handle so far: which lease slots are the
    /// backlog's (`Take::at`).
    leased: std::sync::atomic::AtomicU64,
}

enum Backend {
    Sqlite(sqlite::SqliteStore),
    Postgres(postgres::PgStore),
}

/// Runs the same call on whichever backend this is.
macro_rules! on {
    ($self:ident, $b:ident => $call:expr) => {
        match &$self.inner.backend {
            Backend::Sqlite($b) => $call,
            Backend::Postgres($b) => $call,
        }
    };
}

// Their methods use `on!`, so they are declared after it.
mod alerts;
mod console;
mod destinations;
mod event_rows;
mod failures;
mod hold_marks;
pub mod holds;
mod inspect;
mod jobs;
mod maintenance;
pub mod migrations;
mod order_reads;
mod order_refs;
mod outbox;
mod outbox_reads;
mod reconcile;
mod reviews;

/// How long a readiness answer is kept.
const READY_CACHE: Duration = Duration::from_secs(1);
/// How long a readiness write may take.
const READY_TIMEOUT: Duration = Duration::from_secs(2);

impl Store {
    fn wrap(
        backend: Backend,
        rules: DecisionRules,
        jobs_ready: Arc<Notify>,
        events_ready: Arc<Notify>,
    ) -> Store {
        Store {
            inner: Arc::new(Inner {
                backend,
                rules,
                jobs_ready,
                events_ready,
                readiness: Mutex::new(None),
                leased: std::sync::atomic::AtomicU64::new(0),
            }),
        }
    }

    /// Opens the database to serve it: migrated, owned by this process
    /// where the backend has an owner. `rules` decide what it records.
    pub async fn open(location: &Location, rules: DecisionRules) -> Result<Store, StoreError> {
        let (jobs, events) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
        let backend = match location {
            Location::Sqlite(path) => {
                let path = path.clone();
                let ready = jobs.clone();
                Backend::Sqlite(
                    blocking(move || sqlite::SqliteStore::open_server(&path, ready)).await?,
                )
            }
            Location::Postgres(url) => {
                let wakers = postgres::Wakers {
                    jobs: jobs.clone(),
                    events: events.clone(),
                };
                Backend::Postgres(postgres::PgStore::open_server(url, wakers).await?)
            }
        };
        Ok(Store::wrap(backend, rules, jobs, events))
    }

    /// Opens an existing, migrated database next to whatever serves it (the
    /// CLI, tools).
    pub async fn open_client(
        location: &Location,
        rules: DecisionRules,
    ) -> Result<Store, StoreError> {
        let backend = match location {
            Location::Sqlite(path) => {
                let path = path.clone();
                Backend::Sqlite(blocking(move || sqlite::SqliteStore::open_client(&path)).await?)
            }
            Location::Postgres(url) => {
                Backend::Postgres(postgres::PgStore::open_client(url).await?)
            }
        };
        Ok(Store::wrap(backend, rules, Arc::default(), Arc::default()))
    }

    /// Applies the migrations and returns the schema version.
    pub async fn migrate(location: &Location) -> Result<i64, StoreError> {
        match location {
            Location::Sqlite(path) => {
                let path = path.clone();
                blocking(move || sqlite::SqliteStore::migrate(&path)).await
            }
            Location::Postgres(url) => postgres::PgStore::migrate(url).await,
        }
    }

    /// The database, for a person (a path, or a URL without its password).
    pub fn describe(&self) -> String {
        on!(self, b => b.describe())
    }

    /// Stores a delivery and its job in one durable transaction.
    /// Each backend wakes the worker once its commit holds a job.
    pub async fn ingest(&self, delivery: NewDelivery) -> Result<Ingested, StoreError> {
        on!(self, b => b.ingest(delivery).await)
    }

    /// Proves the database takes a durable write.
    pub async fn check_writable(&self) -> Result<(), StoreError> {
        on!(self, b => b.check_writable().await)
    }

    /// Whether storage takes durable writes now (for `/readyz`): a failing
    /// commit says no at once; otherwise a write is tried at most once a
    /// second, and the answer kept meanwhile.
    pub async fn ready(&self) -> bool {
        if on!(self, b => b.commits_failing()) {
            return false;
        }
        let lock = || {
            self.inner
                .readiness
                .lock()
                .unwrap_or_else(|p| p.into_inner())
        };
        if let Some((at, ok)) = *lock()
            && at.elapsed() < READY_CACHE
        {
            return ok;
        }
        let ok = tokio::time::timeout(READY_TIMEOUT, self.check_writable())
            .await
            .is_ok_and(|r| r.is_ok());
        *lock() = Some((std::time::Instant::now(), ok));
        ok
    }

    /// Whether commits fail now for lack of space (a full disk, or the
    /// database's size cap): what `/readyz`, the console and the storage
    /// alert say in those words.
    pub fn disk_full(&self) -> bool {
        match &self.inner.backend {
            Backend::Sqlite(b) => b.disk_full(),
            Backend::Postgres(b) => b.disk_full(),
        }
    }

    /// Waits until a job may have become runnable.
    pub async fn job_ready(&self) {
        self.inner.jobs_ready.notified().await
    }

    /// Waits until an event may be due.
    pub async fn event_ready(&self) {
        self.inner.events_ready.notified().await
    }

    /// Wakes the worker (a job was made due from outside, e.g. a retry).
    pub fn wake_worker(&self) {
        self.inner.jobs_ready.notify_one();
    }

    /// Wakes the outbox (an event was made due from outside).
    pub fn wake_outbox(&self) {
        self.inner.events_ready.notify_one();
    }

    /// Makes pending again every job an earlier process left running (the
    /// one owner of a SQLite file, at start-up).
    pub async fn release_all_leases(&self) -> Result<usize, StoreError> {
        on!(self, b => b.release_all_leases().await)
    }

    /// Leases up to `limit` due jobs: the newest of the live lane first,
    /// but one slot in `BACKLOG_TURN` goes to the oldest due job of all.
    /// With fewer, tells when the next is due (in the
    /// same statement on PostgreSQL).
    pub async fn lease_jobs(
        &self,
        now: i64,
        lease_ms: i64,
        limit: usize,
    ) -> Result<Lease<LeasedJob>, StoreError> {
        let turn = self
            .inner
            .leased
            .fetch_add(limit as u64, std::sync::atomic::Ordering::Relaxed);
        let take = Take::at(turn, limit);
        on!(self, b => b.lease_jobs(now, lease_ms, take).await)
    }

    /// Records how a run ended, with the API calls it made, if it still
    /// holds its lease.
    pub async fn finish_job(
        &self,
        job: LeasedJob,
        outcome: JobOutcome,
        fetches: Vec<FetchRow>,
        now: i64,
    ) -> Result<Finish, StoreError> {
        let rules = self.inner.rules.clone();
        let (finish, pending) =
            on!(self, b => b.finish_job(job, outcome, fetches, now, rules).await)?;
        self.woken_by(&finish);
        // Pending again: to retry, or to run again (notified while it ran).
        if pending {
            self.inner.jobs_ready.notify_one();
        }
        Ok(finish)
    }

    /// Records effects now, in the middle of a job (a step of a saga that
    /// must be durable before the next call), if the run still holds its
    /// lease.
    pub async fn record_effects(
        &self,
        job: LeasedJob,
        effects: Effects,
        now: i64,
    ) -> Result<Finish, StoreError> {
        let rules = self.inner.rules.clone();
        let finish = on!(self, b => b.record_effects(job, effects, now, rules).await)?;
        self.woken_by(&finish);
        Ok(finish)
    }

    fn woken_by(&self, finish: &Finish) {
        if matches!(finish, Finish::Recorded(emitted) if !emitted.is_empty()) {
            self.inner.events_ready.notify_one();
        }
    }

    /// How a merchant order stands for one fraud alert: (released, the
    /// alert's block stands).
    pub async fn block_state(
        &self,
        account: String,
        order: String,
        alert: String,
    ) -> Result<(bool, bool), StoreError> {
        on!(self, b => b.block_state(account, order, alert).await)
    }

    /// Leadership of once-per-deployment work for as long as it is held:
    /// always granted on SQLite (one process owns the file); on PostgreSQL
    /// an advisory lock, `None` while another instance holds it.
    pub async fn lead(&self) -> Result<Option<Leadership>, StoreError> {
        Ok(match &self.inner.backend {
            Backend::Sqlite(_) => Some(Leadership(None)),
            Backend::Postgres(b) => b.lead().await?.map(|l| Leadership(Some(l))),
        })
    }

    /// Makes every commit fail (test builds only), to prove nothing that
    /// was not committed is acknowledged.
    #[cfg(feature = "fault-injection")]
    pub fn fail_commits(&self, fail: bool) {
        on!(self, b => b.fail_commits(fail))
    }

    /// Caps the database's size (test builds only): a portable full disk.
    /// Returns the pages it has; `None` lifts the cap.
    #[cfg(feature = "fault-injection")]
    pub async fn limit_pages(&self, pages: Option<i64>) -> Result<i64, StoreError> {
        on!(self, b => b.limit_pages(pages).await)
    }

    /// Answers what is queued and stops. Later writes fail with
    /// `Unavailable`.
    pub async fn close(&self) {
        on!(self, b => b.close().await)
    }
}

impl Store {
    /// Runs a query function (`sql`) on a read connection of whichever
    /// backend this is: the one place a read chooses its backend.
    pub(crate) async fn read<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c sql::Conn<'c>) -> sql::Run<'c, T> + Send + 'static,
    {
        match &self.inner.backend {
            Backend::Sqlite(b) => b.read_conn(f).await,
            Backend::Postgres(b) => b.read_conn(f).await,
        }
    }

    /// Runs a query function in a durable transaction of whichever backend
    /// this is (on SQLite, the writer's next group commit): the one place a
    /// write chooses its backend.
    pub(crate) async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: for<'c> Fn(&'c sql::Conn<'c>) -> sql::Run<'c, T> + Send + 'static,
    {
        match &self.inner.backend {
            Backend::Sqlite(b) => b.write_conn(f).await,
            Backend::Postgres(b) => b.write_conn(f).await,
        }
    }
}

/// Runs blocking opening work off the async runtime.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| StoreError::Unavailable(format!("storage task failed: {e}")))?
}
