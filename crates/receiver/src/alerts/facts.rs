//! What needs a person, read from the store: the console's inbox (held
//! reviews, holds of every kind, orders released before a fraud alert or
//! at risk, dead jobs),
//! each destination's health and backlog, changes found missed in the
//! last hour, and each watched account's last notification; each inbox
//! item in words, with the console page that shows it.

use std::time::Duration;

use crate::actions::consequence;
use crate::domain::attention::{AlertKind, Attention};
use crate::domain::{HoldSeen, HoldState};
use crate::metrics::LastHeard;
use crate::rules::alerts::{AccountFacts, DestinationFacts, Facts};
use crate::store::console_views::{Flagged, ReviewDetail};
use crate::store::{DestinationView, JobSummary, MAX_LIMIT, Store, StoreError};

/// What the inbox lists of each kind, at most (dead jobs: the store's own
/// bound).
const LISTED: usize = MAX_LIMIT;
const DEAD_JOBS_LISTED: usize = 5000;
/// A text from outside (an error) is cut to this many characters.
const TEXT: usize = 200;
const HOUR_MS: i64 = 3_600_000;

/// The facts of the store at `now`, and the kinds whose list reached its
/// bound (what it did not list still stands).
pub async fn read(
    store: &Store,
    now: i64,
    expect: &[(String, Duration)],
    heard: &LastHeard,
) -> Result<(Facts, Vec<AlertKind>), StoreError> {
    let inbox = store.inbox(LISTED, now).await?;
    let mut cut_short = Vec::new();
    for (kind, n, bound) in [
        (AlertKind::FraudReviewHeld, inbox.reviews.len(), LISTED),
        (
            AlertKind::ReleasedBeforeFraudAlert,
            inbox.after_release.len(),
            LISTED,
        ),
        (AlertKind::OrderAtRisk, inbox.at_risk.len(), LISTED),
        (AlertKind::DeadJobs, inbox.dead_jobs.len(), DEAD_JOBS_LISTED),
    ] {
        if n >= bound {
            cut_short.push(kind);
        }
    }
    let mut items: Vec<Attention> = inbox.reviews.iter().map(review).collect();
    items.extend(inbox.after_release.iter().map(|f| {
        flagged(
            f,
            AlertKind::ReleasedBeforeFraudAlert,
            "was released before a fraud alert: the goods left, nothing was undone",
        )
    }));
    items.extend(inbox.at_risk.iter().map(|f| {
        flagged(
            f,
            AlertKind::OrderAtRisk,
            "is at risk: released, then a chargeback",
        )
    }));
    items.extend(inbox.dead_jobs.iter().map(dead_job));
    let holds = store
        .holds(Some(HoldState::Held), None, None, LISTED)
        .await?;
    if holds.len() >= LISTED {
        cut_short.push(AlertKind::Held);
    }
    items.extend(holds.iter().map(hold));
    let destinations = store
        .destinations(now)
        .await?
        .iter()
        .map(|d| destination(d, now))
        .collect();
    let missed_last_hour = store.missed_since(now - HOUR_MS).await?;
    let last = heard.refresh(store).await?;
    let accounts = expect
        .iter()
        .map(|(name, within)| AccountFacts {
            name: name.clone(),
            last_heard_at: last.get(name).copied(),
            expect_within_ms: within.as_millis() as i64,
        })
        .collect();
    let facts = Facts {
        now,
        items,
        destinations,
        missed_last_hour,
        accounts,
        storage_failing_since: None,
        storage_disk_full: false,
    };
    Ok((facts, cut_short))
}

fn cut(text: &str) -> String {
    match text.char_indices().nth(TEXT) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_string(),
    }
}

/// A path segment or query value, percent-encoded.
fn enc(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

fn order_path(account: &str, order: &str) -> String {
    format!(
        "/orders/{}?account={}&kind=merchant_order",
        enc(order),
        enc(account)
    )
}

fn review(d: &ReviewDetail) -> Attention {
    let r = &d.review;
    Attention {
        kind: AlertKind::FraudReviewHeld,
        key: format!("fraud_review:{}", r.id),
        text: format!(
            "fraud review {} ({}): merchant order {}, payment {}; confirming will {}",
            r.id,
            r.account,
            r.merchant_order_id.as_deref().unwrap_or("unknown"),
            r.payment_id.as_deref().unwrap_or("unknown"),
            consequence(d).words
        ),
        path: format!("/fraud-reviews/{}", r.id),
    }
}

/// A hold of any kind, in its kind's words.
fn hold(h: &HoldSeen) -> Attention {
    let what = crate::rules::holds::kind(&h.kind).map_or(h.kind.as_str(), |k| k.title);
    Attention {
        kind: AlertKind::Held,
        key: format!("hold:{}", h.id),
        text: format!(
            "{what}: {} ({}) waits for you: {}; approving will {}",
            h.subject,
            h.account,
            cut(&h.reason),
            crate::actions::hold_does(h, crate::domain::HoldAnswer::Approve)
        ),
        path: format!("/holds/{}", h.id),
    }
}

fn flagged(f: &Flagged, kind: AlertKind, what: &str) -> Attention {
    Attention {
        kind,
        key: f.item.clone(),
        text: format!("merchant order {} ({}) {what}", f.order_id, f.account),
        path: order_path(&f.account, &f.order_id),
    }
}

fn dead_job(j: &JobSummary) -> Attention {
    let after = format!("after {} attempts: ", j.attempts);
    // The worker records a dead job's error with its attempts already.
    let error = j.last_error.as_deref().unwrap_or("no error recorded");
    let error = error.strip_prefix(after.as_str()).unwrap_or(error);
    Attention {
        kind: AlertKind::DeadJobs,
        key: format!("job:{}", j.id),
        text: format!(
            "job {} {} ({}) {after}{}",
            j.id,
            j.key,
            j.account,
            cut(error)
        ),
        path: format!("/jobs/{}", j.id),
    }
}

fn destination(d: &DestinationView, now: i64) -> DestinationFacts {
    let at = |t: &Option<String>| {
        t.as_deref()
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
            .map(|t| t.as_millisecond())
    };
    DestinationFacts {
        name: d.name.clone(),
        disabled: (d.state == "disabled")
            .then(|| cut(d.disabled_reason.as_deref().unwrap_or("no reason recorded"))),
        failing_since: at(&d.failing_since),
        oldest_waiting_at: (d.backlog > 0).then(|| now - d.oldest_seconds * 1000),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn outside_text_is_cut_and_paths_are_encoded() {
        assert_eq!(super::cut(&"é".repeat(300)).chars().count(), 203);
        assert_eq!(super::cut("short"), "short");
        assert_eq!(
            super::order_path("shop a", "12/../x"),
            "/orders/12%2F..%2Fx?account=shop+a&kind=merchant_order"
        );
    }
}
