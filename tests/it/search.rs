//! The console's search finds an order by every reference it has, from
//! what was read of the order when it was decided: a blocked order too,
//! whose events say little of it.

use serde_json::json;

use crate::console::signed_in;
use crate::helpers::*;
use crate::platform::*;

on_both_backends!(a_blocked_order_is_found_by_each_reference);

const ORDER: &str = "4945357007";
const PAYMENT: &str = "23064274473";

async fn a_blocked_order_is_found_by_each_reference() {
    let api = FakeApi::start().await;
    let (app, mut b) = signed_in(TestConfig::acting().api(&api.uri())).await;
    api.set(
        &format!("/v1/payments/{PAYMENT}"),
        json!({
            "id": PAYMENT.parse::<u64>().unwrap(),
            "status": "in_process",
            "transaction_amount": 250,
            "order": {"id": ORDER, "type": "mercadopago"},
            "payer": {"email": "Buyer.One@Example.com"},
            // As the platform copies it from the preference: the order's.
            "external_reference": format!("ref-{ORDER}"),
        }),
    );
    api.order(ORDER, "250", &[(PAYMENT, "250", "in_process")], None);
    assert_eq!(
        app.post_fixture(&fixture("ipn-fraud-alert.json"))
            .await
            .status(),
        200
    );
    app.run_jobs().await;
    let blocked = app
        .events()
        .into_iter()
        .find(|(t, _)| t == "order.blocked")
        .expect("the order is blocked")
        .1;
    assert_eq!(blocked["external_reference"], format!("ref-{ORDER}"));
    for (text, matched) in [
        (format!("ref-{ORDER}"), "external reference"),
        ("buyer.one@example.com".to_string(), "payer e-mail"),
        ("Buyer.One@Example.com".to_string(), "payer e-mail"),
        (PAYMENT.to_string(), "payment"),
        (ORDER.to_string(), "merchant order"),
    ] {
        let (status, location, html) = b.get(&format!("/search?q={text}")).await;
        assert_eq!(status, 303, "{text} ({matched}) finds the order: {html}");
        assert!(
            location.starts_with(&format!("/orders/{ORDER}?")),
            "{text}: {location}"
        );
    }
    let (_, _, html) = b.get("/search?q=nobody@example.com").await;
    assert!(html.contains("nothing-found"), "{html}");
    app.stop().await;
}
