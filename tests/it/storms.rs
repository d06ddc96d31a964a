//! Forged fraud alerts in numbers: one review per order whatever form the
//! alerts came in (each joins the review held for its order, as evidence),
//! told as one message and then one digest; a review held from an alert
//! that names only its payment (or only its order) names the cancel or
//! refund and its amount.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use pointhook_common::clock::ManualClock;
use serde_json::json;

use crate::alerting::*;
use crate::console::{Browser, PASSWORD, with_operator};
use crate::helpers::*;
use crate::platform::*;
use crate::smtp::SmtpServer;

on_both_backends!(
    a_storm_of_forged_alerts_is_one_review_per_order_told_once_then_in_one_digest,
    a_review_held_from_a_bare_ipn_names_the_refund_and_its_amount,
);

const ORDERS: [(&str, &str); 4] = [
    ("4945357001", "23064274401"),
    ("4945357002", "23064274402"),
    ("4945357003", "23064274403"),
    ("4945357004", "23064274404"),
];

/// Three unsigned alerts for `order`: an IPN with a body, an IPN naming
/// only the payment, a webhook naming only the order.
async fn forged(app: &TestApp, order: &str, payment: &str) {
    let body = json!({"merchant_order": order.parse::<u64>().unwrap(),
                      "payment_id": payment.parse::<u64>().unwrap(),
                      "description": "do not deliver"})
    .to_string();
    let webhook = json!({"type": "stop_delivery_op_wh", "action": "created",
                         "data": {"merchant_order": order.parse::<u64>().unwrap()}})
    .to_string();
    for (query, body) in [
        (format!("topic=delivery_cancellation&id={order}"), body),
        (
            format!("topic=delivery_cancellation&id={payment}"),
            String::new(),
        ),
        ("type=stop_delivery_op_wh".to_string(), webhook),
    ] {
        let res = app
            .post(
                &query,
                &[("content-type", "application/json")],
                Some(body.as_bytes()),
            )
            .await;
        assert_eq!(res.status(), 200, "{query}");
    }
}

/// Four half-paid orders, each paid 250.00 of 500.00 (so not released).
async fn half_paid(api: &FakeApi) {
    for (order, payment) in ORDERS {
        api.payment(payment, "approved", "250.00", Some(order));
        api.order(order, "500.00", &[(payment, "250.00", "approved")], None);
    }
}

async fn a_storm_of_forged_alerts_is_one_review_per_order_told_once_then_in_one_digest() {
    let (smtp, hook, api) = (
        SmtpServer::start().await,
        Hook::start().await,
        FakeApi::start().await,
    );
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let app = alerting(
        TestConfig::with_secret()
            .api(&api.uri())
            .clock(clock.clone()),
        smtp.port,
        &hook,
        "digest_secs = 60",
    )
    .await;
    half_paid(&api).await;
    for (order, payment) in ORDERS {
        forged(&app, order, payment).await;
    }
    app.run_jobs().await;
    let held = app.count("SELECT count(*) FROM fraud_reviews WHERE state = 1");
    let all = app.count("SELECT count(*) FROM fraud_reviews");
    assert_eq!((held, all), (4, 4), "one review per order");
    assert_eq!(
        app.count("SELECT count(DISTINCT merchant_order) FROM fraud_reviews"),
        4
    );
    // Each review holds its order's three alerts as evidence.
    for (order, _) in ORDERS {
        assert_eq!(
            app.count(&format!(
                "SELECT count(*) FROM deliveries d JOIN fraud_reviews f
                   ON f.account = d.account AND f.job_key = d.job_key
                 WHERE f.merchant_order = '{order}'"
            )),
            3,
            "{order}"
        );
        // Blocked once, by its review's alert.
        assert_eq!(
            app.count(&format!(
                "SELECT count(*) FROM order_blocks WHERE order_id = '{order}' AND lifted_at IS NULL"
            )),
            1,
            "{order}"
        );
    }
    // The first at once; the other three wait for the digest.
    assert_eq!(round(&app).await, 1);
    let (mails, _) = told(&smtp, &hook, 1).await;
    assert!(
        mails[0].contains("fraud alert held for you"),
        "{}",
        mails[0]
    );
    clock.advance(Duration::from_secs(30));
    assert_eq!(round(&app).await, 0, "within the digest's window");
    clock.advance(Duration::from_secs(31));
    assert_eq!(round(&app).await, 1, "one digest");
    let (_, hooks) = told(&smtp, &hook, 2).await;
    let digest = hooks[1]["text"].as_str().unwrap();
    assert!(digest.starts_with("3 fraud alert held for you"), "{digest}");
    clock.advance(Duration::from_secs(120));
    assert_eq!(round(&app).await, 0, "each told once");
    app.stop().await;
}

/// A forged alert in the IPN form naming only the payment, for an order
/// whose payment was never told: the review reads the payment when held.
async fn a_review_held_from_a_bare_ipn_names_the_refund_and_its_amount() {
    let api = FakeApi::start().await;
    let app = spawn_app_with(TestConfig {
        admin_token: Some(ADMIN_TOKEN.into()),
        admin: "session_idle_secs = 100000000".into(),
        ..TestConfig::default().api(&api.uri())
    })
    .await;
    half_paid(&api).await;
    let (order, payment) = ORDERS[0];
    app.post(
        &format!("topic=delivery_cancellation&id={payment}"),
        &[],
        None,
    )
    .await;
    let (order2, _) = ORDERS[1];
    let webhook = json!({"type": "stop_delivery_op_wh",
                         "data": {"merchant_order": order2.parse::<u64>().unwrap()}})
    .to_string();
    app.post(
        "type=stop_delivery_op_wh",
        &[("content-type", "application/json")],
        Some(webhook.as_bytes()),
    )
    .await;
    app.run_jobs().await;
    assert!(
        !app.event_types().contains(&"payment.updated".to_string()),
        "no payment was told"
    );
    with_operator(&app, "ana").await;
    let mut b = Browser::new(&app);
    assert_eq!(b.sign_in("ana", PASSWORD).await.status(), 303);
    for o in [order, order2] {
        let id = app.count(&format!(
            "SELECT id FROM fraud_reviews WHERE merchant_order = '{o}'"
        ));
        let (_, _, html) = b.get(&format!("/fraud-reviews/{id}")).await;
        assert!(html.contains("refund 250.00 to the buyer"), "{o}: {html}");
        let (status, html) = b.act(&format!("/fraud-reviews/{id}/confirm"), &[]).await;
        assert_eq!(status, 200, "asks again");
        assert!(html.contains("Refund 250.00"), "{o}: {html}");
        assert!(!html.contains("Cancel or refund the payment"), "{html}");
        assert!(!html.contains("undo the payment"), "{html}");
    }
    app.stop().await;
}
