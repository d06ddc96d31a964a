//! `/api/destinations`: each destination's state, backlog and oldest
//! event; enable, disable, and recover since a time.
//!
//! - `GET  /api/destinations`, `GET /api/destinations/{name}`
//! - `POST /api/destinations/{name}/enable`
//! - `POST /api/destinations/{name}/disable` (`{"reason": "…"}`, optional)
//! - `POST /api/destinations/{name}/recover` with `{"since": RFC 3339}`,
//!   or without it: since the failure's start (`recover_since`), kept
//!   after the destination is enabled

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use super::Shared;
use super::error::{AdminError, Result};
use crate::actions::Done;
use crate::operators::Actor;

pub(super) fn routes() -> Router<Shared> {
    Router::new()
        .route("/api/destinations", get(list))
        .route("/api/destinations/{name}", get(show))
        .route("/api/destinations/{name}/enable", post(enable))
        .route("/api/destinations/{name}/disable", post(disable))
        .route("/api/destinations/{name}/recover", post(recover))
}

async fn list(State(s): State<Shared>) -> Result<Response> {
    let destinations = s.store.destinations(s.now()).await?;
    Ok(axum::Json(json!({ "destinations": destinations })).into_response())
}

async fn show(State(s): State<Shared>, Path(name): Path<String>) -> Result<Response> {
    match s.store.destination(&name, s.now()).await? {
        Some(d) => Ok(axum::Json(d).into_response()),
        None => Err(unknown(&name)),
    }
}

async fn enable(State(s): State<Shared>, Path(name): Path<String>) -> Result<Response> {
    known(&s, &name).await?;
    let acted = s.actions().enable_destination(&Actor::api(), &name).await?;
    refused(acted.done, "not_enabled")?;
    tracing::info!(destination = %name, by = "api", "destination enabled");
    Ok(
        axum::Json(json!({"destination": name, "state": "enabled", "audit_id": acted.audit}))
            .into_response(),
    )
}

async fn disable(
    State(s): State<Shared>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Response> {
    let given = field(&body, "reason")?;
    let reason = given.unwrap_or_else(|| "disabled by a person (admin API)".into());
    known(&s, &name).await?;
    let acted = s
        .actions()
        .disable_destination(&Actor::api(), &name, &reason)
        .await?;
    refused(acted.done, "not_disabled")?;
    tracing::info!(destination = %name, by = "api", "destination disabled");
    Ok(axum::Json(json!({"destination": name, "state": "disabled"})).into_response())
}

async fn recover(
    State(s): State<Shared>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Response> {
    let since = field(&body, "since")?
        .map(|text| {
            humantime::parse_rfc3339_weak(&text)
                .map(crate::store::unix_ms)
                .map_err(|_| {
                    AdminError::BadRequest(format!("since must be RFC 3339, not {text:?}"))
                })
        })
        .transpose()?;
    known(&s, &name).await?;
    let acted = s
        .actions()
        .recover_destination(&Actor::api(), &name, since)
        .await?;
    match acted.done {
        Done::Refused(message) | Done::Unknown(message) => Err(AdminError::Conflict {
            code: "destination_disabled",
            message,
        }),
        Done::Done((from, n)) => {
            tracing::info!(destination = %name, by = "api", since = ?from, queued = n, "destination recovering");
            Ok(
                axum::Json(json!({"destination": name, "since": from, "queued": n}))
                    .into_response(),
            )
        }
    }
}

/// 404 for a name no destination has.
async fn known(s: &Shared, name: &str) -> Result<()> {
    match s.store.destination(name, s.now()).await? {
        Some(_) => Ok(()),
        None => Err(unknown(name)),
    }
}

/// What was done, or a 409 naming why not.
fn refused<T>(d: Done<T>, code: &'static str) -> Result<T> {
    match d {
        Done::Done(t) => Ok(t),
        Done::Refused(message) | Done::Unknown(message) => {
            Err(AdminError::Conflict { code, message })
        }
    }
}

fn unknown(name: &str) -> AdminError {
    AdminError::NotFound(format!(
        "no destination {:?}",
        pointhook_common::text::printable(name)
    ))
}

/// A text field of a JSON object body; an empty body has none.
fn field(body: &[u8], name: &str) -> Result<Option<String>> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let value: Value = serde_json::from_slice(body)
        .map_err(|_| AdminError::BadRequest("the body must be a JSON object".into()))?;
    match value.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(AdminError::BadRequest(format!("{name} must be a string"))),
    }
}
