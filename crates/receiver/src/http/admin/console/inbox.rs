//! `/`: what needs a person, newest first, each item with its evidence and
//! its decision on the spot. Dead jobs come grouped by cause: the kind of
//! error, the endpoint it names and the hour the job died, so a platform
//! outage that killed 500 jobs is one line with one "retry all".
//! Destinations disabled or failing come last, with enable and recover.

use askama::Template;
use axum::Extension;
use axum::extract::{Query, State};
use axum::response::Response;

use super::super::session::Operator;
use super::{Chrome, Done};
use crate::actions::{Consequence, consequence};
use crate::http::admin::html::{HtmlError, render};
use crate::store::DestinationView;
use crate::store::console_views::{Flagged, Missed, ReviewDetail};
use crate::store::views::{EventSummary, JobSummary};

/// Items of each kind the inbox shows at most.
const SHOWN: usize = 100;
/// Jobs of a group listed under it.
const LISTED: usize = 5;

pub struct ReviewItem {
    pub d: ReviewDetail,
    pub c: Consequence,
}

/// Dead jobs that died of the same cause in the same hour.
pub struct Group {
    pub class: String,
    pub endpoint: String,
    /// The hour's start, unix ms.
    pub hour: i64,
    pub window: String,
    pub jobs: Vec<JobSummary>,
}

impl Group {
    pub fn count(&self) -> usize {
        self.jobs.len()
    }

    pub fn listed(&self) -> &[JobSummary] {
        &self.jobs[..self.jobs.len().min(LISTED)]
    }
}

#[derive(Template)]
#[template(path = "console/inbox.html")]
struct InboxPage {
    chrome: Chrome,
    reviews: Vec<ReviewItem>,
    holds: Vec<super::holds::HoldItem>,
    after_release: Vec<Flagged>,
    at_risk: Vec<Flagged>,
    mismatches: Vec<JobSummary>,
    groups: Vec<Group>,
    dead_events: Vec<EventSummary>,
    missed: Vec<Missed>,
    destinations: Vec<DestinationView>,
    empty: bool,
}

pub async fn page(
    State(s): State<super::Shared>,
    Extension(op): Extension<Operator>,
    Query(d): Query<Done>,
) -> Result<Response, HtmlError> {
    let chrome = Chrome::new(&s, &op, "inbox", d.done).await?;
    let inbox = s.store.inbox(SHOWN, s.now()).await?;
    let (mismatches, dead): (Vec<_>, Vec<_>) = inbox.dead_jobs.into_iter().partition(is_mismatch);
    let groups = group(dead);
    let reviews: Vec<ReviewItem> = inbox
        .reviews
        .into_iter()
        .map(|d| ReviewItem {
            c: consequence(&d),
            d,
        })
        .collect();
    let holds: Vec<_> = s
        .store
        .holds(Some(crate::domain::HoldState::Held), None, None, SHOWN)
        .await?
        .into_iter()
        .map(super::holds::HoldItem::of)
        .collect();
    let empty = reviews.is_empty()
        && holds.is_empty()
        && inbox.after_release.is_empty()
        && inbox.at_risk.is_empty()
        && mismatches.is_empty()
        && groups.is_empty()
        && inbox.dead_events.is_empty()
        && inbox.missed.is_empty()
        && inbox.destinations.is_empty();
    Ok(render(&InboxPage {
        chrome,
        reviews,
        holds,
        after_release: inbox.after_release,
        at_risk: inbox.at_risk,
        mismatches,
        groups,
        dead_events: inbox.dead_events,
        missed: inbox.missed,
        destinations: inbox.destinations,
        empty,
    }))
}

/// A payment that is not its intent's: the worker's words for it.
pub fn is_mismatch(j: &JobSummary) -> bool {
    j.kind == "payment_intent"
        && j.last_error
            .as_deref()
            .is_some_and(|e| e.contains("a person must look"))
}

/// An error without the worker's "after N attempts: " in front.
fn core(error: &str) -> &str {
    match error
        .strip_prefix("after ")
        .and_then(|r| r.split_once(" attempts: "))
    {
        Some((n, rest)) if n.bytes().all(|b| b.is_ascii_digit()) => rest,
        _ => error,
    }
}

/// The kind of an error, from the worker's and the API client's words.
pub fn class_of(error: &str) -> String {
    let error = core(error);
    let after = error.split_once(": ").map_or(error, |(_, rest)| rest);
    let status = |after: &str| {
        after
            .split(|c: char| !c.is_ascii_digit())
            .find(|n| n.len() == 3)
            .map(str::to_string)
    };
    if error.contains("panicked") {
        "the handler panicked".into()
    } else if after.starts_with("rate limited") {
        "rate limited".into()
    } else if after.starts_with("the platform answered") {
        format!(
            "server error {}",
            status(after).unwrap_or_else(|| "5xx".into())
        )
    } else if after.starts_with("no answer within") {
        "timeout".into()
    } else if after.starts_with("cannot reach") {
        "platform unreachable".into()
    } else if after.contains("access token") {
        "access token refused".into()
    } else if after.starts_with("not found") {
        "not found".into()
    } else if after.starts_with("refused") {
        format!("refused {}", status(after).unwrap_or_default())
    } else if after.starts_with("unexpected answer") {
        "unexpected answer".into()
    } else if after.contains("not the resource asked for") {
        "wrong resource".into()
    } else {
        "other".into()
    }
}

const ENDPOINTS: [&str; 9] = [
    "payment",
    "merchant_order",
    "chargeback",
    "payment_intent",
    "platform_order",
    "platform_order_cancel",
    "platform_order_refund",
    "cancel",
    "refund",
];

/// The endpoint an error names (the API client's errors start with it),
/// else the job's kind.
pub fn endpoint_of(j: &JobSummary) -> String {
    let first = j
        .last_error
        .as_deref()
        .and_then(|e| core(e).split_whitespace().next())
        .unwrap_or("");
    ENDPOINTS
        .into_iter()
        .find(|e| *e == first)
        .unwrap_or(j.kind)
        .to_string()
}

const HOUR_MS: i64 = 3_600_000;

pub fn hour_of(j: &JobSummary) -> i64 {
    let at = j
        .updated_at
        .parse::<jiff::Timestamp>()
        .map_or(0, |t| t.as_millisecond());
    at - at.rem_euclid(HOUR_MS)
}

/// Dead jobs by (cause, endpoint, hour), the biggest group first.
pub fn group(jobs: Vec<JobSummary>) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    for j in jobs {
        let class = class_of(j.last_error.as_deref().unwrap_or(""));
        let (endpoint, hour) = (endpoint_of(&j), hour_of(&j));
        match groups
            .iter_mut()
            .find(|g| g.class == class && g.endpoint == endpoint && g.hour == hour)
        {
            Some(g) => g.jobs.push(j),
            None => groups.push(Group {
                window: format!(
                    "{} and {}",
                    pointhook_common::clock::rfc3339(hour),
                    pointhook_common::clock::rfc3339(hour + HOUR_MS)
                ),
                class,
                endpoint,
                hour,
                jobs: vec![j],
            }),
        }
    }
    groups.sort_by(|a, b| b.jobs.len().cmp(&a.jobs.len()).then(b.hour.cmp(&a.hour)));
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: i64, kind: &'static str, error: &str, at: &str) -> JobSummary {
        JobSummary {
            id,
            account: "default".into(),
            key: format!("{kind}:{id}"),
            kind,
            state: "dead",
            attempts: 12,
            next_run: None,
            last_error: Some(error.into()),
            updated_at: at.into(),
        }
    }

    #[test]
    fn dead_jobs_group_by_cause_endpoint_and_hour() {
        let jobs = vec![
            job(
                1,
                "payment",
                "payment 1: the platform answered 500: boom",
                "2026-11-22T14:05:00Z",
            ),
            job(
                2,
                "payment",
                "payment 2: the platform answered 500: boom",
                "2026-11-22T14:55:00Z",
            ),
            job(
                3,
                "payment",
                "payment 3: the platform answered 500: boom",
                "2026-11-22T15:01:00Z",
            ),
            job(
                4,
                "merchant_order",
                "merchant_order 4: not found: x",
                "2026-11-22T14:10:00Z",
            ),
            job(
                5,
                "payment",
                "after 12 attempts: payment 5: no answer within the timeout",
                "2026-11-22T14:10:00Z",
            ),
        ];
        let groups = group(jobs);
        let seen: Vec<(String, String, usize)> = groups
            .iter()
            .map(|g| (g.class.clone(), g.endpoint.clone(), g.count()))
            .collect();
        assert_eq!(seen[0], ("server error 500".into(), "payment".into(), 2));
        assert_eq!(groups.len(), 4);
        assert!(seen.contains(&("not found".into(), "merchant_order".into(), 1)));
        assert!(seen.contains(&("timeout".into(), "payment".into(), 1)));
    }

    #[test]
    fn a_mismatch_is_its_own_item() {
        let m = job(
            1,
            "payment_intent",
            "payment intent x not decided, a person must look: payment 5 is of 10, the intent of 12",
            "2026-11-22T14:05:00Z",
        );
        assert!(is_mismatch(&m));
        assert!(!is_mismatch(&job(
            2,
            "payment",
            "payment 2: not found",
            "x"
        )));
    }
}
