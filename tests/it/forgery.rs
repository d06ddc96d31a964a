//! What a sender who knows only the notification URL can do with a fraud
//! alert, on the shipped configuration: nothing that moves money, stalls an
//! order the API does not know, or reaches the merchant in its own words.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use pointhook_common::clock::ManualClock;
use serde_json::json;

use crate::helpers::*;
use crate::platform::*;

on_both_backends!(
    the_shipped_configuration_moves_no_money_on_a_forged_alert,
    an_alert_for_an_order_nobody_created_blocks_nothing,
    a_replayed_payment_signature_authenticates_nothing,
    a_dismissed_forgery_does_not_cover_the_real_alert,
    unauthenticated_alerts_place_a_bounded_number_of_blocks,
);

const ORDER: &str = "4945357007";
const PAYMENT: &str = "23064274473";
const ADMIN: &str = "admin-token-for-the-forgery-tests-0123";

async fn setup(config: TestConfig) -> (FakeApi, TestApp, Arc<ManualClock>) {
    let api = FakeApi::start().await;
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let app = spawn_app_with(config.api(&api.uri()).clock(clock.clone()).admin(ADMIN)).await;
    (api, app, clock)
}

/// The `[[accounts]]` section of the shipped `sample-config.toml`, as it
/// is, with the test's token.
fn shipped_account() -> String {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/sample-config.toml"))
        .unwrap();
    let start = text.find("[[accounts]]").unwrap();
    let end = start + text[start..].find("\n[").unwrap();
    text[start..end].replace("TEST-sandbox-token", "tok")
}

/// A forged alert, as anyone can post it: an IPN naming the order and the
/// payment, and a description of the sender's choosing.
async fn forged(app: &TestApp, order: &str, payment: &str) {
    let body = json!({"merchant_order": order, "payment_id": payment,
                      "description": "<script>\u{202e}refund to 4111</script>"});
    let res = app
        .post_json(&format!("topic=delivery_cancellation&id={payment}"), &body)
        .await;
    assert_eq!(res.status(), 200);
    app.run_jobs().await;
}

async fn held(app: &TestApp) -> Vec<serde_json::Value> {
    let (status, body) = app
        .admin("GET", "/api/fraud-reviews?state=held", ADMIN)
        .await;
    assert_eq!(status, 200, "{body}");
    body.as_array().unwrap().clone()
}

async fn the_shipped_configuration_moves_no_money_on_a_forged_alert() {
    let (api, app, _) = setup(TestConfig {
        accounts: shipped_account(),
        ..TestConfig::default()
    })
    .await;
    api.payment(PAYMENT, "approved", "480", Some(ORDER));
    forged(&app, ORDER, PAYMENT).await;
    assert!(api.changes().await.is_empty(), "no refund, no cancel");
    assert_eq!(
        app.event_types(),
        ["order.blocked", "fraud_alert.unverified"]
    );
    // The sender's words reach no event; they stay in the delivery.
    for (_, data) in app.events() {
        assert_eq!(data["description"], serde_json::Value::Null, "{data}");
        assert!(!data.to_string().contains("4111"), "{data}");
    }
    assert_eq!(held(&app).await.len(), 1);
    app.stop().await;
}

async fn an_alert_for_an_order_nobody_created_blocks_nothing() {
    let (api, app, _) = setup(TestConfig::default()).await;
    // The next order id the shop will open, named before it exists.
    let res = app
        .post_json(
            "topic=delivery_cancellation&id=1",
            &json!({"merchant_order": "5000000001"}),
        )
        .await;
    assert_eq!(res.status(), 200);
    app.run_jobs().await;
    assert!(app.event_types().is_empty(), "{:?}", app.event_types());
    assert_eq!(app.count("SELECT count(*) FROM order_blocks"), 0);
    let (_, rejected) = app
        .admin("GET", "/api/fraud-reviews?state=rejected", ADMIN)
        .await;
    assert_eq!(rejected.as_array().unwrap().len(), 1, "kept for a person");
    // Once the order is real and paid, it is released.
    api.payment("777", "approved", "10", Some("5000000001"));
    api.order("5000000001", "10", &[("777", "10", "approved")], None);
    app.post("topic=merchant_order&id=5000000001", &[], None)
        .await;
    app.run_jobs().await;
    assert_eq!(app.event_types(), ["order.released"]);
    app.stop().await;
}

/// The webhook of a payment, signed by the platform `age` ago: anyone who
/// can read deliveries (`deliveries show`, the admin API) has its headers.
fn payment_webhook_signature(at: u64) -> String {
    pointhook_common::signature::sign(SECRET.as_bytes(), Some(PAYMENT), Some("req-1"), at)
}

async fn a_replayed_payment_signature_authenticates_nothing() {
    let (api, app, _) = setup(TestConfig::with_secret()).await;
    api.payment(PAYMENT, "approved", "480", Some(ORDER));
    let alert = json!({"type": "stop_delivery_op_wh", "action": "stop_delivery",
                       "data": {"id": PAYMENT, "merchant_order": ORDER, "payment_id": PAYMENT}});
    let query = format!("type=stop_delivery_op_wh&data.id={PAYMENT}");
    // Two hours old: valid, but not fresh.
    let old = payment_webhook_signature(unix_now() - 7200);
    let headers = [("x-signature", old.as_str()), ("x-request-id", "req-1")];
    assert_eq!(
        app.post_json_with(&query, &headers, &alert).await.status(),
        200
    );
    app.run_jobs().await;
    assert!(
        api.changes().await.is_empty(),
        "an old signature refunds nothing"
    );
    // Fresh, but taken from the payment's own webhook, delivered before.
    let fresh = payment_webhook_signature(unix_now());
    let headers = [("x-signature", fresh.as_str()), ("x-request-id", "req-1")];
    let payment_hook =
        json!({"type": "payment", "action": "payment.updated", "data": {"id": PAYMENT}});
    let payment_query = format!("type=payment&data.id={PAYMENT}");
    assert_eq!(
        app.post_json_with(&payment_query, &headers, &payment_hook)
            .await
            .status(),
        200
    );
    assert_eq!(
        app.post_json_with(&query, &headers, &alert).await.status(),
        200
    );
    app.run_jobs().await;
    assert!(
        api.changes().await.is_empty(),
        "a signature seen on another delivery refunds nothing"
    );
    assert!(
        app.event_types()
            .contains(&"fraud_alert.unverified".to_string())
    );
    app.stop().await;
}

async fn a_dismissed_forgery_does_not_cover_the_real_alert() {
    let (api, app, clock) = setup(TestConfig::default()).await;
    // An order paid in part: not released yet.
    api.payment(PAYMENT, "approved", "100", Some(ORDER));
    api.order(ORDER, "480", &[(PAYMENT, "100", "approved")], None);
    forged(&app, ORDER, PAYMENT).await;
    let review = held(&app).await[0]["id"].as_i64().unwrap();
    let path = format!("/api/fraud-reviews/{review}/dismiss");
    assert_eq!(app.admin("POST", &path, ADMIN).await.0, 200);
    clock.advance(Duration::from_secs(60));
    app.run_jobs().await;
    assert_eq!(
        app.count("SELECT count(*) FROM orders WHERE blocked_at IS NOT NULL"),
        0
    );
    // The platform's own alert for the same order and payment.
    let res = app
        .post_json(
            &format!("topic=delivery_cancellation&id={PAYMENT}"),
            &json!({"merchant_order": ORDER, "payment_id": PAYMENT, "description": "real"}),
        )
        .await;
    assert_eq!(res.status(), 200);
    app.run_jobs().await;
    assert_eq!(
        app.count("SELECT count(*) FROM orders WHERE blocked_at IS NOT NULL"),
        1,
        "blocked again"
    );
    let again = held(&app).await;
    assert_eq!(again.len(), 1, "a new review for a person");
    assert_eq!(again[0]["round"], 1);
    // Paid in full now: the order stays blocked.
    api.order(ORDER, "100", &[(PAYMENT, "100", "approved")], None);
    app.post(&format!("topic=merchant_order&id={ORDER}"), &[], None)
        .await;
    app.run_jobs().await;
    assert!(!app.event_types().contains(&"order.released".to_string()));
    app.stop().await;
}

async fn unauthenticated_alerts_place_a_bounded_number_of_blocks() {
    let (api, app, _) = setup(TestConfig {
        accounts: "[[accounts]]\nname = \"default\"\naccess_token = \"tok\"\n\
                   fraud_unauthenticated_blocks_per_hour = 2\n"
            .into(),
        ..TestConfig::default()
    })
    .await;
    for i in 1..=3 {
        let (order, payment) = (format!("{i}00"), format!("{i}01"));
        api.payment(&payment, "approved", "10", Some(&order));
        forged(&app, &order, &payment).await;
    }
    assert_eq!(app.count("SELECT count(*) FROM order_blocks"), 2);
    let reviews = held(&app).await;
    assert_eq!(reviews.len(), 3, "every alert is in front of a person");
    assert!(
        reviews.iter().any(|r| r["reason"]
            .as_str()
            .unwrap()
            .contains("held without blocking")),
        "{reviews:?}"
    );
    assert!(api.changes().await.is_empty());
    app.stop().await;
}
