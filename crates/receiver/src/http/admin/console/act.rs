//! The console's actions, POST forms to the item's own path, each with the
//! session's CSRF token, each through `actions` (so recorded in the audit
//! as the signed-in operator), each answered with a redirect to a page
//! that shows how it ended. Confirming a review that moves money asks a
//! second time, naming the amount and whether it is a cancel or a refund;
//! dismissing one, which can release goods, asks a second time too.

use askama::Template;
use axum::extract::{Path, State};
use axum::response::Response;
use axum::{Extension, Form};
use serde::Deserialize;

use super::super::session::{Operator, csrf_ok};
use super::Chrome;
use super::item_views::ReviewItem;
use crate::actions::items::ActError;
use crate::actions::{Done, consequence};
use crate::domain::{ItemAction, ItemKey};
use crate::http::admin::html::{HtmlError, number, render};
use crate::http::admin::redirect::{local, see_other};
use crate::operators::Actor;
use crate::store::Again;

#[derive(Deserialize)]
pub struct ActForm {
    #[serde(default)]
    pub(super) csrf: String,
    /// The page to go back to.
    back: Option<String>,
    /// `yes` once the person confirmed a second time.
    pub(super) sure: Option<String>,
}

pub(super) fn check(op: &Operator, csrf: &str) -> Result<(), HtmlError> {
    if csrf_ok(op, csrf) {
        Ok(())
    } else {
        Err(HtmlError::stale())
    }
}

/// Back to `back` (a path of this listener, its query dropped) or
/// `default`, showing the audit entry.
pub(super) fn back_to(back: Option<&str>, default: String, audit: i64) -> Response {
    let to = local(back, &default);
    let path = to.split('?').next().unwrap_or("/");
    see_other(&format!("{path}?done={audit}"))
}

#[derive(Template)]
#[template(path = "console/confirm.html")]
struct ConfirmPage {
    chrome: Chrome,
    r: ReviewItem,
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
            r: ReviewItem { d, c },
        }));
    }
    let acted = s
        .actions()
        .confirm_review(&Actor::operator(&op.name), id)
        .await?;
    Ok(back_to(None, format!("/fraud-reviews/{id}"), acted.audit))
}

#[derive(Template)]
#[template(path = "console/dismiss.html")]
struct DismissPage {
    chrome: Chrome,
    r: ReviewItem,
}

pub async fn dismiss(
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
    if f.sure.as_deref() != Some("yes") && d.review.state == "held" {
        let chrome = Chrome::new(&s, &op, "inbox", None).await?;
        let c = consequence(&d);
        return Ok(render(&DismissPage {
            chrome,
            r: ReviewItem { d, c },
        }));
    }
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
    let acted = s
        .actions()
        .retry_group(&Actor::operator(&op.name), &f.class, &f.endpoint, f.hour)
        .await?;
    if let Done::Refused(why) = acted.done {
        return Err(HtmlError::status(http::StatusCode::CONFLICT, &why));
    }
    Ok(back_to(None, "/".into(), acted.audit))
}

#[derive(Deserialize)]
pub struct ItemForm {
    #[serde(default)]
    csrf: String,
    item: String,
    action: String,
    /// The account and merchant order the inbox listed it with.
    account: Option<String>,
    order: Option<String>,
    sure: Option<String>,
    back: Option<String>,
}

/// `/items/act`: one action on one item by its typed key, as the CLI and
/// the API act. What asks a second time (a review's or a hold's answer)
/// goes to the item's own page, which asks in its kind's words.
pub async fn item(
    State(s): State<super::Shared>,
    Extension(op): Extension<Operator>,
    Form(f): Form<ItemForm>,
) -> Result<Response, HtmlError> {
    check(&op, &f.csrf)?;
    let key = ItemKey::parse(&f.item).map_err(|_| HtmlError::bad("no such item"))?;
    let action = ItemAction::parse(&f.action).ok_or_else(|| HtmlError::bad("no such action"))?;
    if action.asks_twice() && f.sure.as_deref() != Some("yes") {
        let page = match &key {
            ItemKey::Review(id) => format!("/fraud-reviews/{id}"),
            ItemKey::Hold(id) => format!("/holds/{id}"),
            _ => "/".into(),
        };
        return Ok(see_other(&page));
    }
    let given = |v: Option<String>| v.filter(|v| !v.is_empty());
    let order = match key.order() {
        Some((a, o)) => Some((a.to_string(), o.to_string())),
        None => given(f.account).zip(given(f.order)),
    };
    let acted = s
        .actions()
        .act_about(&Actor::operator(&op.name), &key, action, order)
        .await
        .map_err(|e| match e {
            ActError::NotOffered { .. } => HtmlError::bad("that item offers no such action"),
            ActError::Store(e) => e.into(),
        })?;
    if let Done::Refused(why) = acted.done {
        return Err(HtmlError::status(http::StatusCode::CONFLICT, &why));
    }
    Ok(back_to(f.back.as_deref(), "/".into(), acted.audit))
}

/// "Deliver again": to the destinations that gave the event up or failed it.
pub async fn redeliver(
    state: State<super::Shared>,
    op: Extension<Operator>,
    event: Path<String>,
    f: Form<ActForm>,
) -> Result<Response, HtmlError> {
    again(state, op, event, f, Again::Unfinished).await
}

/// "Deliver again to every destination", those that took it too.
pub async fn redeliver_all(
    state: State<super::Shared>,
    op: Extension<Operator>,
    event: Path<String>,
    f: Form<ActForm>,
) -> Result<Response, HtmlError> {
    again(state, op, event, f, Again::Everywhere).await
}

async fn again(
    State(s): State<super::Shared>,
    Extension(op): Extension<Operator>,
    Path(event): Path<String>,
    Form(f): Form<ActForm>,
    again: Again,
) -> Result<Response, HtmlError> {
    check(&op, &f.csrf)?;
    let acted = s
        .actions()
        .redeliver(&Actor::operator(&op.name), &event, again)
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
    let key = acknowledgeable(&f.item)?;
    let detail = acknowledged_what(&s, &key, &f).await?;
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

/// The item's key, when its kind is acknowledged.
pub(super) fn acknowledgeable(item: &str) -> Result<ItemKey, HtmlError> {
    ItemKey::parse(item)
        .ok()
        .filter(|k| k.kind().offers(ItemAction::Acknowledge))
        .ok_or_else(|| HtmlError::bad("nothing of that kind is acknowledged"))
}

/// What an acknowledgement is about, in the words of the inbox: the order
/// or the notification it names, not the inbox's key.
async fn acknowledged_what(
    s: &super::Shared,
    key: &ItemKey,
    f: &AckForm,
) -> Result<String, HtmlError> {
    let printable = pointhook_common::text::printable;
    let account = f.account.as_deref().filter(|a| !a.is_empty());
    let order = f.order.as_deref().filter(|o| !o.is_empty());
    let of = |account: Option<&str>| {
        account
            .map(|a| format!(" ({})", printable(a)))
            .unwrap_or_default()
    };
    Ok(match (key, order) {
        (ItemKey::Missed(id), _) => match s.store.get_delivery(*id).await? {
            Some(d) => format!(
                "acknowledge a missed notification: {} {}{}",
                printable(&d.summary.topic),
                printable(&d.summary.resource_id),
                of(Some(&d.summary.account))
            ),
            None => format!("acknowledge a missed notification (delivery {id})"),
        },
        (ItemKey::AtRisk { .. }, Some(o)) => format!(
            "acknowledge merchant order {}{} at risk",
            printable(o),
            of(account)
        ),
        (_, Some(o)) => format!(
            "acknowledge merchant order {}{} released before a fraud alert",
            printable(o),
            of(account)
        ),
        (ItemKey::AtRisk { .. }, None) => "acknowledge an order at risk".into(),
        _ => "acknowledge an order released before a fraud alert".into(),
    })
}

/// Every missed notification the inbox lists, acknowledged at once.
pub async fn acknowledge_missed(
    State(s): State<super::Shared>,
    Extension(op): Extension<Operator>,
    Form(f): Form<ActForm>,
) -> Result<Response, HtmlError> {
    check(&op, &f.csrf)?;
    let missed = s
        .store
        .inbox(crate::store::MAX_LIMIT, s.now())
        .await?
        .missed;
    if missed.is_empty() {
        return Err(HtmlError::status(
            http::StatusCode::CONFLICT,
            "no missed notification is left to acknowledge",
        ));
    }
    let named: Vec<String> = missed
        .iter()
        .take(5)
        .map(|m| {
            format!(
                "{} {}",
                pointhook_common::text::printable(&m.delivery.topic),
                pointhook_common::text::printable(&m.delivery.resource_id)
            )
        })
        .collect();
    let more = missed.len().saturating_sub(named.len());
    let detail = format!(
        "acknowledge {} missed notification{}: {}{}",
        missed.len(),
        if missed.len() == 1 { "" } else { "s" },
        named.join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    );
    let items = missed
        .iter()
        .map(|m| ItemKey::Missed(m.delivery.id).to_string())
        .collect();
    let acted = s
        .actions()
        .acknowledge_all(&Actor::operator(&op.name), "missed:all", items, detail)
        .await?;
    Ok(back_to(None, "/".into(), acted.audit))
}
