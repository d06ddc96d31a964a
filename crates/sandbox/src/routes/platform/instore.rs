//! Stores and points of sale: `/users/{user_id}/stores…` and `/pos…`.

use axum::Router;
use axum::extract::{Extension, State};
use axum::response::IntoResponse;
use axum::routing::get;
use http::{StatusCode, Uri};

use super::super::extract::{Raw, Seg};
use super::super::{Answer, Sb, json};
use super::Account;
use crate::ops::stores;

pub(super) fn routes() -> Router<Sb> {
    Router::new()
        .route("/users/{user}/stores", axum::routing::post(create_store))
        .route("/users/{user}/stores/search", get(search_stores))
        .route(
            "/users/{user}/stores/{id}",
            get(get_store).put(update_store),
        )
        .route("/pos", get(search_pos).post(create_pos))
        .route("/pos/{id}", get(get_pos).put(update_pos).delete(delete_pos))
}

async fn create_store(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg(user): Seg<String>,
    Raw(body): Raw,
) -> Answer {
    json(
        StatusCode::CREATED,
        &stores::create_store(&sb, &a, &user, &body).await?,
    )
}

async fn search_stores(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg(user): Seg<String>,
    uri: Uri,
) -> Answer {
    let found = stores::search_stores(&sb, &a, &user, uri.query().unwrap_or("")).await?;
    json(StatusCode::OK, &found)
}

async fn get_store(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg((user, id)): Seg<(String, String)>,
) -> Answer {
    json(
        StatusCode::OK,
        &stores::get_store(&sb, &a, &user, &id).await?,
    )
}

async fn update_store(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg((user, id)): Seg<(String, String)>,
    Raw(body): Raw,
) -> Answer {
    let store = stores::update_store(&sb, &a, &user, &id, &body).await?;
    json(StatusCode::OK, &store)
}

async fn search_pos(State(sb): State<Sb>, Extension(a): Account, uri: Uri) -> Answer {
    json(
        StatusCode::OK,
        &stores::search_pos(&sb, &a, uri.query().unwrap_or("")).await?,
    )
}

async fn create_pos(State(sb): State<Sb>, Extension(a): Account, Raw(body): Raw) -> Answer {
    json(
        StatusCode::CREATED,
        &stores::create_pos(&sb, &a, &body).await?,
    )
}

async fn get_pos(State(sb): State<Sb>, Extension(a): Account, Seg(id): Seg<String>) -> Answer {
    json(StatusCode::OK, &stores::get_pos(&sb, &a, &id).await?)
}

async fn update_pos(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg(id): Seg<String>,
    Raw(body): Raw,
) -> Answer {
    json(
        StatusCode::OK,
        &stores::update_pos(&sb, &a, &id, &body).await?,
    )
}

async fn delete_pos(State(sb): State<Sb>, Extension(a): Account, Seg(id): Seg<String>) -> Answer {
    stores::delete_pos(&sb, &a, &id).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
