//! The control API (`/sandbox/…`, JSON), nested in the sandbox's table:
//! create and change resources the way the platform would (`resources`),
//! read the delivery and request logs, inject faults, switch the
//! platform's quirks on and off, read and advance a manual clock. Errors
//! in pointhook's shape.
//!
//! Every call takes an account's Bearer token, as the resources API does;
//! calls about resources act for that account.

mod resources;

use axum::Router;
use axum::extract::{Extension, State};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use http::{Method, StatusCode, Uri};

use super::extract::{Api, JsonBody};
use super::{Answer, Sb, guard, json};
use crate::error::HttpError;
use crate::faults::Call;
use crate::model::AccountRow;
use crate::ops::admin;
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
        .layer(middleware::from_fn_with_state(
            sb.clone(),
            guard::control_account,
        ))
        .with_state(sb)
}

/// 404 for a path under `/sandbox` the table lacks (nested, the path it
/// sees is the part after `/sandbox`).
async fn no_endpoint(method: Method, uri: Uri) -> Response {
    let rest = uri.path().trim_end_matches('/');
    HttpError::control(
        StatusCode::NOT_FOUND,
        &format!("no control endpoint {method} /sandbox{rest}"),
    )
    .into_response()
}

/// The account a control call acts for (its Bearer token's).
type Ctl = Extension<AccountRow>;

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

/// `GET /sandbox/requests`: the platform API calls received, their
/// credentials masked.
async fn requests(State(sb): State<Sb>) -> Answer {
    let calls: Vec<Call> = sb.faults.calls().iter().map(Call::masked).collect();
    json(StatusCode::OK, &serde_json::to_value(calls)?)
}

async fn add_fault(State(sb): State<Sb>, JsonBody(v): JsonBody) -> Answer {
    json(StatusCode::CREATED, &admin::add_fault(&sb, &v).await?)
}

async fn clear_faults(State(sb): State<Sb>) -> Answer {
    json(StatusCode::OK, &admin::clear_faults(&sb).await?)
}
