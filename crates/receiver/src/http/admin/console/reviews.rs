//! `/fraud-reviews`: every fraud review, held or decided, newest first,
//! paged; each links to its page (`items::review`) with its evidence and
//! what people did.

use askama::Template;
use axum::Extension;
use axum::extract::{Query, State};
use axum::response::Response;
use serde::Deserialize;
use strum::IntoEnumIterator;

use super::super::session::Operator;
use super::Chrome;
use crate::domain::Review;
use crate::http::admin::html::{HtmlError, number, render};
use crate::store::views::ReviewView;

/// Rows a page shows.
const PAGE: usize = 50;

#[derive(Deserialize, Default)]
pub struct ReviewsQuery {
    /// `held`, `confirmed`, `dismissed`, `rejected`; every state when absent.
    state: Option<String>,
    /// The next page: reviews older than this one.
    before: Option<String>,
}

#[derive(Template)]
#[template(path = "console/reviews.html")]
struct ReviewsPage {
    chrome: Chrome,
    states: Vec<&'static str>,
    state: &'static str,
    rows: Vec<ReviewView>,
    next: Option<String>,
}

pub async fn list(
    State(s): State<super::Shared>,
    Extension(op): Extension<Operator>,
    Query(q): Query<ReviewsQuery>,
) -> Result<Response, HtmlError> {
    let state = match q.state.as_deref().map(str::trim) {
        None | Some("") | Some("all") => None,
        Some(st) => Some(
            st.parse::<Review>()
                .map_err(|_| HtmlError::bad("no such state of a fraud review"))?,
        ),
    };
    let before = match q.before.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(b) => Some(number(b)?),
    };
    let rows = s.store.reviews(state, before, PAGE).await?;
    let state_name: &'static str = state.map_or("all", <&'static str>::from);
    let next = (rows.len() == PAGE)
        .then(|| rows.last())
        .flatten()
        .map(|r| format!("?state={state_name}&before={}", r.id));
    Ok(render(&ReviewsPage {
        chrome: Chrome::new(&s, &op, "inbox", None).await?,
        states: std::iter::once("all")
            .chain(Review::iter().map(<&'static str>::from))
            .collect(),
        state: state_name,
        rows,
        next,
    }))
}
