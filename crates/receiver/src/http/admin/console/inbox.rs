//! `/`: what needs a person, newest first, each item with its evidence and
//! its decision on the spot. Dead jobs come grouped by cause: the class of
//! their failure as the job keeps it (`domain::Failure`, never its words),
//! the endpoint it names and the hour the job died, so a platform
//! outage that killed 500 jobs is one line with one "retry all".
//! Destinations disabled or failing come last, with enable and recover.

use askama::Template;
use axum::Extension;
use axum::extract::{Query, State};
use axum::response::Response;

use super::super::session::Operator;
use super::item_views::{HoldItem, ReviewItem};
use super::{Chrome, Done};
use crate::actions::consequence;
use crate::actions::items;
pub use crate::actions::items::{Group, group, is_mismatch};
use crate::domain::{Item, ItemKind};
use crate::http::admin::html::{HtmlError, render};
use crate::store::DestinationView;
use crate::store::views::{EventSummary, JobSummary};

/// Items of each kind the inbox shows at most.
const SHOWN: usize = 100;

/// Items of one kind under its heading, rendered by one partial
/// (`console/items.html`) whatever the kind.
pub struct Section {
    pub kind: ItemKind,
    pub heading: &'static str,
    pub items: Vec<Item>,
    /// A form acting on every item at once (path, words), when the kind
    /// has one and more than one item stands.
    pub all: Option<(&'static str, String)>,
}

impl Section {
    fn of(kind: ItemKind, items: Vec<Item>) -> Option<Section> {
        let all = (kind == ItemKind::Missed && items.len() > 1).then(|| {
            (
                "/acknowledge/missed",
                format!("Acknowledge all {}", items.len()),
            )
        });
        (!items.is_empty()).then(|| Section {
            kind,
            heading: kind.spec().heading,
            items,
            all,
        })
    }
}

#[derive(Template)]
#[template(path = "console/inbox.html")]
struct InboxPage {
    chrome: Chrome,
    reviews: Vec<ReviewItem>,
    holds: Vec<HoldItem>,
    /// The kinds that are only acknowledged, each a section of items.
    acknowledged: Vec<Section>,
    mismatches: Vec<JobSummary>,
    groups: Vec<Group>,
    dead_events: Vec<EventSummary>,
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
        .map(HoldItem::of)
        .collect();
    let flagged = |kind, list: &[crate::store::console_views::Flagged], what| {
        list.iter()
            .filter_map(|f| items::flagged(kind, f, what))
            .collect()
    };
    let acknowledged: Vec<Section> = [
        Section::of(
            ItemKind::AfterRelease,
            flagged(
                ItemKind::AfterRelease,
                &inbox.after_release,
                "was released before a fraud alert: the goods left; nothing was undone automatically.",
            ),
        ),
        Section::of(
            ItemKind::AtRisk,
            flagged(
                ItemKind::AtRisk,
                &inbox.at_risk,
                "is at risk: released, then a chargeback.",
            ),
        ),
        Section::of(
            ItemKind::Missed,
            inbox.missed.iter().map(items::missed).collect(),
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    let empty = reviews.is_empty()
        && holds.is_empty()
        && acknowledged.is_empty()
        && mismatches.is_empty()
        && groups.is_empty()
        && inbox.dead_events.is_empty()
        && inbox.destinations.is_empty();
    Ok(render(&InboxPage {
        chrome,
        reviews,
        holds,
        acknowledged,
        mismatches,
        groups,
        dead_events: inbox.dead_events,
        destinations: inbox.destinations,
        empty,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Failure, FailureClass};

    fn job(id: i64, kind: &'static str, failure: Option<Failure>, at: &str) -> JobSummary {
        JobSummary {
            id,
            account: "default".into(),
            key: format!("{kind}:{id}"),
            kind,
            state: "dead",
            attempts: 12,
            next_run: None,
            // The words say nothing the grouping could read.
            last_error: Some("whatever it said".into()),
            failure,
            updated_at: at.into(),
        }
    }

    fn failed(class: FailureClass, status: Option<u16>, endpoint: &str) -> Option<Failure> {
        Some(Failure {
            class,
            status,
            endpoint: Some(endpoint.into()),
        })
    }

    #[test]
    fn dead_jobs_group_by_cause_endpoint_and_hour() {
        let server = || failed(FailureClass::ServerError, Some(500), "payment");
        let jobs = vec![
            job(1, "payment", server(), "2026-11-22T14:05:00Z"),
            job(2, "payment", server(), "2026-11-22T14:55:00Z"),
            job(3, "payment", server(), "2026-11-22T15:01:00Z"),
            job(
                4,
                "payment",
                failed(FailureClass::NotFound, None, "merchant_order"),
                "2026-11-22T14:10:00Z",
            ),
            job(
                5,
                "payment",
                failed(FailureClass::Timeout, None, "payment"),
                "2026-11-22T14:10:00Z",
            ),
            job(6, "chargeback", None, "2026-11-22T14:10:00Z"),
        ];
        let groups = group(jobs);
        let seen: Vec<(String, String, usize)> = groups
            .iter()
            .map(|g| (g.class.clone(), g.endpoint.clone(), g.count()))
            .collect();
        assert_eq!(seen[0], ("server error 500".into(), "payment".into(), 2));
        assert_eq!(groups.len(), 5);
        assert!(seen.contains(&("not found".into(), "merchant_order".into(), 1)));
        assert!(seen.contains(&("timeout".into(), "payment".into(), 1)));
        assert!(seen.contains(&("other".into(), "chargeback".into(), 1)));
    }

    #[test]
    fn a_mismatch_is_its_own_item() {
        let needs_person = Some(Failure::of(FailureClass::NeedsPerson));
        assert!(is_mismatch(&job(1, "payment_intent", needs_person, "x")));
        let not_found = failed(FailureClass::NotFound, None, "payment");
        assert!(!is_mismatch(&job(2, "payment", not_found, "x")));
        assert!(!is_mismatch(&job(3, "payment_intent", None, "x")));
    }
}
