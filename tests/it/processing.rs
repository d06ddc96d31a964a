//! The worker, the rules and the events, against a real HTTP stand-in for
//! the platform API. Tests drive the worker one job at a time and move a
//! manual clock, so retries and backoff need no sleeping.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use pointhook_common::clock::ManualClock;
use serde_json::json;

use crate::helpers::*;
use crate::platform::*;

on_both_backends!(
    an_approved_payment_releases_its_order_once,
    not_paid_then_awaiting_shipment_then_released_never_back,
    amounts_are_exact_decimals,
    every_row_of_the_intent_table,
    confirmation_required_is_confirmed_once_the_payment_is,
    point_integration_notifications_fetch_the_intent,
    a_forged_final_state_takes_no_final_slot,
    a_payment_that_is_not_the_intents_decides_nothing,
    a_contradicting_final_state_is_recorded_as_a_conflict,
    chargebacks_are_told_once_per_status_and_flag_released_orders,
    a_payment_before_its_order_is_readable_is_retried,
    an_order_behind_its_approved_payment_is_waited_for,
    payments_without_a_merchant_order_are_told,
    a_resource_that_never_appears_is_given_up,
    api_faults_end_in_success,
    a_job_is_dead_after_max_attempts,
    a_refused_token_is_permanent_and_named,
    the_merchant_down_then_up_gets_every_event_with_a_stable_id,
    events_are_given_up_after_the_horizon,
    without_a_fulfillment_url_events_are_stored_only,
    racing_notifications_release_an_order_exactly_once,
    with_the_worker_off_nothing_is_fetched,
    shutdown_releases_the_lease_of_a_job_still_running,
    ids_above_2_pow_53_round_trip_as_strings,
    a_fetched_resource_with_another_id_fails_the_job,
    the_outbox_follows_no_redirect,
    an_event_decided_while_a_batch_is_out_does_not_wait_for_it,
    the_outbox_keeps_to_max_in_flight,
);

const ORDER: &str = "4945357007";
const PAYMENT: &str = "123456789";

async fn setup(merchant: Option<&Merchant>) -> (FakeApi, TestApp, Arc<ManualClock>) {
    let api = FakeApi::start().await;
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let mut config = TestConfig::default().api(&api.uri()).clock(clock.clone());
    if let Some(m) = merchant {
        config = config.extra(&m.config());
    }
    let app = spawn_app_with(config).await;
    (api, app, clock)
}

fn paid_order(api: &FakeApi, shipment: Option<&str>) {
    api.payment(PAYMENT, "approved", "100.5", Some(ORDER));
    api.order(
        ORDER,
        "350.5",
        &[
            (PAYMENT, "100.5", "approved"),
            ("23064274473", "250", "approved"),
        ],
        shipment,
    );
}

async fn an_approved_payment_releases_its_order_once() {
    let merchant = Merchant::start().await;
    let (api, app, clock) = setup(Some(&merchant)).await;
    paid_order(&api, Some("ready_to_ship"));
    for name in [
        "ipn-payment.json",
        "ipn-payment.json",
        "webhook-payment.json",
        "ipn-merchant-order.json",
        "webhook-merchant-order.json",
    ] {
        assert_eq!(app.post_fixture(&fixture(name)).await.status(), 200);
    }
    app.run_jobs().await;
    let events = app.events();
    assert_eq!(
        app.event_types_sorted(),
        ["order.released", "payment.updated"],
        "{events:?}"
    );
    let payment = app.event_where("payment.updated", "", "");
    assert_eq!(payment["payment_id"], PAYMENT);
    assert_eq!(payment["status"], "approved");
    assert_eq!(payment["merchant_order_id"], ORDER);
    let data = app.event_where("order.released", "", "");
    // Every id is a string; every amount a decimal string.
    assert_eq!(data["merchant_order_id"], ORDER);
    assert_eq!(data["total_amount"], "350.50");
    assert_eq!(data["paid_amount"], "350.50");
    assert_eq!(data["payment_ids"], json!([PAYMENT, "23064274473"]));
    assert_eq!(data["external_reference"], format!("ref-{ORDER}"));
    assert!(
        api.authorization_headers()
            .await
            .iter()
            .all(|h| h == "Bearer tok")
    );

    assert_eq!(app.deliver_events().await, 2);
    let received = merchant.received().await;
    assert_eq!(received.len(), 2);
    // Due events are posted side by side: no order between them.
    let (r, body) = received
        .iter()
        .map(|r| {
            (
                r,
                serde_json::from_slice::<serde_json::Value>(&r.body).unwrap(),
            )
        })
        .find(|(_, b)| b["type"] == "order.released")
        .expect("order.released posted");
    assert_eq!(body["account"], "default");
    assert!(body["id"].as_str().unwrap().starts_with("evt_"));
    assert!(body["created_at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(
        r.headers["webhook-id"].to_str().unwrap(),
        body["id"].as_str().unwrap()
    );
    let wh = standardwebhooks::Webhook::new(MERCHANT_SECRET).unwrap();
    let mut headers = http::HeaderMap::new();
    for name in ["webhook-id", "webhook-timestamp", "webhook-signature"] {
        headers.insert(name, r.headers[name].to_str().unwrap().parse().unwrap());
    }
    wh.verify(&r.body, &headers)
        .expect("the merchant can verify the signature");
    assert_eq!(app.deliver_events().await, 0, "delivered once");

    // The approval re-sent hours later: decided already, nothing new.
    clock.advance(Duration::from_secs(5 * 3600));
    app.post_fixture(&fixture("ipn-payment.json")).await;
    app.run_jobs().await;
    assert_eq!(app.events().len(), 2);

    app.stop().await;
}

async fn not_paid_then_awaiting_shipment_then_released_never_back() {
    let (api, app, _) = setup(None).await;
    let notify = || app.post("topic=merchant_order&id=4945357007", &[], None);
    api.order(
        ORDER,
        "100",
        &[("1", "60", "approved"), ("2", "40", "rejected")],
        None,
    );
    notify().await;
    app.run_jobs().await;
    assert!(app.events().is_empty(), "not paid: no event");

    api.order(
        ORDER,
        "100",
        &[("1", "60", "approved"), ("2", "40", "approved")],
        Some("pending"),
    );
    notify().await;
    app.run_jobs().await;
    notify().await;
    app.run_jobs().await;
    assert_eq!(app.event_types(), ["order.awaiting_shipment"]);

    api.order(
        ORDER,
        "100",
        &[("1", "60", "approved"), ("2", "40", "approved")],
        Some("ready_to_ship"),
    );
    notify().await;
    app.run_jobs().await;
    api.order(
        ORDER,
        "100",
        &[("1", "60", "approved"), ("2", "40", "approved")],
        Some("shipped"),
    );
    notify().await;
    app.run_jobs().await;
    assert_eq!(
        app.event_types(),
        ["order.awaiting_shipment", "order.released"]
    );
    let row = app
        .sql
        .rows("SELECT paid_amount, released_at FROM orders", &[]);
    let (paid, released) = (row[0][0].text(), row[0][1].opt_int());
    assert_eq!(paid, "100.00");
    assert!(released.is_some());
    app.stop().await;
}

async fn amounts_are_exact_decimals() {
    let (api, app, _) = setup(None).await;
    api.order(
        ORDER,
        "0.8",
        &[("1", "0.7", "approved"), ("2", "0.1", "approved")],
        None,
    );
    app.post("topic=merchant_order&id=4945357007", &[], None)
        .await;
    app.run_jobs().await;
    let events = app.events();
    assert_eq!(events[0].0, "order.released");
    assert_eq!(events[0].1["paid_amount"], "0.80");
    app.stop().await;
}

/// An intent body as a terminal's webhook sends it; it claims an approved
/// payment, which decides nothing.
fn intent_body(id: &str, state: &str, payment: Option<&str>) -> serde_json::Value {
    let mut body = json!({
        "id": id, "state": state, "amount": 1500, "caller_id": 9876543, "client_id": 1234567890,
        "additional_info": {"external_reference": "table-12-order-881", "ticket_number": "39SHDKKDJ"},
    });
    if let Some(p) = payment {
        body["payment"] =
            json!({"id": p.parse::<u64>().unwrap(), "state": "approved", "type": "credit_card"});
    }
    body
}

async fn every_row_of_the_intent_table() {
    let (api, app, _) = setup(None).await;
    let rows: &[(&str, Option<&str>, Option<&str>)] = &[
        (
            "FINISHED",
            Some("approved"),
            Some("payment_intent.finished"),
        ),
        (
            "FINISHED",
            Some("rejected"),
            Some("payment_intent.not_approved"),
        ),
        (
            "CONFIRMATION_REQUIRED",
            Some("approved"),
            Some("payment_intent.confirmed"),
        ),
        (
            "CONFIRMATION_REQUIRED",
            Some("rejected"),
            Some("payment_intent.not_approved"),
        ),
        (
            "CONFIRMATION_REQUIRED",
            Some("cancelled"),
            Some("payment_intent.not_approved"),
        ),
        (
            "CONFIRMATION_REQUIRED",
            Some("refunded"),
            Some("payment_intent.not_approved"),
        ),
        (
            "CONFIRMATION_REQUIRED",
            Some("charged_back"),
            Some("payment_intent.not_approved"),
        ),
        ("CONFIRMATION_REQUIRED", Some("pending"), None),
        ("CONFIRMATION_REQUIRED", Some("in_process"), None),
        ("CONFIRMATION_REQUIRED", Some("authorized"), None),
        ("CANCELED", None, Some("payment_intent.canceled")),
        ("ERROR", None, Some("payment_intent.error")),
        ("ABANDONED", None, Some("payment_intent.abandoned")),
        ("OPEN", None, None),
        ("ON_TERMINAL", None, None),
    ];
    for (i, (state, status, expected)) in rows.iter().enumerate() {
        let intent = format!("intent-{i}");
        let payment = status.map(|_| format!("{}", 5000 + i));
        if let (Some(p), Some(s)) = (&payment, status) {
            // The notification says "approved"; only the fetched status counts.
            api.payment(p, s, "15", None);
        }
        api.intent(&intent, state, payment.as_deref());
        let before = app.events().len();
        // Whatever state the body claims, the API's decides.
        app.post_json("", &intent_body(&intent, "FINISHED", payment.as_deref()))
            .await;
        app.run_jobs().await;
        let events = app.events();
        match expected {
            Some(t) => {
                assert_eq!(events.len(), before + 1, "{state} {status:?}");
                let (kind, data) = events.last().unwrap();
                assert_eq!(kind, t, "{state} {status:?}");
                assert_eq!(data["payment_intent_id"], intent.as_str());
                assert_eq!(data["state"], *state);
                assert_eq!(data["amount"], "15.00");
                assert_eq!(data["external_reference"], "table-12");
                assert_eq!(data["ticket_number"], "T-1");
                match &payment {
                    Some(p) => assert_eq!(data["payment_id"], p.as_str()),
                    None => assert!(data["payment_id"].is_null()),
                }
            }
            None => {
                assert_eq!(events.len(), before, "{state} {status:?}: not decided yet");
                let (job_state, attempts, error) = app.job(&format!("payment_intent:{intent}"));
                assert_eq!(
                    (job_state, attempts),
                    (JobState::Pending, 1),
                    "retried later"
                );
                let error = error.unwrap();
                assert!(
                    error.contains("still being decided")
                        || error.contains(&format!("still {state}")),
                    "{error}"
                );
            }
        }
    }
    app.stop().await;
}

async fn confirmation_required_is_confirmed_once_the_payment_is() {
    let (api, app, clock) = setup(None).await;
    api.intent(
        "7f25f9aa-eea6-4f9c-bf16-a341f71ba2f1",
        "CONFIRMATION_REQUIRED",
        Some(PAYMENT),
    );
    app.post_fixture(&fixture("intent-confirmation-required.json"))
        .await;
    api.payment(PAYMENT, "in_process", "15", None);
    app.run_jobs().await;
    assert!(app.events().is_empty());
    api.payment(PAYMENT, "approved", "15", None);
    app.run_jobs().await;
    assert!(app.events().is_empty(), "not due yet");
    clock.advance(Duration::from_secs(3));
    app.run_jobs().await;
    assert_eq!(app.event_types(), ["payment_intent.confirmed"]);
    app.stop().await;
}

async fn point_integration_notifications_fetch_the_intent() {
    let (api, app, clock) = setup(None).await;
    let id = "7f25f9aa-eea6-4f9c-bf16-a341f71ba2f1";
    api.intent(id, "ON_TERMINAL", None);
    app.post_fixture(&fixture("ipn-point-integration.json"))
        .await;
    app.run_jobs().await;
    assert!(app.events().is_empty(), "not final yet");
    let (state, attempts, error) = app.job(&format!("payment_intent:{id}"));
    assert_eq!(
        (state, attempts),
        (JobState::Pending, 1),
        "asked again later"
    );
    assert!(error.unwrap().contains("still ON_TERMINAL"));
    // Still not final after a while: the job ends without a decision.
    for _ in 0..8 {
        clock.advance(Duration::from_secs(120));
        app.run_jobs().await;
    }
    assert_eq!(app.job(&format!("payment_intent:{id}")).0, JobState::Done);
    assert!(app.events().is_empty());

    api.intent(id, "FINISHED", Some(PAYMENT));
    api.payment(PAYMENT, "approved", "15", None);
    app.post(
        &format!("type=point_integration_wh&data.id={id}"),
        &[],
        None,
    )
    .await;
    app.run_jobs().await;
    assert_eq!(app.event_types(), ["payment_intent.finished"]);
    app.stop().await;
}

/// A forged body claiming a final state takes nothing: the API still says
/// OPEN. The real outcome is told when the API confirms it.
async fn a_forged_final_state_takes_no_final_slot() {
    let (api, app, clock) = setup(None).await;
    let id = "7f25f9aa-eea6-4f9c-bf16-a341f71ba2f1";
    api.intent(id, "OPEN", None);
    app.post_json("", &intent_body(id, "CANCELED", None)).await;
    app.run_jobs().await;
    assert!(app.events().is_empty());
    assert_eq!(app.count("SELECT count(*) FROM decisions"), 0);
    // A forged FINISHED naming an approved payment of the account.
    api.payment("999", "approved", "15", None);
    app.post_json("", &intent_body(id, "FINISHED", Some("999")))
        .await;
    clock.advance(Duration::from_secs(5));
    app.run_jobs().await;
    assert!(app.events().is_empty());

    api.intent(id, "FINISHED", Some(PAYMENT));
    api.payment(PAYMENT, "approved", "15", None);
    app.post_fixture(&fixture("intent-finished.json")).await;
    clock.advance(Duration::from_secs(5));
    app.run_jobs().await;
    let events = app.events();
    assert_eq!(app.event_types(), ["payment_intent.finished"]);
    assert_eq!(events[0].1["payment_id"], PAYMENT);
    app.stop().await;
}

/// A payment that is not the intent's (another amount, another reference)
/// decides nothing; the job is left for a person, named.
async fn a_payment_that_is_not_the_intents_decides_nothing() {
    let (api, app, _) = setup(None).await;
    let id = "7f25f9aa-eea6-4f9c-bf16-a341f71ba2f1";
    api.intent(id, "FINISHED", Some("999"));
    api.payment("999", "approved", "2500", None);
    app.post_fixture(&fixture("intent-finished.json")).await;
    app.run_jobs().await;
    assert!(app.events().is_empty());
    let (state, _, error) = app.job(&format!("payment_intent:{id}"));
    assert_eq!(state, JobState::Dead, "for a person");
    let error = error.unwrap();
    assert!(
        error.contains("a person must look") && error.contains("2500.00"),
        "{error}"
    );
    app.stop().await;
}

async fn a_contradicting_final_state_is_recorded_as_a_conflict() {
    let (api, app, _) = setup(None).await;
    let id = "7f25f9aa-eea6-4f9c-bf16-a341f71ba2f1";
    api.intent(id, "FINISHED", Some(PAYMENT));
    api.payment(PAYMENT, "approved", "15", None);
    app.post_fixture(&fixture("intent-finished.json")).await;
    app.run_jobs().await;
    // Should the API ever contradict itself, the first final state stands.
    api.intent(id, "CANCELED", None);
    app.post_fixture(&fixture("intent-canceled.json")).await;
    app.run_jobs().await;
    assert_eq!(app.event_types(), ["payment_intent.finished"]);
    assert_eq!(
        app.count("SELECT count(*) FROM decisions WHERE key = 'conflict:payment_intent.canceled'"),
        1
    );
    app.stop().await;
}

async fn chargebacks_are_told_once_per_status_and_flag_released_orders() {
    let (api, app, _) = setup(None).await;
    paid_order(&api, None);
    app.post("topic=merchant_order&id=4945357007", &[], None)
        .await;
    app.run_jobs().await;
    let mut cb = json!({
        "id": "43589345903450", "payments": [123456789u64], "currency": "ARS", "amount": 100.2,
        "reason": "fraud", "coverage_applied": null, "documentation_status": "not_supplied",
    });
    api.set("/v1/chargebacks/43589345903450", cb.clone());
    for _ in 0..2 {
        app.post_fixture(&fixture("ipn-chargeback.json")).await;
        app.run_jobs().await;
    }
    assert_eq!(
        app.event_types(),
        ["order.released", "chargeback.updated", "order.at_risk"]
    );
    cb["documentation_status"] = json!("valid");
    api.set("/v1/chargebacks/43589345903450", cb);
    app.post(
        "type=topic_chargebacks_wh&data.id=43589345903450",
        &[],
        None,
    )
    .await;
    app.run_jobs().await;
    let events = app.events();
    assert_eq!(
        events.iter().map(|e| e.0.as_str()).collect::<Vec<_>>(),
        [
            "order.released",
            "chargeback.updated",
            "order.at_risk",
            "chargeback.updated"
        ]
    );
    assert_eq!(events[1].1["amount"], "100.20");
    assert_eq!(events[2].1["merchant_order_id"], ORDER);
    assert_eq!(events[1].1["chargeback_id"], "43589345903450");
    assert_eq!(events[1].1["payment_ids"], json!([PAYMENT]));
    assert_eq!(events[3].1["documentation_status"], "valid");
    app.stop().await;
}

async fn a_payment_before_its_order_is_readable_is_retried() {
    let (api, app, clock) = setup(None).await;
    api.payment(PAYMENT, "approved", "350.5", Some(ORDER));
    app.post_fixture(&fixture("ipn-payment.json")).await;
    app.run_jobs().await;
    let (state, attempts, error) = app.job("payment:123456789");
    assert_eq!((state, attempts), (JobState::Pending, 1));
    assert!(error.unwrap().contains("not found"));
    api.order(ORDER, "350.5", &[(PAYMENT, "350.5", "approved")], None);
    clock.advance(Duration::from_secs(2));
    app.run_jobs().await;
    assert_eq!(app.event_types(), ["payment.updated", "order.released"]);
    app.stop().await;
}

/// The two are not updated at once: an approved payment whose merchant
/// order does not list it yet is told, and the order looked at again, not
/// decided "not paid".
async fn an_order_behind_its_approved_payment_is_waited_for() {
    let (api, app, clock) = setup(None).await;
    api.payment(PAYMENT, "approved", "350.5", Some(ORDER));
    api.order(ORDER, "350.5", &[(PAYMENT, "350.5", "pending")], None);
    app.post_fixture(&fixture("ipn-payment.json")).await;
    app.run_jobs().await;
    assert_eq!(app.event_types(), ["payment.updated"]);
    let (state, _, error) = app.job("payment:123456789");
    assert_eq!(state, JobState::Pending);
    assert!(error.unwrap().contains("does not list approved payment"));
    api.order(ORDER, "350.5", &[(PAYMENT, "350.5", "approved")], None);
    clock.advance(Duration::from_secs(3));
    app.run_jobs().await;
    assert_eq!(app.event_types(), ["payment.updated", "order.released"]);
    app.stop().await;
}

/// Payments without a merchant order (Checkout API, Bricks, Point) reach the
/// merchant; a marketplace order is not looked up as a merchant order.
async fn payments_without_a_merchant_order_are_told() {
    let (api, app, _) = setup(None).await;
    api.payment("1", "approved", "10", None);
    api.set(
        "/v1/payments/2",
        json!({"id": 2, "status": "rejected", "status_detail": "cc_rejected_other_reason",
               "transaction_amount": 10, "external_reference": "x-2",
               "order": {"id": 77, "type": "mercadolibre"}}),
    );
    for id in ["1", "2"] {
        app.post(&format!("topic=payment&id={id}"), &[], None).await;
    }
    app.run_jobs().await;
    assert_eq!(app.event_types(), ["payment.updated", "payment.updated"]);
    let second = app.event_where("payment.updated", "payment_id", "2");
    assert_eq!(second["status_detail"], "cc_rejected_other_reason");
    assert_eq!(second["external_reference"], "x-2");
    assert!(second["merchant_order_id"].is_null());
    assert_eq!(api.calls("/merchant_orders/77").await, 0);
    // A new status is told once more; the same one is not.
    api.payment("1", "refunded", "10", None);
    for _ in 0..2 {
        app.post("topic=payment&id=1", &[], None).await;
        app.run_jobs().await;
    }
    assert_eq!(app.events().len(), 3);
    assert_eq!(app.events()[2].1["status"], "refunded");
    app.stop().await;
}

/// An id the API does not know: named by a notification anybody could
/// send (an IPN), it costs two reads and the job ends with no decision
/// (reconciliation finds the resource if it ever exists); named by a
/// signed webhook, it is read for the not-found attempts, then the job is
/// dead, in front of a person.
async fn a_resource_that_never_appears_is_given_up() {
    let (api, app, clock) = setup(None).await;
    app.post("topic=merchant_order&id=404404", &[], None).await;
    for _ in 0..10 {
        app.run_jobs().await;
        clock.advance(Duration::from_secs(400));
    }
    let (state, attempts, _) = app.job("merchant_order:404404");
    assert_eq!(
        (state, attempts),
        (JobState::Done, 2),
        "two reads, then left"
    );
    assert_eq!(api.calls("/merchant_orders/404404").await, 2);
    assert!(app.events().is_empty());
    app.stop().await;

    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let app = spawn_app_with(
        TestConfig::with_secret()
            .api(&api.uri())
            .clock(clock.clone()),
    )
    .await;
    let signature = pointhook_common::signature::sign(SECRET.as_bytes(), Some("404405"), None, 1);
    let res = app
        .post(
            "type=topic_merchant_order_wh&data.id=404405",
            &[("x-signature", signature.as_str())],
            None,
        )
        .await;
    assert_eq!(res.status(), 200);
    for _ in 0..10 {
        app.run_jobs().await;
        clock.advance(Duration::from_secs(400));
    }
    let (state, attempts, error) = app.job("merchant_order:404405");
    assert_eq!(
        (state, attempts),
        (JobState::Dead, 5),
        "dead after the not-found attempts"
    );
    assert!(error.unwrap().contains("not found"));
    assert_eq!(api.calls("/merchant_orders/404405").await, 5);
    app.stop().await;
}

async fn api_faults_end_in_success() {
    let (api, app, clock) = setup(None).await;
    paid_order(&api, None);
    let order_path = "/merchant_orders/4945357007";
    api.fail_next(order_path, 1, status(500)).await;
    api.fail_next(order_path, 1, status(429).retry_after(7))
        .await;
    api.fail_next(order_path, 1, slow(Duration::from_secs(3)))
        .await;
    app.post("topic=merchant_order&id=4945357007", &[], None)
        .await;

    app.run_jobs().await;
    let (_, _, error) = app.job("merchant_order:4945357007");
    assert!(error.unwrap().contains("500"));

    clock.advance(Duration::from_secs(2));
    app.run_jobs().await;
    let (_, attempts, error) = app.job("merchant_order:4945357007");
    assert_eq!(attempts, 2);
    assert!(error.unwrap().contains("rate limited"));
    let run_at = app.count("SELECT run_at - updated_at FROM jobs");
    assert_eq!(run_at, 7000, "Retry-After honoured");

    clock.advance(Duration::from_secs(7));
    app.run_jobs().await;
    let (_, _, error) = app.job("merchant_order:4945357007");
    assert!(error.unwrap().contains("timeout"));

    clock.advance(Duration::from_secs(10));
    app.run_jobs().await;
    assert_eq!(app.event_types(), ["order.released"]);
    assert_eq!(app.job("merchant_order:4945357007").0, JobState::Done);
    app.stop().await;
}

async fn a_job_is_dead_after_max_attempts() {
    let (api, app, clock) = setup(None).await;
    api.fail_next("/merchant_orders/1", 100, status(503)).await;
    app.post("topic=merchant_order&id=1", &[], None).await;
    for _ in 0..10 {
        app.run_jobs().await;
        clock.advance(Duration::from_secs(400));
    }
    let (state, attempts, error) = app.job("merchant_order:1");
    assert_eq!((state, attempts), (JobState::Dead, 6));
    assert!(error.unwrap().contains("503"));
    assert_eq!(api.calls("/merchant_orders/1").await, 6);
    app.stop().await;
}

async fn a_refused_token_is_permanent_and_named() {
    let (api, app, _) = setup(None).await;
    api.fail_next("/merchant_orders/1", 100, status(401)).await;
    app.post("topic=merchant_order&id=1", &[], None).await;
    app.run_jobs().await;
    let (state, attempts, error) = app.job("merchant_order:1");
    assert_eq!((state, attempts), (JobState::Dead, 1));
    assert!(
        error
            .unwrap()
            .contains("access token of account \"default\" was refused")
    );
    app.stop().await;
}

async fn the_merchant_down_then_up_gets_every_event_with_a_stable_id() {
    let merchant = Merchant::start().await;
    let (api, app, clock) = setup(Some(&merchant)).await;
    merchant.fail_next(2, 503).await;
    paid_order(&api, None);
    app.post("topic=merchant_order&id=4945357007", &[], None)
        .await;
    app.run_jobs().await;
    for _ in 0..3 {
        app.deliver_events().await;
        clock.advance(Duration::from_secs(10));
    }
    let received = merchant.received().await;
    assert_eq!(received.len(), 3);
    let ids: Vec<&str> = received
        .iter()
        .map(|r| r.headers["webhook-id"].to_str().unwrap())
        .collect();
    assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
    let row = app.sql.rows("SELECT state, attempts FROM events", &[]);
    let (state, attempts) = (row[0][0].event_state(), row[0][1].int());
    assert_eq!(
        (state, attempts),
        (EventState::Delivered, 3),
        "delivered on the third attempt"
    );
    app.stop().await;
}

async fn events_are_given_up_after_the_horizon() {
    let merchant = Merchant::start().await;
    let (api, app, clock) = setup(Some(&merchant)).await;
    merchant.fail_next(1000, 500).await;
    paid_order(&api, None);
    app.post("topic=merchant_order&id=4945357007", &[], None)
        .await;
    app.run_jobs().await;
    for _ in 0..5 {
        app.deliver_events().await;
        clock.advance(Duration::from_secs(30 * 3600));
    }
    let state = app.sql.value("SELECT state FROM events", &[]).event_state();
    assert_eq!(
        state,
        EventState::Dead,
        "given up after give_up_after_hours"
    );
    app.stop().await;
}

async fn without_a_fulfillment_url_events_are_stored_only() {
    let (api, app, _) = setup(None).await;
    paid_order(&api, None);
    app.post("topic=merchant_order&id=4945357007", &[], None)
        .await;
    app.run_jobs().await;
    let state = app.sql.value("SELECT state FROM events", &[]).event_state();
    assert_eq!(state, EventState::Stored);
    assert!(app.outbox.is_none());
    app.stop().await;
}

async fn racing_notifications_release_an_order_exactly_once() {
    let api = FakeApi::start().await;
    paid_order(&api, None);
    let app = spawn_app_with(TestConfig {
        worker_loop: true,
        ..TestConfig::default().api(&api.uri())
    })
    .await;
    let mut posts = Vec::new();
    for i in 0..40 {
        let client = app.client.clone();
        let query = if i % 2 == 0 {
            "topic=payment&id=123456789"
        } else {
            "topic=merchant_order&id=4945357007"
        };
        let url = app.url(&format!("/notifications?{query}"));
        posts.push(tokio::spawn(async move {
            client.post(url).send().await.unwrap().status()
        }));
    }
    for p in posts {
        assert_eq!(p.await.unwrap(), 200);
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while app.job("merchant_order:4945357007").0 != JobState::Done
        || app.job("payment:123456789").0 != JobState::Done
    {
        assert!(std::time::Instant::now() < deadline, "jobs did not finish");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut types = app.event_types();
    types.sort();
    assert_eq!(types, ["order.released", "payment.updated"]);
    assert_eq!(app.count("SELECT count(*) FROM decisions"), 2);
    app.stop().await;
}

async fn with_the_worker_off_nothing_is_fetched() {
    let api = FakeApi::start().await;
    paid_order(&api, None);
    let mut app = spawn_app_with(TestConfig::default().api(&api.uri())).await;
    app.post("topic=merchant_order&id=4945357007", &[], None)
        .await;
    // Once the app has stopped, everything it ran has ended: nothing was
    // fetched and the job waits for a worker.
    app.halt().await;
    assert_eq!(api.calls("/merchant_orders/4945357007").await, 0);
    assert_eq!(app.job("merchant_order:4945357007").0, JobState::Pending);
    app.stop().await;
}

async fn shutdown_releases_the_lease_of_a_job_still_running() {
    let api = FakeApi::start().await;
    paid_order(&api, None);
    api.set_delay(Duration::from_secs(5));
    let app = spawn_app_with(TestConfig {
        worker_loop: true,
        api_timeout_secs: 10,
        ..TestConfig::default()
            .api(&api.uri())
            .extra("[server]\ndrain_timeout_secs = 1\n")
    })
    .await;
    app.post("topic=merchant_order&id=4945357007", &[], None)
        .await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while app.job("merchant_order:4945357007").0 != JobState::Running {
        assert!(
            std::time::Instant::now() < deadline,
            "the job never started"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (sql, _database) = (app.sql.clone(), app.database.clone());
    let _dir = app.stop().await;
    let row = sql.rows("SELECT state, attempts FROM jobs", &[]);
    let (state, attempts) = (row[0][0].job_state(), row[0][1].int());
    assert_eq!(
        (state, attempts),
        (JobState::Pending, 0),
        "pending again; the interrupted attempt does not count"
    );
}

/// Ids above 2^53 (chargebacks have them) reach the merchant exactly, as
/// strings; the API writes them as numbers.
async fn ids_above_2_pow_53_round_trip_as_strings() {
    let (api, app, _) = setup(None).await;
    let cb: serde_json::Value =
        serde_json::from_str(r#"{"id": 233000061680860001, "payments": [9007199254740993]}"#)
            .unwrap();
    api.set("/v1/chargebacks/233000061680860001", cb);
    let payment: serde_json::Value = serde_json::from_str(
        r#"{"id": 9007199254740993, "status": "charged_back", "transaction_amount": 5}"#,
    )
    .unwrap();
    api.set("/v1/payments/9007199254740993", payment);
    let f = fixture("ipn-chargebacks-query-only.json");
    assert_eq!(f.query, "topic=chargebacks&id=233000061680860000");
    app.post("topic=chargebacks&id=233000061680860001", &[], None)
        .await;
    app.post("topic=payment&id=9007199254740993", &[], None)
        .await;
    app.run_jobs().await;
    let chargeback = app.event_where("chargeback.updated", "", "");
    assert_eq!(chargeback["chargeback_id"], "233000061680860001");
    assert_eq!(chargeback["payment_ids"], json!(["9007199254740993"]));
    let payment = app.event_where("payment.updated", "", "");
    assert_eq!(payment["payment_id"], "9007199254740993");
    // And in the bytes the merchant receives.
    let body = app
        .event_bodies()
        .into_iter()
        .find(|b| b.contains("chargeback.updated"))
        .unwrap();
    assert!(
        body.contains(r#""chargeback_id":"233000061680860001""#),
        "{body}"
    );
    app.stop().await;
}

/// An answer that is not the resource asked for fails the job, named.
async fn a_fetched_resource_with_another_id_fails_the_job() {
    let (api, app, _) = setup(None).await;
    api.set(
        "/v1/chargebacks/5",
        json!({"id": 6, "payments": [], "documentation_status": "valid"}),
    );
    app.post("topic=chargebacks&id=5", &[], None).await;
    app.run_jobs().await;
    let (state, _, error) = app.job("chargeback:5");
    assert_eq!(state, JobState::Dead);
    let error = error.unwrap();
    assert!(error.contains("not the resource asked for"), "{error}");
    assert!(app.events().is_empty());
    app.stop().await;
}

/// A redirect is not a delivery: the event stays pending (and is never
/// posted wherever the redirect points).
async fn the_outbox_follows_no_redirect() {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let merchant = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/events"))
        .respond_with(ResponseTemplate::new(307).insert_header("location", "/elsewhere"))
        .mount(&merchant)
        .await;
    Mock::given(method("POST"))
        .and(path("/elsewhere"))
        .respond_with(ResponseTemplate::new(204))
        .mount(&merchant)
        .await;
    let api = FakeApi::start().await;
    paid_order(&api, None);
    let app = spawn_app_with(TestConfig::default().api(&api.uri()).extra(&format!(
        "[fulfillment]\nurl = \"{}/events\"\nunsigned = true\n",
        merchant.uri()
    )))
    .await;
    app.post("topic=merchant_order&id=4945357007", &[], None)
        .await;
    app.run_jobs().await;
    assert_eq!(app.deliver_events().await, 1);
    let row = app.sql.rows("SELECT state, last_error FROM events", &[]);
    let (state, error) = (row[0][0].event_state(), row[0][1].opt_text());
    assert_eq!(state, pointhook::domain::EventState::Pending);
    assert!(error.unwrap().contains("307"));
    let posted: Vec<_> = merchant
        .received_requests()
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.url.path().to_string())
        .collect();
    assert_eq!(posted, ["/events"]);
    app.stop().await;
}

/// The merchant holds the answer to the first order's event for seconds;
/// the second order, decided meanwhile, is posted and recorded before it.
async fn an_event_decided_while_a_batch_is_out_does_not_wait_for_it() {
    use pointhook::domain::EventState;
    use wiremock::matchers::{body_string_contains, method};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    const SLOW: &str = "4945357001";
    const FAST: &str = "4945357002";
    let held = Duration::from_secs(4);
    let merchant = MockServer::start().await;
    Mock::given(method("POST"))
        .and(body_string_contains(SLOW))
        .respond_with(ResponseTemplate::new(204).set_delay(held))
        .mount(&merchant)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(204))
        .mount(&merchant)
        .await;
    let api = FakeApi::start().await;
    api.order(SLOW, "10", &[("1001", "10", "approved")], None);
    api.order(FAST, "10", &[("1002", "10", "approved")], None);
    let mut config = TestConfig::default().api(&api.uri()).extra(&format!(
        "[fulfillment]\nurl = \"{}/events\"\nunsigned = true\ntimeout_secs = 30\n",
        merchant.uri()
    ));
    config.worker_loop = true;
    let app = spawn_app_with(config).await;
    let posted = async |order: &str| {
        merchant
            .received_requests()
            .await
            .unwrap_or_default()
            .iter()
            .any(|r| String::from_utf8_lossy(&r.body).contains(order))
    };
    let delivered = |order: &str| {
        app.sql
            .rows(
                "SELECT state FROM events WHERE subject = $1",
                &[SqlValue::Text(format!("merchant_order:{order}"))],
            )
            .first()
            .is_some_and(|r| r[0].event_state() == EventState::Delivered)
    };

    app.post(&format!("topic=merchant_order&id={SLOW}"), &[], None)
        .await;
    wait_for("the first event to be posted", async || posted(SLOW).await).await;
    let first_posted = std::time::Instant::now();
    app.post(&format!("topic=merchant_order&id={FAST}"), &[], None)
        .await;
    wait_for("the second event to be delivered", async || delivered(FAST)).await;
    assert!(
        first_posted.elapsed() < held && !delivered(SLOW),
        "the second event waited for the first one's answer"
    );
    wait_for("the first event to be delivered", async || delivered(SLOW)).await;
    app.stop().await;
}

/// `fulfillment.max_in_flight` caps the POSTs out at once: with six events
/// due together and a merchant that takes a while to answer, no more than
/// two are ever being answered at the same time.
async fn the_outbox_keeps_to_max_in_flight() {
    use std::sync::Mutex;
    use std::time::Instant;
    use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

    /// Answers after `held`, noting when each POST arrived.
    struct Slow {
        held: Duration,
        arrivals: Arc<Mutex<Vec<Instant>>>,
    }
    impl Respond for Slow {
        fn respond(&self, _: &Request) -> ResponseTemplate {
            self.arrivals.lock().unwrap().push(Instant::now());
            ResponseTemplate::new(204).set_delay(self.held)
        }
    }

    const MAX: usize = 2;
    const EVENTS: usize = 6;
    let held = Duration::from_millis(400);
    let arrivals = Arc::new(Mutex::new(Vec::new()));
    let merchant = MockServer::start().await;
    Mock::given(wiremock::matchers::method("POST"))
        .respond_with(Slow {
            held,
            arrivals: arrivals.clone(),
        })
        .mount(&merchant)
        .await;
    let api = FakeApi::start().await;
    let orders: Vec<String> = (0..EVENTS).map(|i| format!("49453571{i:02}")).collect();
    for (i, order) in orders.iter().enumerate() {
        api.order(order, "10", &[(&format!("20{i}"), "10", "approved")], None);
    }
    let mut config = TestConfig::default().api(&api.uri()).extra(&format!(
        "[fulfillment]\nurl = \"{}/events\"\nunsigned = true\ntimeout_secs = 30\nmax_in_flight = {MAX}\n",
        merchant.uri()
    ));
    config.worker_loop = true;
    let app = spawn_app_with(config).await;
    for order in &orders {
        app.post(&format!("topic=merchant_order&id={order}"), &[], None)
            .await;
    }
    wait_for("every event to be posted", async || {
        arrivals.lock().unwrap().len() >= EVENTS
    })
    .await;
    // Each POST is answered `held` after it arrived, so the POSTs that
    // arrived within less than that of one another were out together.
    let arrivals = arrivals.lock().unwrap().clone();
    for first in &arrivals {
        let together = arrivals
            .iter()
            .filter(|t| {
                **t >= *first && t.duration_since(*first) < held - Duration::from_millis(50)
            })
            .count();
        assert!(
            together <= MAX,
            "{together} POSTs out at once, max_in_flight = {MAX}"
        );
    }
    app.stop().await;
}
