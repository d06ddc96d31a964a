//! Checkout Pro on the sandbox: preferences created, read, changed and
//! searched; paid on the checkout page (a form post, no JavaScript) and
//! by the control API; the buyer sent back with the platform's query; the
//! merchant order and payment announced; the payment read with the
//! fields the official SDKs' own test answers hold (`fixtures/api/checkout`).

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::*;

fn fixture(name: &str) -> Value {
    let path = crate::runner::workspace()
        .join("fixtures/api/checkout")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// The JSON kind of a value, for comparing shapes.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Every field of `expected` (an SDK's test answer) is in `got` with the
/// same kind, where the answer gives it a value; objects compared
/// field by field. Returns what differs.
fn shape_gaps(expected: &Value, got: &Value, at: &str, out: &mut Vec<String>) {
    let Some(fields) = expected.as_object() else {
        return;
    };
    for (k, want) in fields {
        let path = format!("{at}.{k}");
        match got.get(k) {
            None => out.push(format!("{path} missing")),
            Some(have) if want.is_null() || have.is_null() && !want.is_object() => {}
            Some(have) if kind(want) != kind(have) => out.push(format!(
                "{path}: {} here, {} in the SDK's answer",
                kind(have),
                kind(want)
            )),
            Some(have) => shape_gaps(want, have, &path, out),
        }
    }
}

async fn sandbox_with(url: &str) -> RunningSandbox {
    crate::support::on_manual_clock(vec![account(Some(url.to_string()))])
        .await
        .0
}

fn preference_body(hooks: &str) -> Value {
    json!({
        "items": [{"id": "item-001", "title": "Point Mini", "quantity": 2, "unit_price": 29.4, "currency_id": "ARS"}],
        "payer": {"name": "Test", "surname": "User", "email": "test_user@testuser.com"},
        "back_urls": {"success": "http://127.0.0.1:9/shop/success", "pending": "http://127.0.0.1:9/shop/pending",
                      "failure": "http://127.0.0.1:9/shop/failure"},
        "auto_return": "all",
        "notification_url": format!("{hooks}?source_news=webhooks"),
        "external_reference": "ORDER-1",
        "payment_methods": {"excluded_payment_methods": [{"id": "amex"}], "excluded_payment_types": [{"id": "ticket"}],
                            "installments": 6},
    })
}

#[tokio::test]
async fn a_preference_is_created_read_updated_and_searched_in_the_sdks_shape() {
    let sb = sandbox_with("http://127.0.0.1:9/ipn").await;
    let (status, pref) = sb
        .call(
            Method::POST,
            "/checkout/preferences",
            Some(preference_body("http://127.0.0.1:9/pref")),
        )
        .await;
    assert_eq!(status, 201, "{pref}");
    let id = pref["id"].as_str().unwrap().to_string();
    assert!(
        pref["init_point"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{}/checkout/v1/redirect?pref_id=", sb.url))
    );
    assert_eq!(pref["sandbox_init_point"], pref["init_point"]);
    assert_eq!(pref["total_amount"].to_string(), "58.80");
    assert_eq!(pref["items"][0]["title"], "Point Mini");
    for answer in ["preference-sdk-java.json", "preference-get-sdk-python.json"] {
        let mut gaps = Vec::new();
        shape_gaps(&fixture(answer), &pref, "preference", &mut gaps);
        assert!(gaps.is_empty(), "{answer}: {gaps:?}");
    }
    let (status, read) = sb
        .call(Method::GET, &format!("/checkout/preferences/{id}"), None)
        .await;
    assert_eq!((status, &read), (200, &pref));

    let (status, changed) = sb
        .call(Method::PUT, &format!("/checkout/preferences/{id}"),
            Some(json!({"items": [{"title": "Point Smart", "quantity": 1, "unit_price": 100}], "external_reference": "ORDER-2"})))
        .await;
    assert_eq!(status, 200, "{changed}");
    assert_eq!(changed["total_amount"].to_string(), "100.00");
    assert_eq!(
        changed["back_urls"], pref["back_urls"],
        "what is not sent stays"
    );

    let (status, e) = sb
        .call(
            Method::POST,
            "/checkout/preferences",
            Some(json!({"items": [{"title": "x", "quantity": 1, "unit_price": 0}]})),
        )
        .await;
    assert_eq!(
        (status, e["error"].as_str()),
        (400, Some("invalid_items")),
        "{e}"
    );
    let (status, e) = sb.call(Method::POST, "/checkout/preferences",
        Some(json!({"items": [{"title": "x", "quantity": 1, "unit_price": 1}], "auto_return": "approved"}))).await;
    assert_eq!(
        (status, e["error"].as_str()),
        (400, Some("invalid_auto_return")),
        "{e}"
    );
    let (status, e) = sb.call(Method::POST, "/checkout/preferences",
        Some(json!({"items": [{"title": "x", "quantity": 1, "unit_price": 1}], "notification_url": "https://example.com/n"}))).await;
    assert_eq!(status, 400, "a URL the sandbox may not notify: {e}");

    let (status, found) = sb
        .call(
            Method::GET,
            "/checkout/preferences/search?external_reference=ORDER-2",
            None,
        )
        .await;
    assert_eq!(status, 200, "{found}");
    assert_eq!(found["total"], 1);
    assert_eq!(found["elements"][0]["id"], id.as_str());
    let mut gaps = Vec::new();
    shape_gaps(
        &fixture("preference-search-sdk-java.json")["elements"][0],
        &found["elements"][0],
        "element",
        &mut gaps,
    );
    assert!(gaps.is_empty(), "{gaps:?}");
    let (_, none) = sb
        .call(
            Method::GET,
            "/checkout/preferences/search?external_reference=ORDER-1",
            None,
        )
        .await;
    assert_eq!(none["total"], 0);
    let (status, _) = sb
        .call(Method::GET, "/checkout/preferences/123-nope", None)
        .await;
    assert_eq!(status, 404);
    sb.stop().await;
}

/// A form's body, URL-encoded.
fn encoded(fields: &[(&'static str, String)]) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(fields.iter().map(|(k, v)| (*k, v.as_str())))
        .finish()
}

/// Posts `fields` as the page's form does.
async fn post_form(
    client: &reqwest::Client,
    sb: &RunningSandbox,
    fields: &[(&'static str, String)],
    origin: Option<&str>,
) -> reqwest::Response {
    let mut req = client
        .post(format!("{}/checkout/v1/pay", sb.url))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(encoded(fields));
    if let Some(o) = origin {
        req = req.header("origin", o);
    }
    req.send().await.unwrap()
}

/// The form the page posts, as a browser without JavaScript sends it.
fn form(pref: &str, holder: &str) -> Vec<(&'static str, String)> {
    vec![
        ("pref_id", pref.to_string()),
        ("email", "buyer@example.com".into()),
        ("payment_method_id", "master".into()),
        ("card_number", "5031 4332 1540 6351".into()),
        ("cardholder_name", holder.into()),
        ("installments", "3".into()),
        ("identification_type", "DNI".into()),
        ("identification_number", "12345678".into()),
    ]
}

#[tokio::test]
async fn the_checkout_page_pays_and_sends_the_buyer_back_with_the_platforms_query() {
    let sb = sandbox_with("http://127.0.0.1:9/ipn").await;
    let (_, pref) = sb
        .call(
            Method::POST,
            "/checkout/preferences",
            Some(preference_body("http://127.0.0.1:9/pref")),
        )
        .await;
    let id = pref["id"].as_str().unwrap().to_string();
    // The page: no token, plain HTML with the form.
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
    let html = page.text().await.unwrap();
    assert!(
        html.contains("action=\"/checkout/v1/pay\"") && html.contains("Point Mini"),
        "{html}"
    );
    assert!(
        !html.contains("value=\"amex\""),
        "an excluded method is not offered"
    );

    let mut seen = Vec::new();
    for (holder, status, back) in [
        ("OTHE", "rejected", "failure"),
        ("CONT", "in_process", "pending"),
        ("APRO", "approved", "success"),
    ] {
        let res = post_form(&browser, &sb, &form(&id, holder), None).await;
        assert_eq!(res.status(), 303, "{holder}");
        let to = url::Url::parse(res.headers()["location"].to_str().unwrap()).unwrap();
        assert_eq!(to.path(), format!("/shop/{back}"));
        let q: std::collections::HashMap<_, _> = to.query_pairs().into_owned().collect();
        for k in [
            "collection_id",
            "collection_status",
            "payment_id",
            "status",
            "external_reference",
            "payment_type",
            "merchant_order_id",
            "preference_id",
            "site_id",
            "processing_mode",
            "merchant_account_id",
        ] {
            assert!(q.contains_key(k), "{holder}: {k} in {to}");
        }
        assert_eq!(q["status"], status);
        assert_eq!(q["collection_status"], status);
        assert_eq!(q["preference_id"], id);
        assert_eq!(q["external_reference"], "ORDER-1");
        assert_eq!(q["payment_type"], "credit_card");
        seen.push((q["payment_id"].clone(), q["merchant_order_id"].clone()));
    }
    assert!(
        seen.iter().all(|(_, o)| *o == seen[0].1),
        "one merchant order per preference: {seen:?}"
    );
    let (_, order) = sb
        .call(
            Method::GET,
            &format!("/merchant_orders/{}", seen[0].1),
            None,
        )
        .await;
    assert_eq!(order["preference_id"], id.as_str());
    assert_eq!(order["payments"].as_array().unwrap().len(), 3);
    assert_eq!(order["total_amount"].to_string(), "58.80");
    assert_eq!(order["order_status"], "paid");
    assert_eq!(order["items"][0]["title"], "Point Mini");

    // An attempt the checkout does not offer: the page again, with why.
    let mut amex = form(&id, "APRO");
    amex[2].1 = "amex".into();
    let res = post_form(&browser, &sb, &amex, None).await;
    assert_eq!(res.status(), 400);
    assert!(res.text().await.unwrap().contains("id=\"problem\""));
    // A post from another site is refused before anything runs.
    let res = post_form(
        &browser,
        &sb,
        &form(&id, "APRO"),
        Some("http://shop.example"),
    )
    .await;
    assert_eq!(res.status(), 403);

    // Announced: IPNs to the account, the webhook form to the preference's
    // URL (source_news=webhooks), for the payments and the order.
    let log = sb.log().await;
    let sent = |url_part: &str, form: &str, topic: &str, id: &str| {
        log.iter().any(|d| {
            d["url"].as_str().unwrap().contains(url_part)
                && d["form"] == form
                && d["topic"] == topic
                && d["resource_id"] == id
        })
    };
    let (approved, order_id) = &seen[2];
    assert!(sent("/ipn", "ipn", "payment", approved), "{log:#?}");
    assert!(sent("/ipn", "ipn", "merchant_order", order_id), "{log:#?}");
    assert!(sent("/pref", "webhook", "payment", approved), "{log:#?}");
    assert!(
        sent("/pref", "webhook", "topic_merchant_order_wh", order_id),
        "{log:#?}"
    );
    assert!(
        !sent("/pref", "ipn", "payment", approved),
        "source_news=webhooks: no IPN there"
    );
    sb.stop().await;
}

#[tokio::test]
async fn a_paid_preferences_payment_has_the_fields_the_sdks_read() {
    let sb = sandbox_with("http://127.0.0.1:9/ipn").await;
    let (_, pref) = sb
        .call(
            Method::POST,
            "/checkout/preferences",
            Some(preference_body("http://127.0.0.1:9/pref")),
        )
        .await;
    let id = pref["id"].as_str().unwrap();
    let (status, paid) = sb
        .control(
            &format!("preferences/{id}/pay"),
            json!({"cardholder_name": "APRO", "installments": 3}),
        )
        .await;
    assert_eq!(status, 201, "{paid}");
    assert!(
        paid["back_url"]
            .as_str()
            .unwrap()
            .contains("/shop/success?collection_id=")
    );
    let (_, payment) = sb
        .call(
            Method::GET,
            &format!("/v1/payments/{}", paid["payment"]["id"]),
            None,
        )
        .await;
    let mut gaps = Vec::new();
    shape_gaps(
        &fixture("payment-get-sdk-python.json"),
        &payment,
        "payment",
        &mut gaps,
    );
    let java = fixture("payment-sdk-java.json");
    for field in [
        "collector_id",
        "fee_details",
        "order",
        "transaction_details",
        "payer",
        "date_approved",
        "money_release_date",
        "date_last_updated",
        "currency_id",
    ] {
        shape_gaps(&json!({field: java[field]}), &payment, "payment", &mut gaps);
    }
    assert!(gaps.is_empty(), "{gaps:?}\n{payment:#}");
    assert_eq!(payment["order"]["id"], paid["merchant_order"]["id"]);
    assert_eq!(payment["payer"]["email"], "test_user@testuser.com");
    assert!(payment["payer"]["id"].is_string());
    assert_eq!(
        payment["transaction_details"]["total_paid_amount"].to_string(),
        "58.8"
    );
    assert_eq!(
        payment["transaction_details"]["installment_amount"].to_string(),
        "19.6"
    );
    assert_eq!(
        payment["transaction_details"]["net_received_amount"].to_string(),
        "55.87"
    );
    assert_eq!(payment["fee_details"][0]["type"], "mercadopago_fee");

    // A payment approved later, by the control API, is dated then.
    let (_, pending) = sb
        .control(
            &format!("preferences/{id}/pay"),
            json!({"cardholder_name": "CONT"}),
        )
        .await;
    let pid = &pending["payment"]["id"];
    assert!(pending["payment"]["date_approved"].is_null());
    let (_, approved) = sb
        .control(
            &format!("payments/{pid}/status"),
            json!({"status": "approved"}),
        )
        .await;
    let (_, read) = sb
        .call(Method::GET, &format!("/v1/payments/{pid}"), None)
        .await;
    assert!(read["date_approved"].is_string(), "{approved} {read}");
    assert!(read["money_release_date"].is_string());
    sb.stop().await;
}

#[tokio::test]
async fn a_card_payment_keeps_its_payer_and_is_dated_when_approved() {
    let sb = sandbox_with("http://127.0.0.1:9/ipn").await;
    let (_, token) = sb
        .call(
            Method::POST,
            "/v1/card_tokens",
            Some(json!({
                "card_number": "5031433215406351", "security_code": "123", "expiration_month": "11",
                "expiration_year": "2030", "cardholder": {"name": "APRO"},
            })),
        )
        .await;
    let (status, p) = sb.call(Method::POST, "/v1/payments", Some(json!({
        "transaction_amount": 58.8, "token": token["id"], "installments": 1, "payment_method_id": "visa",
        "payer": {"email": "test_user@testuser.com", "identification": {"type": "CPF", "number": "19119119100"}},
    }))).await;
    assert_eq!(status, 201, "{p}");
    let mut gaps = Vec::new();
    shape_gaps(
        &fixture("payment-get-sdk-python.json"),
        &p,
        "payment",
        &mut gaps,
    );
    assert!(gaps.is_empty(), "{gaps:?}");
    assert_eq!(p["payer"]["identification"]["number"], "19119119100");
    assert!(p["date_approved"].is_string());
    sb.stop().await;
}
