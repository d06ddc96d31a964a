//! The PostgreSQL backend: several pointhook instances on one database.
//!
//! - Deliveries are batched like the SQLite writer batches them: concurrent
//!   requests share a transaction (pipelined, one statement each) and so a
//!   commit; each is answered only after that commit (with the server's
//!   default `synchronous_commit`, durable).
//! - Jobs and events are leased with `FOR UPDATE SKIP LOCKED`, fenced by
//!   their attempt count (`work.rs`; events, a queue per destination, in
//!   `events.rs`; destinations' state is written once, in `store/destinations.rs`).
//! - `LISTEN/NOTIFY` wakes the workers and outboxes of every instance,
//!   sent after the commit, never inside it (`listen.rs`); polling stays
//!   behind it.
//! - Once-per-cluster work (pruning, the reconciliation sweeper) takes an
//!   advisory lock.
//! - Migrations are applied once, under an advisory lock (`migrations.rs`, named as SQLite's).

mod alerts;
pub(super) mod copy;
pub(in crate::store) mod decisions;
mod errors;
mod events;
mod leader;
mod listen;
pub(in crate::store) mod migrations;
mod prepared;
mod review_join;
mod reviews;
mod runners;
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

use super::model::{FetchRow, Finish, Ingested, JobOutcome, Lease, LeasedJob, NewDelivery, Take};
use super::{CommitHealth, StoreError};
use crate::domain::Effects;
use crate::domain::verdict::DecisionRules;
use listen::{Broadcast, Channel};
use pointhook_common::clock::unix_ms_now;
use work::IngestParams;

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
        migrations::migrate(&mut client).await?;
        drop(client);
        let stop = CancellationToken::new();
        let health = Arc::new(CommitHealth::default());
        let fail_commits = Arc::new(AtomicBool::new(false));
        let broadcast = Arc::new(Broadcast::default());
        let (tx, rx) = mpsc::channel(4096);
        let rx = Arc::new(Mutex::new(rx));
        for _ in 0..BATCHERS {
            tokio::spawn(batcher(
                pool.clone(),
                rx.clone(),
                health.clone(),
                wakers.jobs.clone(),
                broadcast.clone(),
                fail_commits.clone(),
            ));
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
        let version = migrations::version(&client).await?;
        drop(client);
        if version != migrations::LATEST {
            return Err(StoreError::Behind {
                found: version,
                known: migrations::LATEST,
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
        migrations::migrate(&mut client).await
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
            // A client writes no deliveries; this is for completeness.
            return commit_alone(&self.pool, IngestParams::new(delivery)).await;
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

/// Takes whatever deliveries are queued (up to `MAX_BATCH`), commits them
/// in one transaction, and answers each after the commit.
async fn batcher(
    pool: Pool,
    rx: Arc<Mutex<mpsc::Receiver<IngestOp>>>,
    health: Arc<CommitHealth>,
    jobs_ready: Arc<Notify>,
    broadcast: Arc<Broadcast>,
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
        let (ops, replies): (Vec<NewDelivery>, Vec<_>) =
            batch.into_iter().map(|op| (op.delivery, op.reply)).unzip();
        let params: Vec<IngestParams> = ops.into_iter().map(IngestParams::new).collect();
        let wakes = params.iter().any(IngestParams::has_job);
        let results = if fail_commits.load(Ordering::Relaxed) {
            Err(StoreError::Unavailable("injected storage fault".into()))
        } else {
            commit_batch(&pool, &params).await
        };
        match &results {
            Err(StoreError::DiskFull(_)) => health.record_disk_full(),
            r => health.record(!matches!(r, Err(StoreError::Unavailable(_)))),
        }
        match results {
            Ok(ingested) => {
                for (reply, ingested) in replies.into_iter().zip(ingested) {
                    let _ = reply.send(Ok(ingested));
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
                for (reply, p) in replies.into_iter().zip(params) {
                    let _ = reply.send(commit_alone(&pool, p).await);
                }
            }
        }
        // Here too, not only where the answers arrive: a caller may be gone.
        if wakes {
            jobs_ready.notify_one();
            broadcast.ask(Channel::Jobs);
        }
    }
}

/// Every delivery of a batch in one transaction, pipelined.
async fn commit_batch(pool: &Pool, params: &[IngestParams]) -> Result<Vec<Ingested>, StoreError> {
    let mut client = pool.get().await?;
    let stmt = client.prepare_cached(&work::INGEST).await?;
    if let [alone] = params {
        // One statement is its own transaction, committed when the server
        // takes the Sync that ends it; the answer comes only after that
        // (tokio-postgres reads to ReadyForQuery, so an error at commit is
        // this call's error). BEGIN and COMMIT would add two statements and
        // two round trips, and nothing else.
        let row = client.query_one(&stmt, &alone.as_params()).await?;
        return Ok(vec![ingested(&row)?]);
    }
    let tx = client.transaction().await?;
    let bound: Vec<_> = params.iter().map(IngestParams::as_params).collect();
    let rows = futures_util::future::join_all(bound.iter().map(|p| tx.query_one(&stmt, p))).await;
    let ingested = rows
        .into_iter()
        .map(|row| ingested(&row?))
        .collect::<Result<_, _>>()?;
    tx.commit().await?;
    Ok(ingested)
}

fn ingested(row: &tokio_postgres::Row) -> Result<Ingested, StoreError> {
    Ok(Ingested {
        delivery_id: row.try_get(0)?,
        duplicate: row.try_get(1)?,
        job_id: row.try_get(2)?,
    })
}

async fn commit_alone(pool: &Pool, p: IngestParams) -> Result<Ingested, StoreError> {
    commit_batch(pool, std::slice::from_ref(&p))
        .await?
        .into_iter()
        .next()
        .ok_or_else(|| StoreError::Database("the delivery was not stored".into()))
}

/// The URL without its password.
fn redacted(url: &str) -> String {
    url::Url::parse(url)
        .map(|u| crate::config::redacted::text(&u))
        .unwrap_or_else(|_| "a PostgreSQL URL".into())
}
