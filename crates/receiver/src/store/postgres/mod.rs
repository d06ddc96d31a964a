//! The PostgreSQL backend: several pointhook instances on one database.
//!
//! - Deliveries are batched like the SQLite writer batches them: concurrent
//!   requests share a transaction (pipelined, one statement each) and so a
//!   commit; each is answered only after that commit (with the server's
//!   default `synchronous_commit`, durable).
//! - Jobs and events are leased with `FOR UPDATE SKIP LOCKED`, fenced by
//!   their attempt count (`work.rs`; events, a queue per destination, in
//!   `events.rs`; destinations' state in `destinations.rs`).
//! - `LISTEN/NOTIFY` wakes the workers and outboxes of every instance,
//!   sent after the commit, never inside it (`listen.rs`); polling stays
//!   behind it.
//! - Once-per-cluster work (pruning, the reconciliation sweeper) takes an
//!   advisory lock.
//! - Migrations are applied once, under an advisory lock (`schema.rs`).

mod alerts;
pub(super) mod copy;
mod decisions;
mod destinations;
mod enums;
mod errors;
mod events;
mod leader;
mod listen;
mod prepared;
mod review_join;
mod reviews;
mod runners;
mod schema;
mod tls;
mod work;

use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use deadpool_postgres::{Client, Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use tokio::sync::{Mutex, Notify, mpsc, oneshot};
use tokio_postgres::NoTls;
use tokio_util::sync::CancellationToken;

use super::ingest::{DERIVE_MAX, Derived, INLINE_MAX, append_pg, derive};
use super::model::{FetchRow, Finish, Ingested, JobOutcome, Lease, LeasedJob, NewDelivery, Take};
use super::sql::Conn;
use super::{CommitHealth, StoreError};
use crate::domain::Effects;
use crate::domain::verdict::DecisionRules;
use listen::{Broadcast, Channel};
use pointhook_common::clock::unix_ms_now;

pub use leader::Leader;
pub use listen::Wakers;

/// Deliveries committed together, at most.
const MAX_BATCH: usize = 256;
/// Batches committing at once (each on its own connection).
const BATCHERS: usize = 4;
/// Connections per instance.
const POOL_SIZE: usize = 16;
/// How long one statement may run before the database cancels it.
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(10);

pub struct PgStore {
    pool: Pool,
    description: String,
    ingest: Option<mpsc::Sender<IngestOp>>,
    health: Arc<CommitHealth>,
    /// What the listener sends the other instances; none in a client,
    /// which sends at once.
    broadcast: Option<Arc<Broadcast>>,
    stop: CancellationToken,
    #[cfg_attr(not(feature = "fault-injection"), allow(dead_code))]
    fail_commits: Arc<AtomicBool>,
}

struct IngestOp {
    delivery: NewDelivery,
    reply: oneshot::Sender<Result<Ingested, StoreError>>,
}

impl PgStore {
    fn pool(url: &str) -> Result<(Pool, tokio_postgres::Config), StoreError> {
        let mut config = tokio_postgres::Config::from_str(url).map_err(|e| StoreError::Open {
            target: redacted(url),
            message: e.to_string(),
        })?;
        if config.get_application_name().is_none() {
            config.application_name("pointhook");
        }
        config
            .options(format!(
                "-c statement_timeout={}",
                STATEMENT_TIMEOUT.as_millis()
            ))
            .connect_timeout(Duration::from_secs(5));
        let recycling = || ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        };
        let manager = match tls::connector(&config)? {
            Some(tls) => Manager::from_config(config.clone(), tls, recycling()),
            None => Manager::from_config(config.clone(), NoTls, recycling()),
        };
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .wait_timeout(Some(Duration::from_secs(5)))
            .create_timeout(Some(Duration::from_secs(5)))
            .recycle_timeout(Some(Duration::from_secs(5)))
            .runtime(Runtime::Tokio1)
            .build()
            .map_err(|e| StoreError::Open {
                target: redacted(url),
                message: e.to_string(),
            })?;
        Ok((pool, config))
    }

    /// Opens the database to serve it: migrated (once, whoever comes
    /// first), with the batchers and the notification listener running.
    pub async fn open_server(url: &str, wakers: Wakers) -> Result<PgStore, StoreError> {
        let (pool, config) = Self::pool(url)?;
        let mut client = pool.get().await?;
        schema::migrate(&mut client).await?;
        drop(client);
        let stop = CancellationToken::new();
        let health = Arc::new(CommitHealth::default());
        let fail_commits = Arc::new(AtomicBool::new(false));
        let broadcast = Arc::new(Broadcast::default());
        let hold = hold_derivation();
        if !hold {
            // What a crash left between an acknowledgement and its
            // derivation (this instance's or another's), before serving.
            let derived = derive_all(&pool).await?;
            if derived > 0 {
                tracing::info!(
                    derived,
                    "acknowledged notifications left unprocessed derived"
                );
            }
        }
        let (tx, rx) = mpsc::channel(4096);
        let rx = Arc::new(Mutex::new(rx));
        let wake_deriver = Arc::new(Notify::new());
        let derived = Woken {
            jobs_ready: wakers.jobs.clone(),
            broadcast: broadcast.clone(),
        };
        for _ in 0..BATCHERS {
            tokio::spawn(batcher(
                pool.clone(),
                rx.clone(),
                health.clone(),
                Deriving {
                    hold,
                    wake: wake_deriver.clone(),
                    derived: derived.clone(),
                },
                fail_commits.clone(),
            ));
        }
        if !hold {
            tokio::spawn(deriver(pool.clone(), wake_deriver, derived, stop.clone()));
        }
        tokio::spawn(listen::run(config, wakers, broadcast.clone(), stop.clone()));
        Ok(PgStore {
            pool,
            description: redacted(url),
            ingest: Some(tx),
            health,
            broadcast: Some(broadcast),
            stop,
            fail_commits,
        })
    }

    /// Opens an existing, migrated database (the CLI, tools).
    pub async fn open_client(url: &str) -> Result<PgStore, StoreError> {
        let (pool, _) = Self::pool(url)?;
        let client = pool.get().await?;
        let version = schema::version(&client).await?;
        drop(client);
        if version != schema::LATEST {
            return Err(StoreError::Behind {
                found: version,
                known: schema::LATEST,
            });
        }
        Ok(PgStore {
            pool,
            description: redacted(url),
            ingest: None,
            health: Arc::new(CommitHealth::default()),
            broadcast: None,
            stop: CancellationToken::new(),
            fail_commits: Arc::new(AtomicBool::new(false)),
        })
    }

    pub async fn migrate(url: &str) -> Result<i64, StoreError> {
        let (pool, _) = Self::pool(url)?;
        let mut client = pool.get().await?;
        schema::migrate(&mut client).await
    }

    pub fn describe(&self) -> String {
        self.description.clone()
    }

    pub fn disk_full(&self) -> bool {
        self.health.disk_full()
    }

    pub fn commits_failing(&self) -> bool {
        self.health.failing()
    }

    async fn client(&self) -> Result<Client, StoreError> {
        Ok(self.pool.get().await?)
    }

    /// Tells the other instances something on `channel` may be due; call
    /// after the commit that made it so. A client (the CLI) has no
    /// listener and sends at once; a failure costs the others a poll.
    async fn wake(&self, channel: Channel) {
        if let Some(b) = &self.broadcast {
            return b.ask(channel);
        }
        self.wake_now(channel).await;
    }

    /// Tells the other instances a job may be due (a person's retry).
    pub async fn wake_jobs(&self) {
        self.wake(Channel::Jobs).await;
    }

    /// Sends on `channel` through the pool, now: for what happens as this
    /// instance stops, when its listener may not send again.
    async fn wake_now(&self, channel: Channel) {
        let sent = async {
            let c = self.client().await?;
            c.execute(
                &prepared::prepared(&c, listen::NOTIFY).await?,
                &[&vec![channel.name()]],
            )
            .await?;
            Ok::<_, StoreError>(())
        };
        if let Err(e) = sent.await {
            tracing::debug!(error = %e, "the other instances were not woken; they poll");
        }
    }

    pub async fn ingest(&self, delivery: NewDelivery) -> Result<Ingested, StoreError> {
        let (reply, answer) = oneshot::channel();
        let Some(ingest) = &self.ingest else {
            // A client (the CLI's reconciliation) derives in its own commit.
            let (ids, _) = commit_batch(&self.pool, std::slice::from_ref(&delivery), true).await?;
            return ids
                .first()
                .map(|&delivery_id| Ingested { delivery_id })
                .ok_or_else(|| StoreError::Database("the delivery was not stored".into()));
        };
        ingest
            .send(IngestOp { delivery, reply })
            .await
            .map_err(|_| StoreError::Unavailable("storage has stopped".into()))?;
        answer
            .await
            .map_err(|_| StoreError::Unavailable("storage has stopped".into()))?
    }

    /// Queued events that are to be sent wake the other outboxes.
    async fn wake_outboxes(&self, emitted: &[String], rules: &DecisionRules) {
        if rules.events.delivers() && !emitted.is_empty() {
            self.wake(Channel::Events).await;
        }
    }

    pub async fn check_writable(&self) -> Result<(), StoreError> {
        let result = async {
            self.client()
                .await?
                .execute(
                    "INSERT INTO health (id, checked_at) VALUES (1, $1)
                     ON CONFLICT (id) DO UPDATE SET checked_at = excluded.checked_at",
                    &[&unix_ms_now()],
                )
                .await?;
            Ok(())
        }
        .await;
        self.health.record(result.is_ok());
        result
    }

    /// Several instances share the jobs: a lease that expired is simply
    /// taken over, so nothing is released wholesale at start-up.
    pub async fn release_all_leases(&self) -> Result<usize, StoreError> {
        Ok(0)
    }

    pub async fn lease_jobs(
        &self,
        now: i64,
        lease_ms: i64,
        take: Take,
    ) -> Result<Lease<LeasedJob>, StoreError> {
        work::lease(&self.client().await?, now, lease_ms, take).await
    }

    pub async fn finish_job(
        &self,
        job: LeasedJob,
        outcome: JobOutcome,
        fetches: Vec<FetchRow>,
        now: i64,
        rules: DecisionRules,
    ) -> Result<(Finish, bool), StoreError> {
        let mut c = self.client().await?;
        let tx = c.transaction().await?;
        let (finish, pending) = work::finish(&tx, &job, &outcome, &fetches, now, &rules).await?;
        if finish == Finish::LeaseLost {
            tx.rollback().await?;
            return Ok((finish, false));
        }
        tx.commit().await?;
        if pending {
            self.wake(Channel::Jobs).await;
        }
        if let Finish::Recorded(emitted) = &finish {
            self.wake_outboxes(emitted, &rules).await;
        }
        Ok((finish, pending))
    }

    pub async fn record_effects(
        &self,
        job: LeasedJob,
        effects: Effects,
        now: i64,
        rules: DecisionRules,
    ) -> Result<Finish, StoreError> {
        let mut c = self.client().await?;
        let tx = c.transaction().await?;
        if !work::holds_lease(&tx, &job).await? {
            return Ok(Finish::LeaseLost);
        }
        let emitted =
            decisions::apply(&tx, &job.account, Some(job.id), &effects, now, &rules, None).await?;
        tx.commit().await?;
        self.wake_outboxes(&emitted, &rules).await;
        Ok(Finish::Recorded(emitted))
    }

    /// Tells the other instances at once that a job is pending again (one
    /// released as this instance stops, when its listener may not send).
    pub async fn wake_jobs_now(&self) {
        self.wake_now(Channel::Jobs).await;
    }

    /// The sweeper's lock, if no other instance holds it.
    pub async fn lead(&self) -> Result<Option<Leader>, StoreError> {
        leader::lead(self.client().await?, leader::SWEEPER_LOCK).await
    }

    /// Makes every ingest commit fail (test builds only).
    #[cfg(feature = "fault-injection")]
    pub fn fail_commits(&self, fail: bool) {
        self.fail_commits.store(fail, Ordering::Relaxed);
    }

    #[cfg(feature = "fault-injection")]
    pub async fn limit_pages(&self, _pages: Option<i64>) -> Result<i64, StoreError> {
        Err(StoreError::Unsupported(
            "a page limit is a SQLite test fault",
        ))
    }

    /// Stops the listener; the batchers end when the last sender goes.
    pub async fn close(&self) {
        self.stop.cancel();
        self.pool.close();
    }
}

/// How a batcher hands on what it appended.
struct Deriving {
    /// Never derive (a fault tests inject).
    hold: bool,
    /// The deriver's wake-up, after a batch it did not derive.
    wake: Arc<Notify>,
    /// Told of each derivation's jobs.
    derived: Woken,
}

/// Whom a derivation that touched jobs wakes: this instance's worker and,
/// through the listener, the other instances'.
#[derive(Clone)]
struct Woken {
    jobs_ready: Arc<Notify>,
    broadcast: Arc<Broadcast>,
}

impl Woken {
    fn tell(&self, derived: &Derived) {
        if derived.jobs > 0 {
            self.jobs_ready.notify_one();
            self.broadcast.ask(Channel::Jobs);
        }
    }
}

/// Takes whatever deliveries are queued (up to `MAX_BATCH`), appends them
/// to the inbox in one transaction, and answers each after the commit. A
/// batch of at most `INLINE_MAX` derives them in the same commit; a larger
/// one wakes the deriver (`store/ingest.rs`).
async fn batcher(
    pool: Pool,
    rx: Arc<Mutex<mpsc::Receiver<IngestOp>>>,
    health: Arc<CommitHealth>,
    deriving: Deriving,
    fail_commits: Arc<AtomicBool>,
) {
    loop {
        let batch = {
            let mut rx = rx.lock().await;
            let Some(first) = rx.recv().await else {
                return;
            };
            let mut batch = vec![first];
            while batch.len() < MAX_BATCH {
                match rx.try_recv() {
                    Ok(op) => batch.push(op),
                    Err(_) => break,
                }
            }
            batch
        };
        let (deliveries, replies): (Vec<NewDelivery>, Vec<_>) =
            batch.into_iter().map(|op| (op.delivery, op.reply)).unzip();
        let inline = !deriving.hold && deliveries.len() <= INLINE_MAX;
        let results = if fail_commits.load(Ordering::Relaxed) {
            Err(StoreError::Unavailable("injected storage fault".into()))
        } else {
            commit_batch(&pool, &deliveries, inline).await
        };
        match &results {
            Err(StoreError::DiskFull(_)) => health.record_disk_full(),
            r => health.record(!matches!(r, Err(StoreError::Unavailable(_)))),
        }
        match results {
            Ok((ids, derived)) => {
                for (reply, delivery_id) in replies.into_iter().zip(ids) {
                    let _ = reply.send(Ok(Ingested { delivery_id }));
                }
                // Here, not where the answers arrive: a caller may be gone.
                match derived {
                    Some(d) => deriving.derived.tell(&d),
                    None if !deriving.hold => deriving.wake.notify_one(),
                    None => {}
                }
            }
            Err(e @ (StoreError::Unavailable(_) | StoreError::DiskFull(_))) => {
                tracing::error!(error = %e, deliveries = replies.len(), "storage commit failed");
                let text = e.to_string();
                for reply in replies {
                    let _ = reply.send(Err(match &e {
                        StoreError::DiskFull(_) => StoreError::DiskFull(text.clone()),
                        _ => StoreError::Unavailable(text.clone()),
                    }));
                }
            }
            // One of them failed: each again, alone, so one failure never
            // takes its neighbours down.
            Err(_) => {
                for (reply, d) in replies.into_iter().zip(deliveries) {
                    let alone = commit_batch(&pool, std::slice::from_ref(&d), false).await;
                    let _ = reply.send(alone.and_then(|(ids, _)| {
                        ids.first()
                            .map(|&delivery_id| Ingested { delivery_id })
                            .ok_or_else(|| {
                                StoreError::Database("the delivery was not stored".into())
                            })
                    }));
                }
                if !deriving.hold {
                    deriving.wake.notify_one();
                }
            }
        }
    }
}

/// Every delivery of a batch appended in one transaction, pipelined, and
/// (`derive`) derived in it too.
async fn commit_batch(
    pool: &Pool,
    deliveries: &[NewDelivery],
    derive_too: bool,
) -> Result<(Vec<i64>, Option<Derived>), StoreError> {
    let mut client = pool.get().await?;
    let tx = client.transaction().await?;
    let conn = Conn::PgTx(&tx);
    let ids = futures_util::future::join_all(deliveries.iter().map(|d| append_pg(&conn, d)))
        .await
        .into_iter()
        .collect::<Result<Vec<i64>, _>>()?;
    let derived = match derive_too {
        true => Some(derive(&conn, DERIVE_MAX).await?),
        false => None,
    };
    tx.commit().await?;
    Ok((ids, derived))
}

/// One derivation in a transaction of its own.
async fn derive_once(pool: &Pool) -> Result<Derived, StoreError> {
    let mut client = pool.get().await?;
    let tx = client.transaction().await?;
    let derived = derive(&Conn::PgTx(&tx), DERIVE_MAX).await?;
    tx.commit().await?;
    Ok(derived)
}

/// Derives until the inbox is empty; how many rows.
async fn derive_all(pool: &Pool) -> Result<usize, StoreError> {
    let mut total = 0;
    loop {
        let d = derive_once(pool).await?;
        total += d.deliveries;
        if !d.more {
            return Ok(total);
        }
    }
}

/// Every second, or woken by a batch it did not derive, derives the inbox
/// (every instance's rows: one that died leaves its rows to the others).
/// Instances take turns (`derive`'s lock), each taking all there is.
async fn deriver(pool: Pool, wake: Arc<Notify>, woken: Woken, stop: CancellationToken) {
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = wake.notified() => {}
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
        loop {
            match derive_once(&pool).await {
                Ok(d) => {
                    woken.tell(&d);
                    if !d.more {
                        break;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "the inbox was not derived; trying again");
                    break;
                }
            }
        }
    }
}

/// Whether this process never derives its acknowledgements (tests: a
/// crash between an acknowledgement and its derivation, made certain).
/// Reachable from the environment, so never in a release build.
fn hold_derivation() -> bool {
    #[cfg(all(feature = "fault-injection", debug_assertions))]
    if std::env::var_os("POINTHOOK_FAULT_HOLD_DERIVATION").is_some() {
        return true;
    }
    false
}

/// The URL without its password.
fn redacted(url: &str) -> String {
    url::Url::parse(url)
        .map(|u| crate::config::redacted::text(&u))
        .unwrap_or_else(|_| "a PostgreSQL URL".into())
}
