//! Point devices (paged, their mode changed and mailed) and intents on
//! emulated terminals: the steps on the sandbox's clock, the documented
//! refusals, cancelling, and the device presets.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use pointhook_common::clock::ManualClock;
use pointhook_sandbox::AccountSpec;
use pointhook_sandbox::MailSettings;
use pointhook_sandbox::ops::terminals::TERMINAL_STEP;
use reqwest::Method;
use serde_json::{Value, json};

use super::*;

#[tokio::test]
async fn devices_are_listed_in_pages_and_a_mode_change_is_mailed() {
    let spool = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let sb = start_sandbox_mailing(
        vec![AccountSpec {
            email: Some("shop@example.com".into()),
            devices: vec!["D-1".into(), "D-2".into(), "D-3".into()],
            ..account(None)
        }],
        clock.clone(),
        1.0,
        false,
        None,
        MailSettings::Spool(spool.path().to_path_buf()),
    )
    .await;
    let devices = "/point/integration-api/devices";
    // The device every account starts with, then the account's own.
    let (status, all) = api(&sb, Method::GET, devices, None).await;
    assert_eq!(status, 200);
    assert_eq!(all["paging"], json!({"total": 4, "limit": 50, "offset": 0}));
    let d1 = &all["devices"][1];
    assert_eq!(
        (&d1["id"], &d1["operating_mode"]),
        (&json!("D-1"), &json!("PDV"))
    );
    assert!(d1["pos_id"].is_u64() && d1["store_id"].is_u64() && d1["external_pos_id"].is_string());
    let (_, page) = api(
        &sb,
        Method::GET,
        &format!("{devices}?limit=2&offset=3"),
        None,
    )
    .await;
    assert_eq!(page["paging"], json!({"total": 4, "limit": 2, "offset": 3}));
    assert_eq!(page["devices"].as_array().unwrap().len(), 1);
    assert_eq!(page["devices"][0]["id"], "D-3");
    let (_, by_store) = api(
        &sb,
        Method::GET,
        &format!("{devices}?store_id={}", d1["store_id"]),
        None,
    )
    .await;
    assert_eq!(by_store["devices"], json!([d1]), "one store, one device");
    let (_, by_pos) = api(&sb, Method::GET, &format!("{devices}?pos_id=1"), None).await;
    assert_eq!(
        by_pos["paging"]["total"], 0,
        "no device at that point of sale"
    );
    for bad in ["limit=x", "offset=-1", "pos_id=abc"] {
        let (status, e) = api(&sb, Method::GET, &format!("{devices}?{bad}"), None).await;
        assert_eq!(status, 400, "{bad}");
        platform_error(&e, 400, "bad_request");
    }

    // The e-mail channel on, and its 30 minutes passed.
    let (status, _) = api(
        &sb,
        Method::PATCH,
        "/point/integration-api/integrator",
        Some(json!({"event_channel_devices": ["email"]})),
    )
    .await;
    assert_eq!(status, 200);
    clock.advance(Duration::from_secs(31 * 60));
    let (status, mode) = api(
        &sb,
        Method::PATCH,
        &format!("{devices}/D-2"),
        Some(json!({"operating_mode": "STANDALONE"})),
    )
    .await;
    assert_eq!(
        (status, mode),
        (200, json!({"operating_mode": "STANDALONE"}))
    );
    let (_, same) = api(
        &sb,
        Method::PATCH,
        &format!("{devices}/D-2"),
        Some(json!({"operating_mode": "STANDALONE"})),
    )
    .await;
    assert_eq!(same["operating_mode"], "STANDALONE", "no change: no event");
    let (_, all) = api(&sb, Method::GET, devices, None).await;
    assert_eq!(all["devices"][2]["operating_mode"], "STANDALONE");
    let (status, e) = api(
        &sb,
        Method::PATCH,
        &format!("{devices}/D-9"),
        Some(json!({"operating_mode": "PDV"})),
    )
    .await;
    assert_eq!(status, 403, "not the account's device");
    platform_error(&e, 403, "forbidden");
    let (status, e) = api(
        &sb,
        Method::PATCH,
        &format!("{devices}/D-1"),
        Some(json!({"operating_mode": "OFF"})),
    )
    .await;
    assert_eq!(status, 400);
    platform_error(&e, 400, "bad_request");

    assert_eq!(
        sb.sandbox.send_due_mails().await.unwrap(),
        1,
        "one change, one mail"
    );
    let mail = std::fs::read_dir(spool.path())
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .next()
        .unwrap();
    assert!(mail.contains("D-2"), "{mail}");
    assert!(mail.contains("from PDV to STANDALONE"), "{mail}");
    sb.stop().await;
}

/// Advances the sandbox's clock by one terminal step and runs the terminals.
async fn step(sb: &RunningSandbox, clock: &ManualClock) {
    clock.advance(TERMINAL_STEP);
    sb.sandbox.run_terminals().await.unwrap();
}

async fn intent_state(sb: &RunningSandbox, id: &Value) -> Value {
    let (status, intent) = api(
        sb,
        Method::GET,
        &format!(
            "/point/integration-api/payment-intents/{}",
            id.as_str().unwrap()
        ),
        None,
    )
    .await;
    assert_eq!(status, 200, "{intent}");
    intent
}

fn day(clock: &ManualClock) -> String {
    use pointhook_common::clock::Clock;
    humantime::format_rfc3339(clock.now()).to_string()[..10].to_string()
}

#[tokio::test]
async fn a_terminal_moves_its_intent_to_finished_on_the_sandbox_clock() {
    let (sb, clock) = on_manual_clock(&[DEVICE, "IDLE"]).await;
    let create = format!("/point/integration-api/devices/{DEVICE}/payment-intents");
    let (status, intent) = api(
        &sb,
        Method::POST,
        &create,
        Some(json!({
            "amount": 1500, "description": "table 12",
            "payment": {"installments": 1, "type": "debit_card"},
            "additional_info": {"external_reference": "table-12", "ticket_number": "T-9"},
        })),
    )
    .await;
    assert_eq!(status, 201, "{intent}");
    assert_eq!(intent["device_id"], DEVICE);
    assert_eq!(intent["amount"], 1500);
    assert_eq!(intent["additional_info"]["print_on_terminal"], true);
    assert!(
        intent.get("state").is_none(),
        "the documented answer has no state"
    );
    let id = intent["id"].clone();
    assert_eq!(intent_state(&sb, &id).await["state"], "OPEN");

    let (status, e) = api(&sb, Method::POST, &create, Some(json!({"amount": 10}))).await;
    assert_eq!(status, 409, "one intent at a time on a device");
    platform_error(&e, 409, "conflict_error");

    let mut seen = Vec::new();
    for _ in 0..3 {
        step(&sb, &clock).await;
        seen.push(intent_state(&sb, &id).await["state"].clone());
    }
    assert_eq!(seen, ["ON_TERMINAL", "PROCESSING", "FINISHED"]);
    let done = intent_state(&sb, &id).await;
    assert_eq!(done["payment"]["type"], "debit_card");
    assert_eq!(done["payment"]["state"], "approved");

    // The payment is a real one: fetched and refunded like any other.
    let payment_at = format!("/v1/payments/{}", done["payment"]["id"]);
    let (status, payment) = api(&sb, Method::GET, &payment_at, None).await;
    assert_eq!(status, 200);
    assert_eq!(payment["status"], "approved");
    assert_eq!(money(&payment["transaction_amount"]), "15.00");
    assert_eq!(payment["external_reference"], "table-12");
    assert_eq!(payment["payment_type_id"], "debit_card");
    let (status, _) = api(&sb, Method::POST, &format!("{payment_at}/refunds"), None).await;
    assert_eq!(status, 201);

    // Every state is an event; the last one is the intent's last state.
    let today = day(&clock);
    let (_, events) = api(
        &sb,
        Method::GET,
        &format!("/point/integration-api/payment-intents/events?startDate={today}&endDate={today}"),
        None,
    )
    .await;
    let states: Vec<&Value> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["payment_intent_id"] == id)
        .map(|e| &e["status"])
        .collect();
    assert_eq!(states, ["OPEN", "ON_TERMINAL", "PROCESSING", "FINISHED"]);
    let (status, last) = api(
        &sb,
        Method::GET,
        &format!(
            "/point/integration-api/payment-intents/{}/events",
            id.as_str().unwrap()
        ),
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(last["status"], "FINISHED");
    assert!(last["created_on"].as_str().unwrap().ends_with('Z'));

    // The final state was announced: the intent webhook and the IPN.
    let log = sb.log().await;
    let intent_webhooks: Vec<&Value> = log
        .iter()
        .filter(|e| e["form"] == "intent_webhook")
        .collect();
    assert_eq!(intent_webhooks.len(), 1, "only the final state is notified");
    assert!(log.iter().any(|e| e["topic"] == "point_integration_ipn"));

    // The device is free again.
    let (status, _) = api(&sb, Method::POST, &create, Some(json!({"amount": 10}))).await;
    assert_eq!(status, 201);
    sb.stop().await;
}

#[tokio::test]
async fn intents_on_devices_are_refused_as_documented() {
    let (sb, _clock) = on_manual_clock(&[DEVICE]).await;
    let create = format!("/point/integration-api/devices/{DEVICE}/payment-intents");
    for body in [
        json!({}),
        json!({"amount": 0}),
        json!({"amount": "15"}),
        json!({"amount": 15, "additional_info": "x"}),
        json!({"amount": 15, "notification_url": "http://h/n"}),
    ] {
        let (status, e) = api(&sb, Method::POST, &create, Some(body.clone())).await;
        assert_eq!(status, 400, "{body}");
        platform_error(&e, 400, "bad_request");
    }
    let (status, e) = api(
        &sb,
        Method::POST,
        "/point/integration-api/devices/OTHER/payment-intents",
        Some(json!({"amount": 15})),
    )
    .await;
    assert_eq!(status, 403, "not the account's device");
    platform_error(&e, 403, "forbidden");
    api(
        &sb,
        Method::PATCH,
        &format!("/point/integration-api/devices/{DEVICE}"),
        Some(json!({"operating_mode": "STANDALONE"})),
    )
    .await;
    let (status, e) = api(&sb, Method::POST, &create, Some(json!({"amount": 15}))).await;
    assert_eq!(status, 409, "a standalone terminal takes no intents");
    platform_error(&e, 409, "conflict_error");
    for path in [
        "/point/integration-api/payment-intents/nope".to_string(),
        "/point/integration-api/payment-intents/nope/events".to_string(),
    ] {
        let (status, e) = api(&sb, Method::GET, &path, None).await;
        assert_eq!(status, 404, "{path}");
        assert_eq!(e["message"], "That payment intent doesn't exist!");
        platform_error(&e, 404, "not_found");
    }
    sb.stop().await;
}

#[tokio::test]
async fn an_intent_is_cancelled_only_while_open() {
    let (sb, clock) = on_manual_clock(&[DEVICE]).await;
    let create = format!("/point/integration-api/devices/{DEVICE}/payment-intents");
    let (_, intent) = api(&sb, Method::POST, &create, Some(json!({"amount": 900}))).await;
    let id = intent["id"].as_str().unwrap().to_string();
    let cancel = format!("{create}/{id}");
    let (status, e) = api(
        &sb,
        Method::DELETE,
        &format!("/point/integration-api/devices/OTHER/payment-intents/{id}"),
        None,
    )
    .await;
    assert_eq!(status, 404, "not on that device");
    platform_error(&e, 404, "not_found");
    let (status, answer) = api(&sb, Method::DELETE, &cancel, None).await;
    assert_eq!((status, answer), (200, json!({"id": id})));
    assert_eq!(intent_state(&sb, &json!(id)).await["state"], "CANCELED");
    let (status, e) = api(&sb, Method::DELETE, &cancel, None).await;
    assert_eq!(status, 409, "already final");
    platform_error(&e, 409, "conflict_error");
    // The terminal let it go: it stays cancelled.
    for _ in 0..4 {
        step(&sb, &clock).await;
    }
    assert_eq!(intent_state(&sb, &json!(id)).await["state"], "CANCELED");
    assert!(sb.log().await.iter().any(|e| e["form"] == "intent_webhook"));

    // Once on the terminal, only the terminal can end it.
    let (_, second) = api(&sb, Method::POST, &create, Some(json!({"amount": 900}))).await;
    step(&sb, &clock).await;
    let (status, e) = api(
        &sb,
        Method::DELETE,
        &format!("{create}/{}", second["id"].as_str().unwrap()),
        None,
    )
    .await;
    assert_eq!(status, 409, "blocked by the terminal");
    platform_error(&e, 409, "conflict_error");
    let (status, _) = api(&sb, Method::DELETE, &format!("{create}/nope"), None).await;
    assert_eq!(status, 404);
    sb.stop().await;
}

#[tokio::test]
async fn a_device_preset_ends_its_intents_otherwise() {
    let (sb, clock) = on_manual_clock(&[DEVICE]).await;
    let create = format!("/point/integration-api/devices/{DEVICE}/payment-intents");
    let preset = format!("devices/{DEVICE}/preset");
    let cases = [
        (
            json!({"state": "CONFIRMATION_REQUIRED", "payment_status": "rejected"}),
            "CONFIRMATION_REQUIRED",
            Some("rejected"),
        ),
        (
            json!({"state": "FINISHED", "payment_status": "in_process"}),
            "FINISHED",
            Some("in_process"),
        ),
        (json!({"state": "CANCELED"}), "CANCELED", None),
        (json!({"state": "ERROR"}), "ERROR", None),
        (json!({"state": "ABANDONED"}), "ABANDONED", None),
    ];
    for (body, state, payment) in cases {
        let (status, _) = sb.control(&preset, body.clone()).await;
        assert_eq!(status, 200, "{body}");
        let (_, intent) = api(&sb, Method::POST, &create, Some(json!({"amount": 500}))).await;
        clock.advance(TERMINAL_STEP * 3);
        sb.sandbox.run_terminals().await.unwrap();
        let now = intent_state(&sb, &intent["id"]).await;
        assert_eq!(now["state"], state, "{body}");
        match payment {
            Some(status) => {
                let (_, p) = api(
                    &sb,
                    Method::GET,
                    &format!("/v1/payments/{}", now["payment"]["id"]),
                    None,
                )
                .await;
                assert_eq!(p["status"], status, "{body}");
            }
            None => assert!(now["payment"].get("id").is_none(), "{body}: no payment"),
        }
    }
    let res = client()
        .delete(format!("{}/sandbox/{preset}", sb.url))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let (_, intent) = api(&sb, Method::POST, &create, Some(json!({"amount": 500}))).await;
    clock.advance(TERMINAL_STEP * 3);
    sb.sandbox.run_terminals().await.unwrap();
    assert_eq!(intent_state(&sb, &intent["id"]).await["state"], "FINISHED");

    for (path, body, code) in [
        (preset.as_str(), json!({"state": "OPEN"}), 400),
        (
            preset.as_str(),
            json!({"state": "FINISHED", "payment_status": "maybe"}),
            400,
        ),
        ("devices/NOPE/preset", json!({"state": "ERROR"}), 404),
    ] {
        let (status, _) = sb.control(path, body.clone()).await;
        assert_eq!(status, code, "{path} {body}");
    }
    sb.stop().await;
}
