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
use super::{Chrome, Done};
use crate::actions::hold_does;
use crate::domain::{HoldAnswer, HoldSeen, HoldState};
use crate::http::admin::html::{HtmlError, number, render};
use crate::operators::Actor;
use crate::rules::holds::{FRAUD_REVIEW, evidence, kind};
use crate::store::console_views::AuditView;

/// A hold as the console shows it, with its kind's words.
pub struct HoldItem {
    pub h: HoldSeen,
    pub title: String,
    pub since: String,
    pub decided: Option<String>,
    pub held: bool,
    pub approve: String,
    pub reject: String,
    /// What the rule read, one line per field.
    pub evidence: Vec<(String, String)>,
}

impl HoldItem {
    pub fn of(h: HoldSeen) -> HoldItem {
        let evidence = match evidence(&h) {
            serde_json::Value::Object(m) => m
                .into_iter()
                .map(|(k, v)| {
                    let v = match v {
                        serde_json::Value::String(s) => s,
                        other => other.to_string(),
                    };
                    (k, v)
                })
                .collect(),
            _ => Vec::new(),
        };
        HoldItem {
            title: kind(&h.kind).map_or_else(|| h.kind.clone(), |k| k.title.to_string()),
            since: pointhook_common::clock::rfc3339(h.created_at),
            decided: h.decided_at.map(pointhook_common::clock::rfc3339),
            held: h.state == HoldState::Held,
            approve: hold_does(&h, HoldAnswer::Approve),
            reject: hold_does(&h, HoldAnswer::Reject),
            evidence,
            h,
        }
    }
}

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
