//! The gauges of what needs a person, read at scrape
//! time: `pointhook_attention_items{kind}` for each kind of item the
//! console's inbox shows (each kind of hold as `hold_<name>`), and the gauge behind each alert (held reviews,
//! events given up, how long a destination has failed, seconds since each
//! account's last notification, how long commits have failed); and the
//! alerts sent. `LastHeard` follows each account's last notification by
//! reading only what arrived since the last look.

use std::collections::HashMap;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::domain::ItemKind;
use crate::store::alert_views::AttentionCounts;
use crate::store::{DestinationView, Store, StoreError};

/// How many items of `kind` stand, from the store's counts; `None` for
/// what is counted another way (holds by their own kind, as `hold_<name>`;
/// a payment that is not its intent's among the dead jobs).
fn counted(c: &AttentionCounts, kind: ItemKind, disabled: i64, failing: i64) -> Option<i64> {
    Some(match kind {
        ItemKind::Review => c.held_reviews,
        ItemKind::AfterRelease => c.released_before_fraud_alert,
        ItemKind::AtRisk => c.at_risk,
        ItemKind::DeadJobs => c.dead_jobs,
        ItemKind::GaveUp => c.events_given_up,
        ItemKind::Missed => c.missed,
        ItemKind::DestinationDisabled => disabled,
        ItemKind::DestinationFailing => failing,
        ItemKind::Hold | ItemKind::Mismatch => return None,
    })
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabel {
    pub kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct AccountLabel {
    pub account: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DestinationLabel {
    pub destination: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SentLabels {
    pub channel: &'static str,
    pub outcome: &'static str,
}

/// A notification stamped this much before the newest seen may still
/// commit (another instance's batch): each look goes back as far.
const OVERLAP_MS: i64 = 60_000;

/// Each account's last notification (unix ms), kept up to date by reading
/// the deliveries received since the last look (the first look reads
/// them all, once).
#[derive(Debug, Default)]
pub struct LastHeard {
    state: tokio::sync::Mutex<(Option<i64>, HashMap<String, i64>)>,
}

impl LastHeard {
    pub async fn refresh(&self, store: &Store) -> Result<HashMap<String, i64>, StoreError> {
        let mut state = self.state.lock().await;
        let after = state.0.map_or(i64::MIN, |newest| newest - OVERLAP_MS);
        for (account, at) in store.last_heard(after).await? {
            state.0 = Some(state.0.map_or(at, |newest| newest.max(at)));
            let last = state.1.entry(account).or_insert(at);
            *last = (*last).max(at);
        }
        Ok(state.1.clone())
    }
}

pub(super) struct Gauges {
    items: Family<KindLabel, Gauge>,
    held: Gauge,
    given_up: Gauge,
    failing: Family<DestinationLabel, Gauge>,
    silent: Family<AccountLabel, Gauge>,
    storage: Gauge,
    sent: Family<SentLabels, Counter>,
    pub heard: LastHeard,
}

impl Gauges {
    pub fn register(registry: &mut Registry) -> Gauges {
        let g = Gauges {
            items: Family::default(),
            held: Gauge::default(),
            given_up: Gauge::default(),
            failing: Family::default(),
            silent: Family::default(),
            storage: Gauge::default(),
            sent: Family::default(),
            heard: LastHeard::default(),
        };
        registry.register(
            "attention_items",
            "Items that need a person, by kind (the console's inbox)",
            g.items.clone(),
        );
        registry.register(
            "fraud_reviews_held",
            "Fraud alerts held for a person to confirm or dismiss",
            g.held.clone(),
        );
        registry.register(
            "events_given_up",
            "Events that gave up at a destination (until delivered again)",
            g.given_up.clone(),
        );
        registry.register(
            "destination_failing_seconds",
            "How long every attempt to a destination has failed (0: it is not failing)",
            g.failing.clone(),
        );
        registry.register(
            "seconds_since_last_notification",
            "Seconds since the last notification an account received",
            g.silent.clone(),
        );
        registry.register(
            "storage_failing_seconds",
            "How long this instance's commits have failed with none succeeding (0: they succeed)",
            g.storage.clone(),
        );
        registry.register(
            "alerts_sent",
            "Messages to the channels of [[alerts]], by channel and outcome: sent, failed, dropped",
            g.sent.clone(),
        );
        g
    }

    pub fn alert_sent(&self, channel: &'static str, outcome: &'static str) {
        self.sent
            .get_or_create(&SentLabels { channel, outcome })
            .inc();
    }

    pub async fn update(
        &self,
        store: &Store,
        now: i64,
        destinations: &[DestinationView],
    ) -> Result<(), StoreError> {
        let c: AttentionCounts = store.attention_counts().await?;
        let disabled = destinations
            .iter()
            .filter(|d| d.state == "disabled")
            .count() as i64;
        let failing = destinations
            .iter()
            .filter(|d| d.state != "disabled" && d.failing_since.is_some())
            .count() as i64;
        // Each kind of item, under the gauge label its kind names.
        for kind in ItemKind::all() {
            if let Some(n) = counted(&c, kind, disabled, failing) {
                let kind = kind.spec().gauge.to_string();
                self.items.get_or_create(&KindLabel { kind }).set(n);
            }
        }
        // Every kind of hold, `hold_<name>`: 0 when none waits.
        let waiting = store.holds_waiting().await?;
        for k in crate::rules::holds::KINDS {
            let n = waiting
                .iter()
                .find(|(kind, _)| kind == k.name)
                .map_or(0, |w| w.1);
            let kind = format!("hold_{}", k.name);
            self.items.get_or_create(&KindLabel { kind }).set(n);
        }
        self.held.set(c.held_reviews);
        self.given_up.set(c.events_given_up);
        for d in destinations {
            let since = d
                .failing_since
                .as_deref()
                .and_then(|t| t.parse::<jiff::Timestamp>().ok())
                .map_or(0, |t| ((now - t.as_millisecond()) / 1000).max(0));
            self.failing
                .get_or_create(&DestinationLabel {
                    destination: d.name.clone(),
                })
                .set(since);
        }
        for (account, at) in self.heard.refresh(store).await? {
            self.silent
                .get_or_create(&AccountLabel { account })
                .set(((now - at) / 1000).max(0));
        }
        self.storage.set(
            store
                .commits_failing_for()
                .map_or(0, |d| d.as_secs() as i64),
        );
        Ok(())
    }
}
