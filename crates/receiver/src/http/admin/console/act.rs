//! The console's actions, POST forms to the item's own path, each with the
//! session's CSRF token, each through `actions` (so recorded in the audit
//! as the signed-in operator), each answered with a redirect to a page
//! that shows how it ended. Confirming a review that moves money asks a
//! second time, naming the amount and whether it is a cancel or a refund.

use askama::Template;
use axum::extract::{Path, State};
use axum::response::Response;
use axum::{Extension, Form};
use serde::Deserialize;

use super::super::session::{Operator, csrf_ok};
use super::{Chrome, inbox};
use crate::actions::consequence;
use crate::http::admin::html::{HtmlError, number, render};
use crate::http::admin::redirect::{local, see_other};
use crate::operators::Actor;

#[derive(Deserialize)]
pub struct ActForm {
    #[serde(default)]
    csrf: String,
    /// The page to go back to.
    back: Option<String>,
    /// `yes` once the person confirmed a second time.
    sure: Option<String>,
}

fn check(op: &Operator, csrf: &str) -> Result<(), HtmlError> {
    if csrf_ok(op, csrf) {
        Ok(())
    } else {
        Err(HtmlError::stale())
    }
}

/// Back to `back` (a path of this listener, its query dropped) or
/// `default`, showing the audit entry.
fn back_to(back: Option<&str>, default: String, audit: i64) -> Response {
    let to = local(back, &default);
    let path = to.split('?').next().unwrap_or("/");
    see_other(&format!("{path}?done={audit}"))
}

#[derive(Template)]
#[template(path = "console/confirm.html")]
struct ConfirmPage {
    chrome: Chrome,
    r: inbox::ReviewItem,
}

pub async fn confirm(
    State(s): State<super::Shared>,
    Extension(op): Extension<Operator>,
    Path(text): Path<String>,
    Form(f): Form<ActForm>,
) -> Result<Response, HtmlError> {
    check(&op, &f.csrf)?;
    let id = number(&text)?;
    let d = s
        .store
        .review(id)
        .await?
        .ok_or_else(|| HtmlError::not_found("fraud review"))?;
    let c = consequence(&d);
    if c.moves_money && f.sure.as_deref() != Some("yes") && d.review.state == "held" {
        let chrome = Chrome::new(&s, &op, "inbox", None).await?;
        return Ok(render(&ConfirmPage {
            chrome,
            r: inbox::ReviewItem { d, c },
        }));
    }
    let acted = s
        .actions()
        .confirm_review(&Actor::operator(&op.name), id)
        .await?;
    Ok(back_to(None, format!("/fraud-reviews/{id}"), acted.audit))
}

pub async fn dismiss(
    State(s): State<super::Shared>,
    Extension(op): Extension<Operator>,
    Path(text): Path<String>,
    Form(f): Form<ActForm>,
) -> Result<Response, HtmlError> {
    check(&op, &f.csrf)?;
    let id = number(&text)?;
    let acted = s
        .actions()
        .dismiss_review(&Actor::operator(&op.name), id)
        .await?;
    Ok(back_to(None, format!("/fraud-reviews/{id}"), acted.audit))
}

pub async fn retry(
    State(s): State<super::Shared>,
    Extension(op): Extension<Operator>,
    Path(text): Path<String>,
    Form(f): Form<ActForm>,
) -> Result<Response, HtmlError> {
    check(&op, &f.csrf)?;
    let id = number(&text)?;
    let acted = s
        .actions()
        .retry_job(&Actor::operator(&op.name), id)
        .await?;
    Ok(back_to(
        f.back.as_deref(),
        format!("/jobs/{id}"),
        acted.audit,
    ))
}

#[derive(Deserialize)]
pub struct GroupForm {
    #[serde(default)]
    csrf: String,
    class: String,
    endpoint: String,
    hour: i64,
}

/// Every dead job of one group of the inbox, found again now.
pub async fn retry_group(
    State(s): State<super::Shared>,
    Extension(op): Extension<Operator>,
    Form(f): Form<GroupForm>,
) -> Result<Response, HtmlError> {
    check(&op, &f.csrf)?;
    let dead = s.store.inbox(1, s.now()).await?.dead_jobs;
    let ids: Vec<i64> = inbox::group(
        dead.into_iter()
            .filter(|j| !inbox::is_mismatch(j))
            .collect(),
    )
    .into_iter()
    .filter(|g| g.class == f.class && g.endpoint == f.endpoint && g.hour == f.hour)
    .flat_map(|g| g.jobs.into_iter().map(|j| j.id))
    .collect();
    if ids.is_empty() {
        return Err(HtmlError::status(
            http::StatusCode::CONFLICT,
            "no dead job is left in that group",
        ));
    }
    let what = format!(
        "{} on {} between {} and {}",
        f.class,
        f.endpoint,
        pointhook_common::clock::rfc3339(f.hour),
        pointhook_common::clock::rfc3339(f.hour.saturating_add(3_600_000))
    );
    let group = format!("{}/{}/{}", f.class, f.endpoint, f.hour);
    let acted = s
        .actions()
        .retry_jobs(&Actor::operator(&op.name), ids, &group, &what)
        .await?;
    Ok(back_to(None, "/".into(), acted.audit))
}

pub async fn redeliver(
    State(s): State<super::Shared>,
    Extension(op): Extension<Operator>,
    Path(event): Path<String>,
    Form(f): Form<ActForm>,
) -> Result<Response, HtmlError> {
    check(&op, &f.csrf)?;
    let acted = s
        .actions()
        .redeliver(&Actor::operator(&op.name), &event)
        .await?;
    let page = format!(
        "/events/{}",
        form_urlencoded::byte_serialize(event.as_bytes()).collect::<String>()
    );
    Ok(back_to(f.back.as_deref(), page, acted.audit))
}

#[derive(Deserialize)]
pub struct AckForm {
    #[serde(default)]
    csrf: String,
    item: String,
    account: Option<String>,
    order: Option<String>,
    back: Option<String>,
}

pub async fn acknowledge(
    State(s): State<super::Shared>,
    Extension(op): Extension<Operator>,
    Form(f): Form<AckForm>,
) -> Result<Response, HtmlError> {
    check(&op, &f.csrf)?;
    let kind = ["missed:", "at_risk:", "after_release:"]
        .into_iter()
        .find(|p| f.item.starts_with(p))
        .ok_or_else(|| HtmlError::bad("nothing of that kind is acknowledged"))?;
    let what = match kind {
        "missed:" => "a change found with no notification",
        "at_risk:" => "an order at risk",
        _ => "an order released before a fraud alert",
    };
    let detail = format!(
        "acknowledge {what} ({})",
        pointhook_common::text::printable(&f.item)
    );
    let acted = s
        .actions()
        .acknowledge(
            &Actor::operator(&op.name),
            &f.item,
            f.account.filter(|a| !a.is_empty()),
            f.order.filter(|o| !o.is_empty()),
            detail,
        )
        .await?;
    Ok(back_to(f.back.as_deref(), "/".into(), acted.audit))
}
