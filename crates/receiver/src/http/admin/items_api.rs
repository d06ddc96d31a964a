//! `/api/items`: the inbox as typed items (`GET`), and one action on one
//! item by its key (`POST /api/items/act`), through `Actions::act` as the
//! console and the CLI act; recorded in the audit as `api`.

use axum::extract::{RawQuery, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;

use super::Shared;
use super::error::{AdminError, Result};
use crate::actions::Done;
use crate::actions::items::ActError;
use crate::domain::{ItemAction, ItemKey, ItemKind};
use crate::operators::Actor;
use crate::store::MAX_LIMIT;
use pointhook_common::query::Query;

pub(super) fn routes() -> Router<Shared> {
    Router::new()
        .route("/api/items", get(items))
        .route("/api/items/act", post(act))
}

/// `?kind=at_risk` keeps one kind; `?limit=N` bounds each kind.
async fn items(State(s): State<Shared>, RawQuery(raw): RawQuery) -> Result<Response> {
    let q = Query::parse(raw.as_deref().unwrap_or(""));
    let kind = match q.get("kind") {
        Some(k) => Some(
            ItemKind::parse(k)
                .ok_or_else(|| AdminError::BadRequest("no such kind of item".into()))?,
        ),
        None => None,
    };
    let limit = match q.get("limit") {
        Some(n) => n
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_LIMIT).contains(n))
            .ok_or_else(|| AdminError::BadRequest(format!("limit is 1 to {MAX_LIMIT}")))?,
        None => 100,
    };
    let items: Vec<_> = s
        .actions()
        .items(limit)
        .await?
        .into_iter()
        .filter(|i| kind.is_none_or(|k| i.kind == k))
        .collect();
    Ok(Json(json!({ "items": items })).into_response())
}

#[derive(Deserialize)]
struct Act {
    item: String,
    action: String,
}

/// `{"item": "at_risk:default:123", "action": "acknowledge"}`.
async fn act(State(s): State<Shared>, Json(a): Json<Act>) -> Result<Response> {
    let key = ItemKey::parse(&a.item).map_err(|e| AdminError::BadRequest(e.to_string()))?;
    let action = ItemAction::parse(&a.action)
        .ok_or_else(|| AdminError::BadRequest("no such action".into()))?;
    let acted = match s.actions().act(&Actor::api(), &key, action).await {
        Ok(acted) => acted,
        Err(ActError::NotOffered { .. }) => {
            return Err(AdminError::BadRequest(format!(
                "{} offers no {}",
                key.kind().as_str(),
                action.as_str()
            )));
        }
        Err(ActError::Store(e)) => return Err(e.into()),
    };
    let done = match acted.done {
        Done::Done(words) => words,
        Done::Refused(message) if message.starts_with("no ") => {
            return Err(AdminError::NotFound(message));
        }
        Done::Refused(message) => {
            return Err(AdminError::Conflict {
                code: "refused",
                message,
            });
        }
        Done::Unknown(message) => {
            return Err(AdminError::Conflict {
                code: "outcome_unknown",
                message,
            });
        }
    };
    Ok(
        Json(
            json!({"item": key, "action": action.as_str(), "done": done, "audit_id": acted.audit}),
        )
        .into_response(),
    )
}
