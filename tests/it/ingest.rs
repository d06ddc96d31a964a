//! Every notification kind the platform sends is accepted and stored as sent.

use crate::helpers::*;
use serde_json::json;

on_both_backends!(
    every_fixture_is_accepted_and_stored_byte_for_byte,
    job_keys_per_kind,
    headers_remote_address_and_source_news_are_recorded,
    an_empty_body_is_no_body_whatever_the_content_type,
    ipn_body_is_recorded_never_validated,
    unknown_topics_are_stored_and_ignored,
    accounts_are_chosen_by_customer_cliente_or_client,
    the_only_account_is_the_default_and_two_without_default_need_customer,
    concurrent_requests_all_commit,
    bodies_nothing_reads_are_kept_up_to_a_cap,
    numeric_ids_are_read_as_the_platform_reads_them,
);

/// Accounts for the fixtures: one of them names its shop with `cliente`.
const FIXTURE_ACCOUNTS: &str = "[[accounts]]\nname = \"default\"\naccess_token = \"tok\"\n\
    [[accounts]]\nname = \"tienda-norte\"\naccess_token = \"tok-2\"\n";

/// Every documented (or observed) notification is stored byte for byte and
/// answered 200, to an account without secrets and to one with a secret
/// (signed as the platform signs).
async fn every_fixture_is_accepted_and_stored_byte_for_byte() {
    let names = fixture_names();
    assert!(names.len() >= 60, "{names:?}");
    let secret = format!("webhook_secret = \"{SECRET}\"\n");
    for accounts in [
        FIXTURE_ACCOUNTS.to_string(),
        FIXTURE_ACCOUNTS.replace(
            "access_token = \"tok\"\n",
            &format!("access_token = \"tok\"\n{secret}"),
        ),
    ] {
        let app = spawn_app_with(TestConfig {
            accounts: accounts.clone(),
            ..Default::default()
        })
        .await;
        for name in &names {
            let f = fixture(name).signed();
            let (status, body) = answer(app.post_fixture(&f).await).await;
            assert_eq!(status, 200, "{name}: {body}");
            assert_eq!(body["status"], "accepted", "{name}");
            let id = body["delivery_id"].as_i64().unwrap();
            let row = app.sql.rows(
                "SELECT body, query, job_key FROM deliveries WHERE id = $1",
                &[SqlValue::Int(id)],
            );
            let (stored, query, job_key) =
                (row[0][0].bytes(), row[0][1].text(), row[0][2].opt_text());
            assert_eq!(stored, f.body, "{name}: body kept exactly");
            assert_eq!(query, f.query, "{name}");
            assert_eq!(body.get("ignored").is_some(), job_key.is_none(), "{name}");
        }
        assert_eq!(
            app.count("SELECT count(*) FROM deliveries"),
            names.len() as i64
        );
        app.stop().await;
    }
}

/// The fixtures first kept (one of each kind) and the jobs they make.
const FIRST_FIXTURES: &[&str] = &[
    "intent-canceled.json",
    "intent-confirmation-required.json",
    "intent-error.json",
    "intent-finished.json",
    "ipn-chargeback.json",
    "ipn-fraud-alert.json",
    "ipn-merchant-order.json",
    "ipn-payment.json",
    "ipn-point-integration.json",
    "webhook-fraud-alert.json",
    "webhook-merchant-order.json",
    "webhook-payment.json",
];

async fn job_keys_per_kind() {
    let app = spawn_app().await;
    for name in FIRST_FIXTURES {
        app.post_fixture(&fixture(name)).await;
    }
    let mut keys: Vec<String> = app
        .sql
        .rows("SELECT job_key FROM jobs ORDER BY job_key", &[])
        .iter()
        .map(|r| r[0].text())
        .collect();
    keys.sort();
    // Every notification of one intent (its IPN and its bodies in any
    // state) asks for the same fetch; both fraud-alert forms feed one job.
    assert_eq!(
        keys,
        [
            "chargeback:43589345903450",
            "fraud:4945357007:23064274473",
            "merchant_order:4945357007",
            "payment:123456789",
            "payment_intent:7f25f9aa-eea6-4f9c-bf16-a341f71ba2f1",
        ]
    );
    // Each job links to the delivery its work came from, and holds it.
    assert_eq!(
        app.count("SELECT count(*) FROM jobs WHERE input_delivery_id IS NULL OR work IS NULL"),
        0
    );
    let work = app
        .sql
        .value("SELECT work FROM jobs WHERE job_key LIKE 'fraud:%'", &[])
        .text();
    let work: serde_json::Value = serde_json::from_str(&work).unwrap();
    assert_eq!(work["payment"], "23064274473");
    assert_eq!(work["authenticated"], false);
    app.stop().await;
}

async fn headers_remote_address_and_source_news_are_recorded() {
    let app = spawn_app().await;
    let (status, body) = answer(
        app.post(
            "topic=payment&id=42&source_news=ipn",
            &[
                ("user-agent", "Feed v2.0"),
                ("x-request-id", "r-1"),
                ("x-retry", "2"),
                ("authorization", "Bearer no"),
            ],
            None,
        )
        .await,
    )
    .await;
    assert_eq!(status, 200);
    let id = body["delivery_id"].as_i64().unwrap();
    let row = app.sql.rows(
        "SELECT headers, remote_addr, source_news, body FROM deliveries WHERE id = $1",
        &[SqlValue::Int(id)],
    );
    let (headers, remote, source, body) = (
        row[0][0].text(),
        row[0][1].text(),
        row[0][2].opt_text(),
        row[0][3].bytes(),
    );
    let headers: serde_json::Value = serde_json::from_str(&headers).unwrap();
    assert_eq!(headers["user-agent"], "Feed v2.0");
    assert_eq!(headers["x-request-id"], "r-1");
    assert_eq!(headers["x-retry"], "2", "which attempt of the platform's");
    assert!(headers.get("authorization").is_none(), "not a kept header");
    assert!(remote.starts_with("127.0.0.1:"), "{remote}");
    assert_eq!(source.as_deref(), Some("ipn"));
    assert_eq!(body, None, "an empty body is no body");
    app.stop().await;
}

async fn an_empty_body_is_no_body_whatever_the_content_type() {
    let app = spawn_app().await;
    let res = app
        .post(
            "topic=payment&id=1",
            &[("content-type", "application/json")],
            Some(b""),
        )
        .await;
    assert_eq!(res.status(), 200);
    // A webhook named by its query needs no body either.
    let res = app
        .post(
            "type=payment&data.id=1",
            &[("content-type", "application/json")],
            Some(b""),
        )
        .await;
    assert_eq!(res.status(), 200);
    app.stop().await;
}

async fn ipn_body_is_recorded_never_validated() {
    let app = spawn_app().await;
    for body in [
        &b"{}"[..],
        b"not json",
        br#"{"resource":"777","topic":"merchant_order"}"#,
    ] {
        let (status, answer) = answer(app.post("topic=payment&id=5", &[], Some(body)).await).await;
        assert_eq!(status, 200, "{answer}");
    }
    // The query wins: every one of them is the payment 5.
    assert_eq!(app.count("SELECT count(*) FROM jobs"), 1);
    assert_eq!(
        app.count("SELECT count(*) FROM jobs WHERE job_key = 'payment:5'"),
        1
    );
    app.stop().await;
}

async fn unknown_topics_are_stored_and_ignored() {
    let app = spawn_app().await;
    let (status, body) = answer(
        app.post("topic=subscription_authorized_payment&id=9", &[], None)
            .await,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(body["ignored"], true);
    let (status, body) = answer(
        app.post_json(
            "",
            &json!({"type": "automatic-payments", "action": "card.updated"}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(body["ignored"], true);
    assert_eq!(
        app.count("SELECT count(*) FROM deliveries WHERE job_key IS NULL"),
        2
    );
    assert_eq!(app.count("SELECT count(*) FROM jobs"), 0);
    app.stop().await;
}

async fn accounts_are_chosen_by_customer_cliente_or_client() {
    let app = spawn_app_with(TestConfig {
        accounts: "[[accounts]]\nname = \"default\"\naccess_token = \"a\"\n\
                   [[accounts]]\nname = \"shop-2\"\naccess_token = \"b\"\n"
            .into(),
        ..Default::default()
    })
    .await;
    let (status, _) = answer(
        app.post("topic=payment&id=1&customer=shop-2", &[], None)
            .await,
    )
    .await;
    assert_eq!(status, 200);
    let (status, _) = answer(app.post("topic=payment&id=1", &[], None).await).await;
    assert_eq!(status, 200);
    for query in [
        "cliente=shop-2&topic=payment&id=2",
        "client=shop-2&topic=payment&id=3",
    ] {
        assert_eq!(app.post(query, &[], None).await.status(), 200, "{query}");
    }
    let (status, body) = answer(
        app.post("topic=payment&id=1&customer=nobody", &[], None)
            .await,
    )
    .await;
    assert_eq!(status, 404);
    assert_eq!(body["error"], "unknown_account");
    assert!(body["message"].as_str().unwrap().contains("nobody"));
    let accounts: Vec<String> = app
        .sql
        .rows("SELECT account FROM deliveries ORDER BY id", &[])
        .iter()
        .map(|r| r[0].text())
        .collect();
    assert_eq!(accounts, ["shop-2", "default", "shop-2", "shop-2"]);
    app.stop().await;
}

async fn the_only_account_is_the_default_and_two_without_default_need_customer() {
    let app = spawn_app_with(TestConfig {
        accounts: "[[accounts]]\nname = \"solo\"\naccess_token = \"a\"\n".into(),
        ..Default::default()
    })
    .await;
    assert_eq!(
        app.post("topic=payment&id=1", &[], None).await.status(),
        200
    );
    app.stop().await;

    let app = spawn_app_with(TestConfig {
        accounts: "[[accounts]]\nname = \"a\"\naccess_token = \"a\"\n\
                   [[accounts]]\nname = \"b\"\naccess_token = \"b\"\n"
            .into(),
        ..Default::default()
    })
    .await;
    let (status, body) = answer(app.post("topic=payment&id=1", &[], None).await).await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(
        app.post("topic=payment&id=1&customer=b", &[], None)
            .await
            .status(),
        200
    );
    app.stop().await;
}

async fn concurrent_requests_all_commit() {
    let app = spawn_app().await;
    let mut tasks = Vec::new();
    for i in 1..=200 {
        let client = app.client.clone();
        let url = app.url(&format!("/notifications?topic=payment&id={i}"));
        tasks.push(tokio::spawn(async move {
            client.post(url).send().await.unwrap().status().as_u16()
        }));
    }
    for t in tasks {
        assert_eq!(t.await.unwrap(), 200);
    }
    assert_eq!(app.count("SELECT count(*) FROM deliveries"), 200);
    assert_eq!(app.count("SELECT count(*) FROM jobs"), 200);
    app.stop().await;
}

/// A body nothing reads again (any but a fraud alert's or a payment
/// intent's) is kept only up to a small cap, with its full length and
/// SHA-256: enough to see what it was and to match it, not a free store for
/// anyone who knows the URL. Fraud alerts and intent bodies are kept whole.
async fn bodies_nothing_reads_are_kept_up_to_a_cap() {
    use sha2::{Digest, Sha256};
    let app = spawn_app().await;
    let pad = "x".repeat(50_000);
    let cut = [
        ("", json!({"type": "mp-connect", "pad": pad})),
        (
            "",
            json!({"type": "payment", "data": {"id": "7"}, "pad": pad}),
        ),
        (
            "topic=payment&id=8",
            json!({"resource": "8", "topic": "payment", "pad": pad}),
        ),
    ];
    let whole = [
        (
            "",
            json!({"type": "stop_delivery_op_wh",
                   "data": {"merchant_order": 1, "payment_id": 2, "pad": pad}}),
        ),
        (
            "",
            json!({"id": "intent-1", "state": "FINISHED", "pad": pad}),
        ),
    ];
    for (query, body) in cut.iter().chain(&whole) {
        let res = app
            .post(query, &[], Some(body.to_string().as_bytes()))
            .await;
        assert_eq!(res.status(), 200, "{query} {}", &body.to_string()[..40]);
    }
    let rows = app.sql.rows(
        "SELECT body, body_size, body_sha256 FROM deliveries ORDER BY id",
        &[],
    );
    for (i, (row, (_, sent))) in rows.iter().zip(cut.iter().chain(&whole)).enumerate() {
        let sent = sent.to_string();
        let stored = row[0].bytes().unwrap();
        if i < cut.len() {
            assert_eq!(stored.len(), pointhook::http::record::UNREAD_BODY_CAP);
            assert!(sent.as_bytes().starts_with(&stored));
            assert_eq!(row[1].opt_int(), Some(sent.len() as i64));
            assert_eq!(
                row[2].bytes().unwrap(),
                Sha256::digest(sent.as_bytes()).to_vec()
            );
        } else {
            assert_eq!(stored, sent.as_bytes(), "kept whole");
            assert_eq!(row[1].opt_int(), None);
            assert!(row[2].bytes().is_none());
        }
    }
    let first = cut[0].1.to_string();
    let (ok, out, err) = cli_async(&app, &["deliveries", "show", "1"]).await;
    assert!(ok, "{err}");
    let said = format!(
        "kept short: {} bytes received, SHA-256 {}",
        first.len(),
        hex::encode(Sha256::digest(first.as_bytes()))
    );
    assert!(out.contains(&said), "{out}");
    app.stop().await;
}

/// `000123` is the platform's payment 123: one job, however it is written
/// (in the query, in a fraud alert's body); digits the platform could not
/// hold as an id are refused with a status that names them.
async fn numeric_ids_are_read_as_the_platform_reads_them() {
    let app = spawn_app().await;
    for query in [
        "topic=payment&id=000123",
        "topic=payment&id=123",
        "type=payment&data.id=0123",
        "topic=merchant_order&id=007",
        "topic=chargebacks&id=00009223372036854775807",
    ] {
        assert_eq!(app.post(query, &[], None).await.status(), 200, "{query}");
    }
    let body = r#"{"merchant_order": "0007", "payment_id": 000123}"#;
    let res = app
        .post(
            "topic=delivery_cancellation&id=7",
            &[("content-type", "application/json")],
            Some(body.as_bytes()),
        )
        .await;
    assert_eq!(res.status(), 200, "a fraud alert's ids, with leading zeros");
    let mut keys: Vec<String> = app
        .sql
        .rows("SELECT job_key FROM jobs ORDER BY job_key", &[])
        .iter()
        .map(|r| r[0].text())
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "chargeback:9223372036854775807",
            "fraud:7:123",
            "merchant_order:7",
            "payment:123",
        ]
    );
    for (query, says) in [
        (
            "topic=payment&id=9223372036854775808",
            "larger than the platform's ids",
        ),
        (
            "topic=chargebacks&id=99999999999999999999",
            "larger than the platform's ids",
        ),
        ("topic=payment&id=000", "is zero"),
    ] {
        let (status, body) = answer(app.post(query, &[], None).await).await;
        assert_eq!(status, 400, "{query}");
        assert_eq!(body["error"], "invalid_id", "{query}");
        assert!(
            body["message"].as_str().unwrap().contains(says),
            "{query}: {body}"
        );
    }
    app.stop().await;
}
