//! The x-signature check at the endpoint, with the fixture vectors.

use crate::helpers::*;
use pointhook::domain::SignatureStatus;
use serde_json::{Value, json};

on_both_backends!(
    the_signed_fixture_is_accepted_and_a_missing_signature_is_401,
    ipn_is_not_signature_checked,
    a_fraud_alert_with_a_bad_signature_is_kept_unverified,
    a_signature_over_another_id_authenticates_no_alert,
    a_signature_that_binds_no_data_id_is_no_signature,
    secrets_tolerance_and_unsigned_forms_per_account,
    intent_bodies_are_kept_whatever_their_signature,
);

fn vectors(file: &str) -> Value {
    let path = format!("{}/fixtures/{file}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Posts every vector of `file` to an app whose account holds the vector's
/// secret and tolerance; `lenient` are those pointhook accepts on purpose
/// although the file says invalid.
async fn vectors_over_http(file: &str, lenient: &[&str]) {
    let doc = vectors(file);
    for v in doc["vectors"].as_array().unwrap() {
        let name = v["name"].as_str().unwrap();
        let secret = v["secret"].as_str().or(doc["secret"].as_str()).unwrap();
        if secret.is_empty() {
            continue; // an empty secret cannot be configured
        }
        let tolerance = match v.get("tolerance_seconds") {
            Some(t) => t.as_u64().unwrap_or(0),
            None => doc["tolerance_seconds"].as_u64().unwrap_or(0),
        };
        let app = spawn_app_with(
            TestConfig {
                accounts: format!(
                    "[[accounts]]\nname = \"default\"\naccess_token = \"tok\"\n\
                     webhook_secret = {secret:?}\nsignature_tolerance_secs = {tolerance}\n"
                ),
                ..Default::default()
            }
            .at_unix(v["now_unix"].as_u64().unwrap()),
        )
        .await;
        let data_id = v["query_data_id"].as_str().unwrap_or("");
        let query = if data_id.trim().is_empty() {
            "type=mp-connect".to_string()
        } else {
            format!("data.id={}&type=mp-connect", urlencode(data_id))
        };
        let mut headers = vec![("content-type", "application/json")];
        let request_id = v["x_request_id"].as_str().unwrap_or("");
        if !request_id.is_empty() {
            headers.push(("x-request-id", request_id));
        }
        let signature = v["x_signature"].as_str();
        // reqwest refuses non-visible-ASCII header values; the vector's
        // multibyte signature is sent raw.
        let status = match signature {
            Some(sig) if !sig.is_ascii() => {
                let mut request = format!(
                    "POST /notifications?{query} HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\nx-request-id: {request_id}\r\n"
                )
                .into_bytes();
                request.extend_from_slice(b"x-signature: ");
                request.extend_from_slice(sig.as_bytes());
                request.extend_from_slice(b"\r\n\r\n");
                let response = raw_exchange(app.addr, &request).await;
                response[9..12].parse().unwrap()
            }
            _ => {
                if let Some(sig) = signature {
                    headers.push(("x-signature", sig));
                }
                // The body names the payment when the query does not.
                let body = json!({"type": "mp-connect", "data": {"id": "1"}}).to_string();
                app.post(&query, &headers, Some(body.as_bytes()))
                    .await
                    .status()
                    .as_u16()
            }
        };
        // With no data.id the signature binds nothing: the webhook (of a
        // type nothing acts on) is kept as an unsigned one, whatever the
        // file says the validators answer.
        let valid =
            v["valid"].as_bool().unwrap() || lenient.contains(&name) || data_id.trim().is_empty();
        assert_eq!(status, if valid { 200 } else { 401 }, "vector {name}");
        app.stop().await;
    }
}

fn urlencode(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

#[tokio::test]
async fn every_vector_gets_its_expected_answer_over_http() {
    vectors_over_http("signatures.json", &[]).await;
}

#[tokio::test]
async fn the_official_validators_vectors_over_http() {
    vectors_over_http(
        "signatures-sdk.json",
        &[
            "derived_signed_lowercase_id_received_upper",
            "go_ms_ts_30s_tol60",
            "php_fresh_ms_ts_tol300",
        ],
    )
    .await;
}

async fn the_signed_fixture_is_accepted_and_a_missing_signature_is_401() {
    let app = spawn_app_with(TestConfig::with_secret().at_unix(1763632800)).await;
    let (status, body) = answer(app.post_fixture(&fixture("webhook-payment.json")).await).await;
    assert_eq!(status, 200, "{body}");
    let res = app.post("type=payment&data.id=123456789", &[], None).await;
    let (status, body) = answer(res).await;
    assert_eq!(status, 401);
    assert_eq!(body["error"], "bad_signature");
    assert!(body["message"].as_str().unwrap().contains("missing"));
    let signature = app
        .sql
        .value("SELECT signature FROM deliveries", &[])
        .signature();
    assert_eq!(signature, SignatureStatus::Valid);
    app.stop().await;
}

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

/// `(signature of each delivery, authenticated in the job's work)`.
fn alert_state(app: &TestApp) -> (Vec<SignatureStatus>, bool, i64) {
    let statuses = app
        .sql
        .rows("SELECT signature FROM deliveries ORDER BY id", &[])
        .iter()
        .map(|r| r[0].signature())
        .collect();
    let row = app
        .sql
        .rows("SELECT work, input_delivery_id FROM jobs", &[]);
    let (work, input) = (row[0][0].text(), row[0][1].int());
    let work: Value = serde_json::from_str(&work).unwrap();
    (statuses, work["authenticated"].as_bool().unwrap(), input)
}

async fn a_fraud_alert_with_a_bad_signature_is_kept_unverified() {
    let app = spawn_app_with(TestConfig::with_secret()).await;
    let f = fixture("webhook-fraud-alert.json");
    let post = |sig: Option<String>| {
        let mut headers: Vec<(String, String)> = f.headers.clone();
        if let Some(sig) = sig {
            headers.push(("x-signature".into(), sig));
        }
        let (query, body) = (f.query.clone(), f.body.clone());
        let app = &app;
        async move {
            let headers: Vec<(&str, &str)> = headers
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            answer(app.post(&query, &headers, body.as_deref()).await).await
        }
    };
    let (status, body) = post(Some("ts=1,v1=00".into())).await;
    assert_eq!(status, 200, "{body}");
    let (statuses, authenticated, _) = alert_state(&app);
    assert_eq!(statuses, [SignatureStatus::Invalid]);
    assert!(!authenticated);
    // Unsigned, it is kept as unverified too (the platform never resends it).
    assert_eq!(post(None).await.0, 200);

    // A validly signed copy made two hours ago authenticates nothing: the
    // platform sends an alert once, so an honest signature is fresh.
    let two_hours_ago = unix_now() - 7200;
    let stale = pointhook_common::signature::sign(
        SECRET.as_bytes(),
        Some("23064274473"),
        None,
        two_hours_ago,
    );
    assert_eq!(post(Some(stale)).await.0, 200);
    let (statuses, authenticated, _) = alert_state(&app);
    assert_eq!(statuses[2], SignatureStatus::Valid);
    assert!(!authenticated);

    // A freshly signed copy that follows authenticates the job's work.
    let good =
        pointhook_common::signature::sign(SECRET.as_bytes(), Some("23064274473"), None, unix_now());
    let (status, body) = post(Some(good)).await;
    assert_eq!(status, 200);
    let verified_id = body["delivery_id"].as_i64().unwrap();
    let (statuses, authenticated, input) = alert_state(&app);
    assert_eq!(statuses[3], SignatureStatus::Valid);
    assert!(authenticated);
    assert_eq!(input, verified_id);

    // And a later bad one does not displace it.
    assert_eq!(post(Some("garbage".into())).await.0, 200);
    let (_, authenticated, input) = alert_state(&app);
    assert!(authenticated);
    assert_eq!(input, verified_id);
    app.stop().await;
}

/// A signature binds `data.id` and nothing else: over an id that is not the
/// alert's payment (or order), it authenticates nothing; with no `data.id`
/// in the query, it binds nothing at all.
async fn a_signature_over_another_id_authenticates_no_alert() {
    let app = spawn_app_with(TestConfig::with_secret()).await;
    let body =
        json!({"type": "stop_delivery_op_wh", "data": {"merchant_order": 1, "payment_id": 2}});
    let other = pointhook_common::signature::sign(SECRET.as_bytes(), Some("999"), None, 1);
    let res = app
        .post(
            "data.id=999&type=stop_delivery_op_wh",
            &[("x-signature", &other)],
            Some(body.to_string().as_bytes()),
        )
        .await;
    assert_eq!(res.status(), 200);
    let unbound = pointhook_common::signature::sign(SECRET.as_bytes(), None, None, 1);
    let res = app
        .post(
            "type=stop_delivery_op_wh",
            &[("x-signature", &unbound)],
            Some(body.to_string().as_bytes()),
        )
        .await;
    assert_eq!(res.status(), 200);
    let (statuses, authenticated, _) = alert_state(&app);
    assert_eq!(statuses, [SignatureStatus::Valid, SignatureStatus::Invalid]);
    assert!(!authenticated);
    app.stop().await;
}

/// A signature over a manifest with no `id:` would vouch for any body: a
/// webhook that carries one and no `data.id` in its query is answered as an
/// unsigned webhook (401 where the account requires signatures, recorded
/// unsigned where it does not), never as a signed one.
async fn a_signature_that_binds_no_data_id_is_no_signature() {
    let unbound = pointhook_common::signature::sign(SECRET.as_bytes(), None, Some("r-1"), 1);
    let body = json!({"type": "payment", "data": {"id": "123"}}).to_string();
    let headers = [("x-signature", unbound.as_str()), ("x-request-id", "r-1")];
    let app = spawn_app_with(TestConfig::with_secret()).await;
    let (status, answer) = answer(app.post("", &headers, Some(body.as_bytes())).await).await;
    assert_eq!(status, 401, "{answer}");
    assert_eq!(app.count("SELECT count(*) FROM deliveries"), 0);
    // The same signature with the id in the query is checked, and fails.
    let res = app
        .post("data.id=123&type=payment", &headers, Some(body.as_bytes()))
        .await;
    assert_eq!(res.status(), 401);
    app.stop().await;

    let app = spawn_app_with(TestConfig {
        accounts: format!(
            "[[accounts]]\nname = \"default\"\naccess_token = \"tok\"\n\
             webhook_secret = {SECRET:?}\nrequire_signature = false\n"
        ),
        ..Default::default()
    })
    .await;
    let res = app.post("", &headers, Some(body.as_bytes())).await;
    assert_eq!(res.status(), 200);
    let statuses: Vec<SignatureStatus> = app
        .sql
        .rows("SELECT signature FROM deliveries", &[])
        .iter()
        .map(|r| r[0].signature())
        .collect();
    assert_eq!(statuses, [SignatureStatus::Unsigned]);
    app.stop().await;
}

/// Several secrets (rotation), no timestamp check by default, unsigned
/// webhooks accepted where the account says so.
async fn secrets_tolerance_and_unsigned_forms_per_account() {
    let app = spawn_app_with(TestConfig {
        accounts: format!(
            "[[accounts]]\nname = \"default\"\naccess_token = \"tok\"\n\
             webhook_secrets = [\"old-secret\", {SECRET:?}]\n\
             [[accounts]]\nname = \"qr\"\naccess_token = \"tok\"\nwebhook_secret = {SECRET:?}\n\
             require_signature = false\n\
             [[accounts]]\nname = \"strict\"\naccess_token = \"tok\"\nwebhook_secret = {SECRET:?}\n\
             signature_tolerance_secs = 300\n"
        ),
        ..Default::default()
    })
    .await;
    // An hour-old signature by the second secret: fine without a tolerance.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let old = pointhook_common::signature::sign(SECRET.as_bytes(), Some("5"), None, now - 3600);
    let by_old_secret = pointhook_common::signature::sign(b"old-secret", Some("5"), None, now);
    for sig in [&old, &by_old_secret] {
        let res = app
            .post("type=payment&data.id=5", &[("x-signature", sig)], None)
            .await;
        assert_eq!(res.status(), 200);
    }
    // The strict account checks the timestamp.
    let (status, body) = answer(
        app.post(
            "type=payment&data.id=5&customer=strict",
            &[("x-signature", &old)],
            None,
        )
        .await,
    )
    .await;
    assert_eq!(status, 401, "{body}");
    assert!(body["message"].as_str().unwrap().contains("tolerance"));
    // Unsigned: refused where required, recorded as unsigned where not.
    assert_eq!(
        app.post("type=payment&data.id=5", &[], None).await.status(),
        401
    );
    assert_eq!(
        app.post("type=payment&data.id=5&cliente=qr", &[], None)
            .await
            .status(),
        200
    );
    // A bad signature is still refused where one is not required.
    assert_eq!(
        app.post(
            "type=payment&data.id=5&cliente=qr",
            &[("x-signature", "ts=1,v1=00")],
            None
        )
        .await
        .status(),
        401
    );
    let last = app
        .sql
        .value("SELECT signature FROM deliveries WHERE account = 'qr'", &[])
        .signature();
    assert_eq!(last, SignatureStatus::Unsigned);
    app.stop().await;
}

/// A payment-intent body is only a pointer: kept whatever its signature.
async fn intent_bodies_are_kept_whatever_their_signature() {
    let app = spawn_app_with(TestConfig::with_secret()).await;
    for sig in [None, Some("ts=1,v1=00")] {
        let mut headers = vec![("content-type", "application/json")];
        if let Some(s) = sig {
            headers.push(("x-signature", s));
        }
        let f = fixture("intent-finished-docs.json");
        let res = app.post(&f.query, &headers, f.body.as_deref()).await;
        assert_eq!(res.status(), 200);
    }
    app.stop().await;
}
