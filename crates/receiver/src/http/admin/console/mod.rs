//! The operator console: server-rendered pages
//! (askama templates under `templates/console/`, escaped by the engine),
//! working without JavaScript, behind a signed-in session. Each page is a
//! GET; each action a POST form to the item's own path, carrying the
//! session's CSRF token, answered with a redirect back to the page, which
//! shows the action's audit entry (`?done=ID`).
//!
//! - `inbox.rs`: `/`, what needs a person; dead jobs grouped by cause.
//! - `orders.rs`: `/orders`, `/orders/{id}` (the timeline), `/search`.
//! - `items.rs`: lists and pages of deliveries, jobs, events, reviews, the audit.
//! - `reviews.rs`: `/fraud-reviews`, every review, held or decided.
//! - `holds.rs`: `/holds/{id}` and the one route answering a hold of any kind.
//! - `act.rs`: the actions.
//! - `destinations.rs`: `/destinations`, enable and recover.
//! - `health.rs`, `charts.rs`: `/health` and its SVG charts.

mod act;
mod charts;
mod destinations;
mod health;
mod holds;
mod inbox;
mod item_views;
mod items;
mod orders;
mod reviews;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use serde::Deserialize;

use super::Shared;
use super::html::HtmlError;
use super::session::{self, Operator};
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
        .route("/fraud-reviews", get(reviews::list))
        .route("/fraud-reviews/{id}", get(items::review))
        .route("/holds/{id}", get(holds::page))
        .route("/holds/{id}/{action}", post(holds::answer))
        .route("/audit", get(items::audit))
        .route("/destinations", get(destinations::list))
        .route("/destinations/{name}", get(destinations::page))
        .route("/destinations/{name}/enable", post(destinations::enable))
        .route("/destinations/{name}/recover", post(destinations::recover))
        .route("/health", get(health::page))
        .route("/logout", post(session::logout))
        .route("/fraud-reviews/{id}/confirm", post(act::confirm))
        .route("/fraud-reviews/{id}/dismiss", post(act::dismiss))
        .route("/jobs/{id}/retry", post(act::retry))
        .route("/jobs/retry-group", post(act::retry_group))
        .route("/events/{id}/redeliver", post(act::redeliver))
        .route("/events/{id}/redeliver-all", post(act::redeliver_all))
        .route("/acknowledge", post(act::acknowledge))
        .route("/items/act", post(act::item))
        .route("/acknowledge/missed", post(act::acknowledge_missed))
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
    pub fn nav(&self) -> [(&'static str, &'static str, &'static str); 8] {
        [
            ("/", "Needs you", "inbox"),
            ("/orders", "Orders", "orders"),
            ("/deliveries", "Deliveries", "deliveries"),
            ("/jobs", "Jobs", "jobs"),
            ("/events", "Events", "events"),
            ("/destinations", "Destinations", "destinations"),
            ("/audit", "Audit", "audit"),
            ("/health", "Health", "health"),
        ]
    }
}
