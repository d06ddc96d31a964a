//! The platform's quirks as the sandbox plays them (switched on and off,
//! eventual consistency, out of order) and the clock testers advance (the
//! whole retry schedule walked through `POST /sandbox/clock/advance`
//! alone, terminals moved on the way).

use std::sync::Arc;
use std::time::SystemTime;

use pointhook_common::clock::{ManualClock, SystemClock};
use pointhook_sandbox::AccountSpec;
use serde_json::{Value, json};

use crate::support::*;

async fn get(sb: &RunningSandbox, path: &str) -> (u16, Value) {
    answer(
        client()
            .get(format!("{}{path}", sb.url))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap(),
    )
    .await
}

async fn advance(sb: &RunningSandbox, seconds: Value) -> (u16, Value) {
    sb.control("clock/advance", json!({ "seconds": seconds }))
        .await
}

async fn on_manual_clock(accounts: Vec<AccountSpec>) -> RunningSandbox {
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    // No dispatcher loop: only the advances move anything.
    start_sandbox(accounts, clock, 1.0, false, None).await
}

#[tokio::test]
async fn quirks_are_switched_globally_or_per_account_and_checked() {
    let sb = on_manual_clock(vec![
        account(None),
        AccountSpec {
            name: "shop-2".into(),
            token: "TEST-shop-2".into(),
            ..account(None)
        },
    ])
    .await;
    let (status, q) = get(&sb, "/sandbox/quirks").await;
    assert_eq!(status, 200);
    assert_eq!(
        q["global"],
        json!({"eventual_consistency_ms": 0, "twins": false, "out_of_order": false, "duplicates": false, "unsigned": false}),
        "all off by default"
    );
    let (status, q) = sb.control("quirks", json!({"twins": true})).await;
    assert_eq!(status, 200, "{q}");
    assert_eq!(q["effective"]["shop-2"]["twins"], true, "{q}");
    let (_, q) = sb
        .control(
            "quirks",
            json!({"account": "shop-2", "twins": false, "eventual_consistency_ms": 500}),
        )
        .await;
    assert_eq!(q["effective"]["shop-2"]["twins"], false, "{q}");
    assert_eq!(q["effective"]["shop-2"]["eventual_consistency_ms"], 500);
    assert_eq!(q["effective"]["default"]["twins"], true);
    assert_eq!(q["effective"]["default"]["eventual_consistency_ms"], 0);
    assert_eq!(
        q["accounts"]["shop-2"],
        json!({"twins": false, "eventual_consistency_ms": 500})
    );
    for (bad, code) in [
        (json!({"bogus": true}), 400),
        (json!({"twins": "yes"}), 400),
        (json!({"eventual_consistency_ms": -1}), 400),
        (json!({"eventual_consistency_ms": 86_400_000}), 400),
        (json!({"account": 7, "twins": true}), 400),
        (json!({"account": "nobody", "twins": true}), 404),
    ] {
        let (status, e) = sb.control("quirks", bad.clone()).await;
        assert_eq!(status, code, "{bad} → {e}");
        assert!(e["message"].as_str().is_some_and(|m| !m.is_empty()), "{e}");
    }
    let res = client()
        .delete(format!("{}/sandbox/quirks", sb.url))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    let (status, q) = answer(res).await;
    assert_eq!(status, 200);
    assert_eq!(q["effective"]["default"]["twins"], false, "{q}");
    assert_eq!(q["accounts"], json!({}));
    sb.stop().await;
}

/// Eventual consistency: the changed resource answers the platform's 404
/// until the time has passed on the sandbox's clock.
#[tokio::test]
async fn eventual_consistency_hides_a_changed_resource_for_a_while() {
    let target = receiver(&[200]).await;
    let sb = on_manual_clock(vec![account(Some(target.uri()))]).await;
    sb.control("quirks", json!({"eventual_consistency_ms": 2000}))
        .await;
    let (_, order) = sb
        .control("merchant_orders", json!({"total_amount": 10}))
        .await;
    let path = format!("/merchant_orders/{}", order["id"]);
    let (status, e) = get(&sb, &path).await;
    assert_eq!(status, 404, "{e}");
    assert_eq!(e["error"], "not_found");
    assert_eq!(e["status"], 404);
    advance(&sb, json!(1.5)).await;
    assert_eq!(get(&sb, &path).await.0, 404, "still hidden at 1.5 s");
    advance(&sb, json!(0.5)).await;
    let (status, found) = get(&sb, &path).await;
    assert_eq!((status, &found["id"]), (200, &order["id"]));
    sb.stop().await;
}

/// Out of order: the notifications of one resource are held, then the
/// newest change's goes first.
#[tokio::test]
async fn out_of_order_sends_a_later_change_first() {
    let target = receiver(&[200]).await;
    let sb = on_manual_clock(vec![account(None)]).await;
    sb.control("quirks", json!({"out_of_order": true})).await;
    let (_, order) = sb
        .control("merchant_orders", json!({"total_amount": 10}))
        .await;
    let (_, payment) = sb
        .control(
            &format!("merchant_orders/{}/payments", order["id"]),
            json!({"amount": 10, "status": "in_process",
                   "notification_url": format!("{}/p?source_news=webhooks", target.uri())}),
        )
        .await;
    sb.control(
        &format!("payments/{}/status", payment["id"]),
        json!({"status": "approved"}),
    )
    .await;
    let (_, advanced) = advance(&sb, json!(0.5)).await;
    assert_eq!(advanced["fired"]["attempts"], 0, "held: {advanced}");
    advance(&sb, json!(1)).await;
    let actions: Vec<String> = target
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| {
            let body: Value = serde_json::from_slice(&r.body).unwrap();
            body["action"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(actions, ["payment.updated", "payment.created"]);
    sb.stop().await;
}

/// The manual clock walks the platform's whole retry schedule, driven by
/// `POST /sandbox/clock/advance` alone.
#[tokio::test]
async fn the_manual_clock_walks_the_whole_retry_schedule() {
    let target = receiver(&[500]).await;
    let sb = on_manual_clock(vec![account(Some(target.uri()))]).await;
    let (_, before) = get(&sb, "/sandbox/clock").await;
    assert_eq!(before["manual"], true);
    sb.control("merchant_orders", json!({"total_amount": 10}))
        .await;
    let (status, first) = advance(&sb, json!(1000)).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["fired"]["attempts"], 2, "at 0 and 15 min: {first}");
    let (_, rest) = advance(&sb, json!(100 * 3600)).await;
    assert_eq!(rest["fired"]["attempts"], 4, "{rest}");
    let log = sb.log().await;
    assert_eq!(log.len(), 1);
    assert_eq!(
        attempt_offsets(&log[0]),
        [0, 900, 1800, 21_600, 172_800, 345_600]
    );
    assert_eq!(log[0]["state"], "given_up");
    assert_eq!(target.received_requests().await.unwrap().len(), 6);
    let (_, after) = get(&sb, "/sandbox/clock").await;
    let at = |v: &Value| humantime::parse_rfc3339_weak(v["now"].as_str().unwrap()).unwrap();
    let moved = at(&after).duration_since(at(&before)).unwrap().as_secs();
    assert_eq!(moved, 1000 + 100 * 3600, "to the end of the advance");
    assert_eq!(after["now"], rest["now"]);
    sb.stop().await;
}

/// Advancing also moves emulated terminals: an intent on a device ends
/// FINISHED and its webhook goes, in one advance.
#[tokio::test]
async fn advancing_moves_terminals_and_sends_what_they_queue() {
    let target = receiver(&[200]).await;
    let sb = on_manual_clock(vec![AccountSpec {
        webhook_url: Some(target.uri()),
        devices: vec!["DEV-Q1".into()],
        ..account(None)
    }])
    .await;
    let (status, intent) = answer(
        client()
            .post(format!(
                "{}/point/integration-api/devices/DEV-Q1/payment-intents",
                sb.url
            ))
            .bearer_auth(TOKEN)
            .json(&json!({"amount": 2500}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 201, "{intent}");
    let (_, advanced) = advance(&sb, json!(60)).await;
    assert_eq!(advanced["fired"]["terminal_steps"], 3, "{advanced}");
    let id = intent["id"].as_str().unwrap();
    let (_, now) = get(&sb, &format!("/point/integration-api/payment-intents/{id}")).await;
    assert_eq!(now["state"], "FINISHED");
    let got = target.received_requests().await.unwrap();
    assert!(
        got.iter().any(|r| {
            serde_json::from_slice::<Value>(&r.body)
                .is_ok_and(|b| b["id"] == id && b["state"] == "FINISHED")
        }),
        "the intent webhook went in the same advance"
    );
    sb.stop().await;
}

#[tokio::test]
async fn advance_is_refused_on_a_real_clock_and_for_bad_amounts() {
    let real = start_sandbox(vec![account(None)], Arc::new(SystemClock), 1.0, false, None).await;
    let (_, clock) = get(&real, "/sandbox/clock").await;
    assert_eq!(clock["manual"], false);
    assert!(humantime::parse_rfc3339_weak(clock["now"].as_str().unwrap()).is_ok());
    let (status, e) = advance(&real, json!(10)).await;
    assert_eq!(status, 409, "{e}");
    assert_eq!(e["error"], "clock_not_manual");
    real.stop().await;

    let sb = on_manual_clock(vec![account(None)]).await;
    for bad in [json!(0), json!(-5), json!("ten"), Value::Null, json!(1e12)] {
        let (status, e) = advance(&sb, bad.clone()).await;
        assert_eq!(status, 400, "{bad} → {e}");
        assert!(e["message"].as_str().unwrap().contains("seconds"), "{e}");
    }
    let (status, _) = advance(&sb, json!(0.25)).await;
    assert_eq!(status, 200, "a fraction of a second is fine");
    sb.stop().await;
}
