//! Once a minute, what the console's health charts draw:
//! notifications by kind and ack latency from this process's own
//! counters (read from the metrics, so the ack path pays nothing more),
//! and the store's backlog, dead jobs, outbox and decisions. Each instance
//! writes its own rows; the charts add the counts up and take the largest
//! of the store's numbers.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::metrics::{Counts, SharedMetrics};
use crate::store::Store;
use crate::store::console_views::Sample;
use pointhook_common::clock::Clock;

/// How long samples are kept: the longest chart looks 7 days back.
const KEEP_MS: i64 = 8 * 86_400_000;
pub const MINUTE_MS: i64 = 60_000;

/// Series whose values from several instances add up; the others are the
/// store's numbers, the same whoever read them.
pub fn adds_up(series: &str) -> bool {
    series.starts_with("notifications.") || series == "ack.count"
}

pub struct Sampler {
    pub store: Store,
    pub metrics: SharedMetrics,
    pub clock: Arc<dyn Clock>,
    /// This process, among the instances sharing the store.
    pub instance: String,
}

/// What the last sample saw, to count what happened since.
#[derive(Default)]
struct Last {
    counts: Counts,
    decision_id: Option<i64>,
}

impl Sampler {
    /// A name for this process: host and pid.
    pub fn instance_name() -> String {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_else(|_| "host".into());
        format!("{host}:{}", std::process::id())
    }

    /// Samples every minute until `stop`.
    pub async fn run(self, stop: CancellationToken) {
        let mut last = Last {
            counts: self.metrics.counts(),
            decision_id: None,
        };
        let mut every = tokio::time::interval(Duration::from_secs(60));
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut ticks: u64 = 0;
        loop {
            tokio::select! {
                _ = every.tick() => {}
                () = stop.cancelled() => return,
            }
            if let Err(e) = self.sample(&mut last).await {
                tracing::warn!(error = %e, "the health charts missed a sample");
            }
            ticks += 1;
            if ticks % 60 == 1 {
                let before = self.now() - KEEP_MS;
                if let Err(e) = self.store.prune_samples(before).await {
                    tracing::warn!(error = %e, "old samples were not pruned");
                }
            }
        }
    }

    fn now(&self) -> i64 {
        crate::store::unix_ms(self.clock.now())
    }

    async fn sample(&self, last: &mut Last) -> Result<(), crate::store::StoreError> {
        let now = self.now();
        let minute = now - now.rem_euclid(MINUTE_MS);
        let counts = self.metrics.counts();
        let mut rows = minute_rows(&last.counts, &counts);
        last.counts = counts;
        let snapshot = self.store.metrics_snapshot(now).await?;
        for (state, n) in &snapshot.jobs {
            if matches!(*state, "pending" | "dead") {
                rows.push((format!("jobs.{state}"), *n));
            }
        }
        rows.push(("outbox.backlog".into(), snapshot.outbox_backlog));
        rows.push(("outbox.oldest_ms".into(), snapshot.outbox_oldest_ms));
        match last.decision_id {
            Some(since) => {
                let (n, newest) = self.store.decisions_after(since).await?;
                rows.push(("decisions".into(), n));
                last.decision_id = Some(newest);
            }
            // The first sample only finds where decisions stand.
            None => last.decision_id = Some(self.store.decisions_after(0).await?.1),
        }
        let samples = rows
            .into_iter()
            .map(|(series, value)| Sample {
                minute,
                instance: self.instance.clone(),
                series,
                value,
            })
            .collect();
        self.store.record_samples(samples).await
    }
}

/// The minute's rows from two readings of the counters: notifications by
/// kind, and the ack latency's count, mean and quantiles (µs).
pub fn minute_rows(before: &Counts, now: &Counts) -> Vec<(String, i64)> {
    let mut rows = Vec::new();
    for (kind, n) in &now.deliveries {
        let was = before
            .deliveries
            .iter()
            .find(|(k, _)| k == kind)
            .map_or(0, |(_, n)| *n);
        rows.push((
            format!("notifications.{kind}"),
            n.saturating_sub(was) as i64,
        ));
    }
    let count = now.ack_count.saturating_sub(before.ack_count);
    rows.push(("ack.count".into(), count as i64));
    if count > 0 {
        let sum = (now.ack_sum_seconds - before.ack_sum_seconds).max(0.0);
        rows.push(("ack.mean_us".into(), (sum / count as f64 * 1e6) as i64));
        let buckets: Vec<(f64, u64)> = now
            .ack_buckets
            .iter()
            .map(|(le, n)| {
                let was = before
                    .ack_buckets
                    .iter()
                    .find(|(l, _)| l == le)
                    .map_or(0, |(_, n)| *n);
                (*le, n.saturating_sub(was))
            })
            .collect();
        for (name, q) in [("ack.p50_us", 0.5), ("ack.p99_us", 0.99)] {
            rows.push((name.into(), quantile_us(&buckets, count, q)));
        }
    }
    rows
}

/// The upper bound (µs) of the bucket holding quantile `q`; past the last
/// bound, twice the last bound.
fn quantile_us(cumulative: &[(f64, u64)], count: u64, q: f64) -> i64 {
    let rank = (count as f64 * q).ceil().max(1.0) as u64;
    let mut last_finite = 0.0;
    for (le, n) in cumulative {
        if le.is_finite() {
            last_finite = *le;
        }
        if *n >= rank {
            let bound = if le.is_finite() {
                *le
            } else {
                last_finite * 2.0
            };
            return (bound * 1e6).round() as i64;
        }
    }
    (last_finite * 2e6).round() as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minute_counts_what_happened_in_it() {
        let before = Counts {
            deliveries: vec![("ipn".into(), 10)],
            ack_buckets: vec![(0.0001, 5), (0.001, 10), (f64::INFINITY, 10)],
            ack_count: 10,
            ack_sum_seconds: 0.002,
        };
        let now = Counts {
            deliveries: vec![("ipn".into(), 110), ("webhook".into(), 3)],
            ack_buckets: vec![(0.0001, 55), (0.001, 108), (f64::INFINITY, 110)],
            ack_count: 110,
            ack_sum_seconds: 0.032,
        };
        let rows = minute_rows(&before, &now);
        let get = |s: &str| rows.iter().find(|(n, _)| n == s).map(|(_, v)| *v);
        assert_eq!(get("notifications.ipn"), Some(100));
        assert_eq!(get("notifications.webhook"), Some(3));
        assert_eq!(get("ack.count"), Some(100));
        assert_eq!(get("ack.mean_us"), Some(300));
        assert_eq!(get("ack.p50_us"), Some(100));
        assert_eq!(get("ack.p99_us"), Some(2000), "past the last bound");
    }
}
