//! Every path of the fraud saga.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use pointhook::clock::ManualClock;

use crate::helpers::*;
use crate::platform::*;

const ORDER: &str = "4945357007";
const PAYMENT: &str = "23064274473";

async fn setup(config: TestConfig) -> (FakeApi, TestApp, Arc<ManualClock>) {
    let api = FakeApi::start().await;
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let app = spawn_app_with(config.api(&api.uri()).clock(clock.clone())).await;
    (api, app, clock)
}

async fn alert(app: &TestApp) {
    assert_eq!(
        app.post_fixture(&fixture("ipn-fraud-alert.json"))
            .await
            .status(),
        200
    );
    app.run_jobs().await;
}

#[tokio::test]
async fn a_pending_payment_is_cancelled_and_the_order_blocked() {
    let (api, app, _) = setup(TestConfig::default()).await;
    api.payment(PAYMENT, "in_process", "250", Some(ORDER));
    alert(&app).await;
    assert_eq!(app.event_types(), ["order.blocked", "payment.cancelled"]);
    let changes = api.changes().await;
    assert_eq!(changes.len(), 1);
    assert_eq!(
        (changes[0].0.as_str(), changes[0].1.as_str()),
        ("PUT", "/v1/payments/23064274473")
    );
    assert_eq!(changes[0].3, r#"{"status":"cancelled"}"#);
    let events = app.events();
    assert_eq!(events[1].1["payment_id"], serde_json::json!(23064274473u64));
    assert_eq!(
        events[1].1["merchant_order_id"],
        serde_json::json!(4945357007u64)
    );
    app.stop().await;
}

#[tokio::test]
async fn an_approved_payment_is_refunded_once_with_the_same_key_on_a_retry() {
    let (api, app, clock) = setup(TestConfig::default()).await;
    api.payment(PAYMENT, "approved", "250", Some(ORDER));
    let refunds = "/v1/payments/23064274473/refunds";
    api.fail_next_call("POST", refunds, 1, slow(Duration::from_secs(3)))
        .await;
    alert(&app).await;
    assert_eq!(
        app.event_types(),
        ["order.blocked"],
        "refund timed out: retried later"
    );
    clock.advance(Duration::from_secs(2));
    app.run_jobs().await;
    // The sandbox shows the payment refunded now; the same alert again
    // changes nothing.
    alert(&app).await;
    assert_eq!(app.event_types(), ["order.blocked", "payment.refunded"]);
    let changes = api.changes().await;
    assert_eq!(changes.len(), 2, "{changes:?}");
    assert!(changes.iter().all(|c| c.0 == "POST" && c.1 == refunds));
    let key = changes[0].2.clone().expect("an idempotency key");
    assert_eq!(
        changes[1].2.as_deref(),
        Some(key.as_str()),
        "same key on the retry"
    );
    app.stop().await;
}

#[tokio::test]
async fn a_refused_cancel_is_cancel_failed() {
    let (api, app, _) = setup(TestConfig::default()).await;
    api.payment(PAYMENT, "pending", "250", Some(ORDER));
    api.fail_next_call("PUT", "/v1/payments/23064274473", 1, status(400))
        .await;
    alert(&app).await;
    assert_eq!(
        app.event_types(),
        ["order.blocked", "payment.cancel_failed"]
    );
    assert!(
        app.events()[1].1["reason"]
            .as_str()
            .unwrap()
            .contains("400")
    );
    app.stop().await;
}

#[tokio::test]
async fn a_payment_of_another_order_is_rejected_and_nothing_called() {
    let (api, app, _) = setup(TestConfig::default()).await;
    api.payment(PAYMENT, "approved", "250", Some("1111"));
    alert(&app).await;
    assert_eq!(app.event_types(), ["fraud_alert.rejected"]);
    assert!(
        app.events()[0].1["reason"]
            .as_str()
            .unwrap()
            .contains("order 1111")
    );
    assert!(api.changes().await.is_empty());
    app.stop().await;
}

#[tokio::test]
async fn an_unknown_payment_is_rejected() {
    let (api, app, _) = setup(TestConfig::default()).await;
    alert(&app).await;
    assert_eq!(app.event_types(), ["fraud_alert.rejected"]);
    assert!(api.changes().await.is_empty());
    app.stop().await;
}

#[tokio::test]
async fn after_release_only_a_person_is_told() {
    let (api, app, _) = setup(TestConfig::default()).await;
    api.payment(PAYMENT, "approved", "250", Some(ORDER));
    api.order(ORDER, "250", &[(PAYMENT, "250", "approved")], None);
    app.post("topic=merchant_order&id=4945357007", &[], None)
        .await;
    app.run_jobs().await;
    alert(&app).await;
    assert_eq!(
        app.event_types(),
        ["order.released", "order.fraud_after_release"]
    );
    assert!(
        api.changes().await.is_empty(),
        "no automatic cancel or refund"
    );
    app.stop().await;
}

#[tokio::test]
async fn an_unverified_alert_undoes_nothing() {
    let (api, app, _) = setup(TestConfig::with_secret()).await;
    api.payment(PAYMENT, "approved", "250", Some(ORDER));
    let f = fixture("webhook-fraud-alert.json");
    let mut headers: Vec<(&str, &str)> = f
        .headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    headers.push(("x-signature", "ts=1,v1=00"));
    assert_eq!(
        app.post(&f.query, &headers, f.body.as_deref())
            .await
            .status(),
        200
    );
    app.run_jobs().await;
    assert_eq!(app.event_types(), ["fraud_alert.unverified"]);
    assert!(api.changes().await.is_empty());
    assert_eq!(
        api.calls("/v1/payments/23064274473").await,
        0,
        "not even fetched"
    );
    app.stop().await;
}

#[tokio::test]
async fn an_approval_after_the_block_releases_nothing() {
    let (api, app, _) = setup(TestConfig::default()).await;
    api.payment(PAYMENT, "in_process", "250", Some(ORDER));
    alert(&app).await;
    api.payment(PAYMENT, "approved", "250", Some(ORDER));
    api.order(
        ORDER,
        "250",
        &[(PAYMENT, "250", "approved")],
        Some("ready_to_ship"),
    );
    app.post("topic=payment&id=23064274473", &[], None).await;
    app.post("topic=merchant_order&id=4945357007", &[], None)
        .await;
    app.run_jobs().await;
    assert_eq!(app.event_types(), ["order.blocked", "payment.cancelled"]);
    app.stop().await;
}

#[tokio::test]
async fn two_alerts_for_one_order_undo_both_payments() {
    let (api, app, _) = setup(TestConfig::default()).await;
    api.payment(PAYMENT, "in_process", "250", Some(ORDER));
    api.payment("1001", "approved", "100", Some(ORDER));
    alert(&app).await;
    let second = serde_json::json!({"merchant_order": 4945357007u64, "payment_id": 1001, "description": "x"});
    app.post_json("topic=delivery_cancellation&id=4945357007", &second)
        .await;
    app.run_jobs().await;
    assert_eq!(
        app.event_types(),
        ["order.blocked", "payment.cancelled", "payment.refunded"]
    );
    assert_eq!(api.changes().await.len(), 2);
    app.stop().await;
}
