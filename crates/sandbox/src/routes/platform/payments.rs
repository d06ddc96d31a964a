//! The classic API's routes: card tokens, payments (create, get, search,
//! cancel, capture), their refunds, merchant orders, chargebacks.

use axum::Router;
use axum::extract::{Extension, State};
use axum::routing::{get, post};
use http::{HeaderMap, StatusCode, Uri};

use super::super::extract::{Raw, Seg};
use super::super::{Answer, Sb, json};
use super::Account;
use crate::ops::{card_tokens, merchant_orders, payments, read, refunds, search};

pub(super) fn routes() -> Router<Sb> {
    Router::new()
        .route("/v1/card_tokens", post(create_card_token))
        .route("/v1/card_tokens/{id}", get(get_card_token))
        .route("/v1/payments", post(create_payment))
        .route("/v1/payments/search", get(search_payments))
        .route("/v1/payments/{id}", get(get_payment).put(update_payment))
        .route(
            "/v1/payments/{id}/refunds",
            post(create_refund).get(list_refunds),
        )
        .route("/v1/payments/{id}/refunds/{refund}", get(get_refund))
        .route("/merchant_orders", post(create_merchant_order))
        .route("/merchant_orders/search", get(search_merchant_orders))
        .route(
            "/merchant_orders/{id}",
            get(get_merchant_order).put(update_merchant_order),
        )
        .route("/v1/chargebacks/search", get(search_chargebacks))
        .route("/v1/chargebacks/{id}", get(get_chargeback))
}

async fn create_card_token(State(sb): State<Sb>, Extension(a): Account, Raw(body): Raw) -> Answer {
    json(
        StatusCode::CREATED,
        &card_tokens::create(&sb, &a, &body).await?,
    )
}

async fn get_card_token(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg(id): Seg<String>,
) -> Answer {
    let token = read::fetch(&sb, &a, "card_token", &id, "Card Token not found").await?;
    json(StatusCode::OK, &token)
}

async fn create_payment(State(sb): State<Sb>, Extension(a): Account, Raw(body): Raw) -> Answer {
    json(
        StatusCode::CREATED,
        &payments::create(&sb, &a, &body).await?,
    )
}

async fn search_payments(State(sb): State<Sb>, Extension(a): Account, uri: Uri) -> Answer {
    let found = search::payments(&sb, &a, uri.query().unwrap_or("")).await?;
    json(StatusCode::OK, &found)
}

async fn get_payment(State(sb): State<Sb>, Extension(a): Account, Seg(id): Seg<String>) -> Answer {
    let payment = read::fetch(&sb, &a, "payment", &id, "Payment not found").await?;
    json(StatusCode::OK, &payment)
}

async fn update_payment(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg(id): Seg<String>,
    Raw(body): Raw,
) -> Answer {
    json(
        StatusCode::OK,
        &payments::update(&sb, &a, &id, &body).await?,
    )
}

async fn create_refund(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg(id): Seg<String>,
    headers: HeaderMap,
    Raw(body): Raw,
) -> Answer {
    let key = headers
        .get("x-idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let refund = refunds::create(&sb, &a, &id, key, &body).await?;
    json(StatusCode::CREATED, &refund)
}

async fn list_refunds(State(sb): State<Sb>, Extension(a): Account, Seg(id): Seg<String>) -> Answer {
    json(StatusCode::OK, &refunds::list(&sb, &a, &id).await?)
}

async fn get_refund(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg((id, refund)): Seg<(String, String)>,
) -> Answer {
    json(StatusCode::OK, &refunds::get(&sb, &a, &id, &refund).await?)
}

async fn create_merchant_order(
    State(sb): State<Sb>,
    Extension(a): Account,
    Raw(body): Raw,
) -> Answer {
    let order = merchant_orders::create(&sb, &a, &body).await?;
    json(StatusCode::CREATED, &order)
}

async fn search_merchant_orders(State(sb): State<Sb>, Extension(a): Account, uri: Uri) -> Answer {
    let found = search::merchant_orders(&sb, &a, uri.query().unwrap_or("")).await?;
    json(StatusCode::OK, &found)
}

async fn get_merchant_order(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg(id): Seg<String>,
) -> Answer {
    let order = read::fetch(&sb, &a, "merchant_order", &id, "Merchant order not found").await?;
    json(StatusCode::OK, &order)
}

async fn update_merchant_order(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg(id): Seg<String>,
    Raw(body): Raw,
) -> Answer {
    let order = merchant_orders::update(&sb, &a, &id, &body).await?;
    json(StatusCode::OK, &order)
}

async fn search_chargebacks(State(sb): State<Sb>, Extension(a): Account, uri: Uri) -> Answer {
    let found = search::chargebacks(&sb, &a, uri.query().unwrap_or("")).await?;
    json(StatusCode::OK, &found)
}

async fn get_chargeback(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg(id): Seg<String>,
) -> Answer {
    let cb = read::fetch(&sb, &a, "chargeback", &id, "Chargeback not found").await?;
    json(StatusCode::OK, &cb)
}
