//! The point-of-sale API's routes: devices and their operating mode,
//! payment intents on devices, intent events, the integrator settings.

use axum::Router;
use axum::extract::{Extension, State};
use axum::routing::{any, delete, get, patch, post};
use http::{Method, StatusCode, Uri};

use super::super::extract::{Raw, Seg};
use super::super::{Answer, Sb, json};
use super::Account;
use crate::ops::terminals::intent_not_found;
use crate::ops::{devices, intents, read, search, terminals};

pub(super) fn routes() -> Router<Sb> {
    Router::new()
        .route("/point/integration-api/devices", get(list_devices))
        .route(
            "/point/integration-api/devices/{device}",
            patch(change_device_mode),
        )
        .route(
            "/point/integration-api/devices/{device}/payment-intents",
            post(create_intent_on_device),
        )
        .route(
            "/point/integration-api/devices/{device}/payment-intents/{id}",
            delete(cancel_intent_on_device),
        )
        .route(
            "/point/integration-api/payment-intents/events",
            get(intent_events_by_date),
        )
        .route(
            "/point/integration-api/payment-intents/{id}",
            get(get_intent),
        )
        .route(
            "/point/integration-api/payment-intents/{id}/events",
            get(intent_last_event),
        )
        .route("/point/integration-api/integrator", any(integrator))
}

async fn list_devices(State(sb): State<Sb>, Extension(a): Account, uri: Uri) -> Answer {
    let listed = devices::list(&sb, &a, uri.query().unwrap_or("")).await?;
    json(StatusCode::OK, &listed)
}

async fn change_device_mode(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg(device): Seg<String>,
    Raw(body): Raw,
) -> Answer {
    let mode = devices::change_mode(&sb, &a, &device, &body).await?;
    json(StatusCode::OK, &mode)
}

async fn create_intent_on_device(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg(device): Seg<String>,
    Raw(body): Raw,
) -> Answer {
    let intent = terminals::create(&sb, &a, &device, &body).await?;
    json(StatusCode::CREATED, &intent)
}

async fn cancel_intent_on_device(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg((device, id)): Seg<(String, String)>,
) -> Answer {
    json(
        StatusCode::OK,
        &terminals::cancel(&sb, &a, &device, &id).await?,
    )
}

/// `GET /point/integration-api/payment-intents/{id}`, with the documented
/// answer for an intent that does not exist.
async fn get_intent(State(sb): State<Sb>, Extension(a): Account, Seg(id): Seg<String>) -> Answer {
    let intent = read::visible(&sb, &a, "payment_intent", &id)
        .await?
        .ok_or_else(intent_not_found)?;
    json(StatusCode::OK, &intent)
}

async fn intent_events_by_date(State(sb): State<Sb>, Extension(a): Account, uri: Uri) -> Answer {
    let events = search::intent_events(&sb, &a, uri.query().unwrap_or("")).await?;
    json(StatusCode::OK, &events)
}

async fn intent_last_event(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg(id): Seg<String>,
) -> Answer {
    json(StatusCode::OK, &terminals::last_event(&sb, &a, &id).await?)
}

async fn integrator(
    State(sb): State<Sb>,
    Extension(a): Account,
    method: Method,
    Raw(body): Raw,
) -> Answer {
    let settings = intents::integrator(&sb, &a, &method, &body).await?;
    json(StatusCode::OK, &settings)
}
