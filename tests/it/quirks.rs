//! pointhook against the platform's quirks, played by the sandbox: with
//! each switched on (eventual consistency, IPN and webhook twins,
//! duplicates, out of order, unsigned webhooks) pointhook still decides
//! exactly once.

use std::time::Duration;

use pointhook_sandbox::AccountSpec;
use serde_json::{Value, json};

use crate::helpers::*;
use crate::platform::{Merchant, RunningSandbox, TOKEN, wait_for_event, wired, wired_both};

/// Every event body the merchant received, in order.
async fn merchant_events(merchant: &Merchant) -> Vec<Value> {
    merchant
        .received()
        .await
        .into_iter()
        .filter_map(|r| serde_json::from_slice::<Value>(&r.body).ok())
        .collect()
}

/// Waits until the sandbox has nothing left to send and pointhook nothing
/// left to run or deliver, three looks in a row.
async fn settle(sb: &RunningSandbox, app: &TestApp) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let mut quiet = 0;
    while quiet < 3 {
        let sending = sb
            .log()
            .await
            .iter()
            .filter(|d| d["state"] == "pending" || d["state"] == "sending")
            .count();
        let busy = app.unsettled();
        quiet = if sending == 0 && busy == 0 {
            quiet + 1
        } else {
            0
        };
        assert!(
            std::time::Instant::now() < deadline,
            "not settled: {sending} dispatches, {busy} jobs and events"
        );
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
}

/// An order paid by a payment that goes in_process, then approved, with
/// `quirk` on: the merchant hears of the release once, and of each status
/// at most once (approved exactly once).
async fn a_paid_order_is_decided_once(quirk: Value) -> (RunningSandbox, TestApp, Merchant) {
    let (sb, app, merchant) = wired().await;
    let (status, set) = sb.control("quirks", quirk).await;
    assert_eq!(status, 200, "{set}");
    let (_, order) = sb
        .control(
            "merchant_orders",
            json!({"total_amount": 100, "external_reference": "q-1"}),
        )
        .await;
    let (_, payment) = sb
        .control(
            &format!("merchant_orders/{}/payments", order["id"]),
            json!({"amount": 100, "status": "in_process"}),
        )
        .await;
    let (status, _) = sb
        .control(
            &format!("payments/{}/status", payment["id"]),
            json!({"status": "approved"}),
        )
        .await;
    assert_eq!(status, 200);
    wait_for_event(&app, "order.released").await;
    settle(&sb, &app).await;
    let events = merchant_events(&merchant).await;
    let count = |kind: &str, status: Option<&str>| {
        events
            .iter()
            .filter(|e| e["type"] == kind && status.is_none_or(|s| e["data"]["status"] == s))
            .count()
    };
    assert_eq!(count("order.released", None), 1, "{events:?}");
    assert_eq!(count("payment.updated", Some("approved")), 1, "{events:?}");
    assert!(
        count("payment.updated", Some("in_process")) <= 1,
        "{events:?}"
    );
    (sb, app, merchant)
}

#[tokio::test]
async fn eventual_consistency_pointhook_is_refused_retries_and_decides_once() {
    let (sb, app, _merchant) =
        a_paid_order_is_decided_once(json!({"eventual_consistency_ms": 800})).await;
    assert!(
        app.count("SELECT count(*) FROM fetches WHERE status = 404") >= 1,
        "pointhook's first fetch met the 404"
    );
    app.stop().await;
    sb.stop().await;
}

#[tokio::test]
async fn twins_pointhook_decides_once() {
    let (sb, app, _merchant) = a_paid_order_is_decided_once(json!({"twins": true})).await;
    let log = sb.log().await;
    let forms = |form: &str| log.iter().filter(|d| d["form"] == form).count();
    assert!(forms("webhook") >= 3, "webhook twins sent: {log:?}");
    assert_eq!(forms("webhook"), forms("ipn"), "one twin per IPN");
    assert!(
        log.iter()
            .filter(|d| d["form"] == "webhook")
            .all(|d| d["url"]
                .as_str()
                .unwrap()
                .contains("/notifications?data.id=")),
        "to the account URL"
    );
    app.stop().await;
    sb.stop().await;
}

#[tokio::test]
async fn duplicates_pointhook_decides_once() {
    let (sb, app, _merchant) = a_paid_order_is_decided_once(json!({"duplicates": true})).await;
    let log = sb.log().await;
    let mut urls: Vec<&str> = log.iter().map(|d| d["url"].as_str().unwrap()).collect();
    urls.sort();
    for chunk in urls.chunk_by(|a, b| a == b) {
        assert!(chunk.len() % 2 == 0, "each notification twice: {urls:?}");
    }
    assert!(
        app.count("SELECT count(*) FROM deliveries WHERE duplicate_of IS NOT NULL") >= 1,
        "pointhook saw the same notification again"
    );
    app.stop().await;
    sb.stop().await;
}

#[tokio::test]
async fn out_of_order_pointhook_decides_once() {
    let (sb, app, _merchant) = a_paid_order_is_decided_once(json!({"out_of_order": true})).await;
    // The quirk did what it says: to the same URL, a notification of the
    // same resource queued later was sent first.
    let sent: Vec<(i64, String, String)> = sb
        .log()
        .await
        .iter()
        .filter_map(|e| {
            Some((
                e["id"].as_i64()?,
                format!("{} {}", e["url"].as_str()?, e["resource_id"].as_str()?),
                e["attempts"][0]["at"].as_str()?.to_string(),
            ))
        })
        .collect();
    let reversed = sent
        .iter()
        .any(|a| sent.iter().any(|b| a.1 == b.1 && a.0 < b.0 && a.2 > b.2));
    assert!(reversed, "the sandbox sent everything in order: {sent:?}");
    app.stop().await;
    sb.stop().await;
}

/// Unsigned: the sandbox has the secret and would sign; its webhooks go
/// without `x-signature`, and pointhook (holding the secret) keeps the
/// intent body as unsigned and decides once.
#[tokio::test]
async fn unsigned_pointhook_decides_once() {
    let (sb, app, merchant) = wired_both(
        |a| AccountSpec {
            webhook_secret: Some(SECRET.into()),
            ..a
        },
        |tc| TestConfig {
            accounts: format!(
                "[[accounts]]\nname = \"default\"\naccess_token = \"{TOKEN}\"\nwebhook_secret = \"{SECRET}\"\n"
            ),
            ..tc
        },
    )
    .await;
    sb.control("quirks", json!({"unsigned": true})).await;
    let (_, intent) = sb.control("payment_intents", json!({"amount": 1500})).await;
    let id = intent["id"].as_str().unwrap();
    sb.control(
        &format!("payment_intents/{id}/state"),
        json!({"state": "FINISHED"}),
    )
    .await;
    wait_for_event(&app, "payment_intent.finished").await;
    settle(&sb, &app).await;
    let finished = merchant_events(&merchant)
        .await
        .into_iter()
        .filter(|e| e["type"] == "payment_intent.finished")
        .count();
    assert_eq!(finished, 1);
    // 3: unsigned; 1 and 4: a valid signature.
    assert!(app.count("SELECT count(*) FROM deliveries WHERE signature = 3") >= 1);
    assert_eq!(
        app.count("SELECT count(*) FROM deliveries WHERE signature IN (1, 4)"),
        0
    );
    app.stop().await;
    sb.stop().await;
}
