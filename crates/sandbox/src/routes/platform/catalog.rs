//! What the SDKs read before a payment: payment methods, identification
//! types, the user; customers and their saved cards.

use axum::Router;
use axum::extract::{Extension, State};
use axum::routing::get;
use http::{StatusCode, Uri};

use super::super::extract::{Raw, Seg};
use super::super::{Answer, Sb, json};
use super::Account;
use crate::ops::{catalog, customers};

pub(super) fn routes() -> Router<Sb> {
    Router::new()
        .route("/v1/payment_methods", get(payment_methods))
        .route("/v1/identification_types", get(identification_types))
        .route("/users/me", get(me))
        .route("/v1/customers", axum::routing::post(create_customer))
        .route("/v1/customers/search", get(search_customers))
        .route(
            "/v1/customers/{id}",
            get(get_customer)
                .put(update_customer)
                .delete(delete_customer),
        )
        .route("/v1/customers/{id}/cards", get(list_cards).post(add_card))
        .route(
            "/v1/customers/{id}/cards/{card}",
            get(get_card).put(update_card).delete(delete_card),
        )
}

async fn payment_methods(State(sb): State<Sb>, Extension(a): Account) -> Answer {
    json(StatusCode::OK, &catalog::payment_methods(&sb, &a).await?)
}

async fn identification_types(State(sb): State<Sb>, Extension(a): Account) -> Answer {
    json(
        StatusCode::OK,
        &catalog::identification_types(&sb, &a).await?,
    )
}

async fn me(State(sb): State<Sb>, Extension(a): Account) -> Answer {
    json(StatusCode::OK, &catalog::me(&sb, &a).await?)
}

async fn create_customer(State(sb): State<Sb>, Extension(a): Account, Raw(body): Raw) -> Answer {
    json(
        StatusCode::CREATED,
        &customers::create(&sb, &a, &body).await?,
    )
}

async fn search_customers(State(sb): State<Sb>, Extension(a): Account, uri: Uri) -> Answer {
    json(
        StatusCode::OK,
        &customers::search(&sb, &a, uri.query().unwrap_or("")).await?,
    )
}

async fn get_customer(State(sb): State<Sb>, Extension(a): Account, Seg(id): Seg<String>) -> Answer {
    json(StatusCode::OK, &customers::get(&sb, &a, &id).await?)
}

async fn update_customer(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg(id): Seg<String>,
    Raw(body): Raw,
) -> Answer {
    json(
        StatusCode::OK,
        &customers::update(&sb, &a, &id, &body).await?,
    )
}

async fn delete_customer(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg(id): Seg<String>,
) -> Answer {
    json(StatusCode::OK, &customers::delete(&sb, &a, &id).await?)
}

async fn list_cards(State(sb): State<Sb>, Extension(a): Account, Seg(id): Seg<String>) -> Answer {
    json(StatusCode::OK, &customers::cards(&sb, &a, &id).await?)
}

async fn add_card(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg(id): Seg<String>,
    Raw(body): Raw,
) -> Answer {
    json(
        StatusCode::CREATED,
        &customers::add_card(&sb, &a, &id, &body).await?,
    )
}

async fn get_card(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg((id, card)): Seg<(String, String)>,
) -> Answer {
    json(StatusCode::OK, &customers::card(&sb, &a, &id, &card).await?)
}

async fn update_card(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg((id, card)): Seg<(String, String)>,
    Raw(body): Raw,
) -> Answer {
    let saved = customers::update_card(&sb, &a, &id, &card, &body).await?;
    json(StatusCode::OK, &saved)
}

async fn delete_card(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg((id, card)): Seg<(String, String)>,
) -> Answer {
    json(
        StatusCode::OK,
        &customers::delete_card(&sb, &a, &id, &card).await?,
    )
}
