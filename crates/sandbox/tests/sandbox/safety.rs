//! A sandbox on a tester's machine answers its tester only: the control
//! API takes an account's Bearer token, the request log masks credentials,
//! a browser's cross-site requests and foreign `Host` names are refused,
//! and notifications go to loopback only unless the sandbox is public.

use std::sync::Arc;

use pointhook_common::clock::SystemClock;
use pointhook_sandbox::{AccountSpec, Reach};
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::*;

const OTHER_TOKEN: &str = "TEST-second-account";

fn second_account() -> AccountSpec {
    AccountSpec {
        name: "shop-2".into(),
        token: OTHER_TOKEN.into(),
        ..account(None)
    }
}

#[tokio::test]
async fn the_control_api_takes_an_accounts_bearer_token() {
    let (sb, _clock) = on_manual_clock(vec![account(None), second_account()]).await;
    let order = json!({"total_amount": 10});
    let url = |path: &str| format!("{}/sandbox/{path}", sb.url);
    for (what, req) in [
        ("no token", client().post(url("merchant_orders"))),
        (
            "an unknown token",
            client().post(url("merchant_orders")).bearer_auth("nope"),
        ),
        (
            "?account= (no longer a credential)",
            client().post(url("merchant_orders?account=default")),
        ),
    ] {
        let (status, e) = answer(req.json(&order).send().await.unwrap()).await;
        assert_eq!(status, 401, "{what}: {e}");
        assert_eq!(
            (&e["status"], &e["error"]),
            (&json!("error"), &json!("unauthorized")),
            "{e}"
        );
    }
    for path in ["deliveries", "requests", "quirks", "clock"] {
        let (status, _) = answer(client().get(url(path)).send().await.unwrap()).await;
        assert_eq!(status, 401, "GET /sandbox/{path} without a token");
    }
    // The second account's token acts for the second account.
    let (status, created) = answer(
        client()
            .post(url("merchant_orders"))
            .bearer_auth(OTHER_TOKEN)
            .json(&order)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let path = format!("/merchant_orders/{}", created["id"]);
    assert_eq!(
        sb.call(Method::GET, &path, None).await.0,
        404,
        "not default's"
    );
    let (status, _) = answer(
        client()
            .get(format!("{}{path}", sb.url))
            .bearer_auth(OTHER_TOKEN)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "shop-2's");
    sb.stop().await;
}

#[tokio::test]
async fn the_request_log_masks_credentials() {
    let (sb, _clock) = on_manual_clock(vec![account(None)]).await;
    let (status, _) = sb
        .call(
            Method::POST,
            "/v1/card_tokens",
            Some(json!({
                "card_number": "5031433215406351", "security_code": "123",
                "expiration_month": 11, "expiration_year": 2030,
                "cardholder": {"name": "APRO", "identification": {"type": "CPF", "number": "12345678909"}},
            })),
        )
        .await;
    assert_eq!(status, 201);
    let res = sb
        .request(Method::GET, "/sandbox/requests")
        .send()
        .await
        .unwrap();
    let text = res.text().await.unwrap();
    for secret in [TOKEN, "5031433215406351", "\"123\""] {
        assert!(!text.contains(secret), "{secret} shown: {text}");
    }
    let calls: Vec<Value> = serde_json::from_str(&text).unwrap();
    assert_eq!(calls[0]["authorization"], "Bearer ***");
    let body: Value = serde_json::from_str(calls[0]["body"].as_str().unwrap()).unwrap();
    assert_eq!(body["card_number"], "***");
    assert_eq!(body["security_code"], "***");
    assert_eq!(body["cardholder"]["name"], "APRO", "the rest as sent");
    // In process, for tests of the receiver, the call is as it came.
    assert_eq!(
        sb.sandbox.faults().calls()[0].authorization.as_deref(),
        Some(format!("Bearer {TOKEN}").as_str())
    );
    sb.stop().await;
}

#[tokio::test]
async fn a_browsers_cross_site_requests_and_foreign_hosts_are_refused() {
    let (sb, _clock) = on_manual_clock(vec![account(None)]).await;
    let host = sb.url.trim_start_matches("http://").to_string();
    let port = host.rsplit_once(':').unwrap().1.to_string();
    let order = json!({"total_amount": 10});
    let refused = [
        ("origin", "http://attacker.example".to_string()),
        ("origin", "null".to_string()),
        ("origin", format!("http://localhost:{port}")),
        ("sec-fetch-site", "cross-site".to_string()),
        ("host", format!("attacker.example:{port}")),
        ("host", format!("rebound.localhost.example:{port}")),
    ];
    for (header, value) in &refused {
        for (path, shape) in [
            ("/sandbox/merchant_orders", "control"),
            ("/merchant_orders/search", "platform"),
        ] {
            let (status, e) = answer(
                sb.request(Method::POST, path)
                    .header(*header, value)
                    .json(&order)
                    .send()
                    .await
                    .unwrap(),
            )
            .await;
            assert_eq!(status, 403, "{header}: {value} on {path}: {e}");
            if shape == "control" {
                assert_eq!(e["status"], "error", "{e}");
            } else {
                assert_eq!(e["status"], 403, "{e}");
            }
        }
    }
    let allowed = [
        ("origin", format!("http://{host}")),
        ("sec-fetch-site", "same-origin".to_string()),
        ("sec-fetch-site", "none".to_string()),
        ("host", format!("localhost:{port}")),
        ("host", format!("[::1]:{port}")),
    ];
    for (header, value) in &allowed {
        let (status, e) = answer(
            sb.request(Method::POST, "/sandbox/merchant_orders")
                .header(*header, value)
                .json(&order)
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, 201, "{header}: {value}: {e}");
    }
    sb.stop().await;
}

#[tokio::test]
async fn notification_urls_are_loopback_unless_the_sandbox_is_public() {
    let elsewhere = "http://192.0.2.1/notifications";
    let refused = start_with(
        settings(vec![account(Some(elsewhere.into()))]),
        Arc::new(SystemClock),
    )
    .await;
    let Err(e) = refused else {
        panic!("a sandbox notifying {elsewhere} started");
    };
    assert!(format!("{e:#}").contains("loopback"), "{e:#}");

    let (sb, _clock) = on_manual_clock(vec![account(Some("http://localhost:9/n".into()))]).await;
    let payment = |url: &str| {
        json!({
            "transaction_amount": 10, "token": "t", "installments": 1, "payment_method_id": "visa",
            "notification_url": url,
            "payer": {"email": "a@b.c", "identification": {"type": "DNI", "number": "1"}},
        })
    };
    let (status, e) = sb
        .call(Method::POST, "/v1/payments", Some(payment(elsewhere)))
        .await;
    assert_eq!(status, 400, "{e}");
    assert_eq!(e["cause"][0]["code"], 4034, "{e}");
    let (status, e) = sb
        .call(
            Method::POST,
            "/merchant_orders",
            Some(json!({"items": [{"unit_price": 5}], "notification_url": elsewhere})),
        )
        .await;
    assert_eq!((status, &e["error"]), (400, &json!("invalid_url")), "{e}");
    let (status, e) = sb
        .control(
            "merchant_orders",
            json!({"total_amount": 5, "notification_url": elsewhere}),
        )
        .await;
    assert_eq!(status, 400, "{e}");
    let (status, _) = sb
        .call(
            Method::POST,
            "/v1/payments",
            Some(payment("http://127.0.0.1:9/hooks")),
        )
        .await;
    assert_eq!(status, 201, "loopback is fine");
    sb.stop().await;

    let public = start_with(
        pointhook_sandbox::SandboxSettings {
            reach: Reach::Public,
            ..settings(vec![account(Some(elsewhere.into()))])
        },
        Arc::new(SystemClock),
    )
    .await
    .unwrap();
    let (status, e) = public
        .call(Method::POST, "/v1/payments", Some(payment(elsewhere)))
        .await;
    assert_eq!(status, 201, "{e}");
    let (status, _) = answer(
        public
            .request(Method::GET, &format!("/v1/payments/{}", e["id"]))
            .header("host", "sandbox.tester.example")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "any Host when public");
    public.stop().await;
}
