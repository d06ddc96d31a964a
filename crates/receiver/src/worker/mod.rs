//! The worker: lease a due job, run its handler, and record the outcome
//! (done with its effects, retry with backoff, or dead) in one transaction.
//!
//! `run_one` is one step (`Outcome::Done` or `Outcome::Empty`), which tests
//! drive directly; `run` is the loop around it: up to `concurrency` jobs at
//! once, woken at once by a new job, asleep until the next one is due.

mod ctx;
mod error;
mod fraud;
mod handlers;

pub use error::JobError;

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use crate::api::ApiClient;
use crate::api::calls::CallLog;
use crate::retry::{backoff, clamp_retry_after};
use crate::rules::Policies;
use crate::store::{self, FetchRow, Finish, JobOutcome, Lease, LeasedJob, Store, StoreError};
use pointhook_common::clock::Clock;

/// Longest sleep while idle, as a safety net for missed wake-ups.
const IDLE_MAX: Duration = Duration::from_secs(1);

#[derive(Debug, Clone)]
pub struct WorkerSettings {
    pub concurrency: usize,
    pub max_attempts: u32,
    pub lease: Duration,
    /// Jobs still running this long after shutdown are stopped and their
    /// leases released.
    pub drain: Duration,
    /// Each account's policy, as the configuration resolved it.
    pub policies: Policies,
    /// Where each run's end is counted.
    pub metrics: crate::metrics::SharedMetrics,
}

pub struct Worker {
    store: Store,
    api: Arc<ApiClient>,
    clock: Arc<dyn Clock>,
    settings: WorkerSettings,
    /// Test builds only: the next job's handler panics.
    #[cfg(feature = "fault-injection")]
    panic_next: std::sync::atomic::AtomicBool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A job ran (whatever its result).
    Done,
    /// Nothing is due.
    Empty,
}

impl Worker {
    pub fn new(
        store: Store,
        api: Arc<ApiClient>,
        clock: Arc<dyn Clock>,
        settings: WorkerSettings,
    ) -> Worker {
        Worker {
            store,
            api,
            clock,
            settings,
            #[cfg(feature = "fault-injection")]
            panic_next: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Makes the next job's handler panic (test builds only).
    #[cfg(feature = "fault-injection")]
    pub fn panic_next_job(&self) {
        self.panic_next
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    fn now(&self) -> i64 {
        store::unix_ms(self.clock.now())
    }

    /// Leases one due job and runs it to its outcome.
    pub async fn run_one(&self) -> Result<Outcome, StoreError> {
        match self.lease(1).await?.taken.pop() {
            Some(job) => {
                self.execute(job).await?;
                Ok(Outcome::Done)
            }
            None => Ok(Outcome::Empty),
        }
    }

    async fn lease(&self, limit: usize) -> Result<Lease<LeasedJob>, StoreError> {
        self.store
            .lease_jobs(self.now(), self.settings.lease.as_millis() as i64, limit)
            .await
    }

    /// Runs the loop until `shutdown`; then lets running jobs finish for
    /// the drain time and releases the leases of those that did not.
    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        match self.store.release_all_leases().await {
            Ok(0) => {}
            Ok(n) => tracing::info!(jobs = n, "released the leases of an earlier process"),
            Err(e) => tracing::error!(error = %e, "cannot release earlier leases"),
        }
        let slots = Arc::new(Semaphore::new(self.settings.concurrency));
        let tracker = TaskTracker::new();
        let hard_stop = CancellationToken::new();
        loop {
            let permit = tokio::select! {
                p = slots.clone().acquire_many_owned(1) => p,
                () = shutdown.cancelled() => break,
            };
            let Ok(mut permits) = permit else { break };
            // Lease as many jobs as there are free slots, in one write.
            while let Ok(more) = slots.clone().try_acquire_owned() {
                permits.merge(more);
            }
            let asked = permits.num_permits();
            let Lease {
                taken: jobs,
                next_due,
            } = match self.lease(asked).await {
                Ok(lease) => lease,
                Err(e) => {
                    drop(permits);
                    tracing::error!(error = %e, "cannot lease jobs");
                    tokio::select! {
                        () = tokio::time::sleep(IDLE_MAX) => {}
                        () = shutdown.cancelled() => break,
                    }
                    continue;
                }
            };
            // Fewer than asked: nothing else is due now, so the next lease
            // waits for a wake-up (a job queued meanwhile has left one) or
            // for the next due time, rather than asking again at once.
            let drained = jobs.len() < asked;
            for job in jobs {
                let Some(permit) = permits.split(1) else {
                    break;
                };
                let worker = self.clone();
                let hard_stop = hard_stop.clone();
                tracker.spawn(async move {
                    let id = job.id;
                    tokio::select! {
                        r = worker.execute(job.clone()) => {
                            if let Err(e) = r {
                                tracing::error!(job_id = id, error = %e, "cannot record a job's outcome");
                            }
                        }
                        () = hard_stop.cancelled() => {
                            let _ = worker.store.release_job(job, worker.now()).await;
                            tracing::warn!(job_id = id, "stopped at shutdown; lease released");
                        }
                    }
                    drop(permit);
                });
            }
            if drained {
                drop(permits);
                let wait = self.idle_wait(next_due);
                tokio::select! {
                    () = self.store.job_ready() => {}
                    () = tokio::time::sleep(wait) => {}
                    () = shutdown.cancelled() => break,
                }
            }
        }
        tracker.close();
        if tokio::time::timeout(self.settings.drain, tracker.wait())
            .await
            .is_err()
        {
            hard_stop.cancel();
            tracker.wait().await;
        }
        tracing::info!("worker stopped");
    }

    /// How long to sleep with nothing due: until the next job is (as the
    /// lease told), at most `IDLE_MAX`.
    fn idle_wait(&self, next_due: Option<i64>) -> Duration {
        next_due.map_or(IDLE_MAX, |at| {
            Duration::from_millis(
                at.saturating_sub(self.now())
                    .clamp(0, IDLE_MAX.as_millis() as i64) as u64,
            )
        })
    }

    /// Runs `job` while keeping its lease, and records how it ended. A
    /// panicking handler is caught and recorded like a failure; a run whose
    /// lease is lost stops where it is and records nothing.
    async fn execute(&self, job: LeasedJob) -> Result<(), StoreError> {
        let span = tracing::info_span!("job", job_id = job.id, key = %job.key, account = %job.account, attempt = job.attempt);
        async {
            let calls = CallLog::default();
            let ctx = ctx::Ctx {
                api: &self.api,
                calls: &calls,
                store: &self.store,
                clock: self.clock.as_ref(),
                max_attempts: self.settings.max_attempts,
                policies: &self.settings.policies,
                metrics: &self.settings.metrics,
            };
            #[cfg(feature = "fault-injection")]
            let inject = self
                .panic_next
                .swap(false, std::sync::atomic::Ordering::SeqCst);
            #[cfg(not(feature = "fault-injection"))]
            let inject = false;
            let run = AssertUnwindSafe(async {
                if inject {
                    panic!("injected handler panic");
                }
                handlers::run(&ctx, &job).await
            })
            .catch_unwind();
            // The renewal lives exactly as long as the run: whichever ends
            // first ends the other.
            let result = tokio::select! {
                ran = run => match ran {
                    Ok(result) => result,
                    Err(panic) => Err(JobError::Panicked(panic_message(&*panic))),
                },
                () = keep_lease(&self.store, self.clock.as_ref(), &job, self.settings.lease) => {
                    tracing::warn!("lease lost: this run stops and records nothing");
                    self.settings.metrics.job_run("lease_lost");
                    return Ok(());
                }
            };
            let fetches = calls
                .take()
                .into_iter()
                .map(|f| FetchRow {
                    endpoint: f.endpoint,
                    resource_id: f.resource_id,
                    status: f.status,
                    elapsed_ms: f.elapsed_ms,
                    at: f.at,
                    seen: f.seen,
                    body: f.body,
                })
                .collect();
            self.finish(job, result, fetches).await
        }
        .instrument(span)
        .await
    }

    /// The account's holds placed on what the job decided.
    fn place_holds(
        &self,
        account: &str,
        effects: crate::domain::Effects,
    ) -> crate::domain::Effects {
        crate::rules::holds::place(&self.settings.policies.of(account).holds, effects)
    }

    async fn finish(
        &self,
        job: LeasedJob,
        result: Result<crate::domain::Effects, JobError>,
        fetches: Vec<FetchRow>,
    ) -> Result<(), StoreError> {
        let now = self.now();
        let retry_at =
            |delay: Duration| now.saturating_add(delay.as_millis().min(i64::MAX as u128) as i64);
        let outcome = match result {
            Ok(effects) => JobOutcome::Done(self.place_holds(&job.account, effects)),
            Err(JobError::LeaseLost) => {
                tracing::warn!("lease lost mid-run: nothing more is recorded");
                self.settings.metrics.job_run("lease_lost");
                return Ok(());
            }
            Err(e @ (JobError::Retry { .. } | JobError::Panicked(_)))
                if job.attempt >= self.settings.max_attempts =>
            {
                tracing::error!(error = %e, "job dead: out of attempts");
                JobOutcome::Dead {
                    error: format!("after {} attempts: {e}", job.attempt),
                    failure: e.failure(),
                }
            }
            Err(JobError::Retry {
                reason,
                after,
                failure,
            }) => {
                // The platform's Retry-After is honoured up to the longest
                // backoff: a job is never parked for longer.
                let delay = after.map_or_else(|| backoff(job.attempt), clamp_retry_after);
                tracing::warn!(error = %reason, retry_in_ms = delay.as_millis() as u64, "job will be retried");
                JobOutcome::Retry {
                    run_at: retry_at(delay),
                    error: reason,
                    failure,
                }
            }
            Err(e @ JobError::Panicked(_)) => {
                tracing::error!(error = %e, "job panicked; will be retried");
                JobOutcome::Retry {
                    run_at: retry_at(backoff(job.attempt)),
                    error: e.to_string(),
                    failure: e.failure(),
                }
            }
            Err(JobError::Permanent { reason, failure }) => {
                tracing::error!(error = %reason, "job dead");
                JobOutcome::Dead {
                    error: reason,
                    failure,
                }
            }
            Err(JobError::Unknown(reason)) => {
                tracing::info!(error = %reason, attempts = job.attempt, "not found: nothing decided; reconciliation finds it if it appears");
                JobOutcome::Done(crate::domain::Effects::default())
            }
            Err(e @ JobError::Store(_)) => {
                tracing::warn!(error = %e, "job hit a storage error; will be retried");
                JobOutcome::Retry {
                    run_at: retry_at(backoff(job.attempt)),
                    error: e.to_string(),
                    failure: e.failure(),
                }
            }
        };
        let ended = match &outcome {
            JobOutcome::Done(_) => "done",
            JobOutcome::Retry { .. } => "retry",
            JobOutcome::Dead { .. } => "dead",
        };
        let finish = self.store.finish_job(job, outcome, fetches, now).await?;
        self.settings.metrics.job_run(match finish {
            Finish::LeaseLost => "lease_lost",
            Finish::Recorded(_) => ended,
        });
        match finish {
            Finish::Recorded(events) if !events.is_empty() => {
                tracing::debug!(events = events.len(), "events queued");
            }
            Finish::Recorded(_) => {}
            Finish::LeaseLost => {
                tracing::warn!("lease lost before the outcome was recorded: discarded");
            }
        }
        Ok(())
    }
}

/// What a panic said, for the job's last error.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    let text = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into());
    format!("the handler panicked: {text}")
}

/// Renews `job`'s lease every third of its length; returns only when the
/// lease is lost (taken over, or the job finished elsewhere).
async fn keep_lease(store: &Store, clock: &dyn Clock, job: &LeasedJob, lease: Duration) {
    let mut every = tokio::time::interval(lease / 3);
    every.tick().await;
    loop {
        every.tick().await;
        let until = store::unix_ms(clock.now()).saturating_add(lease.as_millis() as i64);
        match store.renew_lease(job.clone(), until).await {
            Ok(true) => {}
            Ok(false) => return,
            // Storage trouble: try again at the next tick; the lease may
            // still hold.
            Err(e) => tracing::warn!(error = %e, "cannot renew the lease"),
        }
    }
}
