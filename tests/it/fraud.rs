//! Every path of the fraud saga.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use pointhook_common::clock::ManualClock;

use crate::helpers::*;
use crate::platform::*;

on_both_backends!(
    a_pending_payment_is_cancelled_and_the_order_blocked,
    an_approved_payment_is_refunded_once_with_the_same_key_on_a_retry,
    a_refused_cancel_is_cancel_failed,
    a_payment_of_another_order_is_rejected_and_nothing_called,
    an_unknown_payment_is_rejected,
    after_release_only_a_person_is_told,
    an_approval_after_the_block_releases_nothing,
    two_alerts_for_one_order_undo_both_payments,
    an_unauthenticated_alert_blocks_but_moves_no_money,
    an_authenticated_alert_runs_the_saga,
    a_confirmed_alert_is_refunded,
    a_dismissed_alert_unblocks_and_the_order_is_released,
    an_order_stays_blocked_while_any_alert_stands,
    by_default_an_unauthenticated_alert_is_held,
    an_alert_naming_nothing_is_resolved_and_held,
);

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

async fn a_pending_payment_is_cancelled_and_the_order_blocked() {
    let (api, app, _) = setup(TestConfig::acting()).await;
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
    assert_eq!(events[1].1["payment_id"], PAYMENT);
    assert_eq!(events[1].1["merchant_order_id"], ORDER);
    app.stop().await;
}

async fn an_approved_payment_is_refunded_once_with_the_same_key_on_a_retry() {
    let (api, app, clock) = setup(TestConfig::acting()).await;
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

async fn a_refused_cancel_is_cancel_failed() {
    let (api, app, _) = setup(TestConfig::acting()).await;
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

/// The reviews a person sees, in every state, as the admin API lists them.
async fn reviews(app: &TestApp, state: &str) -> Vec<serde_json::Value> {
    let (status, body) = app
        .admin("GET", &format!("/api/fraud-reviews?state={state}"), ADMIN)
        .await;
    assert_eq!(status, 200, "{body}");
    body.as_array().unwrap().clone()
}

/// A rejected alert: nothing blocked, nothing told, no money moved; kept
/// for a person and counted.
async fn assert_rejected(api: &FakeApi, app: &TestApp, reason: &str, words: &str) {
    assert!(app.event_types().is_empty(), "{:?}", app.event_types());
    assert_eq!(app.count("SELECT count(*) FROM order_blocks"), 0);
    assert!(api.changes().await.is_empty());
    let kept = reviews(app, "rejected").await;
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert!(
        kept[0]["reason"].as_str().unwrap().contains(words),
        "{kept:?}"
    );
    let series =
        format!("pointhook_fraud_alerts_rejected_total{{account=\"default\",reason=\"{reason}\"}}");
    assert_eq!(metric(app, ADMIN, &series).await, 1);
}

async fn a_payment_of_another_order_is_rejected_and_nothing_called() {
    let (api, app, _) = setup(TestConfig::acting().admin(ADMIN)).await;
    api.payment(PAYMENT, "approved", "250", Some("1111"));
    alert(&app).await;
    assert_rejected(&api, &app, "payment_not_in_order", "order 1111").await;
    app.stop().await;
}

async fn an_unknown_payment_is_rejected() {
    let (api, app, _) = setup(TestConfig::acting().admin(ADMIN)).await;
    alert(&app).await;
    assert_rejected(&api, &app, "payment_not_found", "no payment").await;
    app.stop().await;
}

async fn after_release_only_a_person_is_told() {
    let (api, app, _) = setup(TestConfig::acting()).await;
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

async fn an_approval_after_the_block_releases_nothing() {
    let (api, app, _) = setup(TestConfig::acting()).await;
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
    assert_eq!(
        app.event_types(),
        ["order.blocked", "payment.cancelled", "payment.updated"],
        "the approval is told; the order is not released"
    );
    app.stop().await;
}

async fn two_alerts_for_one_order_undo_both_payments() {
    let (api, app, _) = setup(TestConfig::acting()).await;
    api.payment(PAYMENT, "in_process", "250", Some(ORDER));
    api.payment("1001", "approved", "100", Some(ORDER));
    alert(&app).await;
    let second = serde_json::json!({"merchant_order": 4945357007u64, "payment_id": 1001, "description": "x"});
    app.post_json("topic=delivery_cancellation&id=4945357007", &second)
        .await;
    app.run_jobs().await;
    assert_eq!(
        app.event_types(),
        [
            "order.blocked",
            "payment.cancelled",
            "order.blocked",
            "payment.refunded"
        ]
    );
    assert_eq!(api.changes().await.len(), 2);
    app.stop().await;
}

const ADMIN: &str = "admin-token-for-the-fraud-tests-0123456789";

/// An account with a webhook secret, an admin listener and the API.
async fn secured(extra_account: &str) -> (FakeApi, TestApp, Arc<ManualClock>) {
    setup(TestConfig {
        accounts: format!(
            "[[accounts]]\nname = \"default\"\naccess_token = \"tok\"\n\
             webhook_secret = \"{SECRET}\"\n{extra_account}"
        ),
        admin_token: Some(ADMIN.into()),
        ..Default::default()
    })
    .await
}

/// The fraud-alert webhook signed now over its payment: authenticated.
fn signed_alert() -> Fixture {
    let f = fixture("webhook-fraud-alert.json");
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let sig = pointhook_common::signature::sign(SECRET.as_bytes(), Some(PAYMENT), None, now);
    Fixture {
        headers: vec![
            ("content-type".into(), "application/json".into()),
            ("x-signature".into(), sig),
        ],
        ..f
    }
}

/// The held reviews, as the admin API lists them.
async fn held(app: &TestApp) -> Vec<serde_json::Value> {
    let (status, body) = app.admin("GET", "/api/fraud-reviews", ADMIN).await;
    assert_eq!(status, 200, "{body}");
    body.as_array().unwrap().clone()
}

/// Unauthenticated alerts (IPN form, bad signature, unsigned) to an account
/// with a secret block the order and move no money.
async fn an_unauthenticated_alert_blocks_but_moves_no_money() {
    let (api, app, _) = secured("").await;
    api.payment(PAYMENT, "approved", "250", Some(ORDER));
    api.order(ORDER, "250", &[(PAYMENT, "250", "approved")], None);
    let forged = fixture("webhook-fraud-alert.json");
    for headers in [vec![], vec![("x-signature", "ts=1,v1=00")]] {
        let res = app
            .post(&forged.query, &headers, forged.body.as_deref())
            .await;
        assert_eq!(res.status(), 200);
    }
    // The IPN form of the same alert: one job, one hold.
    alert(&app).await;
    assert_eq!(
        app.event_types(),
        ["order.blocked", "fraud_alert.unverified"]
    );
    let events = app.events();
    assert_eq!(events[1].1["authenticated"], false);
    assert_eq!(events[1].1["payment_id"], PAYMENT);
    assert!(api.changes().await.is_empty(), "no cancel, no refund");
    assert_eq!(held(&app).await.len(), 1);
    // The order is never released while the alerts stand.
    app.post("topic=merchant_order&id=4945357007", &[], None)
        .await;
    app.run_jobs().await;
    assert!(!app.event_types().contains(&"order.released".to_string()));
    app.stop().await;
}

/// A webhook whose signature binds its payment may move money.
async fn an_authenticated_alert_runs_the_saga() {
    let (api, app, _) = secured("").await;
    api.payment(PAYMENT, "in_process", "250", Some(ORDER));
    assert_eq!(app.post_fixture(&signed_alert()).await.status(), 200);
    app.run_jobs().await;
    assert_eq!(app.event_types(), ["order.blocked", "payment.cancelled"]);
    assert_eq!(api.changes().await.len(), 1);
    assert!(held(&app).await.is_empty());
    app.stop().await;
}

/// A person confirms a held alert (CLI and admin API): the refund runs.
async fn a_confirmed_alert_is_refunded() {
    let (api, app, clock) = secured("").await;
    api.payment(PAYMENT, "approved", "250", Some(ORDER));
    api.payment("1001", "approved", "100", Some(ORDER));
    alert(&app).await;
    let second = serde_json::json!({"merchant_order": ORDER, "payment_id": 1001});
    app.post_json("topic=delivery_cancellation&id=1", &second)
        .await;
    app.run_jobs().await;
    let reviews = held(&app).await;
    assert_eq!(reviews.len(), 2);
    let first = reviews.iter().find(|r| r["payment_id"] == PAYMENT).unwrap();
    let other = reviews.iter().find(|r| r["payment_id"] == "1001").unwrap();

    // By the CLI: the evidence and what confirming does, first.
    let id = first["id"].as_i64().unwrap().to_string();
    let (ok, out, err) = cli(&app, &["fraud", "list"]);
    assert!(ok, "{err}");
    assert!(out.contains(PAYMENT) && out.contains("held"), "{out}");
    let (ok, out, err) = cli(&app, &["fraud", "show", &id]);
    assert!(ok, "{err}");
    assert!(out.contains(PAYMENT) && out.contains(ORDER), "{out}");
    // The payment was read when the alert was held: the refund and its
    // amount are named.
    let consequence = "refund 250.00 to the buyer; cannot be undone";
    assert!(
        out.contains(&format!("if confirmed: {consequence}")),
        "{out}"
    );
    // Money moves: with nobody at a terminal to ask, only --yes confirms.
    let (ok, out, err) = cli(&app, &["fraud", "confirm", &id]);
    assert!(!ok && out.is_empty(), "{out}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(consequence) && err.contains("--yes"), "{err}");
    assert_eq!(held(&app).await.len(), 2, "nothing was done");
    // On a terminal it says what confirming does and asks; "n" moves nothing.
    let asked = on_a_terminal(&app, &["fraud", "confirm", &id], "n\n");
    assert!(
        asked.contains(consequence) && asked.contains("Confirm? [y/N]"),
        "{asked}"
    );
    assert_eq!(held(&app).await.len(), 2, "answered no: nothing was done");
    let (ok, out, err) = cli(&app, &["fraud", "confirm", &id, "--yes"]);
    assert!(ok, "{err}");
    assert!(out.contains(&format!("confirmed: {consequence}")), "{out}");
    let (ok, _, err) = cli(&app, &["fraud", "confirm", &id, "--yes"]);
    assert!(!ok && err.contains("confirmed already"), "{err}");
    // The CLI's clock is the system's; the app's is the test's.
    clock.advance(Duration::from_secs(60));
    app.run_jobs().await;
    let changes = api.changes().await;
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].1, format!("/v1/payments/{PAYMENT}/refunds"));

    // By the admin API.
    let path = format!("/api/fraud-reviews/{}/confirm", other["id"]);
    let (status, body) = app.admin("POST", &path, ADMIN).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["state"], "confirmed");
    let (status, _) = app.admin("POST", &path, ADMIN).await;
    assert_eq!(status, 409);
    let (status, _) = app
        .admin("POST", "/api/fraud-reviews/999/confirm", ADMIN)
        .await;
    assert_eq!(status, 404);
    app.run_jobs().await;
    assert_eq!(api.changes().await.len(), 2);
    let types = app.event_types();
    assert_eq!(types.iter().filter(|t| *t == "payment.refunded").count(), 2);
    assert!(held(&app).await.is_empty());
    app.stop().await;
}

/// A person dismisses a held alert: the order is unblocked, the dismissal
/// told, and the release rule runs again.
async fn a_dismissed_alert_unblocks_and_the_order_is_released() {
    let (api, app, clock) = secured("").await;
    api.payment(PAYMENT, "approved", "250", Some(ORDER));
    api.order(ORDER, "250", &[(PAYMENT, "250", "approved")], None);
    alert(&app).await;
    app.post("topic=merchant_order&id=4945357007", &[], None)
        .await;
    app.run_jobs().await;
    assert_eq!(
        app.event_types(),
        ["order.blocked", "fraud_alert.unverified"]
    );
    let id = held(&app).await[0]["id"].as_i64().unwrap();
    let (ok, _, err) = cli(&app, &["fraud", "dismiss", &id.to_string()]);
    assert!(ok, "{err}");
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
    let (status, body) = app
        .admin("GET", "/api/fraud-reviews?state=dismissed", ADMIN)
        .await;
    assert_eq!((status, body.as_array().unwrap().len()), (200, 1));
    // A later alert is not covered by the dismissal, but the goods are
    // gone now: a person is told, nothing is undone.
    alert(&app).await;
    assert_eq!(app.event_types()[4..], ["order.fraud_after_release"]);
    assert!(api.changes().await.is_empty());
    app.stop().await;
}

/// The same over the admin API; an order held by two alerts stays blocked
/// until both are dismissed.
async fn an_order_stays_blocked_while_any_alert_stands() {
    let (api, app, _) = secured("").await;
    api.payment(PAYMENT, "approved", "150", Some(ORDER));
    api.payment("1001", "approved", "100", Some(ORDER));
    api.order(
        ORDER,
        "250",
        &[(PAYMENT, "150", "approved"), ("1001", "100", "approved")],
        None,
    );
    alert(&app).await;
    let second = serde_json::json!({"merchant_order": ORDER, "payment_id": 1001});
    app.post_json("topic=delivery_cancellation&id=1", &second)
        .await;
    app.run_jobs().await;
    let reviews = held(&app).await;
    let dismiss = |r: &serde_json::Value| format!("/api/fraud-reviews/{}/dismiss", r["id"]);
    let (status, _) = app.admin("POST", &dismiss(&reviews[0]), ADMIN).await;
    assert_eq!(status, 200);
    app.run_jobs().await;
    assert!(!app.event_types().contains(&"order.released".to_string()));
    let (status, _) = app.admin("POST", &dismiss(&reviews[1]), ADMIN).await;
    assert_eq!(status, 200);
    app.run_jobs().await;
    assert!(app.event_types().contains(&"order.released".to_string()));
    app.stop().await;
}

/// The shipped default, with or without a secret: a forged IPN alert
/// blocks, holds for a person, and moves no money.
async fn by_default_an_unauthenticated_alert_is_held() {
    let (api, app, _) = setup(TestConfig::default()).await;
    api.payment(PAYMENT, "in_process", "250", Some(ORDER));
    alert(&app).await;
    assert_eq!(
        app.event_types(),
        ["order.blocked", "fraud_alert.unverified"]
    );
    assert!(api.changes().await.is_empty());
    app.stop().await;
}

/// A delivery_cancellation IPN whose body names nothing is kept; its job
/// learns from the API what its id is, blocks, and waits for a person.
async fn an_alert_naming_nothing_is_resolved_and_held() {
    let (api, app, _) = setup(TestConfig::acting().admin(ADMIN)).await;
    api.payment("58980959081", "approved", "250", Some(ORDER));
    for name in [
        "ipn-delivery-cancellation-no-body.json",
        "ipn-delivery-cancellation-resource-topic.json",
    ] {
        assert_eq!(app.post_fixture(&fixture(name)).await.status(), 200);
    }
    app.run_jobs().await;
    assert_eq!(
        app.event_types(),
        ["order.blocked", "fraud_alert.unverified"]
    );
    let events = app.events();
    assert_eq!(events[1].1["payment_id"], "58980959081");
    assert_eq!(events[1].1["merchant_order_id"], ORDER);
    assert!(
        events[1].1["reason"]
            .as_str()
            .unwrap()
            .contains("learnt from the API")
    );
    assert!(
        api.changes().await.is_empty(),
        "even an account that acts holds these"
    );
    // An id the API does not know is rejected: nothing more is told.
    app.post("topic=delivery_cancellation&id=404", &[], None)
        .await;
    app.run_jobs().await;
    assert_eq!(app.events().len(), 2);
    assert_eq!(reviews(&app, "rejected").await.len(), 1);
    app.stop().await;
}
