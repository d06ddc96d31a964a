//! The platform's API as the sandbox serves it: every call recorded and
//! open to injected faults (`observe`), then a Bearer account
//! (`authenticate`), unknown routes included, as on the platform; errors
//! in the platform's shape. One function per route, in `payments`
//! (payments, refunds, merchant orders, chargebacks), `point` (devices,
//! intents, the integrator), `orders` (the Orders API), `checkout_pro`
//! (preferences), `instore` (stores, points of sale) and `catalog`
//! (payment methods, identification types, the user, customers, cards).

mod catalog;
mod checkout_pro;
mod instore;
mod orders;
mod payments;
mod point;

use axum::Router;
use axum::extract::{Extension, Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use http::{Method, StatusCode, Uri};
use http_body_util::BodyExt;

use super::Sb;
use super::extract::{Api, bearer};
use crate::error::HttpError;
use crate::faults::Call;
use crate::model::AccountRow;

/// The account a call authenticated as.
type Account = Extension<AccountRow>;

/// The platform's route table.
pub(super) fn routes(sb: Sb) -> Router {
    Router::new()
        .merge(payments::routes())
        .merge(point::routes())
        .merge(orders::routes())
        .merge(checkout_pro::routes())
        .merge(instore::routes())
        .merge(catalog::routes())
        .fallback(no_resource)
        .method_not_allowed_fallback(no_resource)
        .layer(Extension(Api::Platform))
        .layer(middleware::from_fn_with_state(sb.clone(), authenticate))
        .layer(middleware::from_fn_with_state(sb.clone(), observe))
        .with_state(sb)
}

/// Records the call for `GET /sandbox/requests`, answers an injected fault
/// instead when one matches, and delays reads as configured.
async fn observe(State(sb): State<Sb>, req: Request, next: Next) -> Result<Response, HttpError> {
    let (parts, body) = req.into_parts();
    let body = body
        .collect()
        .await
        .map_err(HttpError::internal)?
        .to_bytes();
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    sb.faults.record(Call {
        method: parts.method.to_string(),
        path: parts.uri.path().to_string(),
        authorization: header("authorization"),
        idempotency_key: header("x-idempotency-key"),
        body: String::from_utf8_lossy(&body).into_owned(),
    });
    if let Some((status, delay, retry_after)) =
        sb.faults.take(parts.method.as_str(), parts.uri.path())
    {
        tokio::time::sleep(delay).await;
        if let Some(code) = status {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            return Err(
                HttpError::platform(status, "injected", &format!("injected {code}"))
                    .retry_after(retry_after),
            );
        }
    }
    if parts.method == Method::GET {
        tokio::time::sleep(sb.faults.read_delay()).await;
    }
    Ok(next
        .run(Request::from_parts(parts, axum::body::Body::from(body)))
        .await)
}

/// The account whose Bearer token the call carries, for the route
/// functions to extract; 401 without one.
async fn authenticate(
    State(sb): State<Sb>,
    mut req: Request,
    next: Next,
) -> Result<Response, HttpError> {
    let token = bearer(req.headers());
    let account = match token {
        Some(t) => sb.account_of_token(t).await?,
        None => None,
    };
    let Some(account) = account else {
        return Err(HttpError::platform(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "invalid access token",
        )
        .cause(401, "a valid Bearer access token is required"));
    };
    req.extensions_mut().insert(account);
    Ok(next.run(req).await)
}

async fn no_resource(method: Method, uri: Uri) -> Response {
    HttpError::platform(
        StatusCode::NOT_FOUND,
        "not_found",
        &format!("no resource at {method} {}", uri.path()),
    )
    .into_response()
}
