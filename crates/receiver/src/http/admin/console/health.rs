//! `/health`: the state of storage, the platform API, the merchant's
//! endpoint and reconciliation, and charts of the last 24 hours (7 days
//! for missed notifications) drawn from the store's minute samples.

use std::collections::BTreeMap;

use askama::Template;
use axum::Extension;
use axum::extract::State;
use axum::response::Response;

use super::super::session::Operator;
use super::Chrome;
use super::charts::{COLORS, Series, bars, lines};
use crate::http::admin::html::{HtmlError, render};
use crate::samples::{MINUTE_MS, adds_up};
use crate::store::console_views::Sample;

const DAY_MS: i64 = 86_400_000;
const HOUR_MS: i64 = 3_600_000;

struct Chart {
    title: &'static str,
    svg: String,
    /// The same in words.
    summary: String,
}

#[derive(Template)]
#[template(path = "console/health.html")]
struct HealthPage {
    chrome: Chrome,
    storage_ok: bool,
    disk_full: bool,
    api: Option<String>,
    api_ok: bool,
    merchant: String,
    merchant_ok: bool,
    reconcile: String,
    reconcile_ok: bool,
    charts: Vec<Chart>,
}

/// Per series, per minute: the instances' values added up or the largest.
fn by_minute(samples: &[Sample]) -> BTreeMap<&str, BTreeMap<i64, i64>> {
    let mut out: BTreeMap<&str, BTreeMap<i64, i64>> = BTreeMap::new();
    for s in samples {
        let slot = out
            .entry(s.series.as_str())
            .or_default()
            .entry(s.minute)
            .or_insert(0);
        *slot = if adds_up(&s.series) {
            *slot + s.value
        } else {
            (*slot).max(s.value)
        };
    }
    out
}

fn series(
    m: &BTreeMap<&str, BTreeMap<i64, i64>>,
    name: &str,
    label: &str,
    color: usize,
    scale: f64,
) -> Series {
    Series {
        name: label.to_string(),
        color: COLORS[color % COLORS.len()],
        points: m
            .get(name)
            .map(|p| p.iter().map(|(t, v)| (*t, *v as f64 * scale)).collect())
            .unwrap_or_default(),
    }
}

fn last(m: &BTreeMap<&str, BTreeMap<i64, i64>>, name: &str) -> Option<i64> {
    m.get(name)?.values().next_back().copied()
}

fn total(m: &BTreeMap<&str, BTreeMap<i64, i64>>, name: &str) -> i64 {
    m.get(name).map_or(0, |p| p.values().sum())
}

fn charts(samples: &[Sample], missed: &[(i64, i64)], now: i64) -> Vec<Chart> {
    let m = by_minute(samples);
    let (from, to) = (now - DAY_MS, now);
    let kinds: Vec<&str> = m
        .keys()
        .filter_map(|k| k.strip_prefix("notifications."))
        .collect();
    let notif: Vec<Series> = kinds
        .iter()
        .enumerate()
        .map(|(i, k)| series(&m, &format!("notifications.{k}"), k, i, 1.0))
        .collect();
    let notif_words = kinds
        .iter()
        .map(|k| format!("{k}: {}", total(&m, &format!("notifications.{k}"))))
        .collect::<Vec<_>>()
        .join(", ");
    let p99 = series(&m, "ack.p99_us", "p99", 1, 0.001);
    let p50 = series(&m, "ack.p50_us", "p50", 0, 0.001);
    let worst = m
        .get("ack.p99_us")
        .and_then(|p| p.values().max())
        .map_or("none".into(), |v| format!("{:.2} ms", *v as f64 / 1000.0));
    let mut hourly: BTreeMap<i64, f64> = BTreeMap::new();
    for (t, v) in m.get("decisions").into_iter().flatten() {
        *hourly.entry(t - t.rem_euclid(HOUR_MS)).or_default() += *v as f64;
    }
    let hour_from = from - from.rem_euclid(HOUR_MS);
    let decisions: Vec<(i64, f64)> = hourly.into_iter().collect();
    let missed_bars: Vec<(i64, f64)> = missed.iter().map(|(d, n)| (*d, *n as f64)).collect();
    let day_from = (now - 6 * DAY_MS) - (now - 6 * DAY_MS).rem_euclid(DAY_MS);
    let gauge = |name: &str| last(&m, name).map_or("no sample yet".into(), |v| v.to_string());
    vec![
        Chart {
            title: "Notifications per minute, by kind (24 h)",
            svg: lines("Notifications per minute by kind", "/min", from, to, &notif),
            summary: if notif_words.is_empty() {
                "none in 24 h".into()
            } else {
                format!("in 24 h: {notif_words}")
            },
        },
        Chart {
            title: "Ack latency, p50 and p99 per minute (24 h)",
            svg: lines("Ack latency", "ms", from, to, &[p50, p99]),
            summary: format!("worst p99 in a minute: {worst}"),
        },
        Chart {
            title: "Decisions per hour (24 h)",
            svg: bars(
                "Decisions per hour",
                "/h",
                hour_from,
                to,
                HOUR_MS,
                &decisions,
                false,
            ),
            summary: format!("{} in 24 h", total(&m, "decisions")),
        },
        Chart {
            title: "Jobs waiting and dead (24 h)",
            svg: lines(
                "Jobs pending and dead",
                "jobs",
                from,
                to,
                &[
                    series(&m, "jobs.pending", "pending", 0, 1.0),
                    series(&m, "jobs.dead", "dead", 1, 1.0),
                ],
            ),
            summary: format!(
                "now: {} pending, {} dead",
                gauge("jobs.pending"),
                gauge("jobs.dead")
            ),
        },
        Chart {
            title: "Outbox: events waiting (24 h)",
            svg: lines(
                "Outbox backlog",
                "events",
                from,
                to,
                &[series(&m, "outbox.backlog", "backlog", 0, 1.0)],
            ),
            summary: format!("now: {} waiting", gauge("outbox.backlog")),
        },
        Chart {
            title: "Outbox: age of the oldest event waiting (24 h)",
            svg: lines(
                "Oldest event waiting",
                "s",
                from,
                to,
                &[series(&m, "outbox.oldest_ms", "oldest", 3, 0.001)],
            ),
            summary: format!(
                "now: {}",
                last(&m, "outbox.oldest_ms")
                    .map_or("no sample yet".into(), |v| format!("{} s", v / 1000))
            ),
        },
        Chart {
            title: "Missed notifications per day (7 days)",
            svg: bars(
                "Missed notifications per day",
                "/day",
                day_from,
                day_from + 7 * DAY_MS,
                DAY_MS,
                &missed_bars,
                true,
            ),
            summary: format!("{} in 7 days", missed.iter().map(|(_, n)| n).sum::<i64>()),
        },
    ]
}

pub async fn page(
    State(s): State<super::Shared>,
    Extension(op): Extension<Operator>,
) -> Result<Response, HtmlError> {
    let now = s.now();
    let storage_ok = s.store.check_writable().await.is_ok();
    let health = s.store.health().await?;
    let (api, api_ok) = match &health.last_api_call {
        Some(f) => (
            Some(format!(
                "last call {} {} answered {} at {}",
                f.endpoint,
                f.resource_id,
                if f.status == 0 {
                    "nothing".into()
                } else {
                    f.status.to_string()
                },
                f.at
            )),
            (200..300).contains(&f.status),
        ),
        None => (None, true),
    };
    let (merchant, merchant_ok) = match (&health.merchant_failing, &health.last_delivered_at) {
        (Some(e), _) => (format!("failing: {e}"), false),
        (None, Some(at)) => (format!("last event delivered at {at}"), true),
        (None, None) if s.store.delivers_events() => ("nothing delivered yet".into(), true),
        (None, None) => ("no [fulfillment] url: events are only stored".into(), true),
    };
    let missed_24h = s.store.missed_since(now - DAY_MS).await?;
    let (reconcile, reconcile_ok) = match &s.sweep {
        None => ("off in this process".into(), true),
        Some(status) => {
            let st = status.lock().unwrap_or_else(|p| p.into_inner()).clone();
            let pass = match (&st.last_pass_at, &st.last_report) {
                (Some(at), Some(r)) => format!(
                    "last pass at {}: {} changes listed, {} known, {} waiting, {} missed",
                    pointhook_common::clock::rfc3339(*at),
                    r.found,
                    r.known,
                    r.waiting,
                    r.missed()
                ),
                _ if !st.leading => "another instance sweeps".into(),
                _ => "no pass yet".into(),
            };
            let error = st
                .last_error
                .map(|e| format!("; failed: {e}"))
                .unwrap_or_default();
            (
                format!("{missed_24h} missed in 24 h; {pass}{error}"),
                error.is_empty(),
            )
        }
    };
    let samples = s.store.samples(now - DAY_MS - MINUTE_MS).await?;
    let missed = s.store.missed_per_day(now - 7 * DAY_MS).await?;
    Ok(render(&HealthPage {
        chrome: Chrome::new(&s, &op, "health", None).await?,
        storage_ok,
        disk_full: s.store.disk_full(),
        api,
        api_ok,
        merchant,
        merchant_ok,
        reconcile,
        reconcile_ok,
        charts: charts(&samples, &missed, now),
    }))
}
