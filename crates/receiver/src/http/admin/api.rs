//! `/api/*` and `/metrics`: read and replay deliveries, jobs, merchant
//! orders, events, fraud reviews and holds of every kind; the inbox, an order's timeline, the
//! search and the audit. One function per route. Every action goes
//! through `actions`, recorded in the audit as `api`.

use axum::extract::{Path, RawQuery, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use http::{HeaderValue, StatusCode, header};
use serde_json::json;

use serde::Deserialize;

use super::Shared;
use super::error::{AdminError, Result};
use crate::actions::Done;
use crate::domain::Review;
use crate::domain::{EventState, JobState};
use crate::operators::Actor;
use crate::store::console_views::AuditFilter;
use crate::store::{self, Again, DEFAULT_LIMIT, DeliveryFilter, MAX_LIMIT};
use pointhook_common::query::Query;

pub(super) fn routes() -> Router<Shared> {
    Router::new()
        .route("/api/deliveries", get(deliveries))
        .route("/api/deliveries/{id}", get(delivery))
        .route("/api/jobs", get(jobs))
        .route("/api/jobs/retry-dead", post(retry_dead))
        .route("/api/jobs/{id}", get(job))
        .route("/api/jobs/{id}/retry", post(retry_job))
        .route("/api/orders/{id}", get(order))
        .route("/api/events", get(events))
        .route("/api/events/{id}", get(event))
        .route("/api/events/{id}/redeliver", post(redeliver))
        .route("/api/events/{id}/redeliver-all", post(redeliver_all))
        .route("/api/fraud-reviews", get(reviews))
        .route("/api/fraud-reviews/{id}/confirm", post(confirm))
        .route("/api/fraud-reviews/{id}/dismiss", post(dismiss))
        .route("/api/fraud-reviews/{id}", get(review))
        .route("/api/holds", get(holds))
        .route("/api/holds/{id}", get(hold))
        .route("/api/holds/{id}/{action}", post(answer_hold))
        .route("/api/inbox", get(inbox))
        .route("/api/audit", get(audit))
        .route("/api/search", get(search))
        .route("/api/timeline/{kind}/{id}", get(timeline))
        .route("/api/jobs/retry", post(retry_jobs))
        .route("/api/acknowledge", post(acknowledge))
        .merge(super::items_api::routes())
        .route("/metrics", get(metrics))
}

fn query(raw: Option<String>) -> Query {
    Query::parse(raw.as_deref().unwrap_or(""))
}

fn id(text: &str) -> Result<i64> {
    text.parse()
        .map_err(|_| AdminError::BadRequest(format!("{text:?} is not a number")))
}

fn limit(q: &Query) -> Result<usize> {
    match q.get("limit") {
        None => Ok(DEFAULT_LIMIT),
        Some(l) => l
            .parse()
            .ok()
            .filter(|n| (1..=MAX_LIMIT).contains(n))
            .ok_or_else(|| AdminError::BadRequest(format!("limit must be 1 to {MAX_LIMIT}"))),
    }
}

/// RFC 3339, or unix seconds (that fit: no wrapping).
fn since(text: &str) -> Result<i64> {
    let bad = || {
        AdminError::BadRequest(format!(
            "since must be RFC 3339 or unix seconds, not {text:?}"
        ))
    };
    if let Ok(secs) = text.parse::<i64>() {
        return secs.checked_mul(1000).filter(|ms| *ms >= 0).ok_or_else(bad);
    }
    humantime::parse_rfc3339_weak(text)
        .map(store::unix_ms)
        .map_err(|_| bad())
}

fn found<T>(value: Option<T>, what: &str) -> Result<Json<T>> {
    value
        .map(Json)
        .ok_or_else(|| AdminError::NotFound(format!("no such {what}")))
}

async fn deliveries(State(s): State<Shared>, RawQuery(raw): RawQuery) -> Result<Response> {
    let q = query(raw);
    let filter = DeliveryFilter {
        account: q.get("account").map(str::to_string),
        kind: q.get("kind").map(str::to_string),
        topic: q.get("topic").map(str::to_string),
        since: q.get("since").map(since).transpose()?,
        before: q.get("before").map(id).transpose()?,
        limit: limit(&q)?,
    };
    let rows = s.store.list_deliveries(filter).await?;
    Ok(Json(rows).into_response())
}

async fn delivery(State(s): State<Shared>, Path(text): Path<String>) -> Result<Response> {
    let n = id(&text)?;
    let d = s.store.get_delivery(n).await?;
    Ok(found(d, "delivery")?.into_response())
}

async fn jobs(State(s): State<Shared>, RawQuery(raw): RawQuery) -> Result<Response> {
    let q = query(raw);
    let state = q
        .get("state")
        .map(|st| {
            JobState::parse(st).ok_or_else(|| {
                AdminError::BadRequest(format!(
                    "state must be pending, running, done or dead, not {st:?}"
                ))
            })
        })
        .transpose()?;
    let limit = limit(&q)?;
    let rows = s.store.list_jobs(state, limit).await?;
    Ok(Json(rows).into_response())
}

async fn job(State(s): State<Shared>, Path(text): Path<String>) -> Result<Response> {
    let n = id(&text)?;
    let j = s.store.get_job(n).await?;
    Ok(found(j, "job")?.into_response())
}

async fn retry_dead(State(s): State<Shared>) -> Result<Response> {
    let acted = s.actions().retry_dead_jobs(&Actor::api()).await?;
    let n = done(acted.done, "not_dead")?;
    Ok(Json(json!({"retried": n, "audit_id": acted.audit})).into_response())
}

async fn retry_job(State(s): State<Shared>, Path(text): Path<String>) -> Result<Response> {
    let n = id(&text)?;
    let acted = s.actions().retry_job(&Actor::api(), n).await?;
    done(acted.done, "not_dead")?;
    Ok(Json(json!({"retried": n, "audit_id": acted.audit})).into_response())
}

/// What was done, or a 409 naming why not.
fn done<T>(d: Done<T>, code: &'static str) -> Result<T> {
    match d {
        Done::Done(t) => Ok(t),
        Done::Refused(message) if message.starts_with("no ") => Err(AdminError::NotFound(message)),
        Done::Refused(message) => Err(AdminError::Conflict { code, message }),
        Done::Unknown(message) => Err(AdminError::Conflict {
            code: "outcome_unknown",
            message,
        }),
    }
}

#[derive(Deserialize)]
struct RetryJobs {
    ids: Vec<i64>,
    /// What the group is, for the audit.
    #[serde(default)]
    reason: Option<String>,
}

/// Several dead jobs at once (a group of the inbox): `{"ids": [...]}`.
async fn retry_jobs(State(s): State<Shared>, Json(r): Json<RetryJobs>) -> Result<Response> {
    if r.ids.is_empty() || r.ids.len() > 10_000 {
        return Err(AdminError::BadRequest("ids: 1 to 10000 job ids".into()));
    }
    let what = r.reason.unwrap_or_else(|| "given by the admin API".into());
    let acted = s
        .actions()
        .retry_jobs(
            &Actor::api(),
            r.ids,
            "api",
            &pointhook_common::text::printable(&what),
        )
        .await?;
    let retried = done(acted.done, "not_dead")?;
    Ok(Json(json!({"retried": retried, "audit_id": acted.audit})).into_response())
}

async fn order(
    State(s): State<Shared>,
    Path(order): Path<String>,
    RawQuery(raw): RawQuery,
) -> Result<Response> {
    let account = query(raw)
        .get("account")
        .map(str::to_string)
        .or_else(|| s.default_account.clone())
        .ok_or_else(|| AdminError::BadRequest("several accounts: give ?account=NAME".into()))?;
    let what = store::views::order_kind(&order).replace('_', " ");
    let o = s.store.get_order(account, order).await?;
    Ok(found(o, &what)?.into_response())
}

async fn events(State(s): State<Shared>, RawQuery(raw): RawQuery) -> Result<Response> {
    let q = query(raw);
    let kind = q.get("type").map(str::to_string);
    let state = q
        .get("state")
        .map(|st| {
            EventState::parse(st).ok_or_else(|| {
                AdminError::BadRequest(format!(
                    "state must be pending, paused, delivered, dead or stored, not {st:?}"
                ))
            })
        })
        .transpose()?;
    let limit = limit(&q)?;
    // With a state, an entry per destination in it; `destination` keeps
    // one destination's.
    if let Some(destination) = q.get("destination") {
        let state = state.ok_or_else(|| {
            AdminError::BadRequest("destination goes with a state (?state=dead)".into())
        })?;
        let page = s
            .store
            .event_page(store::console_views::EventFilter {
                state: Some(state),
                destination: Some(destination.to_string()),
                event_type: kind,
                limit,
                ..Default::default()
            })
            .await?;
        return Ok(Json(page.rows).into_response());
    }
    let rows = s.store.list_events(kind, state, limit).await?;
    Ok(Json(rows).into_response())
}

async fn event(State(s): State<Shared>, Path(event): Path<String>) -> Result<Response> {
    let e = s.store.get_event(event).await?;
    Ok(found(e, "event")?.into_response())
}

/// To the destinations that gave the event up or failed it; 409
/// `nothing_failed` when every one took it.
async fn redeliver(State(s): State<Shared>, Path(event): Path<String>) -> Result<Response> {
    again(s, event, Again::Unfinished).await
}

/// To every destination that takes the event, those that took it too.
async fn redeliver_all(State(s): State<Shared>, Path(event): Path<String>) -> Result<Response> {
    again(s, event, Again::Everywhere).await
}

async fn again(s: Shared, event: String, again: Again) -> Result<Response> {
    let acted = s.actions().redeliver(&Actor::api(), &event, again).await?;
    let code = match &acted.done {
        Done::Refused(m) if m == crate::actions::NOTHING_FAILED => "nothing_failed",
        _ => "no_fulfillment_url",
    };
    let to = done(acted.done, code)?;
    Ok(Json(json!({"redelivering": event, "to": to, "audit_id": acted.audit})).into_response())
}

async fn reviews(State(s): State<Shared>, RawQuery(raw): RawQuery) -> Result<Response> {
    let q = query(raw);
    let state = match q.get("state").unwrap_or("held") {
        "all" => None,
        st => Some(Review::parse(st).ok_or_else(|| {
            AdminError::BadRequest(format!(
                "state must be held, confirmed, dismissed or all, not {st:?}"
            ))
        })?),
    };
    let rows = s.store.reviews(state, None, limit(&q)?).await?;
    Ok(Json(rows).into_response())
}

async fn confirm(State(s): State<Shared>, Path(text): Path<String>) -> Result<Response> {
    let n = id(&text)?;
    let acted = s.actions().confirm_review(&Actor::api(), n).await?;
    Ok(Json(done(acted.done, "already_decided")?).into_response())
}

async fn dismiss(State(s): State<Shared>, Path(text): Path<String>) -> Result<Response> {
    let n = id(&text)?;
    let acted = s.actions().dismiss_review(&Actor::api(), n).await?;
    Ok(Json(done(acted.done, "already_decided")?).into_response())
}

/// A review with its evidence and what confirming it would do.
async fn review(State(s): State<Shared>, Path(text): Path<String>) -> Result<Response> {
    let n = id(&text)?;
    let r = s
        .store
        .review(n)
        .await?
        .ok_or_else(|| AdminError::NotFound(format!("no fraud review {n}")))?;
    let c = crate::actions::consequence(&r);
    Ok(Json(json!({
        "review": r,
        "confirming": {"does": c.words, "moves_money": c.moves_money, "undo": c.undo, "amount": c.amount},
    }))
    .into_response())
}

/// Holds, newest first: `?state=held` (the default), a state or `all`;
/// `?kind=` one kind.
async fn holds(State(s): State<Shared>, RawQuery(raw): RawQuery) -> Result<Response> {
    let q = query(raw);
    let state = match q.get("state").unwrap_or("held") {
        "all" => None,
        st => Some(crate::domain::HoldState::parse(st).ok_or_else(|| {
            AdminError::BadRequest(format!(
                "state must be held, approved, rejected, expired or all, not {st:?}"
            ))
        })?),
    };
    let kind = q.get("kind").map(str::to_string);
    let rows = s.store.holds(state, kind, None, limit(&q)?).await?;
    Ok(Json(rows).into_response())
}

/// A hold with its evidence and what approving and rejecting do.
async fn hold(State(s): State<Shared>, Path(text): Path<String>) -> Result<Response> {
    use crate::domain::HoldAnswer::{Approve, Reject};
    let n = id(&text)?;
    let h = s
        .store
        .hold(n)
        .await?
        .ok_or_else(|| AdminError::NotFound(format!("no hold {n}")))?;
    let acts = s.actions();
    let approving = acts.hold_words(&h, Approve).await?;
    let rejecting = acts.hold_words(&h, Reject).await?;
    Ok(Json(json!({
        "hold": h,
        "evidence": crate::rules::holds::evidence(&h),
        "approving": approving,
        "rejecting": rejecting,
    }))
    .into_response())
}

/// `approve` or `reject` a held hold.
async fn answer_hold(
    State(s): State<Shared>,
    Path((text, action)): Path<(String, String)>,
) -> Result<Response> {
    let n = id(&text)?;
    let answer = crate::domain::HoldAnswer::parse(&action).ok_or_else(|| {
        AdminError::NotFound(format!(
            "a hold is answered with approve or reject, not {action:?}"
        ))
    })?;
    let acted = s.actions().answer_hold(&Actor::api(), n, answer).await?;
    Ok(Json(done(acted.done, "already_decided")?).into_response())
}

async fn inbox(State(s): State<Shared>, RawQuery(raw): RawQuery) -> Result<Response> {
    let inbox = s.store.inbox(limit(&query(raw))?, s.now()).await?;
    Ok(Json(inbox).into_response())
}

async fn audit(State(s): State<Shared>, RawQuery(raw): RawQuery) -> Result<Response> {
    let q = query(raw);
    let rows = s
        .store
        .audit(AuditFilter {
            item: q.get("item").map(str::to_string),
            actor: q.get("actor").map(str::to_string),
            without_alerts: q.get("alerts") == Some("hide"),
            before: q.get("before").map(id).transpose()?,
            limit: limit(&q)?,
        })
        .await?;
    Ok(Json(rows).into_response())
}

async fn search(State(s): State<Shared>, RawQuery(raw): RawQuery) -> Result<Response> {
    let q = query(raw).get("q").unwrap_or("").to_string();
    let found = s.store.search(s.accounts.clone(), q).await?;
    Ok(Json(found).into_response())
}

async fn timeline(
    State(s): State<Shared>,
    Path((kind, order)): Path<(String, String)>,
    RawQuery(raw): RawQuery,
) -> Result<Response> {
    let kind = [
        "merchant_order",
        "platform_order",
        "payment_intent",
        "payment",
    ]
    .into_iter()
    .find(|k| *k == kind)
    .ok_or_else(|| {
        AdminError::BadRequest(
            "kind is merchant_order, platform_order, payment_intent or payment".into(),
        )
    })?;
    let account = query(raw)
        .get("account")
        .map(str::to_string)
        .or_else(|| s.default_account.clone())
        .ok_or_else(|| AdminError::BadRequest("several accounts: give ?account=NAME".into()))?;
    let t = s.store.timeline(account, kind, order).await?;
    Ok(found(t, "order")?.into_response())
}

#[derive(Deserialize)]
struct Acknowledge {
    item: String,
}

/// `{"item": "missed:7" | "at_risk:ACCOUNT:ORDER" | "after_release:ID"}`.
async fn acknowledge(State(s): State<Shared>, Json(a): Json<Acknowledge>) -> Result<Response> {
    let acknowledged = crate::domain::ItemKey::parse(&a.item)
        .is_ok_and(|k| k.kind().offers(crate::domain::ItemAction::Acknowledge));
    if !acknowledged {
        return Err(AdminError::BadRequest(
            "item is missed:ID, at_risk:ACCOUNT:ORDER or after_release:ID".into(),
        ));
    }
    let detail = format!("acknowledge {}", pointhook_common::text::printable(&a.item));
    let acted = s
        .actions()
        .acknowledge(&Actor::api(), &a.item, None, None, detail)
        .await?;
    done(acted.done, "already_acknowledged")?;
    Ok(Json(json!({"acknowledged": a.item, "audit_id": acted.audit})).into_response())
}

async fn metrics(State(s): State<Shared>) -> Result<Response> {
    let text = s.metrics.render(&s.store, s.now()).await?;
    let mut res = (StatusCode::OK, text).into_response();
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    Ok(res)
}
