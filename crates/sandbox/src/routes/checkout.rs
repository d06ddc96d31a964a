//! The checkout page a preference's `init_point` leads to: plain HTML that
//! works without JavaScript, where a tester pays with a test card and a
//! cardholder name, then is sent back to the shop. No Bearer token: the
//! preference's id is what the buyer holds, as on the platform; the
//! guard still refuses cross-site posts and foreign hosts.

use askama::Template;
use axum::Router;
use axum::extract::State;
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use http::{StatusCode, Uri};
use serde_json::Value;

use super::Sb;
use super::extract::Raw;
use crate::error::HttpError;
use crate::ops::checkout::{self, Attempt, Checkout, TEST_CARD};
use crate::ops::shapes::json_id_text;
use pointhook_common::query::Query;

pub(super) fn routes(sb: Sb) -> Router {
    Router::new()
        .route("/checkout/v1/redirect", get(page))
        .route("/checkout/v1/pay", post(pay))
        .with_state(sb)
}

#[derive(Template)]
#[template(path = "checkout.html")]
struct Page {
    preference_id: String,
    items: Vec<(String, String, String)>,
    currency: String,
    total: String,
    email: String,
    methods: Vec<(String, String)>,
    installments: Vec<u64>,
    id_type: String,
    open: bool,
    problem: Option<String>,
}

#[derive(Template)]
#[template(path = "checkout_result.html")]
struct Result_ {
    status: String,
    status_detail: String,
    payment_id: String,
    order_id: String,
    back_url: Option<String>,
}

fn html(status: StatusCode, t: &impl Template) -> Response {
    match t.render() {
        Ok(body) => (status, Html(body)).into_response(),
        Err(e) => HttpError::internal(e).into_response(),
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        other => json_id_text(other),
    }
}

fn render(c: &Checkout, status: StatusCode, problem: Option<String>) -> Response {
    let p = &c.preference;
    let items = p["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|i| {
            (
                text(&i["title"]),
                text(&i["quantity"]),
                text(&i["unit_price"]),
            )
        })
        .collect();
    let max = p["payment_methods"]["installments"]
        .as_u64()
        .unwrap_or(12)
        .clamp(1, 36);
    let page = Page {
        preference_id: text(&p["id"]),
        items,
        currency: text(&p["items"][0]["currency_id"]),
        total: text(&p["total_amount"]),
        email: p["payer"]["email"]
            .as_str()
            .filter(|e| !e.is_empty())
            .unwrap_or("test_user_buyer@testuser.com")
            .into(),
        // The test card the form is filled with is a Mastercard.
        methods: {
            let mut m: Vec<(String, String)> = c
                .methods
                .iter()
                .map(|m| (text(&m["id"]), text(&m["name"])))
                .collect();
            m.sort_by_key(|(id, _)| id != "master");
            m
        },
        installments: (1..=max).collect(),
        id_type: if p["site_id"] == "MLB" {
            "CPF".into()
        } else {
            "DNI".into()
        },
        open: c.closed.is_none(),
        problem: problem.or_else(|| c.closed.clone()),
    };
    html(status, &page)
}

/// `GET /checkout/v1/redirect?pref_id=ID`.
async fn page(State(sb): State<Sb>, uri: Uri) -> Response {
    let q = Query::parse(uri.query().unwrap_or(""));
    let id = q.get("pref_id").unwrap_or_default().to_string();
    match checkout::open(&sb, &id).await {
        Ok(c) => render(&c, StatusCode::OK, None),
        Err(e) => e.into_response(),
    }
}

/// `POST /checkout/v1/pay` (a form): pays, then sends the buyer to the
/// back URL when `auto_return` says so, else shows the outcome with a
/// link back; an attempt the checkout does not offer shows the page again
/// with the reason (400).
async fn pay(State(sb): State<Sb>, Raw(body): Raw) -> Response {
    let form: std::collections::HashMap<String, String> =
        url::form_urlencoded::parse(&body).into_owned().collect();
    let field = |k: &str, default: &str| {
        form.get(k)
            .map(|v| v.trim().to_string())
            .unwrap_or_else(|| default.into())
    };
    let checkout = match checkout::open(&sb, &field("pref_id", "")).await {
        Ok(c) => c,
        Err(e) => return e.into_response(),
    };
    let attempt = Attempt {
        cardholder_name: field("cardholder_name", ""),
        card_number: field("card_number", TEST_CARD),
        email: field("email", ""),
        payment_method_id: field("payment_method_id", ""),
        installments: field("installments", "1").parse().unwrap_or(0),
        identification_type: field("identification_type", ""),
        identification_number: field("identification_number", ""),
    };
    let checked = match checkout::check(&checkout, &attempt) {
        Ok(c) => c,
        Err(why) => return render(&checkout, StatusCode::BAD_REQUEST, Some(why)),
    };
    let paid = match checkout::pay(&sb, checkout, attempt, checked).await {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    if let (Some(url), true) = (&paid.back_url, paid.auto_return) {
        return Redirect::to(url).into_response();
    }
    let result = Result_ {
        status: text(&paid.payment["status"]),
        status_detail: text(&paid.payment["status_detail"]),
        payment_id: text(&paid.payment["id"]),
        order_id: text(&paid.order["id"]),
        back_url: paid.back_url,
    };
    html(StatusCode::OK, &result)
}
