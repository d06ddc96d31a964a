//! The control API's routes that act on one account's resources: merchant
//! orders and their payments and shipments, payments' statuses, presets,
//! chargebacks, fraud alerts, devices and their presets and events,
//! resources stored whole, payment intents, Orders API terminals, and
//! recorded notifications sent again, a Checkout Pro preference paid,
//! the account's site.

use axum::Router;
use axum::extract::{Extension, State};
use axum::routing::{post, put};
use http::StatusCode;

use super::super::extract::{JsonBody, Seg};
use super::super::{Answer, Sb, json};
use super::Ctl;
use crate::ops::{admin, catalog, checkout, control, devices, intents, orders, replay};

pub(super) fn routes() -> Router<Sb> {
    Router::new()
        .route("/merchant_orders", post(create_order))
        .route("/merchant_orders/{id}/payments", post(add_payment))
        .route("/merchant_orders/{id}/ship", post(ship_order))
        .route("/payments/{id}/status", post(set_payment_status))
        .route(
            "/presets/next_payment_status",
            post(preset_next_payment_status),
        )
        .route("/chargebacks", post(open_chargeback))
        .route("/chargebacks/{id}", post(update_chargeback))
        .route("/fraud_alerts", post(send_fraud_alert))
        .route("/devices", post(add_device))
        .route(
            "/devices/{device}/preset",
            post(set_device_preset).delete(clear_device_preset),
        )
        .route("/devices/{device}/events", post(device_event))
        .route("/resources/{kind}/{id}", put(put_resource))
        .route("/payment_intents", post(create_intent))
        .route("/payment_intents/{id}/state", post(move_intent))
        .route("/terminals/{id}", post(set_terminal_outcome))
        .route("/notifications", post(send_notification))
        .route("/preferences/{id}/pay", post(pay_preference))
        .route("/site", post(set_site))
}

async fn pay_preference(
    State(sb): State<Sb>,
    Extension(a): Ctl,
    Seg(id): Seg<String>,
    JsonBody(v): JsonBody,
) -> Answer {
    let paid = checkout::pay_by_control(&sb, &a, &id, &v).await?;
    json(StatusCode::CREATED, &paid)
}

async fn set_site(State(sb): State<Sb>, Extension(a): Ctl, JsonBody(v): JsonBody) -> Answer {
    json(StatusCode::OK, &catalog::set_site(&sb, &a, &v).await?)
}

async fn create_order(State(sb): State<Sb>, Extension(a): Ctl, JsonBody(v): JsonBody) -> Answer {
    json(StatusCode::CREATED, &control::new_order(&sb, &a, &v).await?)
}

async fn add_payment(
    State(sb): State<Sb>,
    Extension(a): Ctl,
    Seg(id): Seg<String>,
    JsonBody(v): JsonBody,
) -> Answer {
    json(
        StatusCode::CREATED,
        &control::pay_order(&sb, &a, &id, &v).await?,
    )
}

async fn ship_order(
    State(sb): State<Sb>,
    Extension(a): Ctl,
    Seg(id): Seg<String>,
    JsonBody(v): JsonBody,
) -> Answer {
    json(
        StatusCode::OK,
        &control::ship_order(&sb, &a, &id, &v).await?,
    )
}

async fn set_payment_status(
    State(sb): State<Sb>,
    Extension(a): Ctl,
    Seg(id): Seg<String>,
    JsonBody(v): JsonBody,
) -> Answer {
    let payment = control::set_payment_status(&sb, &a, &id, &v).await?;
    json(StatusCode::OK, &payment)
}

async fn preset_next_payment_status(
    State(sb): State<Sb>,
    Extension(a): Ctl,
    JsonBody(v): JsonBody,
) -> Answer {
    let preset = control::preset_next_payment_status(&sb, &a, &v).await?;
    json(StatusCode::OK, &preset)
}

async fn open_chargeback(State(sb): State<Sb>, Extension(a): Ctl, JsonBody(v): JsonBody) -> Answer {
    json(
        StatusCode::CREATED,
        &control::new_chargeback(&sb, &a, &v).await?,
    )
}

async fn update_chargeback(
    State(sb): State<Sb>,
    Extension(a): Ctl,
    Seg(id): Seg<String>,
    JsonBody(v): JsonBody,
) -> Answer {
    let cb = control::update_chargeback(&sb, &a, &id, &v).await?;
    json(StatusCode::OK, &cb)
}

async fn send_fraud_alert(
    State(sb): State<Sb>,
    Extension(a): Ctl,
    JsonBody(v): JsonBody,
) -> Answer {
    json(
        StatusCode::ACCEPTED,
        &control::fraud_alert(&sb, &a, &v).await?,
    )
}

async fn add_device(State(sb): State<Sb>, Extension(a): Ctl, JsonBody(v): JsonBody) -> Answer {
    json(StatusCode::CREATED, &admin::add_device(&sb, &a, &v).await?)
}

async fn set_device_preset(
    State(sb): State<Sb>,
    Extension(a): Ctl,
    Seg(device): Seg<String>,
    JsonBody(v): JsonBody,
) -> Answer {
    let preset = devices::set_preset(&sb, &a, &device, &v).await?;
    json(StatusCode::OK, &preset)
}

async fn clear_device_preset(
    State(sb): State<Sb>,
    Extension(a): Ctl,
    Seg(device): Seg<String>,
) -> Answer {
    json(
        StatusCode::OK,
        &devices::clear_preset(&sb, &a, &device).await?,
    )
}

async fn device_event(
    State(sb): State<Sb>,
    Extension(a): Ctl,
    Seg(device): Seg<String>,
    JsonBody(v): JsonBody,
) -> Answer {
    let event = admin::device_event(&sb, &a, &device, &v).await?;
    json(StatusCode::ACCEPTED, &event)
}

async fn put_resource(
    State(sb): State<Sb>,
    Extension(a): Ctl,
    Seg((kind, id)): Seg<(String, String)>,
    JsonBody(v): JsonBody,
) -> Answer {
    let stored = admin::put_resource(&sb, &a, &kind, &id, &v).await?;
    json(StatusCode::OK, &stored)
}

async fn create_intent(State(sb): State<Sb>, Extension(a): Ctl, JsonBody(v): JsonBody) -> Answer {
    json(
        StatusCode::CREATED,
        &intents::create_intent(&sb, &a, &v).await?,
    )
}

async fn move_intent(
    State(sb): State<Sb>,
    Extension(a): Ctl,
    Seg(id): Seg<String>,
    JsonBody(v): JsonBody,
) -> Answer {
    json(
        StatusCode::OK,
        &intents::move_intent(&sb, &a, &id, &v).await?,
    )
}

async fn set_terminal_outcome(
    State(sb): State<Sb>,
    Extension(a): Ctl,
    Seg(id): Seg<String>,
    JsonBody(v): JsonBody,
) -> Answer {
    let preset = orders::set_terminal_outcome(&sb, &a, &id, &v).await?;
    json(StatusCode::OK, &preset)
}

async fn send_notification(
    State(sb): State<Sb>,
    Extension(a): Ctl,
    JsonBody(v): JsonBody,
) -> Answer {
    json(StatusCode::ACCEPTED, &replay::send(&sb, &a, &v).await?)
}
