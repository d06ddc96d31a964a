//! The operator console (DESIGN section 10): server-rendered pages
//! (askama templates under `templates/console/`, escaped by the engine),
//! working without JavaScript, behind a signed-in session. Each page is a
//! GET; each action a POST form to the item's own path, carrying the
//! session's CSRF token, answered with a redirect back to the page, which
//! shows the action's audit entry (`?done=ID`).
//!
//! - `inbox.rs`: `/`, what needs a person; dead jobs grouped by cause.
//! - `orders.rs`: `/orders`, `/orders/{id}` (the timeline), `/search`.
//! - `items.rs`: lists and pages of deliveries, jobs, events, reviews, the audit.
//! - `act.rs`: the actions.
//! - `health.rs`, `charts.rs`: `/health` and its SVG charts.

mod act;
mod charts;
mod health;
mod inbox;
mod items;
mod orders;

use askama::Template;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use http::{HeaderValue, StatusCode, header};
use serde::Deserialize;

use super::session::{self, Operator};
use super::{AdminError, Shared};
use crate::store::StoreError;
use crate::store::console_views::{AuditFilter, AuditView};

/// A console form is a few short fields; anything larger is not ours.
const FORM_LIMIT: usize = 8 * 1024;

/// The routes that need a session.
pub(super) fn routes() -> Router<Shared> {
    Router::new()
        .route("/", get(inbox::page))
        .route("/orders", get(orders::list))
        .route("/orders/{id}", get(orders::page))
        .route("/search", get(orders::search))
        .route("/deliveries", get(items::deliveries))
        .route("/deliveries/{id}", get(items::delivery))
        .route("/jobs", get(items::jobs))
        .route("/jobs/{id}", get(items::job))
        .route("/events", get(items::events))
        .route("/events/{id}", get(items::event))
        .route("/fraud-reviews/{id}", get(items::review))
        .route("/audit", get(items::audit))
        .route("/health", get(health::page))
        .route("/logout", post(session::logout))
        .route("/fraud-reviews/{id}/confirm", post(act::confirm))
        .route("/fraud-reviews/{id}/dismiss", post(act::dismiss))
        .route("/jobs/{id}/retry", post(act::retry))
        .route("/jobs/retry-group", post(act::retry_group))
        .route("/events/{id}/redeliver", post(act::redeliver))
        .route("/acknowledge", post(act::acknowledge))
        .layer(DefaultBodyLimit::max(FORM_LIMIT))
}

/// The routes open to anyone: signing in.
pub(super) fn public_routes() -> Router<Shared> {
    Router::new()
        .route("/login", get(session::login_form).post(session::login))
        .layer(DefaultBodyLimit::max(FORM_LIMIT))
}

/// What every page shows around its content.
pub struct Chrome {
    pub operator: String,
    pub csrf: String,
    /// The section it belongs to, for the navigation.
    pub here: &'static str,
    /// What the search box holds.
    pub q: String,
    /// The action just taken (`?done=ID`), as the audit recorded it.
    pub done: Option<AuditView>,
}

#[derive(Deserialize, Default)]
pub struct Done {
    done: Option<i64>,
}

impl Chrome {
    pub async fn new(
        s: &Shared,
        op: &Operator,
        here: &'static str,
        done: Option<i64>,
    ) -> Result<Chrome, HtmlError> {
        let done = match done {
            Some(id) => s
                .store
                .audit(AuditFilter {
                    before: id.checked_add(1),
                    limit: 1,
                    ..Default::default()
                })
                .await?
                .into_iter()
                .find(|a| a.id == id),
            None => None,
        };
        Ok(Chrome {
            operator: op.name.clone(),
            csrf: op.csrf.clone(),
            here,
            q: String::new(),
            done,
        })
    }

    /// The navigation: `(path, label, section)`.
    pub fn nav(&self) -> [(&'static str, &'static str, &'static str); 7] {
        [
            ("/", "Needs you", "inbox"),
            ("/orders", "Orders", "orders"),
            ("/deliveries", "Deliveries", "deliveries"),
            ("/jobs", "Jobs", "jobs"),
            ("/events", "Events", "events"),
            ("/audit", "Audit", "audit"),
            ("/health", "Health", "health"),
        ]
    }
}

/// A page, with the console's headers.
pub fn render(page: &impl Template) -> Response {
    match page.render() {
        Ok(html) => {
            protected(([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response())
        }
        Err(e) => {
            tracing::error!(error = %e, "a console page did not render");
            HtmlError::status(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the page could not be rendered",
            )
            .into_response()
        }
    }
}

/// Never framed (clickjacking), never cached, no script from anywhere.
pub fn protected(mut res: Response) -> Response {
    let headers = res.headers_mut();
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; \
             form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    res
}

#[derive(Template)]
#[template(path = "console/problem.html")]
struct ProblemPage<'a> {
    status: u16,
    message: &'a str,
}

/// An error, as a page a person reads (the API's errors stay JSON).
#[derive(Debug)]
pub struct HtmlError {
    status: StatusCode,
    message: String,
}

impl HtmlError {
    pub fn status(status: StatusCode, message: &str) -> HtmlError {
        HtmlError {
            status,
            message: message.to_string(),
        }
    }

    pub fn not_found(what: &str) -> HtmlError {
        HtmlError::status(StatusCode::NOT_FOUND, &format!("no such {what}"))
    }

    pub fn bad(message: &str) -> HtmlError {
        HtmlError::status(StatusCode::BAD_REQUEST, message)
    }

    /// A form without the session's token.
    pub fn stale() -> HtmlError {
        HtmlError::status(
            StatusCode::FORBIDDEN,
            "the form is stale or was not sent from this console: reload the page",
        )
    }
}

impl From<StoreError> for HtmlError {
    fn from(e: StoreError) -> HtmlError {
        AdminError::from(e).into()
    }
}

impl From<AdminError> for HtmlError {
    fn from(e: AdminError) -> HtmlError {
        let status = e.into_response().status();
        let message = match status {
            StatusCode::SERVICE_UNAVAILABLE => "storage is unavailable: try again shortly".into(),
            _ => "the request was refused".to_string(),
        };
        HtmlError { status, message }
    }
}

impl IntoResponse for HtmlError {
    fn into_response(self) -> Response {
        let page = ProblemPage {
            status: self.status.as_u16(),
            message: &self.message,
        };
        let mut res = match page.render() {
            Ok(html) => {
                ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response()
            }
            Err(_) => self.message.into_response(),
        };
        *res.status_mut() = self.status;
        protected(res)
    }
}

/// A number from a path.
pub fn number(text: &str) -> Result<i64, HtmlError> {
    text.parse()
        .map_err(|_| HtmlError::bad(&format!("{text:?} is not a number")))
}
