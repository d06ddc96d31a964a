//! `/destinations` and `/destinations/{name}`: where events go, each with
//! its state, backlog, oldest event and how long it has failed; a
//! disabled one is enabled here, and what failed, paused or gave up since
//! a time is sent again (`…/enable`, `…/recover`, through `actions`).

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::response::Response;
use axum::{Extension, Form};
use serde::Deserialize;

use super::super::session::{Operator, csrf_ok};
use super::items::audit_of;
use super::{Chrome, Done};
use crate::http::admin::html::{HtmlError, render};
use crate::http::admin::redirect::see_other;
use crate::operators::Actor;
use crate::store::DestinationView;
use crate::store::console_views::AuditView;

#[derive(Template)]
#[template(path = "console/destinations.html")]
struct DestinationsPage {
    chrome: Chrome,
    /// One destination's page (`None`: the list).
    one: Option<String>,
    rows: Vec<DestinationView>,
    audit: Vec<AuditView>,
}

impl DestinationsPage {
    /// When a recovery starts by default: the failure's start, kept after
    /// the destination is enabled (else when it began to fail or was
    /// disabled).
    fn since<'a>(&self, d: &'a DestinationView) -> &'a str {
        d.recover_since.as_deref().unwrap_or("")
    }

    /// The list of what `d` gave up.
    fn gave_up_link(&self, d: &DestinationView) -> String {
        let name: String = form_urlencoded::byte_serialize(d.name.as_bytes()).collect();
        format!("/events?state=dead&destination={name}")
    }
}

pub async fn list(
    State(s): State<super::Shared>,
    Extension(op): Extension<Operator>,
    Query(d): Query<Done>,
) -> Result<Response, HtmlError> {
    let chrome = Chrome::new(&s, &op, "destinations", d.done).await?;
    let rows = s.store.destinations(s.now()).await?;
    Ok(render(&DestinationsPage {
        chrome,
        one: None,
        rows,
        audit: Vec::new(),
    }))
}

pub async fn page(
    State(s): State<super::Shared>,
    Extension(op): Extension<Operator>,
    Path(name): Path<String>,
    Query(d): Query<Done>,
) -> Result<Response, HtmlError> {
    let chrome = Chrome::new(&s, &op, "destinations", d.done).await?;
    let one = s
        .store
        .destination(&name, s.now())
        .await?
        .ok_or_else(|| HtmlError::not_found("destination"))?;
    Ok(render(&DestinationsPage {
        chrome,
        audit: audit_of(&s, format!("destination:{name}")).await?,
        one: Some(name),
        rows: vec![one],
    }))
}

#[derive(Deserialize)]
pub struct ActForm {
    #[serde(default)]
    csrf: String,
    /// Recover: RFC 3339, or a browser's `YYYY-MM-DDTHH:MM` (UTC); empty:
    /// since the failure's start.
    since: Option<String>,
}

fn back(name: &str, audit: i64) -> Response {
    let path: String = form_urlencoded::byte_serialize(name.as_bytes()).collect();
    see_other(&format!("/destinations/{path}?done={audit}"))
}

pub async fn enable(
    State(s): State<super::Shared>,
    Extension(op): Extension<Operator>,
    Path(name): Path<String>,
    Form(f): Form<ActForm>,
) -> Result<Response, HtmlError> {
    if !csrf_ok(&op, &f.csrf) {
        return Err(HtmlError::stale());
    }
    let acted = s
        .actions()
        .enable_destination(&Actor::operator(&op.name), &name)
        .await?;
    Ok(back(&name, acted.audit))
}

pub async fn recover(
    State(s): State<super::Shared>,
    Extension(op): Extension<Operator>,
    Path(name): Path<String>,
    Form(f): Form<ActForm>,
) -> Result<Response, HtmlError> {
    if !csrf_ok(&op, &f.csrf) {
        return Err(HtmlError::stale());
    }
    let text = f.since.unwrap_or_default();
    let since = match text.trim() {
        "" => None,
        text => Some(parse_since(text).ok_or_else(|| {
            HtmlError::bad("since must be a time such as 2026-11-22T14:05:00Z (UTC)")
        })?),
    };
    let acted = s
        .actions()
        .recover_destination(&Actor::operator(&op.name), &name, since)
        .await?;
    Ok(back(&name, acted.audit))
}

/// RFC 3339, or `YYYY-MM-DDTHH:MM[:SS]` read as UTC (a `datetime-local`
/// input).
fn parse_since(text: &str) -> Option<i64> {
    if let Ok(t) = text.parse::<jiff::Timestamp>() {
        return Some(t.as_millisecond());
    }
    let civil: jiff::civil::DateTime = text.parse().ok()?;
    civil
        .to_zoned(jiff::tz::TimeZone::UTC)
        .ok()
        .map(|z| z.timestamp().as_millisecond())
}

#[cfg(test)]
mod tests {
    #[test]
    fn since_is_rfc3339_or_a_browser_time_in_utc() {
        assert_eq!(super::parse_since("1970-01-01T00:01:00Z"), Some(60_000));
        assert_eq!(super::parse_since("1970-01-01T00:01"), Some(60_000));
        assert_eq!(super::parse_since("yesterday"), None);
    }
}
