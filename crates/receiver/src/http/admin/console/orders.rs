//! `/orders` (lists by state), `/orders/{id}` (the timeline) and `/search`
//! (any id an order is known by: merchant order, payment, intent, Orders
//! API order, external reference).

use askama::Template;
use axum::Extension;
use axum::extract::{Path, Query, State};
use axum::response::Response;
use serde::Deserialize;

use super::super::session::Operator;
use super::Chrome;
use crate::http::admin::html::{HtmlError, render};
use crate::http::admin::redirect::see_other;
use crate::store::console_views::{Entry, Found, OrderList, OrderRow, Page, Timeline};
use crate::store::views::order_kind;

#[derive(Deserialize)]
pub struct ListQuery {
    state: Option<String>,
    cursor: Option<String>,
}

#[derive(Template)]
#[template(path = "console/orders.html")]
struct OrdersPage {
    chrome: Chrome,
    state: &'static str,
    states: [&'static str; 5],
    page: Page<OrderRow>,
}

pub async fn list(
    State(s): State<super::Shared>,
    Extension(op): Extension<Operator>,
    Query(q): Query<ListQuery>,
) -> Result<Response, HtmlError> {
    let list = match q.state.as_deref() {
        None | Some("") => OrderList::Released,
        Some(st) => OrderList::parse(st).ok_or_else(|| HtmlError::bad("no such state"))?,
    };
    let page = s.store.order_list(list, q.cursor, 50).await?;
    Ok(render(&OrdersPage {
        chrome: Chrome::new(&s, &op, "orders", None).await?,
        state: list.as_str(),
        states: OrderList::ALL.map(OrderList::as_str),
        page,
    }))
}

#[derive(Deserialize, Default)]
pub struct OrderQuery {
    account: Option<String>,
    kind: Option<String>,
    done: Option<i64>,
}

#[derive(Template)]
#[template(path = "console/order.html")]
struct OrderPage {
    chrome: Chrome,
    t: Timeline,
}

impl OrderPage {
    fn title(&self) -> &'static str {
        match self.t.kind {
            "merchant_order" => "Merchant order",
            "platform_order" => "Orders API order",
            "payment_intent" => "Payment intent",
            _ => "Payment",
        }
    }
}

pub async fn page(
    State(s): State<super::Shared>,
    Extension(op): Extension<Operator>,
    Path(id): Path<String>,
    Query(q): Query<OrderQuery>,
) -> Result<Response, HtmlError> {
    let kind = match q.kind.as_deref() {
        None | Some("") => order_kind(&id),
        Some(k) => [
            "merchant_order",
            "platform_order",
            "payment_intent",
            "payment",
        ]
        .into_iter()
        .find(|x| *x == k)
        .ok_or_else(|| HtmlError::bad("no such kind of order"))?,
    };
    let account = q
        .account
        .filter(|a| !a.is_empty())
        .or_else(|| s.default_account.clone())
        .or_else(|| s.accounts.first().cloned())
        .unwrap_or_default();
    let t = s
        .store
        .timeline(account, kind, id)
        .await?
        .ok_or_else(|| HtmlError::not_found("order known to pointhook"))?;
    let mut chrome = Chrome::new(&s, &op, "orders", q.done).await?;
    chrome.q = t.id.clone();
    Ok(render(&OrderPage { chrome, t }))
}

/// The order page of what was found.
pub fn link(f: &Found) -> String {
    let enc = |t: &str| form_urlencoded::byte_serialize(t.as_bytes()).collect::<String>();
    format!(
        "/orders/{}?account={}&kind={}",
        enc(&f.id),
        enc(&f.account),
        f.kind
    )
}

#[derive(Deserialize)]
pub struct SearchQuery {
    q: Option<String>,
}

#[derive(Template)]
#[template(path = "console/search.html")]
struct SearchPage {
    chrome: Chrome,
    found: Vec<(String, Found)>,
}

pub async fn search(
    State(s): State<super::Shared>,
    Extension(op): Extension<Operator>,
    Query(q): Query<SearchQuery>,
) -> Result<Response, HtmlError> {
    let text = q.q.unwrap_or_default().trim().to_string();
    let found = s.store.search(s.accounts.clone(), text.clone()).await?;
    if let [one] = found.as_slice() {
        return Ok(see_other(&link(one)));
    }
    let mut chrome = Chrome::new(&s, &op, "orders", None).await?;
    chrome.q = text;
    Ok(render(&SearchPage {
        chrome,
        found: found.into_iter().map(|f| (link(&f), f)).collect(),
    }))
}

/// For the template: pretty JSON of an entry's data.
pub fn pretty(v: &serde_json::Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

/// For the template: what kind of entry it is.
pub fn entry_kind(e: &Entry) -> &'static str {
    match e {
        Entry::Notification(_) => "notification",
        Entry::ApiCall(_) => "api",
        Entry::Decision(_) => "decision",
        Entry::Event { .. } => "event",
        Entry::Review(_) => "review",
        Entry::Action(_) => "action",
    }
}
