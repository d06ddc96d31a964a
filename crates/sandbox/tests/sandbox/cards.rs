//! Card tokens for the platform's test cards, as the SDKs' card-token call
//! makes them, and payments whose outcome the cardholder's name decides.

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::*;

/// A card token of the platform's test Mastercard for `holder`.
async fn token(sb: &RunningSandbox, holder: &str) -> Value {
    let (status, token) = sb
        .call(
            Method::POST,
            "/v1/card_tokens",
            Some(json!({
                "card_number": "5031433215406351", "security_code": "123",
                "expiration_month": "11", "expiration_year": "2030",
                "cardholder": {"name": holder, "identification": {"type": "CPF", "number": "12345678909"}},
            })),
        )
        .await;
    assert_eq!(status, 201, "{token}");
    token
}

async fn pay(sb: &RunningSandbox, token: &str, extra: Value) -> Value {
    let mut body = json!({
        "transaction_amount": 58.8, "token": token, "installments": 1,
        "payment_method_id": "master",
        "payer": {"email": "buyer@example.com", "identification": {"type": "CPF", "number": "12345678909"}},
    });
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let (status, payment) = sb.call(Method::POST, "/v1/payments", Some(body)).await;
    assert_eq!(status, 201, "{payment}");
    payment
}

#[tokio::test]
async fn a_token_keeps_the_card_but_its_number_and_code() {
    let (sb, _clock) = on_manual_clock(vec![account(None)]).await;
    let t = token(&sb, "APRO").await;
    let id = t["id"].as_str().unwrap();
    assert_eq!(id.len(), 32, "{t}");
    assert_eq!(t["first_six_digits"], "503143");
    assert_eq!(t["last_four_digits"], "6351");
    assert_eq!(
        (&t["expiration_month"], &t["expiration_year"]),
        (&json!(11), &json!(2030))
    );
    assert_eq!(t["cardholder"]["name"], "APRO");
    assert_eq!(t["status"], "active");
    assert_eq!(t["luhn_validation"], true);
    assert_eq!(t["live_mode"], false);
    assert_eq!(
        (&t["card_number_length"], &t["security_code_length"]),
        (&json!(16), &json!(3))
    );
    let text = t.to_string();
    assert!(
        !text.contains("5031433215406351") && !text.contains("\"123\""),
        "{text}"
    );
    let (status, again) = sb
        .call(Method::GET, &format!("/v1/card_tokens/{id}"), None)
        .await;
    assert_eq!((status, &again), (200, &t));
    let (status, e) = sb.call(Method::GET, "/v1/card_tokens/nope", None).await;
    assert_eq!(status, 404, "{e}");

    for (bad, field) in [
        (
            json!({"card_number": "12", "security_code": "123", "expiration_month": 1, "expiration_year": 2030, "cardholder": {"name": "APRO"}}),
            "card_number",
        ),
        (
            json!({"card_number": "5031433215406351", "security_code": "123", "expiration_month": 13, "expiration_year": 2030, "cardholder": {"name": "APRO"}}),
            "expiration_month",
        ),
        (
            json!({"card_number": "5031433215406351", "security_code": "1", "expiration_month": 1, "expiration_year": 2030, "cardholder": {"name": "APRO"}}),
            "security_code",
        ),
        (
            json!({"card_number": "5031433215406351", "security_code": "123", "expiration_month": 1, "expiration_year": 2030}),
            "cardholder.name",
        ),
        (json!({"card_id": "9", "security_code": "123"}), "card_id"),
    ] {
        let (status, e) = sb.call(Method::POST, "/v1/card_tokens", Some(bad)).await;
        assert_eq!(status, 400, "{field}: {e}");
        assert_eq!(e["error"], "bad_request");
        assert!(e["message"].as_str().unwrap().starts_with(field), "{e}");
    }
    sb.stop().await;
}

#[tokio::test]
async fn the_cardholders_name_decides_the_payment() {
    let (sb, _clock) = on_manual_clock(vec![account(None)]).await;
    for (holder, status, detail) in [
        ("APRO", "approved", "accredited"),
        ("CONT", "in_process", "pending_contingency"),
        ("OTHE", "rejected", "cc_rejected_other_reason"),
        ("CALL", "rejected", "cc_rejected_call_for_authorize"),
        ("FUND", "rejected", "cc_rejected_insufficient_amount"),
        ("SECU", "rejected", "cc_rejected_bad_filled_security_code"),
        ("EXPI", "rejected", "cc_rejected_bad_filled_date"),
        ("FORM", "rejected", "cc_rejected_bad_filled_other"),
        ("Maria Silva", "approved", "accredited"),
    ] {
        let t = token(&sb, holder).await;
        let p = pay(&sb, t["id"].as_str().unwrap(), json!({})).await;
        assert_eq!(
            (&p["status"], &p["status_detail"]),
            (&json!(status), &json!(detail)),
            "{holder}"
        );
        assert_eq!(p["card"]["last_four_digits"], "6351");
        assert_eq!(p["card"]["cardholder"]["name"], holder);
        let (_, got) = sb
            .call(Method::GET, &format!("/v1/payments/{}", p["id"]), None)
            .await;
        assert_eq!(got["status_detail"], detail, "{holder}: as created");
    }
    // An approval reserved with capture false is only authorized; a
    // rejection stays a rejection.
    let t = token(&sb, "APRO").await;
    let p = pay(&sb, t["id"].as_str().unwrap(), json!({"capture": false})).await;
    assert_eq!(
        (&p["status"], &p["status_detail"]),
        (&json!("authorized"), &json!("pending_capture"))
    );
    let t = token(&sb, "FUND").await;
    let p = pay(&sb, t["id"].as_str().unwrap(), json!({"capture": false})).await;
    assert_eq!(p["status"], "rejected");
    // A preset status wins over the card.
    sb.control(
        "presets/next_payment_status",
        json!({"status": "in_process"}),
    )
    .await;
    let t = token(&sb, "OTHE").await;
    let p = pay(&sb, t["id"].as_str().unwrap(), json!({})).await;
    assert_eq!(p["status"], "in_process");
    // A token the sandbox did not issue pays as before: approved.
    let p = pay(&sb, "made-up", json!({})).await;
    assert_eq!(p["status"], "approved");
    assert!(p.get("card").is_none(), "{p}");
    sb.stop().await;
}
