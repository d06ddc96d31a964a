//! Checkout Pro with pointhook receiving: a buyer pays a shop's
//! preference on the sandbox's checkout page (the form posted as a browser
//! without JavaScript posts it), declined, pending, then approved, and is
//! sent back to the shop; pointhook hears the payments and the
//! preference's merchant order from the account's IPNs and the
//! preference's own `notification_url`, and releases the order once, when
//! it is paid in full.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::platform::{wait_for_event, wired};

/// The buyer's form, as the page posts it.
fn form(pref: &str, holder: &str) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs([
            ("pref_id", pref),
            ("email", "buyer@example.com"),
            ("payment_method_id", "visa"),
            ("card_number", "4235 6477 2802 5682"),
            ("cardholder_name", holder),
            ("installments", "1"),
            ("identification_type", "DNI"),
            ("identification_number", "12345678"),
        ])
        .finish()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preference_paid_on_the_checkout_page_is_released_once_paid_in_full() {
    let (sb, app, _merchant) = wired().await;
    let (status, pref) = sb
        .call(
            Method::POST,
            "/checkout/preferences",
            Some(json!({
                "items": [{"title": "Point Mini", "quantity": 2, "unit_price": 29.4}],
                "back_urls": {"success": "http://127.0.0.1:9/shop/ok", "pending": "http://127.0.0.1:9/shop/wait",
                              "failure": "http://127.0.0.1:9/shop/no"},
                "auto_return": "all",
                "notification_url": app.url("/notifications?source_news=webhooks"),
                "external_reference": "shop-order-77",
            })),
        )
        .await;
    assert_eq!(status, 201, "{pref}");
    let id = pref["id"].as_str().unwrap();
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let page = browser
        .get(pref["init_point"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);

    let mut order = Value::Null;
    for (holder, back) in [("OTHE", "/shop/no"), ("CONT", "/shop/wait")] {
        let res = browser
            .post(format!("{}/checkout/v1/pay", sb.url))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form(id, holder))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 303, "{holder}");
        let to = url::Url::parse(res.headers()["location"].to_str().unwrap()).unwrap();
        assert_eq!(to.path(), back);
        order = to
            .query_pairs()
            .find(|(k, _)| k == "merchant_order_id")
            .map(|(_, v)| json!(v))
            .unwrap();
    }
    // Heard, but not paid in full: nothing released yet.
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(
        !app.event_types().iter().any(|t| t == "order.released"),
        "released before it was paid: {:?}",
        app.event_types()
    );

    let res = browser
        .post(format!("{}/checkout/v1/pay", sb.url))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(id, "APRO"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 303);
    let to = url::Url::parse(res.headers()["location"].to_str().unwrap()).unwrap();
    assert_eq!(to.path(), "/shop/ok");
    let released = wait_for_event(&app, "order.released").await;
    assert_eq!(released["merchant_order_id"], order, "{released}");
    assert_eq!(released["paid_amount"], "58.80", "{released}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let times = app
        .event_types()
        .iter()
        .filter(|t| *t == "order.released")
        .count();
    assert_eq!(times, 1, "released once: {:?}", app.event_types());
    // Both the account's IPNs and the preference's webhooks were taken.
    let log = sb.log().await;
    let acked = |form: &str| {
        log.iter()
            .any(|d| d["form"] == form && d["state"] == "acked" && d["resource_id"] == order)
    };
    assert!(acked("ipn") && acked("webhook"), "{log:#?}");
    app.stop().await;
    sb.stop().await;
}
