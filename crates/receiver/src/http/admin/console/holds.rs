//! Holds of every kind: `/holds/{id}` (the hold, its evidence, its audit)
//! and the one route that answers any of them, `POST /holds/{id}/{action}`
//! (`approve` or `reject`): the session's CSRF token, a second
//! confirmation naming what the answer does, then `actions`, audited.

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Extension, Form};

use super::super::session::Operator;
use super::act::{ActForm, back_to, check};
use super::item_views::HoldItem;
use super::{Chrome, Done};
use crate::domain::{HoldAnswer, HoldState};
use crate::http::admin::html::{HtmlError, number, render};
use crate::operators::Actor;
use crate::rules::holds::FRAUD_REVIEW;
use crate::store::console_views::AuditView;

#[derive(Template)]
#[template(path = "console/hold.html")]
struct HoldPage {
    chrome: Chrome,
    i: HoldItem,
    audit: Vec<AuditView>,
}

pub async fn page(
    State(s): State<super::Shared>,
    Extension(op): Extension<Operator>,
    Path(text): Path<String>,
    Query(done): Query<Done>,
) -> Result<Response, HtmlError> {
    let id = number(&text)?;
    let h = s
        .store
        .hold(id)
        .await?
        .ok_or_else(|| HtmlError::not_found("hold"))?;
    if h.kind == FRAUD_REVIEW.name {
        // A fraud review's page shows its deliveries and what confirming
        // it would undo; its buttons come back to this route.
        return Ok(Redirect::to(&format!("/fraud-reviews/{id}")).into_response());
    }
    Ok(render(&HoldPage {
        chrome: Chrome::new(&s, &op, "inbox", done.done).await?,
        audit: super::items::audit_of(&s, format!("hold:{id}")).await?,
        i: HoldItem::of(h),
    }))
}

#[derive(Template)]
#[template(path = "console/hold_confirm.html")]
struct ConfirmPage {
    chrome: Chrome,
    i: HoldItem,
    action: &'static str,
    does: String,
}

pub async fn answer(
    State(s): State<super::Shared>,
    Extension(op): Extension<Operator>,
    Path((text, action)): Path<(String, String)>,
    Form(f): Form<ActForm>,
) -> Result<Response, HtmlError> {
    check(&op, &f.csrf)?;
    let id = number(&text)?;
    let answer = HoldAnswer::parse(&action).ok_or_else(|| HtmlError::not_found("action"))?;
    let h = s
        .store
        .hold(id)
        .await?
        .ok_or_else(|| HtmlError::not_found("hold"))?;
    if f.sure.as_deref() != Some("yes") && h.state == HoldState::Held {
        let does = s.actions().hold_words(&h, answer).await?;
        return Ok(render(&ConfirmPage {
            chrome: Chrome::new(&s, &op, "inbox", None).await?,
            i: HoldItem::of(h),
            action: answer.as_str(),
            does,
        }));
    }
    let acted = s
        .actions()
        .answer_hold(&Actor::operator(&op.name), id, answer)
        .await?;
    Ok(back_to(None, format!("/holds/{id}"), acted.audit))
}
