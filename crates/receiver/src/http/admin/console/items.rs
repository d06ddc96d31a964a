//! Lists (with filters and cursor paging) and pages of deliveries, jobs,
//! events, fraud reviews and the audit. Each item's page shows what people
//! did about it.

use askama::Template;
use axum::Extension;
use axum::extract::{Path, Query, State};
use axum::response::Response;
use serde::Deserialize;

use super::super::session::Operator;
use super::item_views::ReviewItem;
use super::{Chrome, Done};
use crate::actions::{consequence, order_of};
use crate::domain::{EventState, JobKind, JobState, Kind};
use crate::http::admin::html::{HtmlError, number, render};
use crate::store::console_views::*;
use crate::store::views::{
    DeliveryDetail, DeliveryFilter, DeliverySummary, EventDetail, EventSummary, JobDetail,
    JobSummary,
};

/// A query value, empty taken as absent.
fn given(v: &Option<String>) -> Option<String> {
    v.as_ref()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The query string of the next page: the filters and the cursor.
fn next_link(pairs: &[(&str, Option<String>)], cursor: &str, name: &str) -> String {
    let mut q = form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        if let Some(v) = v {
            q.append_pair(k, v);
        }
    }
    q.append_pair(name, cursor);
    format!("?{}", q.finish())
}

pub(super) async fn audit_of(s: &super::Shared, item: String) -> Result<Vec<AuditView>, HtmlError> {
    Ok(s.store
        .audit(AuditFilter {
            item: Some(item),
            limit: 50,
            ..Default::default()
        })
        .await?)
}

#[derive(Deserialize, Default)]
pub struct DeliveryQuery {
    done: Option<i64>,
    account: Option<String>,
    kind: Option<String>,
    topic: Option<String>,
    before: Option<String>,
}

#[derive(Template)]
#[template(path = "console/deliveries.html")]
struct DeliveriesPage {
    chrome: Chrome,
    kinds: Vec<&'static str>,
    account: String,
    kind: String,
    topic: String,
    rows: Vec<DeliverySummary>,
    next: Option<String>,
}

pub async fn deliveries(
    State(s): State<super::Shared>,
    Extension(op): Extension<Operator>,
    Query(q): Query<DeliveryQuery>,
) -> Result<Response, HtmlError> {
    let before = given(&q.before).map(|b| number(&b)).transpose()?;
    let page = s
        .store
        .delivery_page(DeliveryFilter {
            account: given(&q.account),
            kind: given(&q.kind),
            topic: given(&q.topic),
            since: None,
            before,
            limit: 50,
        })
        .await?;
    let filters = [
        ("account", given(&q.account)),
        ("kind", given(&q.kind)),
        ("topic", given(&q.topic)),
    ];
    Ok(render(&DeliveriesPage {
        chrome: Chrome::new(&s, &op, "deliveries", q.done).await?,
        kinds: Kind::all().map(Kind::as_str).collect(),
        account: given(&q.account).unwrap_or_default(),
        kind: given(&q.kind).unwrap_or_default(),
        topic: given(&q.topic).unwrap_or_default(),
        rows: page.rows,
        next: page.next.map(|c| next_link(&filters, &c, "before")),
    }))
}

#[derive(Template)]
#[template(path = "console/delivery.html")]
struct DeliveryPage {
    chrome: Chrome,
    d: DeliveryDetail,
    headers: String,
    body: String,
    missed_item: Option<String>,
    acknowledged: bool,
    audit: Vec<AuditView>,
}

pub async fn delivery(
    State(s): State<super::Shared>,
    Extension(op): Extension<Operator>,
    Path(text): Path<String>,
    Query(done): Query<Done>,
) -> Result<Response, HtmlError> {
    let id = number(&text)?;
    let d = s
        .store
        .get_delivery(id)
        .await?
        .ok_or_else(|| HtmlError::not_found("delivery"))?;
    let missed_item = (d.summary.kind == Kind::Reconcile.as_str()).then(|| format!("missed:{id}"));
    let acknowledged = match &missed_item {
        Some(item) => s.store.is_acknowledged(item.clone()).await?,
        None => false,
    };
    let body = match (&d.body, &d.body_base64) {
        (Some(text), _) => text.clone(),
        (None, Some(b64)) => format!("(not UTF-8; base64) {b64}"),
        (None, None) => "(empty)".into(),
    };
    let audit = audit_of(&s, format!("missed:{id}")).await?;
    Ok(render(&DeliveryPage {
        chrome: Chrome::new(&s, &op, "deliveries", done.done).await?,
        headers: serde_json::to_string_pretty(&d.headers).unwrap_or_default(),
        body,
        d,
        missed_item,
        acknowledged,
        audit,
    }))
}

#[derive(Deserialize, Default)]
pub struct JobQuery {
    done: Option<i64>,
    state: Option<String>,
    kind: Option<String>,
    account: Option<String>,
    cursor: Option<String>,
}

#[derive(Template)]
#[template(path = "console/jobs.html")]
struct JobsPage {
    chrome: Chrome,
    states: Vec<&'static str>,
    kinds: Vec<&'static str>,
    state: &'static str,
    kind: String,
    account: String,
    rows: Vec<JobSummary>,
    next: Option<String>,
}

pub async fn jobs(
    State(s): State<super::Shared>,
    Extension(op): Extension<Operator>,
    Query(q): Query<JobQuery>,
) -> Result<Response, HtmlError> {
    let state = match given(&q.state) {
        Some(st) => JobState::parse(&st).ok_or_else(|| HtmlError::bad("no such job state"))?,
        None => JobState::Dead,
    };
    let kind = match given(&q.kind) {
        Some(k) => Some(JobKind::parse(&k).ok_or_else(|| HtmlError::bad("no such job kind"))?),
        None => None,
    };
    let page = s
        .store
        .job_page(JobFilter {
            state: Some(state),
            kind,
            account: given(&q.account),
            cursor: given(&q.cursor),
            limit: 50,
        })
        .await?;
    let filters = [
        ("state", Some(state.as_str().to_string())),
        ("kind", given(&q.kind)),
        ("account", given(&q.account)),
    ];
    Ok(render(&JobsPage {
        chrome: Chrome::new(&s, &op, "jobs", q.done).await?,
        states: JobState::all().map(JobState::as_str).collect(),
        kinds: JobKind::all().map(JobKind::as_str).collect(),
        state: state.as_str(),
        kind: given(&q.kind).unwrap_or_default(),
        account: given(&q.account).unwrap_or_default(),
        rows: page.rows,
        next: page.next.map(|c| next_link(&filters, &c, "cursor")),
    }))
}

#[derive(Template)]
#[template(path = "console/job.html")]
struct JobPage {
    chrome: Chrome,
    j: JobDetail,
    order: Option<String>,
    deaths: Vec<DeathView>,
    audit: Vec<AuditView>,
}

pub async fn job(
    State(s): State<super::Shared>,
    Extension(op): Extension<Operator>,
    Path(text): Path<String>,
    Query(done): Query<Done>,
) -> Result<Response, HtmlError> {
    let id = number(&text)?;
    let j = s
        .store
        .get_job(id)
        .await?
        .ok_or_else(|| HtmlError::not_found("job"))?;
    Ok(render(&JobPage {
        chrome: Chrome::new(&s, &op, "jobs", done.done).await?,
        order: order_of(&j.summary.key),
        deaths: s.store.job_deaths(id).await?,
        audit: audit_of(&s, format!("job:{id}")).await?,
        j,
    }))
}

#[derive(Deserialize, Default)]
pub struct EventQuery {
    done: Option<i64>,
    state: Option<String>,
    /// With a state: only what is in it at this destination.
    destination: Option<String>,
    r#type: Option<String>,
    account: Option<String>,
    cursor: Option<String>,
}

#[derive(Template)]
#[template(path = "console/events.html")]
struct EventsPage {
    chrome: Chrome,
    states: Vec<&'static str>,
    state: String,
    destinations: Vec<String>,
    destination: String,
    event_type: String,
    account: String,
    rows: Vec<EventSummary>,
    next: Option<String>,
}

pub async fn events(
    State(s): State<super::Shared>,
    Extension(op): Extension<Operator>,
    Query(q): Query<EventQuery>,
) -> Result<Response, HtmlError> {
    let state = match given(&q.state) {
        Some(st) => Some(EventState::parse(&st).ok_or_else(|| HtmlError::bad("no such state"))?),
        None => None,
    };
    let page = s
        .store
        .event_page(EventFilter {
            state,
            destination: given(&q.destination),
            event_type: given(&q.r#type),
            account: given(&q.account),
            cursor: given(&q.cursor),
            limit: 50,
        })
        .await?;
    let filters = [
        ("state", state.map(|s| s.as_str().to_string())),
        ("destination", given(&q.destination)),
        ("type", given(&q.r#type)),
        ("account", given(&q.account)),
    ];
    Ok(render(&EventsPage {
        chrome: Chrome::new(&s, &op, "events", q.done).await?,
        states: EventState::all().map(EventState::as_str).collect(),
        state: state.map(|s| s.as_str().to_string()).unwrap_or_default(),
        destinations: s
            .store
            .destinations(s.now())
            .await?
            .into_iter()
            .map(|d| d.name)
            .collect(),
        destination: given(&q.destination).unwrap_or_default(),
        event_type: given(&q.r#type).unwrap_or_default(),
        account: given(&q.account).unwrap_or_default(),
        rows: page.rows,
        next: page.next.map(|c| next_link(&filters, &c, "cursor")),
    }))
}

#[derive(Template)]
#[template(path = "console/event.html")]
struct EventPage {
    chrome: Chrome,
    e: EventDetail,
    body: String,
    order: Option<String>,
    /// Each destination's attempts, by name.
    at: Vec<AttemptsAt>,
    /// Whether a destination gave it up or failed it ("Deliver again").
    unfinished: bool,
    audit: Vec<AuditView>,
    delivers: bool,
}

/// One destination's part of an event page.
struct AttemptsAt {
    name: String,
    /// "delivered to shop", "gave up at erp" …
    words: String,
    next: Option<String>,
    attempts: Vec<AttemptView>,
}

/// The attempts grouped by destination, each headed by its state there
/// (a destination whose queue row is gone keeps its attempts).
fn attempts_at(e: &EventDetail, attempts: Vec<AttemptView>) -> Vec<AttemptsAt> {
    let mut at: Vec<AttemptsAt> = e
        .summary
        .destinations
        .iter()
        .map(|d| AttemptsAt {
            name: d.destination.clone(),
            words: d.words(),
            next: e
                .destinations
                .iter()
                .find(|q| q.destination == d.destination)
                .and_then(|q| q.next_attempt_at.clone()),
            attempts: Vec::new(),
        })
        .collect();
    for a in attempts {
        match at.iter_mut().find(|g| g.name == a.destination) {
            Some(g) => g.attempts.push(a),
            None => at.push(AttemptsAt {
                name: a.destination.clone(),
                words: format!("at {}", a.destination),
                next: None,
                attempts: vec![a],
            }),
        }
    }
    at
}

pub async fn event(
    State(s): State<super::Shared>,
    Extension(op): Extension<Operator>,
    Path(id): Path<String>,
    Query(done): Query<Done>,
) -> Result<Response, HtmlError> {
    let e = s
        .store
        .get_event(id.clone())
        .await?
        .ok_or_else(|| HtmlError::not_found("event"))?;
    let attempts = s.store.event_attempts(id.clone()).await?;
    Ok(render(&EventPage {
        chrome: Chrome::new(&s, &op, "events", done.done).await?,
        body: serde_json::to_string_pretty(&e.body).unwrap_or_default(),
        order: order_of(&e.summary.subject),
        at: attempts_at(&e, attempts),
        unfinished: e.summary.destinations.iter().any(|d| {
            d.state == EventState::Dead.as_str()
                || (d.state == EventState::Pending.as_str() && d.attempts > 0)
        }),
        audit: audit_of(&s, format!("event:{id}")).await?,
        delivers: s.store.delivers_events(),
        e,
    }))
}

#[derive(Template)]
#[template(path = "console/review.html")]
struct ReviewPage {
    chrome: Chrome,
    r: ReviewItem,
    audit: Vec<AuditView>,
}

pub async fn review(
    State(s): State<super::Shared>,
    Extension(op): Extension<Operator>,
    Path(text): Path<String>,
    Query(done): Query<Done>,
) -> Result<Response, HtmlError> {
    let id = number(&text)?;
    let d = s
        .store
        .review(id)
        .await?
        .ok_or_else(|| HtmlError::not_found("fraud review"))?;
    Ok(render(&ReviewPage {
        chrome: Chrome::new(&s, &op, "inbox", done.done).await?,
        audit: audit_of(&s, format!("fraud_review:{id}")).await?,
        r: ReviewItem {
            c: consequence(&d),
            d,
        },
    }))
}

#[derive(Deserialize, Default)]
pub struct AuditQuery {
    actor: Option<String>,
    item: Option<String>,
    /// `hide`: leave out the messages sent to alert channels.
    alerts: Option<String>,
    before: Option<String>,
}

#[derive(Template)]
#[template(path = "console/audit.html")]
struct AuditPage {
    chrome: Chrome,
    actor: String,
    item: String,
    hide_alerts: bool,
    rows: Vec<AuditView>,
    next: Option<String>,
}

pub async fn audit(
    State(s): State<super::Shared>,
    Extension(op): Extension<Operator>,
    Query(q): Query<AuditQuery>,
) -> Result<Response, HtmlError> {
    let before = given(&q.before).map(|b| number(&b)).transpose()?;
    let hide_alerts = given(&q.alerts).as_deref() == Some("hide");
    let rows = s
        .store
        .audit(AuditFilter {
            item: given(&q.item),
            actor: given(&q.actor),
            without_alerts: hide_alerts,
            before,
            limit: 50,
        })
        .await?;
    let filters = [
        ("actor", given(&q.actor)),
        ("item", given(&q.item)),
        ("alerts", hide_alerts.then(|| "hide".to_string())),
    ];
    let next = (rows.len() == 50)
        .then(|| {
            rows.last()
                .map(|a| next_link(&filters, &a.id.to_string(), "before"))
        })
        .flatten();
    Ok(render(&AuditPage {
        chrome: Chrome::new(&s, &op, "audit", None).await?,
        actor: given(&q.actor).unwrap_or_default(),
        item: given(&q.item).unwrap_or_default(),
        hide_alerts,
        rows,
        next,
    }))
}
