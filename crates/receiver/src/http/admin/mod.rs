//! The admin listener on `[admin] listen`: a route table (axum's `Router`,
//! one function per route) served through the same accept loop as the
//! notification endpoint, so its connection cap and timeouts hold here too,
//! behind a door (`door.rs`) that answers only this listener's own `Host`
//! and reads each body whole within the read timeout.
//!
//! - the operator console (`console/`): HTML pages for a signed-in person
//!   (`session.rs`: `/login`, `/logout`, sessions), with their actions;
//! - the admin API (`api.rs`), `/api/*`, and `GET /metrics`, for machines:
//!   `Authorization: Bearer {admin.token}` only (the scheme in any case).
//!   Destinations (`destinations.rs`) and the event catalog
//!   (`event_types.rs`) are part of it.
//!
//! No unsafe method is served to a request a browser marks as cross-site,
//! whatever its credentials; every console form also carries the
//! session's CSRF token.

mod api;
mod console;
mod destinations;
mod door;
mod error;
pub mod event_types;
mod html;
mod items_api;
mod redirect;
mod session;
mod throttle;

use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::Response;
use http::{Method, header};

use crate::config::Secret;
use crate::store::Store;
pub use door::{AdminHandler, ClientAddr};
pub use error::AdminError;
use pointhook_common::clock::Clock;
use pointhook_common::response;

/// What every route reaches for.
pub struct AdminState {
    pub store: Store,
    pub token: Secret,
    pub clock: Arc<dyn Clock>,
    /// The default account for `/api/orders/{id}`.
    pub default_account: Option<String>,
    /// Every account's name (the search looks in each).
    pub accounts: Vec<String>,
    pub metrics: crate::metrics::SharedMetrics,
    /// This process's sweeper, when it runs one.
    pub sweep: Option<crate::reconcile::SharedStatus>,
    /// A console session unused this long ends.
    pub session_idle: std::time::Duration,
    /// Session cookies are `Secure` (the console is reached over https).
    pub secure_cookies: bool,
}

/// The state and what the listener keeps for itself.
pub struct Admin {
    state: AdminState,
    session_idle_ms: i64,
    sign_ins: throttle::SignInThrottle,
}

impl std::ops::Deref for Admin {
    type Target = AdminState;
    fn deref(&self) -> &AdminState {
        &self.state
    }
}

impl Admin {
    fn now(&self) -> i64 {
        crate::store::unix_ms(self.clock.now())
    }

    fn actions(&self) -> crate::actions::Actions {
        crate::actions::Actions {
            store: self.store.clone(),
            clock: self.clock.clone(),
        }
    }
}

type Shared = Arc<Admin>;

/// The route table.
pub fn router(state: AdminState) -> Router {
    let state = Arc::new(Admin {
        session_idle_ms: i64::try_from(state.session_idle.as_millis()).unwrap_or(i64::MAX),
        sign_ins: throttle::SignInThrottle::new(),
        state,
    });
    let api = (api::routes().merge(destinations::routes()))
        .merge(event_types::routes())
        .route_layer(middleware::from_fn_with_state(state.clone(), bearer_only));
    let console = console::routes().route_layer(middleware::from_fn_with_state(
        state.clone(),
        session::require,
    ));
    Router::new()
        .merge(api)
        .merge(console)
        .merge(console::public_routes())
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
}

/// `Authorization: Bearer …`, the scheme in any case (RFC 7235, section
/// 2.1).
fn credential(req: &Request) -> Option<Credential> {
    let value = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim_start().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| Credential::Bearer(token.trim().to_string()))
}

/// Both sides are hashed first, so the comparison (constant-time, by
/// `subtle`) always runs over 32 bytes and tells nothing of the token's
/// length either.
fn token_matches(state: &Admin, given: &[u8]) -> bool {
    use sha2::{Digest, Sha256};
    let given = Sha256::digest(given);
    let token = Sha256::digest(state.token.expose().as_bytes());
    constant_time_eq(&given, &token)
}

/// Equal bytes, compared in a time that depends on the length only.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    subtle::ConstantTimeEq::ct_eq(a, b).into()
}
