//! What a recorded scenario needs of the control API: resources seeded
//! with an exact body (Orders API orders too), recorded notifications sent
//! again exactly (or signed anew), and the clock's pace read.

use std::time::{Duration, SystemTime};

use pointhook_common::signature::{self, SignedParts};
use pointhook_sandbox::AccountSpec;
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::*;

#[tokio::test]
async fn a_recorded_notification_is_sent_again_as_it_was() {
    let target = receiver(&[200]).await;
    let ipn = format!("{}/ipn?customer=shop-1", target.uri());
    let hooks = format!("{}/hooks", target.uri());
    let (sb, _clock) = on_manual_clock(vec![AccountSpec {
        webhook_url: Some(hooks.clone()),
        webhook_secret: Some(SECRET.into()),
        ..account(Some(ipn))
    }])
    .await;
    let raw =
        "{\"resource\":\"https://api.mercadopago.com/v1/payments/123\",\"topic\":\"payment\"}";
    let (status, sent) = sb
        .control(
            "notifications",
            json!({
                "query": "topic=payment&id=123",
                "headers": {"user-agent": "MercadoPago Feed v2.0 payment", "x-custom": "kept"},
                "body": raw,
            }),
        )
        .await;
    assert_eq!(status, 202, "{sent}");
    let (status, signed) = sb
        .control(
            "notifications",
            json!({
                "to": "webhook_url",
                "query": "data.id=123&type=payment",
                "headers": {"x-signature": "ts=1,v1=stale", "x-request-id": "old"},
                "body": {"action": "payment.updated", "data": {"id": "123"}, "type": "payment"},
                "sign": true,
            }),
        )
        .await;
    assert_eq!(status, 202, "{signed}");
    sb.sandbox.run_due().await.unwrap();
    let got = target.received_requests().await.unwrap();
    assert_eq!(got.len(), 2, "{got:?}");
    let ipn = got.iter().find(|r| r.url.path() == "/ipn").unwrap();
    assert_eq!(
        ipn.url.query(),
        Some("customer=shop-1&topic=payment&id=123")
    );
    assert_eq!(
        String::from_utf8_lossy(&ipn.body),
        raw,
        "the bytes as recorded"
    );
    assert_eq!(ipn.headers["user-agent"], "MercadoPago Feed v2.0 payment");
    assert_eq!(ipn.headers["x-custom"], "kept");
    let hook = got.iter().find(|r| r.url.path() == "/hooks").unwrap();
    let body: Value = serde_json::from_slice(&hook.body).unwrap();
    assert_eq!(body["action"], "payment.updated");
    let header = |name: &str| hook.headers[name].to_str().unwrap().to_string();
    assert_ne!(header("x-request-id"), "old", "signed anew");
    let (request_id, sig) = (header("x-request-id"), header("x-signature"));
    let parts = SignedParts {
        data_id: "123",
        request_id: Some(request_id.as_bytes()),
        signature: Some(sig.as_bytes()),
    };
    assert!(
        signature::verify(
            &[SECRET.as_bytes()],
            parts,
            SystemTime::now(),
            Some(Duration::from_secs(300))
        )
        .is_ok(),
        "{}",
        header("x-signature")
    );
    let log = sb.log().await;
    assert_eq!(
        log.iter()
            .map(|d| d["form"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["ipn", "webhook"]
    );
    assert!(log.iter().all(|d| d["state"] == "acked"), "{log:?}");

    for (bad, why) in [
        (json!({"url": "http://192.0.2.1/n"}), "not loopback"),
        (json!({"to": "somewhere"}), "not a URL of the account"),
        (json!({"headers": {"x": 1}}), "a header that is not text"),
        (json!({"query": 7}), "a query that is not text"),
    ] {
        let (status, e) = sb.control("notifications", bad).await;
        assert_eq!(status, 400, "{why}: {e}");
    }
    sb.stop().await;
}

#[tokio::test]
async fn resources_are_seeded_with_their_exact_body_orders_too() {
    let (sb, _clock) = on_manual_clock(vec![account(None)]).await;
    let id = "ORD01JQ4S4KY8HWQ6NA5PXB65B3D3";
    let order = json!({"id": id, "type": "point", "status": "processed", "status_detail": "accredited",
                       "total_amount": "24.00", "odd": [1, "two"]});
    let (status, _) = sb
        .call(
            Method::PUT,
            &format!("/sandbox/resources/order/{id}"),
            Some(order.clone()),
        )
        .await;
    assert_eq!(status, 200);
    let (status, got) = sb
        .call(Method::GET, &format!("/v1/orders/{id}"), None)
        .await;
    assert_eq!((status, &got), (200, &order));
    let (status, e) = sb
        .call(Method::PUT, "/sandbox/resources/refund/1", Some(json!({})))
        .await;
    assert_eq!(status, 400, "{e}");
    sb.stop().await;
}

#[tokio::test]
async fn the_clock_tells_its_pace() {
    let (sb, _clock) = on_manual_clock(vec![account(None)]).await;
    let (status, clock) = sb.call(Method::GET, "/sandbox/clock", None).await;
    assert_eq!(status, 200);
    assert_eq!(
        (&clock["manual"], &clock["time_scale"]),
        (&json!(true), &json!(1.0))
    );
    sb.stop().await;
}
