//! The x-signature check at the endpoint, with the fixture vectors.

use crate::helpers::*;
use serde_json::{Value, json};

fn vectors() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/signatures.json");
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[tokio::test]
async fn every_vector_gets_its_expected_answer_over_http() {
    let doc = vectors();
    for v in doc["vectors"].as_array().unwrap() {
        let name = v["name"].as_str().unwrap();
        let app =
            spawn_app_with(TestConfig::with_secret().at_unix(v["now_unix"].as_u64().unwrap()))
                .await;
        let data_id = v["query_data_id"].as_str().unwrap();
        let mut headers = vec![("content-type", "application/json")];
        let request_id = v["x_request_id"].as_str().unwrap();
        if !request_id.is_empty() {
            headers.push(("x-request-id", request_id));
        }
        let signature = v["x_signature"].as_str().unwrap();
        // reqwest refuses non-visible-ASCII header values; the vector's
        // multibyte signature is sent raw.
        let status = if signature.is_ascii() {
            headers.push(("x-signature", signature));
            let body = json!({"type": "payment", "data": {"id": data_id}}).to_string();
            app.post(
                &format!("data.id={data_id}&type=payment"),
                &headers,
                Some(body.as_bytes()),
            )
            .await
            .status()
            .as_u16()
        } else {
            let mut request = format!(
                "POST /notifications?data.id={data_id}&type=payment HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\nx-request-id: {request_id}\r\n"
            )
            .into_bytes();
            request.extend_from_slice(b"x-signature: ");
            request.extend_from_slice(signature.as_bytes());
            request.extend_from_slice(b"\r\n\r\n");
            let response = raw_exchange(app.addr, &request).await;
            response[9..12].parse().unwrap()
        };
        let expected = if v["valid"].as_bool().unwrap() {
            200
        } else {
            401
        };
        assert_eq!(status, expected, "vector {name}");
        app.stop().await;
    }
}

#[tokio::test]
async fn the_signed_fixture_is_accepted_and_a_missing_signature_is_401() {
    let app = spawn_app_with(TestConfig::with_secret().at_unix(1763632800)).await;
    let (status, body) = answer(app.post_fixture(&fixture("webhook-payment.json")).await).await;
    assert_eq!(status, 200, "{body}");
    let res = app.post("type=payment&data.id=123456789", &[], None).await;
    let (status, body) = answer(res).await;
    assert_eq!(status, 401);
    assert_eq!(body["error"], "bad_signature");
    assert!(body["message"].as_str().unwrap().contains("missing"));
    let signature: i64 = app
        .db()
        .query_row("SELECT signature FROM deliveries", [], |r| r.get(0))
        .unwrap();
    assert_eq!(signature, 1, "stored as verified");
    app.stop().await;
}

#[tokio::test]
async fn ipn_is_not_signature_checked() {
    let app = spawn_app_with(TestConfig::with_secret()).await;
    for name in [
        "ipn-payment.json",
        "ipn-merchant-order.json",
        "ipn-chargeback.json",
        "ipn-fraud-alert.json",
    ] {
        let (status, body) = answer(app.post_fixture(&fixture(name)).await).await;
        assert_eq!(status, 200, "{name}: {body}");
    }
    app.stop().await;
}

#[tokio::test]
async fn a_fraud_alert_with_a_bad_signature_is_kept_unverified() {
    let app = spawn_app_with(TestConfig::with_secret()).await;
    let f = fixture("webhook-fraud-alert.json");
    let mut headers: Vec<(&str, &str)> = f
        .headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    headers.push(("x-signature", "ts=1,v1=00"));
    let (status, body) = answer(app.post(&f.query, &headers, f.body.as_deref()).await).await;
    assert_eq!(status, 200, "{body}");
    let (signature, job): (i64, Option<String>) = app
        .db()
        .query_row("SELECT signature, job_key FROM deliveries", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!(signature, 2, "stored as unverified");
    assert_eq!(job.as_deref(), Some("fraud:4945357007:23064274473"));

    // A validly signed copy that follows becomes the job's input.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let good = pointhook::http::verify::sign(SECRET.as_bytes(), Some("23064274473"), None, now);
    let mut headers: Vec<(&str, &str)> = f
        .headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    headers.push(("x-signature", &good));
    let (status, body) = answer(app.post(&f.query, &headers, f.body.as_deref()).await).await;
    assert_eq!(status, 200);
    let verified_id = body["delivery_id"].as_i64().unwrap();
    let input: i64 = app
        .db()
        .query_row("SELECT input_delivery_id FROM jobs", [], |r| r.get(0))
        .unwrap();
    assert_eq!(input, verified_id);

    // And a later bad one does not displace it.
    headers.pop();
    headers.push(("x-signature", "garbage"));
    assert_eq!(
        app.post(&f.query, &headers, f.body.as_deref())
            .await
            .status(),
        200
    );
    let input: i64 = app
        .db()
        .query_row("SELECT input_delivery_id FROM jobs", [], |r| r.get(0))
        .unwrap();
    assert_eq!(input, verified_id);
    app.stop().await;
}
