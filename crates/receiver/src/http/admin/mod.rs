//! The admin listener on `[admin] listen`: a route table (axum's `Router`,
//! one function per route) served through the same accept loop as the
//! notification endpoint, so its connection cap and timeouts hold here too.
//!
//! - `GET  /api/deliveries?account=&kind=&topic=&since=&before=&limit=`
//! - `GET  /api/deliveries/{id}`
//! - `GET  /api/jobs?state=&limit=` (dead first), `GET /api/jobs/{id}`
//! - `POST /api/jobs/{id}/retry`, `POST /api/jobs/retry-dead`
//! - `GET  /api/orders/{id}?account=`
//! - `GET  /api/events?type=&state=&limit=`, `GET /api/events/{id}`
//! - `POST /api/events/{id}/redeliver`
//! - `GET  /api/fraud-reviews?state=held|confirmed|dismissed|all`
//! - `POST /api/fraud-reviews/{id}/confirm`, `POST /api/fraud-reviews/{id}/dismiss`
//! - `GET  /api/destinations…` (`destinations.rs`), `GET /api/event-types`
//! - `GET  /metrics` (Prometheus text)
//! - `GET  /` the status page; `POST /jobs/{id}/retry` its retry button
//!
//! `/api/*` and `/metrics` take `Authorization: Bearer {admin.token}` only.
//! The status page also takes Basic (any user, the token as password), which
//! browsers remember: so its form carries a token of its own, and no unsafe
//! method is served to a request a browser marks as cross-site.

mod api;
mod destinations;
mod error;
pub mod event_types;
mod page;

use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::Response;
use http::{Method, header};

use super::response;
use crate::clock::Clock;
use crate::config::Secret;
use crate::store::Store;
pub use error::AdminError;

/// What every route reaches for.
pub struct AdminState {
    pub store: Store,
    pub token: Secret,
    pub clock: Arc<dyn Clock>,
    /// Whether events are delivered anywhere (redelivery needs a URL).
    pub delivers_events: bool,
    /// The default account for `/api/orders/{id}`.
    pub default_account: Option<String>,
    pub metrics: crate::metrics::SharedMetrics,
    /// This process's sweeper, when it runs one.
    pub sweep: Option<crate::reconcile::SharedStatus>,
}

impl AdminState {
    fn now(&self) -> i64 {
        crate::store::unix_ms(self.clock.now())
    }
}

type Shared = Arc<AdminState>;

/// The route table.
pub fn router(state: AdminState) -> Router {
    let state = Arc::new(state);
    let api = (api::routes().merge(destinations::routes()))
        .merge(event_types::routes())
        .route_layer(middleware::from_fn_with_state(state.clone(), bearer_only));
    let page = page::routes().route_layer(middleware::from_fn_with_state(
        state.clone(),
        bearer_or_basic,
    ));
    Router::new()
        .merge(api)
        .merge(page)
        .fallback(|req: Request| async move {
            let (parts, body) = response::not_found(req.method(), req.uri().path()).into_parts();
            Response::from_parts(parts, axum::body::Body::new(body))
        })
        .layer(middleware::from_fn(same_site_writes))
        .with_state(state)
}

/// `/api/*` and `/metrics`: a bearer token, never what a browser remembers.
async fn bearer_only(
    State(state): State<Shared>,
    req: Request,
    next: Next,
) -> Result<Response, AdminError> {
    match credential(&req) {
        Some(Credential::Bearer(token)) if token_matches(&state, token.as_bytes()) => {
            Ok(next.run(req).await)
        }
        _ => Err(AdminError::Unauthorized {
            challenge: "Bearer",
            message: "send Authorization: Bearer <admin.token>",
        }),
    }
}

/// The status page: the bearer token, or Basic with the token as password.
async fn bearer_or_basic(
    State(state): State<Shared>,
    req: Request,
    next: Next,
) -> Result<Response, AdminError> {
    let ok = match credential(&req) {
        Some(Credential::Bearer(token) | Credential::Basic(token)) => {
            token_matches(&state, token.as_bytes())
        }
        None => false,
    };
    if ok {
        Ok(next.run(req).await)
    } else {
        Err(AdminError::Unauthorized {
            challenge: "Basic realm=\"pointhook\"",
            message: "sign in with the admin token as the password",
        })
    }
}

/// No unsafe method from another site: `Sec-Fetch-Site` must say same
/// origin (or none: typed, not a page's doing), and an `Origin` must be
/// this listener's own.
async fn same_site_writes(req: Request, next: Next) -> Result<Response, AdminError> {
    let safe = matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    if !safe && is_cross_site(&req) {
        return Err(AdminError::Forbidden(
            "cross-site requests may not change anything here",
        ));
    }
    Ok(next.run(req).await)
}

fn is_cross_site(req: &Request) -> bool {
    let header = |name| req.headers().get(name).and_then(|v| v.to_str().ok());
    if let Some(site) = header("sec-fetch-site")
        && !matches!(site, "same-origin" | "none")
    {
        return true;
    }
    match (header("origin"), header("host")) {
        (None, _) => false,
        (Some(origin), Some(host)) => {
            let own = origin
                .strip_prefix("http://")
                .or_else(|| origin.strip_prefix("https://"));
            own != Some(host)
        }
        (Some(_), None) => true,
    }
}

enum Credential {
    Bearer(String),
    /// The password of a Basic credential.
    Basic(String),
}

/// `Authorization: SCHEME credentials`, the scheme in any case (RFC 7235,
/// section 2.1).
fn credential(req: &Request) -> Option<Credential> {
    let value = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, rest) = value.trim_start().split_once(' ')?;
    let rest = rest.trim_start_matches(' ');
    if scheme.eq_ignore_ascii_case("bearer") {
        return Some(Credential::Bearer(rest.to_string()));
    }
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let b64 = rest;
    use base64::Engine;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .ok()?;
    let password = &decoded[decoded.iter().position(|b| *b == b':')? + 1..];
    Some(Credential::Basic(
        String::from_utf8_lossy(password).into_owned(),
    ))
}

/// Both sides are hashed first, so the comparison (constant-time, by
/// `subtle`) always runs over 32 bytes and tells nothing of the token's
/// length either.
fn token_matches(state: &AdminState, given: &[u8]) -> bool {
    use sha2::{Digest, Sha256};
    let given = Sha256::digest(given);
    let token = Sha256::digest(state.token.expose().as_bytes());
    constant_time_eq(&given, &token)
}

/// Equal bytes, compared in a time that depends on the length only.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    subtle::ConstantTimeEq::ct_eq(a, b).into()
}
