//! The Orders API's routes (`/v1/orders…`, `/terminals/v1/…`): reads,
//! the status simulator, and the mutations that need an idempotency key.

use axum::Router;
use axum::extract::{Extension, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, patch, post};
use http::{HeaderMap, Uri};

use super::super::extract::{Raw, Seg};
use super::super::{Answer, Sb};
use super::Account;
use crate::ops::orders::{self, Ctx, Op, Reply};
use crate::ops::sandbox::Sandbox;
use pointhook_common::response;

pub(super) fn routes() -> Router<Sb> {
    Router::new()
        .route("/v1/orders", get(search_orders).post(create_order))
        .route("/v1/orders/{id}", get(get_order))
        .route("/v1/orders/{id}/events", post(simulate_event))
        .route("/v1/orders/{id}/cancel", post(cancel_order))
        .route("/v1/orders/{id}/refund", post(refund_order))
        .route("/v1/orders/{id}/process", post(process_order))
        .route("/v1/orders/{id}/capture", post(capture_order))
        .route("/terminals/v1/list", get(list_terminals))
        .route("/terminals/v1/setup", patch(setup_terminals))
}

/// The reply as sent, waking the dispatcher when it queued a webhook.
fn answer(sb: &Sandbox, reply: Reply) -> Answer {
    if reply.queued {
        sb.queued();
    }
    let res: Response = match reply.body {
        Some(b) => response::json(reply.status, b.to_string()).into_response(),
        None => {
            let mut r = response::json(reply.status, "");
            r.headers_mut().remove(http::header::CONTENT_TYPE);
            r.into_response()
        }
    };
    Ok(res)
}

async fn search_orders(State(sb): State<Sb>, Extension(a): Account, uri: Uri) -> Answer {
    let reply = orders::search(&sb, &Ctx::new(&sb, a), uri.query().unwrap_or("")).await?;
    answer(&sb, reply)
}

async fn get_order(State(sb): State<Sb>, Extension(a): Account, Seg(id): Seg<String>) -> Answer {
    let reply = orders::fetch(&sb, &Ctx::new(&sb, a), &id).await?;
    answer(&sb, reply)
}

async fn simulate_event(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg(id): Seg<String>,
    Raw(body): Raw,
) -> Answer {
    let reply = orders::simulate(&sb, Ctx::new(&sb, a), &id, &body).await?;
    answer(&sb, reply)
}

/// A mutation: needs `X-Idempotency-Key`, which scopes it to its path.
async fn run_op(
    sb: &Sandbox,
    a: crate::model::AccountRow,
    op: Op,
    uri: &Uri,
    headers: &HeaderMap,
    body: &[u8],
) -> Answer {
    let key = headers
        .get("x-idempotency-key")
        .map(|v| String::from_utf8_lossy(v.as_bytes()).trim().to_string());
    let reply = orders::mutate(sb, Ctx::new(sb, a), op, key, uri.path(), body).await?;
    answer(sb, reply)
}

async fn create_order(
    State(sb): State<Sb>,
    Extension(a): Account,
    uri: Uri,
    headers: HeaderMap,
    Raw(body): Raw,
) -> Answer {
    run_op(&sb, a, Op::Create, &uri, &headers, &body).await
}

async fn cancel_order(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg(id): Seg<String>,
    uri: Uri,
    headers: HeaderMap,
    Raw(body): Raw,
) -> Answer {
    let at_terminal = headers
        .get("x-allow-cancelable-status")
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"at_terminal"));
    run_op(
        &sb,
        a,
        Op::Cancel { id, at_terminal },
        &uri,
        &headers,
        &body,
    )
    .await
}

async fn refund_order(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg(id): Seg<String>,
    uri: Uri,
    headers: HeaderMap,
    Raw(body): Raw,
) -> Answer {
    run_op(&sb, a, Op::Refund(id), &uri, &headers, &body).await
}

async fn process_order(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg(id): Seg<String>,
    uri: Uri,
    headers: HeaderMap,
    Raw(body): Raw,
) -> Answer {
    run_op(&sb, a, Op::Process(id), &uri, &headers, &body).await
}

async fn capture_order(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg(id): Seg<String>,
    uri: Uri,
    headers: HeaderMap,
    Raw(body): Raw,
) -> Answer {
    run_op(&sb, a, Op::Capture(id), &uri, &headers, &body).await
}

async fn list_terminals(State(sb): State<Sb>, Extension(a): Account, uri: Uri) -> Answer {
    let reply = orders::list_terminals(&sb, &Ctx::new(&sb, a), uri.query().unwrap_or("")).await?;
    answer(&sb, reply)
}

async fn setup_terminals(State(sb): State<Sb>, Extension(a): Account, Raw(body): Raw) -> Answer {
    let reply = orders::setup_terminals(&sb, Ctx::new(&sb, a), &body).await?;
    answer(&sb, reply)
}
