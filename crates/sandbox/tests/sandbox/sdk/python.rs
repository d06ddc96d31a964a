//! The official Python SDK driving the sandbox (`tests/sdk/flow.py`).

use std::sync::Arc;
use std::time::Duration;

use pointhook_common::clock::SystemClock;
use pointhook_sandbox::AccountSpec;
use serde_json::Value;

use super::*;
use crate::runner::{run_script, script, sdk_python, summary};

/// The official Python SDK drives the sandbox: payments (create, search,
/// refunds), merchant orders (create, get, update, search), Point (devices,
/// an intent finished by the terminal, one cancelled), and the sandbox's
/// signed webhooks pass the SDK's `WebhookSignatureValidator`. The intents'
/// webhooks reach the account's URL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_drives_the_sandbox() {
    let Some(python) = sdk_python() else {
        return;
    };
    let target = receiver(&[200]).await;
    let hooks = format!("{}/notifications", target.uri());
    // Steps of half a second: the script cancels its second intent well
    // before the terminal takes it.
    let sb = start_sandbox(
        vec![AccountSpec {
            webhook_url: Some(hooks.clone()),
            webhook_secret: Some(SECRET.into()),
            devices: vec![DEVICE.into()],
            ..account(Some(hooks))
        }],
        Arc::new(SystemClock),
        0.1,
        true,
        None,
    )
    .await;
    let env = [
        ("POINTHOOK_SANDBOX_URL", sb.url.clone()),
        ("POINTHOOK_SANDBOX_TOKEN", TOKEN.to_string()),
        ("POINTHOOK_SANDBOX_SECRET", SECRET.to_string()),
        ("POINTHOOK_SANDBOX_DEVICE", DEVICE.to_string()),
    ];
    let flow = script("flow.py");
    let (status, stdout, stderr) = tokio::task::spawn_blocking(move || {
        run_script(&python, &flow, &env, Duration::from_secs(120))
    })
    .await
    .unwrap();
    assert!(
        status.success(),
        "the SDK flow failed ({status}):\n{stderr}"
    );
    let summary = summary(&stdout, &stderr);
    assert!(summary["signed_webhooks_checked"].as_u64().unwrap() >= 1);
    // Each intent's end went to the account's webhook URL, once, and was
    // taken.
    for intent in ["finished_intent", "cancelled_intent"] {
        let id = summary[intent].as_str().unwrap().to_string();
        let sent = async || -> Vec<Value> {
            sb.log()
                .await
                .into_iter()
                .filter(|d| d["form"] == "intent_webhook" && d["resource_id"] == id.as_str())
                .collect()
        };
        wait_for("the intent's webhook taken", async || {
            sent().await.iter().any(|d| d["state"] == "acked")
        })
        .await;
        assert_eq!(sent().await.len(), 1, "{intent} {id}");
    }
    sb.stop().await;
}

/// The official Python SDK on a fresh sandbox (`tests/sdk/fresh.py`): a
/// card token and a payment for each documented test cardholder name,
/// each with its documented outcome; the device the account starts with,
/// listed, and an intent opened on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_pays_with_test_cards_and_finds_a_device_on_a_fresh_sandbox() {
    let Some(python) = sdk_python() else {
        return;
    };
    let (sb, _clock) = crate::support::on_manual_clock(vec![account(None)]).await;
    let env = [
        ("POINTHOOK_SANDBOX_URL", sb.url.clone()),
        ("POINTHOOK_SANDBOX_TOKEN", TOKEN.to_string()),
    ];
    let fresh = script("fresh.py");
    let (status, stdout, stderr) = tokio::task::spawn_blocking(move || {
        run_script(&python, &fresh, &env, Duration::from_secs(120))
    })
    .await
    .unwrap();
    assert!(
        status.success(),
        "the SDK script failed ({status}):\n{stderr}"
    );
    let summary = summary(&stdout, &stderr);
    assert_eq!(summary["device"], pointhook_sandbox::FIRST_DEVICE);
    assert_eq!(
        summary["payments"].as_object().unwrap().len(),
        8,
        "{summary}"
    );
    // What the sandbox keeps agrees with what the SDK was answered.
    let (_, fund) = sb
        .call(
            reqwest::Method::GET,
            &format!("/v1/payments/{}", summary["payments"]["FUND"]),
            None,
        )
        .await;
    assert_eq!(fund["status_detail"], "cc_rejected_insufficient_amount");
    sb.stop().await;
}
