//! The control API (`/sandbox/…`, JSON), nested in the sandbox's table:
//! create and change resources the way the platform would (`resources`),
//! read the delivery and request logs, inject faults, switch the
//! platform's quirks on and off, read and advance a manual clock. Errors
//! in pointhook's shape.
//!
//! The account is the Bearer token's, else `?account=NAME`, else the first.

mod resources;

use axum::Router;
use axum::extract::{Extension, FromRequestParts, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use http::request::Parts;
use http::{Method, StatusCode, Uri};
use serde_json::json;

use super::extract::{Api, JsonBody, bearer};
use super::{Answer, Sb, json};
use crate::error::HttpError;
use crate::model::AccountRow;
use crate::ops::admin;
use crate::state::accounts;
use pointhook_common::query::Query;

/// The control API's route table, for `Router::nest("/sandbox", …)`.
pub(super) fn routes(sb: Sb) -> Router {
    Router::new()
        .route("/deliveries", get(deliveries))
        .route("/clock", get(clock_state))
        .route("/clock/advance", post(advance_clock))
        .route(
            "/quirks",
            get(quirks_state).post(set_quirks).delete(clear_quirks),
        )
        .route("/requests", get(requests))
        .route("/faults", post(add_fault).delete(clear_faults))
        .merge(resources::routes())
        .fallback(no_endpoint)
        .method_not_allowed_fallback(no_endpoint)
        .layer(Extension(Api::Control))
        .with_state(sb)
}

async fn no_endpoint(method: Method, uri: Uri) -> Response {
    HttpError::control(
        StatusCode::NOT_FOUND,
        &format!("no control endpoint {method} /sandbox{}", uri.path()),
    )
    .into_response()
}

/// The account a control call acts for; 404 when there is none.
struct Ctl(AccountRow);

impl FromRequestParts<Sb> for Ctl {
    type Rejection = HttpError;

    async fn from_request_parts(parts: &mut Parts, sb: &Sb) -> Result<Self, Self::Rejection> {
        if let Some(token) = bearer(&parts.headers)
            && let Some(a) = sb.account_of_token(token).await?
        {
            return Ok(Ctl(a));
        }
        let name = Query::parse(parts.uri.query().unwrap_or(""))
            .get("account")
            .map(str::to_string);
        sb.db
            .call(move |tx| accounts::named_or_first(tx, name.as_deref()))
            .await?
            .map(Ctl)
            .ok_or_else(|| HttpError::control(StatusCode::NOT_FOUND, "no such account"))
    }
}

/// `GET /sandbox/deliveries?limit=N`: the delivery log, newest first.
async fn deliveries(State(sb): State<Sb>, uri: Uri) -> Answer {
    let limit = Query::parse(uri.query().unwrap_or(""))
        .get("limit")
        .and_then(|l| l.parse().ok())
        .unwrap_or(200);
    let log = sb.delivery_log(limit).await?;
    json(StatusCode::OK, &serde_json::to_value(log)?)
}

async fn clock_state(State(sb): State<Sb>) -> Answer {
    json(StatusCode::OK, &sb.clock_state())
}

async fn advance_clock(State(sb): State<Sb>, JsonBody(v): JsonBody) -> Answer {
    json(StatusCode::OK, &admin::advance_clock(&sb, &v).await?)
}

async fn quirks_state(State(sb): State<Sb>) -> Answer {
    json(StatusCode::OK, &admin::quirks(&sb).await?)
}

async fn set_quirks(State(sb): State<Sb>, JsonBody(v): JsonBody) -> Answer {
    json(StatusCode::OK, &admin::set_quirks(&sb, v).await?)
}

async fn clear_quirks(State(sb): State<Sb>) -> Answer {
    json(StatusCode::OK, &admin::clear_quirks(&sb).await?)
}

/// `GET /sandbox/requests`: the platform API calls received.
async fn requests(State(sb): State<Sb>) -> Answer {
    json(StatusCode::OK, &serde_json::to_value(sb.faults.calls())?)
}

async fn add_fault(State(sb): State<Sb>, JsonBody(v): JsonBody) -> Answer {
    json(StatusCode::CREATED, &admin::add_fault(&sb, &v).await?)
}

async fn clear_faults(State(sb): State<Sb>) -> Answer {
    sb.faults.clear();
    json(StatusCode::OK, &json!({"cleared": true}))
}
