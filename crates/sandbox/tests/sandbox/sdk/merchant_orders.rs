//! Merchant orders through the resources API: created from items, changed,
//! searched, with a payment's refunds shown on its order.

use reqwest::Method;
use serde_json::json;

use super::*;

#[tokio::test]
async fn merchant_orders_are_created_changed_and_searched() {
    let (sb, _clock) = on_manual_clock(&[]).await;
    let item = json!({"id": "sku-1", "title": "Mate", "quantity": 3, "unit_price": 10.1});
    for (body, error) in [
        (json!({"external_reference": "x"}), "invalid_items"),
        (
            json!({"items": [{"id": "a", "unit_price": -1}]}),
            "invalid_items",
        ),
        (
            json!({"items": [{"id": "a", "unit_price": "1"}]}),
            "invalid_items",
        ),
        (
            json!({"items": [item], "notification_url": "ftp://x"}),
            "invalid_url",
        ),
        (json!([1, 2]), "unmarshal_error"),
    ] {
        let (status, e) = api(&sb, Method::POST, "/merchant_orders", Some(body.clone())).await;
        assert_eq!(status, 400, "{body}");
        platform_error(&e, 400, error);
    }
    let (status, order) = api(
        &sb,
        Method::POST,
        "/merchant_orders",
        Some(json!({"external_reference": "mo-1", "items": [item], "payer": {"id": 7}})),
    )
    .await;
    assert_eq!(status, 201, "{order}");
    assert_eq!(money(&order["total_amount"]), "30.30", "exact: 3 × 10.1");
    assert_eq!(order["status"], "opened");
    assert_eq!(order["order_status"], "payment_required");
    assert_eq!(order["payer"]["id"], 7);
    let at = format!("/merchant_orders/{}", order["id"]);
    let (status, got) = api(&sb, Method::GET, &at, None).await;
    assert_eq!((status, &got["id"]), (200, &order["id"]));

    let (status, changed) = api(
        &sb,
        Method::PUT,
        &at,
        Some(json!({
            "items": [{"id": "sku-1", "quantity": 1}],
            "shipments": [{"id": 5, "status": "ready_to_ship"}],
            "external_reference": "mo-1b",
        })),
    )
    .await;
    assert_eq!(status, 200, "{changed}");
    assert_eq!(money(&changed["total_amount"]), "10.10");
    assert_eq!(changed["shipments"][0]["status"], "ready_to_ship");
    assert_eq!(changed["external_reference"], "mo-1b");
    let (status, e) = api(
        &sb,
        Method::PUT,
        &at,
        Some(json!({"items": [{"id": "nope", "quantity": 1}]})),
    )
    .await;
    assert_eq!(status, 400);
    platform_error(&e, 400, "invalid_items");
    let (status, e) = api(&sb, Method::PUT, "/merchant_orders/1", Some(json!({}))).await;
    assert_eq!(status, 404);
    platform_error(&e, 404, "not_found");

    let (status, found) = api(
        &sb,
        Method::GET,
        "/merchant_orders/search?external_reference=mo-1b",
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(found["total"], 1);
    assert_eq!(found["elements"][0]["id"], order["id"]);
    let (_, none) = api(
        &sb,
        Method::GET,
        "/merchant_orders/search?external_reference=mo-1",
        None,
    )
    .await;
    assert_eq!(none["total"], 0);

    // A payment of the order refunded in part shows on the order.
    let (_, payment) = sb
        .control(
            &format!("merchant_orders/{}/payments", order["id"]),
            json!({"amount": 10.1}),
        )
        .await;
    let (status, _) = api(
        &sb,
        Method::POST,
        &format!("/v1/payments/{}/refunds", payment["id"]),
        Some(json!({"amount": 4})),
    )
    .await;
    assert_eq!(status, 201);
    let (_, order) = api(&sb, Method::GET, &at, None).await;
    assert_eq!(money(&order["refunded_amount"]), "4.00");
    assert_eq!(money(&order["payments"][0]["amount_refunded"]), "4.00");
    assert_eq!(order["payments"][0]["status"], "approved");

    // Each creation and change was announced to the account's URL.
    let announced = sb
        .log()
        .await
        .iter()
        .filter(|e| e["topic"] == "merchant_order")
        .count();
    assert!(announced >= 3, "{announced}");
    sb.stop().await;
}
