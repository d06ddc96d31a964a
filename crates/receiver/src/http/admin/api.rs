//! `/api/*` and `/metrics`: read and replay deliveries, jobs, merchant
//! orders, events and fraud reviews. One function per route.

use axum::extract::{Path, RawQuery, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use http::{HeaderValue, StatusCode, header};
use serde_json::json;

use super::Shared;
use super::error::{AdminError, Result};
use crate::domain::Review;
use crate::domain::{EventState, JobState};
use crate::http::classify::Query;
use crate::store::{self, Answer, DEFAULT_LIMIT, DeliveryFilter, MAX_LIMIT};

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
        .route("/api/fraud-reviews", get(reviews))
        .route("/api/fraud-reviews/{id}/confirm", post(confirm))
        .route("/api/fraud-reviews/{id}/dismiss", post(dismiss))
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
    let now = s.now();
    let n = s.store.retry_dead_jobs(now).await?;
    Ok(Json(json!({"retried": n})).into_response())
}

async fn retry_job(State(s): State<Shared>, Path(text): Path<String>) -> Result<Response> {
    let n = id(&text)?;
    let now = s.now();
    if !s.store.retry_job(n, now).await? {
        return Err(AdminError::Conflict {
            code: "not_dead",
            message: format!("job {n} does not exist or is not dead"),
        });
    }
    s.store.wake_worker();
    Ok(Json(json!({"retried": n})).into_response())
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
    let o = s.store.get_order(account, order).await?;
    Ok(found(o, "merchant order")?.into_response())
}

async fn events(State(s): State<Shared>, RawQuery(raw): RawQuery) -> Result<Response> {
    let q = query(raw);
    let kind = q.get("type").map(str::to_string);
    let state = q
        .get("state")
        .map(|st| {
            EventState::parse(st).ok_or_else(|| {
                AdminError::BadRequest(format!(
                    "state must be pending, delivered, dead or stored, not {st:?}"
                ))
            })
        })
        .transpose()?;
    let limit = limit(&q)?;
    let rows = s.store.list_events(kind, state, limit).await?;
    Ok(Json(rows).into_response())
}

async fn event(State(s): State<Shared>, Path(event): Path<String>) -> Result<Response> {
    let e = s.store.get_event(event).await?;
    Ok(found(e, "event")?.into_response())
}

async fn redeliver(State(s): State<Shared>, Path(event): Path<String>) -> Result<Response> {
    if !s.delivers_events {
        return Err(AdminError::Conflict {
            code: "no_fulfillment_url",
            message:
                "events are only stored: set [fulfillment] url or [[destinations]] to deliver them"
                    .into(),
        });
    }
    let now = s.now();
    if !s.store.redeliver_event(event.clone(), now).await? {
        return Err(AdminError::NotFound(format!("no event {event}")));
    }
    Ok(Json(json!({"redelivering": event})).into_response())
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
    let rows = s.store.reviews(state, limit(&q)?).await?;
    Ok(Json(rows).into_response())
}

async fn confirm(State(s): State<Shared>, Path(text): Path<String>) -> Result<Response> {
    let n = id(&text)?;
    let answer = s.store.confirm_review(n, s.now()).await?;
    review_answer(n, answer)
}

async fn dismiss(State(s): State<Shared>, Path(text): Path<String>) -> Result<Response> {
    let n = id(&text)?;
    let answer = s.store.dismiss_review(n, s.now()).await?;
    review_answer(n, answer)
}

fn review_answer(n: i64, answer: Answer) -> Result<Response> {
    match answer {
        Answer::Done(review) => Ok(Json(review).into_response()),
        Answer::NotFound => Err(AdminError::NotFound(format!("no fraud review {n}"))),
        Answer::AlreadyDecided(state) => Err(AdminError::Conflict {
            code: "already_decided",
            message: format!("fraud review {n} is {state} already"),
        }),
    }
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
