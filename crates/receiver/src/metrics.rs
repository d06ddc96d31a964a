//! Prometheus metrics (`GET /metrics` on the admin listener). Counters and
//! histograms are updated where things happen; the gauges that describe the
//! database (jobs by state, outbox backlog, what needs a person:
//! `attention.rs`) are read from it at scrape time.

mod attention;

pub use attention::LastHeard;

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::store::{Store, StoreError};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DeliveryLabels {
    pub kind: &'static str,
    pub result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ApiLabels {
    pub endpoint: &'static str,
    pub result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct EndpointLabel {
    pub endpoint: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct MissedLabels {
    pub account: String,
    pub topic: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RejectedLabels {
    pub account: String,
    pub reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabel {
    pub outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabel {
    pub reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DestinationLabel {
    pub destination: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StateLabel {
    pub state: &'static str,
}

pub struct Metrics {
    registry: Registry,
    deliveries: Family<DeliveryLabels, Counter>,
    ack_seconds: Histogram,
    signature_failures: Counter,
    rate_limited: Counter,
    api_calls: Family<ApiLabels, Counter>,
    api_seconds: Family<EndpointLabel, Histogram>,
    jobs: Family<StateLabel, Gauge>,
    dead_jobs: Gauge,
    outbox_backlog: Gauge,
    outbox_oldest_seconds: Gauge,
    destination_backlog: Family<DestinationLabel, Gauge>,
    destination_oldest_seconds: Family<DestinationLabel, Gauge>,
    destination_disabled: Family<DestinationLabel, Gauge>,
    missed: Family<MissedLabels, Counter>,
    job_runs: Family<OutcomeLabel, Counter>,
    reconcile_passes: Family<OutcomeLabel, Counter>,
    fraud_rejected: Family<RejectedLabels, Counter>,
    sign_in_refusals: Family<ReasonLabel, Counter>,
    attention: attention::Gauges,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics { .. }")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("pointhook");
        let deliveries = Family::<DeliveryLabels, Counter>::default();
        registry.register(
            "deliveries",
            "Notifications received, by kind and result",
            deliveries.clone(),
        );
        // 50 µs to about 3 s.
        let ack_seconds = Histogram::new(exponential_buckets(0.00005, 2.0, 16));
        registry.register(
            "ack_seconds",
            "Time from request to durable 200",
            ack_seconds.clone(),
        );
        let signature_failures = Counter::default();
        registry.register(
            "signature_failures",
            "Webhooks whose x-signature failed",
            signature_failures.clone(),
        );
        let rate_limited = Counter::default();
        registry.register(
            "rate_limited",
            "Requests refused by the per-address rate limit",
            rate_limited.clone(),
        );
        let api_calls = Family::<ApiLabels, Counter>::default();
        registry.register(
            "api_calls",
            "Platform API calls, by endpoint and result",
            api_calls.clone(),
        );
        let api_seconds = Family::<EndpointLabel, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.001, 2.0, 15))
        });
        registry.register(
            "api_call_seconds",
            "Platform API call latency",
            api_seconds.clone(),
        );
        let jobs = Family::<StateLabel, Gauge>::default();
        registry.register("jobs", "Jobs by state", jobs.clone());
        let dead_jobs = Gauge::default();
        registry.register(
            "dead_jobs",
            "Jobs that gave up and wait for a person",
            dead_jobs.clone(),
        );
        let outbox_backlog = Gauge::default();
        registry.register(
            "outbox_backlog",
            "Events waiting for the merchant's endpoint",
            outbox_backlog.clone(),
        );
        let outbox_oldest_seconds = Gauge::default();
        registry.register(
            "outbox_oldest_seconds",
            "Age of the oldest event waiting for the merchant's endpoint",
            outbox_oldest_seconds.clone(),
        );
        let destination_backlog = Family::<DestinationLabel, Gauge>::default();
        registry.register(
            "destination_backlog",
            "Events waiting for a destination, pending or paused",
            destination_backlog.clone(),
        );
        let destination_oldest_seconds = Family::<DestinationLabel, Gauge>::default();
        registry.register(
            "destination_oldest_seconds",
            "Age of the oldest event waiting for a destination",
            destination_oldest_seconds.clone(),
        );
        let destination_disabled = Family::<DestinationLabel, Gauge>::default();
        registry.register(
            "destination_disabled",
            "1 while a destination is disabled (a person must enable and recover it)",
            destination_disabled.clone(),
        );
        let missed = Family::<MissedLabels, Counter>::default();
        registry.register(
            "notifications_missed",
            "Changes found by reconciliation that no notification announced in time",
            missed.clone(),
        );
        let job_runs = Family::<OutcomeLabel, Counter>::default();
        registry.register(
            "job_runs",
            "Job runs that ended, by how: done, retry, dead, lease_lost",
            job_runs.clone(),
        );
        let reconcile_passes = Family::<OutcomeLabel, Counter>::default();
        registry.register(
            "reconcile_passes",
            "Sweeper passes over every account that ended, by how: ok, failed",
            reconcile_passes.clone(),
        );
        let fraud_rejected = Family::<RejectedLabels, Counter>::default();
        registry.register(
            "fraud_alerts_rejected",
            "Fraud alerts the API did not confirm (nothing blocked, nothing told), by account and reason",
            fraud_rejected.clone(),
        );
        let sign_in_refusals = Family::<ReasonLabel, Counter>::default();
        registry.register(
            "console_sign_in_refusals",
            "Console sign-ins refused before their password was checked, by reason: address (too many from one address), name (a growing delay after failures), busy (the check's queue is full)",
            sign_in_refusals.clone(),
        );
        let attention = attention::Gauges::register(&mut registry);
        Metrics {
            sign_in_refusals,
            attention,
            registry,
            fraud_rejected,
            deliveries,
            ack_seconds,
            signature_failures,
            rate_limited,
            api_calls,
            api_seconds,
            jobs,
            dead_jobs,
            outbox_backlog,
            outbox_oldest_seconds,
            destination_backlog,
            destination_oldest_seconds,
            destination_disabled,
            missed,
            job_runs,
            reconcile_passes,
        }
    }

    /// A message to a channel of `[[alerts]]`: sent, failed or dropped.
    pub fn alert_sent(&self, channel: &'static str, outcome: &'static str) {
        self.attention.alert_sent(channel, outcome);
    }

    /// Each account's last notification, shared by `/metrics` and the
    /// alerter.
    pub fn last_heard(&self) -> &LastHeard {
        &self.attention.heard
    }

    pub fn reconcile_pass(&self, outcome: &'static str) {
        self.reconcile_passes
            .get_or_create(&OutcomeLabel { outcome })
            .inc();
    }

    pub fn fraud_alert_rejected(&self, account: &str, reason: &'static str) {
        self.fraud_rejected
            .get_or_create(&RejectedLabels {
                account: account.to_string(),
                reason,
            })
            .inc();
    }

    pub fn sign_in_refused(&self, reason: &'static str) {
        self.sign_in_refusals
            .get_or_create(&ReasonLabel { reason })
            .inc();
    }

    pub fn job_run(&self, outcome: &'static str) {
        self.job_runs.get_or_create(&OutcomeLabel { outcome }).inc();
    }

    pub fn missed(&self, account: &str, topic: &'static str) {
        self.missed
            .get_or_create(&MissedLabels {
                account: account.to_string(),
                topic,
            })
            .inc();
    }

    pub fn delivery(&self, kind: &'static str, result: &'static str) {
        self.deliveries
            .get_or_create(&DeliveryLabels { kind, result })
            .inc();
    }

    pub fn acked_in(&self, d: Duration) {
        self.ack_seconds.observe(d.as_secs_f64());
    }

    pub fn signature_failed(&self) {
        self.signature_failures.inc();
    }

    pub fn rate_limited(&self) {
        self.rate_limited.inc();
    }

    /// `status` 0: no answer.
    pub fn api_call(&self, endpoint: &'static str, status: u16, took: Duration) {
        let result = match status {
            0 => "no_answer",
            200..=299 => "2xx",
            400..=499 => "4xx",
            500..=599 => "5xx",
            _ => "other",
        };
        self.api_calls
            .get_or_create(&ApiLabels { endpoint, result })
            .inc();
        self.api_seconds
            .get_or_create(&EndpointLabel { endpoint })
            .observe(took.as_secs_f64());
    }

    /// The text exposition, with the database gauges read now.
    pub async fn render(&self, store: &Store, now_ms: i64) -> Result<String, StoreError> {
        let snapshot = store.metrics_snapshot(now_ms).await?;
        for (state, n) in &snapshot.jobs {
            self.jobs.get_or_create(&StateLabel { state }).set(*n);
        }
        self.dead_jobs.set(
            snapshot
                .jobs
                .iter()
                .find(|(s, _)| *s == "dead")
                .map_or(0, |(_, n)| *n),
        );
        self.outbox_backlog.set(snapshot.outbox_backlog);
        self.outbox_oldest_seconds
            .set(snapshot.outbox_oldest_ms / 1000);
        for d in &snapshot.destinations {
            let label = DestinationLabel {
                destination: d.name.clone(),
            };
            self.destination_backlog
                .get_or_create(&label)
                .set(d.backlog);
            self.destination_oldest_seconds
                .get_or_create(&label)
                .set(d.oldest_seconds);
            self.destination_disabled
                .get_or_create(&label)
                .set(i64::from(d.state == "disabled"));
        }
        self.attention
            .update(store, now_ms, &snapshot.destinations)
            .await?;
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)
            .map_err(|e| StoreError::Unavailable(format!("cannot encode metrics: {e}")))?;
        Ok(out)
    }
}

/// What the health charts sample of this process's counters: totals since
/// start, read from the text exposition (nothing is added to the ack path).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counts {
    /// Notifications received, by kind.
    pub deliveries: Vec<(String, u64)>,
    /// The ack histogram: `(upper bound in seconds, cumulative count)`,
    /// `+Inf` last.
    pub ack_buckets: Vec<(f64, u64)>,
    pub ack_count: u64,
    pub ack_sum_seconds: f64,
}

impl Metrics {
    /// The counters the health charts sample.
    pub fn counts(&self) -> Counts {
        let mut text = String::new();
        if prometheus_client::encoding::text::encode(&mut text, &self.registry).is_err() {
            return Counts::default();
        }
        let mut c = Counts::default();
        for line in text.lines() {
            let Some((series, value)) = line.rsplit_once(' ') else {
                continue;
            };
            let label = |name: &str| {
                let start = series.find(&format!("{name}=\""))? + name.len() + 2;
                let len = series[start..].find('"')?;
                Some(&series[start..start + len])
            };
            if series.starts_with("pointhook_deliveries_total{") {
                let (Some(kind), Ok(n)) = (label("kind"), value.parse::<u64>()) else {
                    continue;
                };
                match c.deliveries.iter_mut().find(|(k, _)| k == kind) {
                    Some((_, total)) => *total += n,
                    None => c.deliveries.push((kind.to_string(), n)),
                }
            } else if series.starts_with("pointhook_ack_seconds_bucket{") {
                let le = match label("le") {
                    Some("+Inf") => f64::INFINITY,
                    Some(le) => le.parse().unwrap_or(f64::INFINITY),
                    None => continue,
                };
                c.ack_buckets.push((le, value.parse().unwrap_or(0)));
            } else if series == "pointhook_ack_seconds_count" {
                c.ack_count = value.parse().unwrap_or(0);
            } else if series == "pointhook_ack_seconds_sum" {
                c.ack_sum_seconds = value.parse().unwrap_or(0.0);
            }
        }
        c
    }
}

/// Shared by the parts that count.
pub type SharedMetrics = Arc<Metrics>;

#[cfg(test)]
mod counts_tests {
    use super::*;

    #[test]
    fn counts_read_the_exposition() {
        let m = Metrics::new();
        m.delivery("ipn", "accepted");
        m.delivery("ipn", "duplicate");
        m.delivery("webhook", "accepted");
        m.acked_in(Duration::from_micros(70));
        m.acked_in(Duration::from_millis(3));
        let c = m.counts();
        let mut d = c.deliveries.clone();
        d.sort();
        assert_eq!(d, [("ipn".to_string(), 2), ("webhook".to_string(), 1)]);
        assert_eq!(c.ack_count, 2);
        assert_eq!(c.ack_buckets.first(), Some(&(0.00005, 0)));
        assert_eq!(c.ack_buckets[1], (0.0001, 1));
        assert_eq!(c.ack_buckets.last(), Some(&(f64::INFINITY, 2)));
    }
}
