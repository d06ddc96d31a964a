//! pointhook receiving from the real sandbox end to end: the sandbox's
//! notifications in, the sandbox's API read, the merchant told.

use std::sync::Arc;
use std::time::Duration;

use pointhook_common::clock::SystemClock;
use pointhook_sandbox::AccountSpec;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::*;
use crate::platform::{
    Merchant, RunningSandbox, TOKEN, account, start_sandbox, wait_for_event, wait_for_event_where,
    wired,
};

const DEVICE: &str = "GERTEC_MP35P__8701012051267123";

#[tokio::test]
async fn end_to_end_a_payment_approved_releases_the_order() {
    let (sb, app, _merchant) = wired().await;
    let (_, order) = sb
        .control(
            "merchant_orders",
            json!({"total_amount": 100, "external_reference": "o-1"}),
        )
        .await;
    sb.control(
        &format!("merchant_orders/{}/payments", order["id"]),
        json!({"amount": 100}),
    )
    .await;
    let data = wait_for_event(&app, "order.released").await;
    assert_eq!(data["merchant_order_id"], order["id"].to_string());
    assert_eq!(data["paid_amount"], "100.00");
    app.stop().await;
    sb.stop().await;
}

#[tokio::test]
async fn end_to_end_confirmation_required_is_confirmed() {
    let (sb, app, _merchant) = wired().await;
    let (_, intent) = sb
        .control(
            "payment_intents",
            json!({"amount": 1500, "external_reference": "table-12", "ticket_number": "T-9"}),
        )
        .await;
    let id = intent["id"].as_str().unwrap();
    let (status, _) = sb
        .control(
            &format!("payment_intents/{id}/state"),
            json!({"state": "CONFIRMATION_REQUIRED"}),
        )
        .await;
    assert_eq!(status, 200);
    let data = wait_for_event(&app, "payment_intent.confirmed").await;
    assert_eq!(data["payment_intent_id"], id);
    assert_eq!(data["external_reference"], "table-12");
    assert_eq!(data["ticket_number"], "T-9");
    app.stop().await;
    sb.stop().await;
}

#[tokio::test]
async fn end_to_end_a_fraud_alert_blocks_the_order_and_holds_it() {
    let (sb, app, _merchant) = wired().await;
    let (_, order) = sb
        .control("merchant_orders", json!({"total_amount": 100}))
        .await;
    let (_, payment) = sb
        .control(
            &format!("merchant_orders/{}/payments", order["id"]),
            json!({"amount": 100, "status": "in_process"}),
        )
        .await;
    let (status, _) = sb
        .control("fraud_alerts", json!({"merchant_order": order["id"], "payment_id": payment["id"], "description": "stop"}))
        .await;
    assert_eq!(status, 202);
    wait_for_event(&app, "order.blocked").await;
    // The account has no secret: nothing authenticates the alert, so a
    // person decides and no money moves.
    let held = wait_for_event(&app, "fraud_alert.unverified").await;
    assert_eq!(held["payment_id"], payment["id"].to_string());
    assert_eq!(held["description"], Value::Null, "no unauthenticated text");
    let (_, now) = answer(
        client()
            .get(format!("{}/v1/payments/{}", sb.url, payment["id"]))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(now["status"], "in_process", "nothing was cancelled");
    // An approval arriving after the block releases nothing: once the
    // approval is told, the order's rule has run.
    sb.control(
        &format!("payments/{}/status", payment["id"]),
        json!({"status": "approved"}),
    )
    .await;
    let told = wait_for_event_where(&app, "payment.updated", |d| d["status"] == "approved").await;
    assert_eq!(told["payment_id"], payment["id"].to_string());
    assert!(!app.event_types().contains(&"order.released".to_string()));
    app.stop().await;
    sb.stop().await;
}

#[tokio::test]
async fn end_to_end_a_signed_fraud_alert_webhook_moves_money() {
    let merchant = Merchant::start().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let notifications = format!("http://{}/notifications", listener.local_addr().unwrap());
    let sb = start_sandbox(
        vec![AccountSpec {
            webhook_url: Some(notifications.clone()),
            webhook_secret: Some(SECRET.into()),
            ..account(None)
        }],
        Arc::new(SystemClock),
        0.01,
        true,
        None,
    )
    .await;
    let app = spawn_app_with(TestConfig {
        worker_loop: true,
        listener: Some(listener),
        accounts: format!(
            "[[accounts]]\nname = \"default\"\naccess_token = \"{TOKEN}\"\nwebhook_secret = \"{SECRET}\"\n"
        ),
        ..TestConfig::default().api(&sb.url).extra(&merchant.config())
    })
    .await;
    let (_, order) = sb
        .control("merchant_orders", json!({"total_amount": 100}))
        .await;
    let (_, payment) = sb
        .control(
            &format!("merchant_orders/{}/payments", order["id"]),
            json!({"amount": 100, "status": "in_process"}),
        )
        .await;
    sb.control(
        "fraud_alerts",
        json!({"merchant_order": order["id"], "payment_id": payment["id"]}),
    )
    .await;
    let data = wait_for_event(&app, "payment.cancelled").await;
    assert_eq!(data["payment_id"], payment["id"].to_string());
    assert!(
        !app.event_types()
            .contains(&"fraud_alert.unverified".to_string())
    );
    app.stop().await;
    sb.stop().await;
}

/// The sandbox and pointhook wired together with a webhook secret on both
/// sides, a device on the account, and terminal steps of `TERMINAL_STEP`
/// at `time_scale`.
pub(super) async fn wired_point(time_scale: f64) -> (RunningSandbox, TestApp, Merchant) {
    let merchant = Merchant::start().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let notifications = format!("http://{}/notifications", listener.local_addr().unwrap());
    let sb = start_sandbox(
        vec![AccountSpec {
            webhook_url: Some(notifications.clone()),
            webhook_secret: Some(SECRET.into()),
            devices: vec![DEVICE.into()],
            ..account(Some(notifications))
        }],
        Arc::new(SystemClock),
        time_scale,
        true,
        None,
    )
    .await;
    let app = spawn_app_with(TestConfig {
        worker_loop: true,
        listener: Some(listener),
        accounts: format!(
            "[[accounts]]\nname = \"default\"\naccess_token = \"{TOKEN}\"\nwebhook_secret = \"{SECRET}\"\n"
        ),
        ..TestConfig::default().api(&sb.url).extra(&merchant.config())
    })
    .await;
    (sb, app, merchant)
}

/// The event of `kind` for `intent` that the merchant received.
pub(super) async fn merchant_got(merchant: &Merchant, kind: &str, intent: &str) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let found = merchant
            .received()
            .await
            .into_iter()
            .filter_map(|r| serde_json::from_slice::<Value>(&r.body).ok())
            .find(|b| b["type"] == kind && b["data"]["payment_intent_id"] == intent);
        if let Some(event) = found {
            return event;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the merchant got no {kind} for {intent}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// An intent on an emulated terminal, in scaled real time, reaches the
/// merchant through pointhook as `payment_intent.finished`.
#[tokio::test]
async fn end_to_end_a_terminal_intent_finishes_at_the_merchant() {
    let (sb, app, merchant) = wired_point(0.02).await;
    let (status, intent) = answer(
        client()
            .request(
                Method::POST,
                format!(
                    "{}/point/integration-api/devices/{DEVICE}/payment-intents",
                    sb.url
                ),
            )
            .bearer_auth(TOKEN)
            .json(&json!({"amount": 2500, "additional_info": {"external_reference": "table-3"}}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 201);
    let id = intent["id"].as_str().unwrap();
    let event = merchant_got(&merchant, "payment_intent.finished", id).await;
    assert_eq!(event["data"]["amount"], "25.00");
    assert_eq!(event["data"]["device_id"], DEVICE);
    assert_eq!(event["data"]["external_reference"], "table-3");
    app.stop().await;
    sb.stop().await;
}
