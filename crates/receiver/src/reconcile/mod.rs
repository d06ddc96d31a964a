//! Reconciliation: notifications get lost, so a sweeper
//! asks the platform what changed lately and enqueues, for each change
//! pointhook does not know, the job its notification would have made
//! (`pass`). `pointhook reconcile` runs the same pass over a window given.
//!
//! One sweeper runs per deployment: each pass takes `Store::lead` first
//! (always granted on SQLite; an advisory lock on PostgreSQL).

mod change;
mod pass;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio_util::sync::CancellationToken;

pub use pass::{Mode, Pass, PassError, Progress, Report};

use crate::api::ApiClient;
use crate::metrics::SharedMetrics;
use crate::store::Store;
use pointhook_common::clock::Clock;

#[derive(Debug, Clone)]
pub struct SweeperSettings {
    pub accounts: Vec<String>,
    pub interval: Duration,
    pub lookback: Duration,
    pub grace: Duration,
}

/// What the status page shows of this process's sweeper.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SweepStatus {
    /// When the last pass (over every account) ended.
    pub last_pass_at: Option<i64>,
    /// Summed over the accounts of the last pass.
    pub last_report: Option<Report>,
    /// The last pass's failure, if it failed.
    pub last_error: Option<String>,
    /// `false`: another instance holds the sweeper's lock.
    pub leading: bool,
}

pub type SharedStatus = Arc<Mutex<SweepStatus>>;

pub struct Sweeper {
    pub store: Store,
    pub api: Arc<ApiClient>,
    pub metrics: SharedMetrics,
    pub settings: SweeperSettings,
    pub status: SharedStatus,
    pub clock: Arc<dyn Clock>,
}

/// When each unknown intent state was first listed, per account.
type FirstSeen = HashMap<String, HashMap<(String, String), i64>>;

impl Sweeper {
    /// A pass at once, then one every interval, until `stop`.
    pub async fn run(self, stop: CancellationToken) {
        let mut first_seen = FirstSeen::new();
        loop {
            let started = Instant::now();
            tokio::select! {
                () = self.pass(&mut first_seen) => {}
                () = stop.cancelled() => return,
            }
            let rest = self.settings.interval.saturating_sub(started.elapsed());
            tokio::select! {
                () = tokio::time::sleep(rest) => {}
                () = stop.cancelled() => return,
            }
        }
    }

    async fn pass(&self, first_seen: &mut FirstSeen) {
        let leadership = match self.store.lead().await {
            Ok(Some(l)) => l,
            Ok(None) => {
                self.set(|s| s.leading = false);
                return;
            }
            Err(e) => {
                tracing::warn!(error = %e, "reconciliation skipped: storage is unavailable");
                self.set(|s| s.last_error = Some(e.to_string()));
                return;
            }
        };
        let now = pointhook_common::clock::unix_ms(self.clock.now());
        let end = jiff::Timestamp::from_millisecond(now).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
        let begin = end
            .checked_sub(jiff::SignedDuration::try_from(self.settings.lookback).unwrap_or_default())
            .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
        let mut total = Report::default();
        let mut error = None;
        let on_missed = |account: &str, topic: &'static str| self.metrics.missed(account, topic);
        for account in &self.settings.accounts {
            let started = Instant::now();
            let seen = first_seen.entry(account.clone()).or_default();
            // Forget what left the window: it is not listed again.
            let horizon = now - self.settings.lookback.as_millis() as i64;
            seen.retain(|_, at| *at >= horizon);
            let pass = Pass {
                store: &self.store,
                api: &self.api,
                clock: self.clock.as_ref(),
                account,
                mode: Mode::Sweep {
                    grace_ms: self.settings.grace.as_millis() as i64,
                },
                on_missed: &on_missed,
                progress: None,
                intents_first_seen: Some(seen),
            };
            match pass.run(begin, end).await {
                Ok(r) => {
                    tracing::info!(
                        account = %pointhook_common::text::printable(account),
                        found = r.found,
                        known = r.known,
                        waiting = r.waiting,
                        missed = r.missed(),
                        pages = r.pages,
                        duration_ms = started.elapsed().as_millis() as u64,
                        "reconciliation pass"
                    );
                    total.found += r.found;
                    total.known += r.known;
                    total.waiting += r.waiting;
                    total.pages += r.pages;
                    for (topic, n) in r.enqueued {
                        *total.enqueued.entry(topic).or_default() += n;
                    }
                }
                Err(e) => {
                    tracing::warn!(
                        account = %pointhook_common::text::printable(account),
                        error = %e,
                        "reconciliation pass failed; the next one looks again"
                    );
                    error = Some(format!("{account}: {e}"));
                }
            }
        }
        leadership.release().await;
        self.metrics
            .reconcile_pass(if error.is_some() { "failed" } else { "ok" });
        let ended = pointhook_common::clock::unix_ms(self.clock.now());
        self.set(|s| {
            *s = SweepStatus {
                last_pass_at: Some(ended),
                last_report: Some(total),
                last_error: error,
                leading: true,
            }
        });
    }

    fn set(&self, f: impl FnOnce(&mut SweepStatus)) {
        f(&mut self.status.lock().unwrap_or_else(|p| p.into_inner()));
    }
}
