//! Notification shapes as the platform sends them: the IPN (query `topic`
//! and `id`, body `{"resource","topic"}`), the webhook (query `data.id` and
//! `type`, a JSON body, `x-signature` when the account has a secret), the
//! payment-intent body, and the fraud alert.

use serde_json::{Value, json};
use url::Url;

use crate::model::{Form, OutBody, Outgoing};
use pointhook_common::signature;

/// `url` with `pairs` added to whatever query it already carries.
pub fn with_query(url: &str, pairs: &[(&str, &str)]) -> String {
    match Url::parse(url) {
        Ok(mut u) => {
            {
                let mut q = u.query_pairs_mut();
                for (k, v) in pairs {
                    q.append_pair(k, v);
                }
            }
            u.to_string()
        }
        Err(_) => url.to_string(),
    }
}

/// The webhook `type` of an IPN topic.
pub fn webhook_type(topic: &str) -> &'static str {
    match topic {
        "payment" => "payment",
        "merchant_order" => "topic_merchant_order_wh",
        "chargebacks" => "topic_chargebacks_wh",
        "point_integration_ipn" => "point_integration_wh",
        _ => "unknown",
    }
}

pub fn ipn(url: &str, topic: &str, id: &str, resource_url: &str) -> Outgoing {
    Outgoing {
        url: with_query(url, &[("topic", topic), ("id", id)]),
        form: Form::Ipn,
        topic: topic.to_string(),
        resource_id: id.to_string(),
        body: OutBody::Json(json!({"resource": resource_url, "topic": topic})),
        headers: vec![
            ("content-type".into(), "application/json".into()),
            (
                "user-agent".into(),
                format!("pointhook-sandbox Feed v2.0 {topic}"),
            ),
        ],
    }
}

#[allow(clippy::too_many_arguments)]
pub fn webhook(
    url: &str,
    topic: &str,
    id: &str,
    notification_id: i64,
    user_id: i64,
    action: &str,
    now_iso: &str,
    secret: Option<&str>,
    now_secs: u64,
) -> Outgoing {
    let kind = webhook_type(topic);
    let request_id = random_hex(16);
    let mut headers = vec![
        ("content-type".to_string(), "application/json".to_string()),
        (
            "user-agent".into(),
            format!("pointhook-sandbox WebHook v1.0 {kind}"),
        ),
        ("x-request-id".into(), request_id.clone()),
    ];
    if let Some(secret) = secret {
        headers.push((
            "x-signature".into(),
            signature::sign(secret.as_bytes(), Some(id), Some(&request_id), now_secs),
        ));
    }
    Outgoing {
        url: with_query(url, &[("data.id", id), ("type", kind)]),
        form: Form::Webhook,
        topic: kind.to_string(),
        resource_id: id.to_string(),
        body: OutBody::Json(json!({
            "action": action,
            "api_version": "v1",
            "data": {"id": id},
            "date_created": now_iso,
            "id": notification_id,
            "live_mode": false,
            "type": kind,
            "user_id": user_id,
        })),
        headers,
    }
}

/// The payment-intent webhook: the intent itself, as the device reports it.
pub fn intent(url: &str, intent: &Value, secret: Option<&str>, now_secs: u64) -> Outgoing {
    let id = intent["id"].as_str().unwrap_or_default().to_string();
    let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
    if let Some(secret) = secret {
        let request_id = random_hex(16);
        headers.push(("x-request-id".into(), request_id.clone()));
        headers.push((
            "x-signature".into(),
            signature::sign(secret.as_bytes(), None, Some(&request_id), now_secs),
        ));
    }
    Outgoing {
        url: url.to_string(),
        form: Form::IntentWebhook,
        topic: "payment_intent".into(),
        resource_id: id,
        body: OutBody::Json(intent.clone()),
        headers,
    }
}

pub fn fraud_alert(url: &str, order: &Value, payment: &Value, description: &str) -> Outgoing {
    let order_text = json_id_text(order);
    Outgoing {
        url: with_query(
            url,
            &[("topic", "delivery_cancellation"), ("id", &order_text)],
        ),
        form: Form::Ipn,
        topic: "delivery_cancellation".into(),
        resource_id: order_text,
        body: OutBody::Json(
            json!({"description": description, "merchant_order": order, "payment_id": payment}),
        ),
        headers: vec![("content-type".into(), "application/json".into())],
    }
}

/// The fraud alert's webhook form (`stop_delivery_op_wh`), as the docs show
/// it: the alert's fields under `data`, no `data.id` in the body, the
/// payment as the query's `data.id` (so the signature binds it). The
/// platform sends it once and never again.
pub fn fraud_alert_webhook(
    url: &str,
    order: &Value,
    payment: &Value,
    description: &str,
    secret: Option<&str>,
    now_iso: &str,
    now_secs: u64,
) -> Outgoing {
    let payment_text = json_id_text(payment);
    let request_id = random_hex(16);
    let mut headers = vec![
        ("content-type".to_string(), "application/json".to_string()),
        (
            "user-agent".into(),
            "pointhook-sandbox WebHook v1.0 stop_delivery_op_wh".to_string(),
        ),
        ("x-request-id".into(), request_id.clone()),
    ];
    if let Some(secret) = secret {
        headers.push((
            "x-signature".into(),
            signature::sign(
                secret.as_bytes(),
                Some(&payment_text),
                Some(&request_id),
                now_secs,
            ),
        ));
    }
    Outgoing {
        url: with_query(url, &[("data.id", &payment_text), ("type", FRAUD_WEBHOOK)]),
        form: Form::Webhook,
        topic: FRAUD_WEBHOOK.into(),
        resource_id: payment_text.clone(),
        body: OutBody::Json(json!({
            "action": "Created",
            "api_version": "v1",
            "data": {
                "description": description,
                "merchant_order": order,
                "payment_id": payment,
                "site_id": "MLA",
            },
            "date_created": now_iso,
            "id": payment_text,
            "live_mode": false,
            "type": FRAUD_WEBHOOK,
            "user_id": 1,
            "version": 1,
        })),
        headers,
    }
}

/// The `order` webhook of the Orders API (orders-api.md §3): query
/// `data.id` (the id as issued, upper case, which the signature binds) and
/// `type=order`; a body with `action`, `type` and the order summarized in
/// `data`, with no top-level `id`; `X-Retry` counts the retries.
#[allow(clippy::too_many_arguments)]
pub fn order_webhook(
    url: &str,
    id: &str,
    data: Value,
    action: &str,
    user_id: &str,
    application_id: &str,
    now_iso: &str,
    secret: Option<&str>,
    now_secs: u64,
) -> Outgoing {
    let request_id = uuid_like();
    let mut headers = vec![
        ("content-type".to_string(), "application/json".to_string()),
        (
            "user-agent".into(),
            "pointhook-sandbox WebHook v1.0 order".into(),
        ),
        ("x-request-id".into(), request_id.clone()),
        ("x-retry".into(), "0".into()),
        ("x-socket-timeout".into(), "22000".into()),
    ];
    if let Some(secret) = secret {
        headers.push((
            "x-signature".into(),
            signature::sign(secret.as_bytes(), Some(id), Some(&request_id), now_secs),
        ));
    }
    Outgoing {
        url: with_query(url, &[("data.id", id), ("type", "order")]),
        form: Form::Webhook,
        topic: "order".into(),
        resource_id: id.to_string(),
        body: OutBody::Json(json!({
            "action": action,
            "api_version": "v1",
            "application_id": application_id,
            "data": data,
            "date_created": now_iso,
            "live_mode": false,
            "type": "order",
            "user_id": user_id,
        })),
        headers,
    }
}

/// The fraud alert's webhook type; the platform never retries it.
pub const FRAUD_WEBHOOK: &str = "stop_delivery_op_wh";

/// `headers` with a fresh `x-request-id` and an `x-signature` made now over
/// `data_id`: the platform signs every attempt anew.
pub fn resign(
    headers: &mut Vec<(String, String)>,
    secret: &str,
    data_id: Option<&str>,
    now_secs: u64,
) {
    let request_id = random_hex(16);
    headers.retain(|(k, _)| k != "x-request-id" && k != "x-signature");
    headers.push(("x-request-id".into(), request_id.clone()));
    headers.push((
        "x-signature".into(),
        signature::sign(secret.as_bytes(), data_id, Some(&request_id), now_secs),
    ));
}

pub fn json_id_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

pub fn random_hex(bytes: usize) -> String {
    use rand::RngExt;
    let mut rng = rand::rng();
    (0..bytes)
        .map(|_| format!("{:02x}", rng.random::<u8>()))
        .collect()
}

/// A UUID-shaped random id (payment intents have them).
pub fn uuid_like() -> String {
    let h = random_hex(16);
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_account_url_with_a_query_keeps_it() {
        assert_eq!(
            with_query(
                "http://h/n?customer=shop-2&source_news=ipn",
                &[("topic", "payment"), ("id", "1")]
            ),
            "http://h/n?customer=shop-2&source_news=ipn&topic=payment&id=1"
        );
    }

    #[test]
    fn webhooks_are_signed_as_the_receiver_checks() {
        let w = webhook(
            "http://h/n",
            "payment",
            "42",
            1,
            2,
            "payment.updated",
            "now",
            Some("s"),
            1000,
        );
        let signature = &w
            .headers
            .iter()
            .find(|(k, _)| k == "x-signature")
            .unwrap()
            .1;
        let request_id = &w
            .headers
            .iter()
            .find(|(k, _)| k == "x-request-id")
            .unwrap()
            .1;
        let parts = signature::SignedParts {
            data_id: "42",
            request_id: Some(request_id.as_bytes()),
            signature: Some(signature.as_bytes()),
        };
        let now = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1000);
        assert!(
            signature::verify(
                &[b"s"],
                parts,
                now,
                Some(std::time::Duration::from_secs(300))
            )
            .is_ok()
        );
        assert!(w.url.ends_with("?data.id=42&type=payment"));
    }
}
