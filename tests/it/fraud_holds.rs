//! A fraud alert held for a person is a hold of kind `fraud_review`: listed
//! and answered through the holds' one route (admin API, CLI), approving
//! confirms it (the refund runs) and rejecting dismisses it (the block is
//! lifted, the order released), audited as the review.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use pointhook_common::clock::ManualClock;

use crate::helpers::*;
use crate::platform::*;

on_both_backends!(
    a_held_alert_rejected_as_a_hold_is_dismissed,
    a_held_alert_approved_as_a_hold_is_refunded,
    a_review_answered_on_its_own_route_names_who_decided,
    the_console_answers_a_review_through_the_holds_route,
);

const ORDER: &str = "4945357007";
const PAYMENT: &str = "23064274473";
const ADMIN: &str = "admin-token-for-the-fraud-hold-tests-0123456789";

/// An account with a secret (the IPN alert is not authenticated: it is
/// held) whose approved payment of 250 an alert names; the review's id.
async fn held_alert() -> (FakeApi, TestApp, Arc<ManualClock>, i64) {
    let api = FakeApi::start().await;
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let config = TestConfig {
        accounts: "[[accounts]]\nname = \"default\"\naccess_token = \"tok\"\n\
                   webhook_secret = \"a-secret-for-the-fraud-hold-tests\"\n"
            .into(),
        admin_token: Some(ADMIN.into()),
        ..Default::default()
    };
    let app = spawn_app_with(config.api(&api.uri()).clock(clock.clone())).await;
    api.payment(PAYMENT, "approved", "250", Some(ORDER));
    api.order(ORDER, "250", &[(PAYMENT, "250", "approved")], None);
    let alert = app.post_fixture(&fixture("ipn-fraud-alert.json")).await;
    assert_eq!(alert.status(), 200);
    app.run_jobs().await;
    app.post("topic=merchant_order&id=4945357007", &[], None)
        .await;
    app.run_jobs().await;
    assert_eq!(
        app.event_types(),
        ["order.blocked", "fraud_alert.unverified"]
    );
    let (status, reviews) = app.admin("GET", "/api/fraud-reviews", ADMIN).await;
    assert_eq!(status, 200, "{reviews}");
    let id = reviews[0]["id"].as_i64().unwrap();
    (api, app, clock, id)
}

/// The review as a hold: listed by its kind, with what approving does.
async fn as_hold(app: &TestApp, id: i64) -> serde_json::Value {
    let (status, list) = app
        .admin("GET", "/api/holds?kind=fraud_review", ADMIN)
        .await;
    assert_eq!(status, 200, "{list}");
    let ids: Vec<i64> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, [id], "{list}");
    let (status, hold) = app.admin("GET", &format!("/api/holds/{id}"), ADMIN).await;
    assert_eq!(status, 200, "{hold}");
    hold
}

async fn a_held_alert_rejected_as_a_hold_is_dismissed() {
    let (api, app, clock, id) = held_alert().await;
    let hold = as_hold(&app, id).await;
    assert_eq!(hold["hold"]["kind"], "fraud_review");
    assert_eq!(hold["hold"]["state"], "held");
    assert_eq!(
        hold["hold"]["subject"],
        format!("fraud_alert:{ORDER}:{PAYMENT}")
    );
    assert!(
        hold["rejecting"].as_str().unwrap().starts_with("dismiss"),
        "{hold}"
    );
    let (ok, out, err) = cli(&app, &["holds", "reject", &id.to_string(), "--yes"]);
    assert!(ok, "{out}{err}");
    clock.advance(Duration::from_secs(60));
    app.run_jobs().await;
    assert_eq!(
        app.event_types(),
        [
            "order.blocked",
            "fraud_alert.unverified",
            "fraud_alert.dismissed",
            "order.released"
        ]
    );
    assert!(api.changes().await.is_empty());
    let (_, dismissed) = app
        .admin("GET", "/api/fraud-reviews?state=dismissed", ADMIN)
        .await;
    assert_eq!(dismissed.as_array().unwrap().len(), 1);
    let (_, hold) = app.admin("GET", &format!("/api/holds/{id}"), ADMIN).await;
    assert_eq!(hold["hold"]["state"], "rejected");
    assert!(hold["hold"]["decided_by"].is_string(), "{hold}");
    // Answered once: the review's own route finds it decided.
    let (status, _) = app
        .admin("POST", &format!("/api/fraud-reviews/{id}/dismiss"), ADMIN)
        .await;
    assert_ne!(status, 200);
    app.stop().await;
}

async fn a_held_alert_approved_as_a_hold_is_refunded() {
    let (api, app, clock, id) = held_alert().await;
    let hold = as_hold(&app, id).await;
    assert!(
        hold["approving"]
            .as_str()
            .unwrap()
            .contains("refund 250.00 to the buyer"),
        "{hold}"
    );
    let (status, body) = app
        .admin("POST", &format!("/api/holds/{id}/approve"), ADMIN)
        .await;
    assert_eq!(status, 200, "{body}");
    clock.advance(Duration::from_secs(60));
    app.run_jobs().await;
    assert!(
        app.event_types().contains(&"payment.refunded".to_string()),
        "{:?}",
        app.event_types()
    );
    let changes = api.changes().await;
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0].1, format!("/v1/payments/{PAYMENT}/refunds"));
    let (_, confirmed) = app
        .admin("GET", "/api/fraud-reviews?state=confirmed", ADMIN)
        .await;
    assert_eq!(confirmed.as_array().unwrap().len(), 1);
    let (status, _) = app
        .admin("POST", &format!("/api/holds/{id}/approve"), ADMIN)
        .await;
    assert_ne!(status, 200, "a second approval is refused");
    let (_, hold) = app.admin("GET", &format!("/api/holds/{id}"), ADMIN).await;
    assert_eq!(hold["hold"]["state"], "approved");
    assert_eq!(hold["hold"]["decided_by"], "api");
    app.stop().await;
}

/// Whichever door a person comes through, the hold says who decided.
async fn a_review_answered_on_its_own_route_names_who_decided() {
    let (_api, app, _clock, id) = held_alert().await;
    let (status, body) = app
        .admin("POST", &format!("/api/fraud-reviews/{id}/dismiss"), ADMIN)
        .await;
    assert_eq!(status, 200, "{body}");
    let (_, hold) = app.admin("GET", &format!("/api/holds/{id}"), ADMIN).await;
    assert_eq!(hold["hold"]["state"], "rejected");
    assert_eq!(hold["hold"]["decided_by"], "api");
    app.stop().await;
}

/// The console: a review's hold shows the review's page, and the holds'
/// route asks again naming the refund and its amount before it confirms.
async fn the_console_answers_a_review_through_the_holds_route() {
    let api = FakeApi::start().await;
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let config = TestConfig::default().api(&api.uri()).clock(clock.clone());
    let (app, mut b) = crate::console::signed_in(config).await;
    api.payment(PAYMENT, "approved", "250", Some(ORDER));
    api.order(ORDER, "250", &[(PAYMENT, "250", "approved")], None);
    app.post_fixture(&fixture("ipn-fraud-alert.json")).await;
    app.run_jobs().await;
    let id = app.count("SELECT id FROM fraud_reviews");
    let (status, location, _) = b.get(&format!("/holds/{id}")).await;
    assert_eq!(
        (status, location.clone()),
        (303, format!("/fraud-reviews/{id}"))
    );
    let (status, _, _) = b.get(&location).await;
    assert_eq!(status, 200);
    let path = format!("/holds/{id}/approve");
    let (status, html) = b.act(&path, &[]).await;
    assert_eq!(status, 200, "asks again");
    assert!(html.contains("refund 250.00 to the buyer"), "{html}");
    let held = "SELECT count(*) FROM fraud_reviews WHERE state = 1";
    assert_eq!(app.count(held), 1, "still held");
    let (status, _) = b.act(&path, &[("sure", "yes")]).await;
    assert_eq!(status, 303);
    assert_eq!(app.count(held), 0);
    assert_eq!(
        app.count("SELECT count(*) FROM fraud_reviews WHERE state = 2"),
        1,
        "confirmed"
    );
    app.stop().await;
}
