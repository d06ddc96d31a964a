//! The alerter: every `check_interval_secs` a round reads what needs a
//! person (`facts`), asks `rules::alerts` what to open, tell and resolve
//! against the incidents told of already, records that in one
//! transaction, then hands each message to every channel's queue
//! (`outlet`), whose own task sends and audits it. A round never waits
//! for a send.
//!
//! On PostgreSQL one instance of several tells a person: a round takes
//! the alerter's advisory lock (`Store::lead_alerts`) and skips the store's
//! incidents while another instance holds it. "Storage not ready" is each
//! instance's own (its commits fail; the store may not take the record),
//! so it is kept in memory and told by the instance that sees it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::outgoing::Outgoing;
use super::outlet::{self, Outlet, Queued, Sender};
use super::{Channel, facts};
use crate::domain::attention::{Incident, Message};
use crate::metrics::SharedMetrics;
use crate::rules::alerts::{self as rules, Facts, Thresholds};
use crate::store::alert_views::IncidentRound;
use crate::store::{Store, unix_ms};
use pointhook_common::clock::Clock;

/// Resolved incidents are kept this long (what was told, when a digest
/// last went).
const KEEP_RESOLVED_MS: i64 = 30 * 24 * 3_600_000;

/// What the alerter is told once.
pub struct AlerterSettings {
    pub thresholds: Thresholds,
    pub interval: Duration,
    /// Every message links under it.
    pub public_url: String,
    /// Accounts that expect notifications, and within how long.
    pub expect: Vec<(String, Duration)>,
    /// One send on one channel, at most.
    pub send_timeout: Duration,
}

impl AlerterSettings {
    pub fn from_config(a: &crate::config::alerts::Alerting) -> AlerterSettings {
        let ms = |secs: u64| (secs as i64).saturating_mul(1000);
        AlerterSettings {
            thresholds: Thresholds {
                digest_ms: ms(a.rules.digest_secs),
                destination_failing_ms: ms(a.rules.destination_failing_secs),
                events_waiting_ms: ms(a.rules.events_waiting_secs),
                storage_not_ready_ms: ms(a.rules.storage_not_ready_secs),
            },
            interval: a.rules.check_interval(),
            public_url: a.public_url.clone(),
            expect: a.expect.clone(),
            send_timeout: a.rules.send_timeout(),
        }
    }
}

/// What one round did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Round {
    /// Messages handed to the channels (each to every channel).
    pub messages: usize,
    /// Whether this instance read the store's incidents (it leads).
    pub leading: bool,
}

pub struct Alerter {
    store: Store,
    clock: Arc<dyn Clock>,
    metrics: SharedMetrics,
    settings: AlerterSettings,
    outlets: Vec<Outlet>,
    /// The channels' tasks, until `run` starts them.
    senders: Mutex<Vec<Sender>>,
    /// One round at a time; holds this instance's own incidents (storage).
    local: tokio::sync::Mutex<Vec<Incident>>,
}

impl Alerter {
    pub fn new(
        store: Store,
        clock: Arc<dyn Clock>,
        metrics: SharedMetrics,
        settings: AlerterSettings,
        channels: Vec<Channel>,
    ) -> Alerter {
        let (outlets, senders) = channels.into_iter().map(outlet::outlet).unzip();
        Alerter {
            store,
            clock,
            metrics,
            settings,
            outlets,
            senders: Mutex::new(senders),
            local: tokio::sync::Mutex::new(Vec::new()),
        }
    }

    /// Starts every channel's task, then runs a round every interval,
    /// until `stop`.
    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        let shared = outlet::Shared {
            store: self.store.clone(),
            clock: self.clock.clone(),
            metrics: self.metrics.clone(),
            timeout: self.settings.send_timeout,
        };
        let senders = std::mem::take(&mut *self.senders.lock().unwrap_or_else(|p| p.into_inner()));
        let tasks: Vec<_> = senders
            .into_iter()
            .map(|s| tokio::spawn(s.run(shared.clone(), stop.clone())))
            .collect();
        tracing::info!(
            channels = %self.outlets.iter().map(|o| o.describe.as_str()).collect::<Vec<_>>().join(", "),
            "alerts on"
        );
        // The first round one interval after start, as every other: what
        // stood at a restart is in the store, told already or not.
        let mut every = tokio::time::interval_at(
            tokio::time::Instant::now() + self.settings.interval,
            self.settings.interval,
        );
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = every.tick() => {}
                () = stop.cancelled() => break,
            }
            tokio::select! {
                _ = self.round() => {}
                () = stop.cancelled() => break,
            }
        }
        for t in tasks {
            let _ = t.await;
        }
    }

    /// One round: read, decide, record, hand over. Errors are logged; the
    /// next round reads again.
    pub async fn round(&self) -> Round {
        let mut local = self.local.lock().await;
        let now = unix_ms(self.clock.now());
        let t = &self.settings.thresholds;
        let mut out = Round::default();
        match self.store.lead_alerts().await {
            Ok(Some(leadership)) => {
                out.leading = true;
                match self.store_round(now).await {
                    Ok(sent) => out.messages += sent,
                    Err(e) => {
                        tracing::warn!(error = %e, "alerts: a round failed; the next one reads again")
                    }
                }
                leadership.release().await;
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "alerts: storage is unavailable"),
        }
        // This instance's own: how long its commits have failed.
        let storage = Facts {
            now,
            storage_failing_since: self
                .store
                .commits_failing_for()
                .map(|d| now - d.as_millis() as i64),
            storage_disk_full: self.store.disk_full(),
            ..Facts::default()
        };
        let current = rules::attention(&storage, t);
        let plan = rules::plan(now, &current, &local, &HashMap::new(), t);
        local.extend(plan.open);
        local.retain(|i| !plan.resolve.contains(&(i.kind, i.key.clone())));
        for m in &plan.send {
            for i in local.iter_mut().filter(|i| m.keys.contains(&i.key)) {
                i.notified_at = Some(now);
            }
            self.hand(m);
        }
        out.messages += plan.send.len();
        out
    }

    /// The store's part of a round, under the alerter's lock.
    async fn store_round(&self, now: i64) -> Result<usize, crate::store::StoreError> {
        let t = &self.settings.thresholds;
        let (facts, cut_short) = facts::read(
            &self.store,
            now,
            &self.settings.expect,
            self.metrics.last_heard(),
        )
        .await?;
        let open = self.store.open_incidents().await?;
        let last_sent: HashMap<_, _> = self.store.last_alerts_sent().await?.into_iter().collect();
        let mut current = rules::attention(&facts, t);
        rules::carry_unlisted(&mut current, &open, &cut_short);
        let mut plan = rules::plan(now, &current, &open, &last_sent, t);
        for m in plan.send.iter_mut().filter(|m| m.resolved) {
            if let [key] = m.keys.as_slice()
                && let Some(how) = super::resolved::how(&self.store, key).await?
            {
                rules::resolved_by(m, &how);
            }
        }
        let notified = plan
            .send
            .iter()
            .filter(|m| !m.resolved)
            .flat_map(|m| m.keys.iter().map(|k| (m.kind, k.clone())))
            .collect();
        self.store
            .record_incidents(IncidentRound {
                now,
                opened: plan.open,
                notified,
                resolved: plan.resolve,
                forget_before: now - KEEP_RESOLVED_MS,
            })
            .await?;
        for m in &plan.send {
            self.hand(m);
        }
        Ok(plan.send.len())
    }

    /// `m` to every channel's queue.
    fn hand(&self, m: &Message) {
        let out = Outgoing::new(m, &self.settings.public_url);
        let item = match m.keys.as_slice() {
            [one] => one.clone(),
            _ => format!("alerts:{}", m.kind.as_str()),
        };
        tracing::info!(kind = m.kind.as_str(), resolved = m.resolved, text = %out.text, "alert");
        for o in &self.outlets {
            o.hand(
                Queued {
                    out: out.clone(),
                    item: item.clone(),
                    resolved: m.resolved,
                },
                &self.metrics,
            );
        }
    }
}

/// A message that says only that alerts reach this channel
/// (`pointhook alerts test`).
pub fn test_message(public_url: &str) -> Outgoing {
    Outgoing {
        text: "pointhook test message: alerts reach you here".into(),
        severity: "info",
        kind: "test",
        url: format!("{}/", public_url.trim_end_matches('/')),
        items: Vec::new(),
    }
}
