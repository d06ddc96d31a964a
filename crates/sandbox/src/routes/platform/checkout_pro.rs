//! Checkout Pro's routes: preferences created, read, changed, searched.

use axum::Router;
use axum::extract::{Extension, State};
use axum::routing::{get, post};
use http::{StatusCode, Uri};

use super::super::extract::{Raw, Seg};
use super::super::{Answer, Sb, json};
use super::Account;
use crate::ops::preferences;

pub(super) fn routes() -> Router<Sb> {
    Router::new()
        .route("/checkout/preferences", post(create))
        .route("/checkout/preferences/search", get(search))
        .route("/checkout/preferences/{id}", get(read).put(update))
}

async fn create(State(sb): State<Sb>, Extension(a): Account, Raw(body): Raw) -> Answer {
    json(
        StatusCode::CREATED,
        &preferences::create(&sb, &a, &body).await?,
    )
}

async fn search(State(sb): State<Sb>, Extension(a): Account, uri: Uri) -> Answer {
    let found = preferences::search(&sb, &a, uri.query().unwrap_or("")).await?;
    json(StatusCode::OK, &found)
}

async fn read(State(sb): State<Sb>, Extension(a): Account, Seg(id): Seg<String>) -> Answer {
    json(StatusCode::OK, &preferences::get(&sb, &a, &id).await?)
}

async fn update(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg(id): Seg<String>,
    Raw(body): Raw,
) -> Answer {
    json(
        StatusCode::OK,
        &preferences::update(&sb, &a, &id, &body).await?,
    )
}
