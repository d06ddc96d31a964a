//! The sandbox answers the calls of the official SDKs: payments captured
//! and refunded, merchant orders created and changed, Point devices and
//! intents on emulated terminals, with the platform's status codes and
//! error bodies; and the official Python and Node SDKs themselves driving
//! the sandbox (skipped, with one line, when an SDK is not installed;
//! failing instead when `POINTHOOK_TEST_SDK_REQUIRED=1`).

mod checkout;
mod merchant_orders;
mod node;
mod point;
mod python;

use std::sync::Arc;
use std::time::SystemTime;

use pointhook_common::clock::ManualClock;
use pointhook_sandbox::AccountSpec;
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::*;

const DEVICE: &str = "GERTEC_MP35P__8701012051267123";

/// A sandbox on a manual clock (nothing is sent unless a test runs it),
/// whose account has `devices`.
async fn on_manual_clock(devices: &[&str]) -> (RunningSandbox, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let sb = start_sandbox(
        vec![AccountSpec {
            webhook_url: Some("http://127.0.0.1:9/webhooks".into()),
            devices: devices.iter().map(|d| d.to_string()).collect(),
            ..account(Some("http://127.0.0.1:9/ipn".into()))
        }],
        clock.clone(),
        1.0,
        false,
        None,
    )
    .await;
    (sb, clock)
}

/// A call to the sandbox's resources API with the account's token.
async fn api(sb: &RunningSandbox, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
    api_keyed(sb, method, path, body, None).await
}

async fn api_keyed(
    sb: &RunningSandbox,
    method: Method,
    path: &str,
    body: Option<Value>,
    key: Option<&str>,
) -> (u16, Value) {
    let mut req = client()
        .request(method, format!("{}{path}", sb.url))
        .bearer_auth(TOKEN);
    if let Some(b) = body {
        req = req.json(&b);
    }
    if let Some(k) = key {
        req = req.header("x-idempotency-key", k);
    }
    answer(req.send().await.unwrap()).await
}

/// The platform's error body, with its cause codes.
fn platform_error(body: &Value, status: u16, error: &str) -> Vec<u64> {
    assert_eq!(body["status"], status, "{body}");
    assert_eq!(body["error"], error, "{body}");
    assert!(body["message"].is_string(), "{body}");
    body["cause"]
        .as_array()
        .unwrap_or_else(|| panic!("cause is a list: {body}"))
        .iter()
        .map(|c| {
            assert!(c["description"].is_string(), "{body}");
            c["code"].as_u64().unwrap()
        })
        .collect()
}

async fn create_payment(sb: &RunningSandbox, extra: Value) -> Value {
    let mut body = json!({
        "transaction_amount": 100, "token": "tok", "installments": 1,
        "payment_method_id": "visa",
        "payer": {"email": "a@b.c", "identification": {"type": "DNI", "number": "1"}},
    });
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let (status, payment) = api(sb, Method::POST, "/v1/payments", Some(body)).await;
    assert_eq!(status, 201, "{payment}");
    payment
}

fn money(v: &Value) -> String {
    pointhook_common::money::Money::parse(&v.to_string())
        .unwrap_or_else(|| panic!("not an amount: {v}"))
        .to_string()
}

#[tokio::test]
async fn an_authorized_payment_is_captured_whole_or_in_part() {
    let (sb, _clock) = on_manual_clock(&[]).await;
    let reserved = create_payment(&sb, json!({"capture": false})).await;
    assert_eq!(reserved["status"], "authorized");
    assert_eq!(reserved["status_detail"], "pending_capture");
    assert_eq!(reserved["captured"], false);
    let at = format!("/v1/payments/{}", reserved["id"]);

    let (status, e) = api(
        &sb,
        Method::PUT,
        &at,
        Some(json!({"capture": true, "transaction_amount": 150})),
    )
    .await;
    assert_eq!(status, 400, "no more than was reserved");
    assert_eq!(platform_error(&e, 400, "bad_request"), [1]);

    let (status, captured) = api(
        &sb,
        Method::PUT,
        &at,
        Some(json!({"capture": true, "transaction_amount": 80})),
    )
    .await;
    assert_eq!(status, 200, "{captured}");
    assert_eq!(captured["status"], "approved");
    assert_eq!(captured["captured"], true);
    assert_eq!(money(&captured["transaction_amount"]), "80.00");

    let (status, e) = api(&sb, Method::PUT, &at, Some(json!({"capture": true}))).await;
    assert_eq!(status, 400, "captured once");
    assert_eq!(platform_error(&e, 400, "bad_request"), [2063]);

    let whole = create_payment(&sb, json!({"capture": false})).await;
    let (status, captured) = api(
        &sb,
        Method::PUT,
        &format!("/v1/payments/{}", whole["id"]),
        Some(json!({"capture": true})),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(money(&captured["transaction_amount"]), "100.00");

    let (status, e) = api(
        &sb,
        Method::PUT,
        "/v1/payments/42",
        Some(json!({"capture": true})),
    )
    .await;
    assert_eq!(status, 404);
    assert_eq!(platform_error(&e, 404, "not_found"), [2000]);
    let (status, e) = api(&sb, Method::PUT, &at, Some(json!({"amount": 1}))).await;
    assert_eq!(status, 400, "neither a cancel nor a capture");
    platform_error(&e, 400, "bad_request");
    sb.stop().await;
}

#[tokio::test]
async fn refunds_in_part_then_in_full_once_per_key() {
    let (sb, _clock) = on_manual_clock(&[]).await;
    let payment = create_payment(&sb, json!({})).await;
    let refunds = format!("/v1/payments/{}/refunds", payment["id"]);

    let (status, first) = api_keyed(
        &sb,
        Method::POST,
        &refunds,
        Some(json!({"amount": 30.5})),
        Some("k1"),
    )
    .await;
    assert_eq!(status, 201, "{first}");
    assert_eq!(money(&first["amount"]), "30.50");
    assert_eq!(first["payment_id"], payment["id"]);
    assert_eq!(first["status"], "approved");
    assert_eq!(first["source"]["type"], "collector");
    let (status, again) = api_keyed(
        &sb,
        Method::POST,
        &refunds,
        Some(json!({"amount": 30.5})),
        Some("k1"),
    )
    .await;
    assert_eq!((status, &again), (201, &first), "same key, same refund");

    let (_, partly) = api(
        &sb,
        Method::GET,
        &format!("/v1/payments/{}", payment["id"]),
        None,
    )
    .await;
    assert_eq!(partly["status"], "approved");
    assert_eq!(partly["status_detail"], "partially_refunded");
    assert_eq!(money(&partly["transaction_amount_refunded"]), "30.50");
    assert_eq!(partly["refunds"].as_array().unwrap().len(), 1);

    for (body, code) in [
        (json!({"amount": 70}), 2063),
        (json!({"amount": -5}), 4040),
        (json!({"amount": 0}), 4040),
        (json!({"amount": "ten"}), 4041),
    ] {
        let (status, e) = api(&sb, Method::POST, &refunds, Some(body.clone())).await;
        assert_eq!(status, 400, "{body}");
        assert_eq!(platform_error(&e, 400, "bad_request"), [code], "{body}");
    }

    // No body: the rest.
    let res = client()
        .post(format!("{}{refunds}", sb.url))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    let (status, rest) = answer(res).await;
    assert_eq!(status, 201, "{rest}");
    assert_eq!(money(&rest["amount"]), "69.50");
    let (_, whole) = api(
        &sb,
        Method::GET,
        &format!("/v1/payments/{}", payment["id"]),
        None,
    )
    .await;
    assert_eq!(whole["status"], "refunded");
    assert_eq!(money(&whole["transaction_amount_refunded"]), "100.00");

    let (status, list) = api(&sb, Method::GET, &refunds, None).await;
    assert_eq!(status, 200);
    let ids: Vec<&Value> = list.as_array().unwrap().iter().map(|r| &r["id"]).collect();
    assert_eq!(ids, [&first["id"], &rest["id"]], "oldest first");
    let (status, one) = api(&sb, Method::GET, &format!("{refunds}/{}", rest["id"]), None).await;
    assert_eq!((status, &one), (200, &rest));
    // A trailing slash, as the Node SDK sends it.
    let (status, _) = api(&sb, Method::GET, &format!("{refunds}/"), None).await;
    assert_eq!(status, 200);

    let (status, e) = api(&sb, Method::POST, &refunds, Some(json!({}))).await;
    assert_eq!(status, 400, "nothing left to refund");
    assert_eq!(platform_error(&e, 400, "bad_request"), [2063]);
    let (status, e) = api(&sb, Method::GET, &format!("{refunds}/999"), None).await;
    assert_eq!(status, 404);
    assert_eq!(platform_error(&e, 404, "not_found"), [2032]);
    for (method, path) in [
        (Method::GET, "/v1/payments/42/refunds"),
        (Method::POST, "/v1/payments/42/refunds"),
        (Method::GET, "/v1/payments/42/refunds/1"),
    ] {
        let (status, e) = api(&sb, method, path, None).await;
        assert_eq!(status, 404, "{path}");
        assert_eq!(platform_error(&e, 404, "not_found"), [2000]);
    }
    sb.stop().await;
}

/// A refund and its payment are written together: refunds racing never
/// take more than was paid.
#[tokio::test]
async fn racing_refunds_never_take_more_than_was_paid() {
    let (sb, _clock) = on_manual_clock(&[]).await;
    let payment = create_payment(&sb, json!({})).await;
    let refunds = format!("/v1/payments/{}/refunds", payment["id"]);
    let tries = (0..6).map(|_| api(&sb, Method::POST, &refunds, Some(json!({"amount": 40}))));
    let statuses: Vec<u16> = futures_util::future::join_all(tries)
        .await
        .into_iter()
        .map(|(s, _)| s)
        .collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 201).count(),
        2,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 400).count(),
        4,
        "{statuses:?}"
    );
    let (_, now) = api(
        &sb,
        Method::GET,
        &format!("/v1/payments/{}", payment["id"]),
        None,
    )
    .await;
    assert_eq!(money(&now["transaction_amount_refunded"]), "80.00");
    sb.stop().await;
}
