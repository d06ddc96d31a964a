//! `/health`: the state of storage, the platform API, the merchant's
//! endpoint and reconciliation, each with when ("09:53 UTC, 3 min ago"),
//! and charts of the last hour, 6 hours or 24 hours (whichever holds the
//! samples; 7 days for missed notifications) drawn from the store's
//! minute samples, each line named in a legend.

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
    title: String,
    svg: String,
    /// Each line's colour and what it is.
    legend: Vec<(&'static str, String)>,
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

/// The span the charts show: the smallest of the last hour, 6 hours and
/// 24 hours that holds every sample, so a young instance is not squeezed
/// into the right edge of a day.
struct Window {
    ms: i64,
    /// "last hour", "last 6 h", "last 24 h".
    words: &'static str,
    /// The decisions' bars: how wide, and in words.
    bucket_ms: i64,
    bucket: &'static str,
}

const WINDOWS: [Window; 3] = [
    Window {
        ms: HOUR_MS,
        words: "last hour",
        bucket_ms: 5 * MINUTE_MS,
        bucket: "5 minutes",
    },
    Window {
        ms: 6 * HOUR_MS,
        words: "last 6 h",
        bucket_ms: 30 * MINUTE_MS,
        bucket: "30 minutes",
    },
    Window {
        ms: DAY_MS,
        words: "last 24 h",
        bucket_ms: HOUR_MS,
        bucket: "hour",
    },
];

fn window(samples: &[Sample], now: i64) -> &'static Window {
    let first = samples.iter().map(|s| s.minute).min().unwrap_or(now);
    WINDOWS
        .iter()
        .find(|w| now - first <= w.ms)
        .unwrap_or(&WINDOWS[2])
}

fn legend(series: &[Series]) -> Vec<(&'static str, String)> {
    series.iter().map(|s| (s.color, s.name.clone())).collect()
}

fn charts(samples: &[Sample], missed: &[(i64, i64)], now: i64) -> Vec<Chart> {
    let m = by_minute(samples);
    let w = window(samples, now);
    let (from, to) = (now - w.ms, now);
    let kinds: Vec<&str> = m
        .keys()
        .filter_map(|k| k.strip_prefix("notifications."))
        .collect();
    let notif: Vec<Series> = kinds
        .iter()
        .enumerate()
        .map(|(i, k)| series(&m, &format!("notifications.{k}"), k, i, 1.0))
        .collect();
    let since = |t: &i64| *t >= from;
    let total_in = |name: &str| -> i64 {
        m.get(name).map_or(0, |p| {
            p.iter().filter(|(t, _)| since(t)).map(|(_, v)| v).sum()
        })
    };
    let notif_words = kinds
        .iter()
        .map(|k| format!("{k}: {}", total_in(&format!("notifications.{k}"))))
        .collect::<Vec<_>>()
        .join(", ");
    let p99 = series(&m, "ack.p99_us", "p99", 1, 0.001);
    let p50 = series(&m, "ack.p50_us", "p50", 0, 0.001);
    let worst = m
        .get("ack.p99_us")
        .and_then(|p| p.iter().filter(|(t, _)| since(t)).map(|(_, v)| v).max())
        .map_or("none".into(), |v| format!("{:.2} ms", *v as f64 / 1000.0));
    let mut bucketed: BTreeMap<i64, f64> = BTreeMap::new();
    for (t, v) in m.get("decisions").into_iter().flatten() {
        *bucketed.entry(t - t.rem_euclid(w.bucket_ms)).or_default() += *v as f64;
    }
    let bucket_from = from - from.rem_euclid(w.bucket_ms);
    let decisions: Vec<(i64, f64)> = bucketed
        .into_iter()
        .filter(|(t, _)| since(&(t + w.bucket_ms)))
        .collect();
    let missed_bars: Vec<(i64, f64)> = missed.iter().map(|(d, n)| (*d, *n as f64)).collect();
    let day_from = (now - 6 * DAY_MS) - (now - 6 * DAY_MS).rem_euclid(DAY_MS);
    let gauge = |name: &str| last(&m, name).map_or("no sample yet".into(), |v| v.to_string());
    let span = w.words;
    let jobs = [
        series(&m, "jobs.pending", "pending", 0, 1.0),
        series(&m, "jobs.dead", "dead", 1, 1.0),
    ];
    let backlog = [series(&m, "outbox.backlog", "events waiting", 0, 1.0)];
    let oldest = [series(
        &m,
        "outbox.oldest_ms",
        "oldest event's age",
        3,
        0.001,
    )];
    vec![
        Chart {
            title: format!("Notifications per minute, by kind ({span})"),
            svg: lines("Notifications per minute by kind", from, to, &notif),
            legend: legend(&notif),
            summary: if notif_words.is_empty() {
                format!("none in the {span}")
            } else {
                format!("in the {span}: {notif_words}")
            },
        },
        Chart {
            title: format!("Time to answer a notification, ms: p50 and p99 per minute ({span})"),
            svg: lines(
                "Ack latency in milliseconds",
                from,
                to,
                &[p50.clone(), p99.clone()],
            ),
            legend: vec![
                (p50.color, "p50: half answered faster".into()),
                (p99.color, "p99: 99 in 100 answered faster".into()),
            ],
            summary: format!("worst p99 in a minute: {worst}"),
        },
        Chart {
            title: format!("Decisions per {} ({span})", w.bucket),
            svg: bars("Decisions", bucket_from, to, w.bucket_ms, &decisions, false),
            legend: Vec::new(),
            summary: format!("{} in the {span}", total_in("decisions")),
        },
        Chart {
            title: format!("Jobs pending and dead ({span})"),
            svg: lines("Jobs pending and dead", from, to, &jobs),
            legend: legend(&jobs),
            summary: format!(
                "now: {} pending, {} dead",
                gauge("jobs.pending"),
                gauge("jobs.dead")
            ),
        },
        Chart {
            title: format!("Outbox: events waiting ({span})"),
            svg: lines("Outbox backlog", from, to, &backlog),
            legend: Vec::new(),
            summary: format!("now: {} waiting", gauge("outbox.backlog")),
        },
        Chart {
            title: format!("Outbox: age of the oldest event waiting, seconds ({span})"),
            svg: lines("Oldest event waiting, in seconds", from, to, &oldest),
            legend: Vec::new(),
            summary: format!(
                "now: {}",
                last(&m, "outbox.oldest_ms")
                    .map_or("no sample yet".into(), |v| format!("{} s", v / 1000))
            ),
        },
        Chart {
            title: "Missed notifications per day (7 days)".into(),
            svg: bars(
                "Missed notifications per day",
                day_from,
                day_from + 7 * DAY_MS,
                DAY_MS,
                &missed_bars,
                true,
            ),
            legend: Vec::new(),
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
                "last call {} {} answered {}{}, {}",
                f.endpoint,
                f.resource_id,
                if f.status == 0 {
                    "nothing (timed out or unreachable)".into()
                } else {
                    f.status.to_string()
                },
                if platform_at_fault(f.status) || (200..300).contains(&f.status) {
                    ""
                } else {
                    " (about what was asked, not a fault of the platform)"
                },
                when(&f.at, now)
            )),
            !platform_at_fault(f.status),
        ),
        None => (None, true),
    };
    let (merchant, merchant_ok) = match (&health.merchant_failing, &health.last_delivered_at) {
        (Some(e), _) => (format!("failing: {e}"), false),
        (None, Some(at)) => (format!("last event delivered {}", when(at, now)), true),
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
                    "last pass {}: {} changes listed, {} known, {} waiting, {} missed",
                    when(&pointhook_common::clock::rfc3339(*at), now),
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

/// Whether the platform's answer is its own failure: nothing (a timeout,
/// a refused connection), a server error, or a token it refuses. A 404 for
/// an id it does not know, or a 400 about what was asked, is not.
fn platform_at_fault(status: i64) -> bool {
    matches!(status, 0 | 401 | 403 | 429) || status >= 500
}

/// A stored time for a person: to the minute, in UTC said so, and how long
/// ago ("2026-11-28 09:53 UTC, 3 min ago").
fn when(at: &str, now: i64) -> String {
    let Ok(t) = at.parse::<jiff::Timestamp>() else {
        return at.to_string();
    };
    let ms = t.as_millisecond();
    let ago = (now - ms).max(0) / 1000;
    let ago = match ago {
        s if s < 60 => "just now".to_string(),
        s if s < 3600 => format!("{} min ago", s / 60),
        s if s < 2 * 86_400 => format!("{} h ago", s / 3600),
        s => format!("{} days ago", s / 86_400),
    };
    format!("{} UTC, {ago}", t.strftime("%Y-%m-%d %H:%M"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_to_the_minute_labelled_and_relative() {
        let now = "2026-11-28T10:00:00Z"
            .parse::<jiff::Timestamp>()
            .unwrap()
            .as_millisecond();
        assert_eq!(
            when("2026-11-28T09:56:59.123Z", now),
            "2026-11-28 09:56 UTC, 3 min ago"
        );
        assert_eq!(
            when("2026-11-28T09:59:30Z", now),
            "2026-11-28 09:59 UTC, just now"
        );
    }

    #[test]
    fn the_platform_is_at_fault_only_for_its_own_failures() {
        for s in [0, 401, 403, 429, 500, 503] {
            assert!(platform_at_fault(s), "{s}");
        }
        for s in [200, 400, 404] {
            assert!(!platform_at_fault(s), "{s}");
        }
    }

    #[test]
    fn the_window_fits_a_young_instance() {
        let now = 10 * DAY_MS;
        let at = |minute: i64| Sample {
            instance: "a".into(),
            minute,
            series: "decisions".into(),
            value: 1,
        };
        assert_eq!(window(&[at(now - 20 * MINUTE_MS)], now).words, "last hour");
        assert_eq!(window(&[at(now - 2 * HOUR_MS)], now).words, "last 6 h");
        assert_eq!(window(&[at(now - 20 * HOUR_MS)], now).words, "last 24 h");
        assert_eq!(window(&[], now).words, "last hour");
    }
}
