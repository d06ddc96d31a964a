//! The sandbox and pointhook wired together: an intent on an emulated
//! terminal, in scaled real time, reaches the merchant.

use std::sync::Arc;
use std::time::Duration;

use pointhook::clock::SystemClock;
use pointhook_sandbox::AccountSpec;
use reqwest::Method;
use serde_json::{Value, json};

use super::*;
use crate::platform::Merchant;

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
    let (status, intent) = api(
        &sb,
        Method::POST,
        &format!("/point/integration-api/devices/{DEVICE}/payment-intents"),
        Some(json!({"amount": 2500, "additional_info": {"external_reference": "table-3"}})),
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
