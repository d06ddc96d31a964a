//! The inbox as typed items: the same items from the admin API and the
//! CLI, and one action on an item by its key from the console, the CLI
//! and the API (`Actions::act`), each audited as who did it; an action
//! the item's kind does not offer is refused.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use pointhook_common::clock::ManualClock;
use serde_json::{Value, json};

use crate::console::{TOKEN, signed_in};
use crate::helpers::*;
use crate::platform::*;

on_both_backends!(items_are_listed_and_acted_on_by_key_from_console_cli_and_api);

async fn post_json(app: &TestApp, path: &str, body: Value) -> (u16, Value) {
    let url = format!("http://{}{path}", app.admin_addr.unwrap());
    let res = app
        .client
        .post(url)
        .bearer_auth(TOKEN)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

async fn items_are_listed_and_acted_on_by_key_from_console_cli_and_api() {
    let api = FakeApi::start().await;
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let (app, mut b) = signed_in(TestConfig::default().api(&api.uri()).clock(clock.clone())).await;
    for order in ["901", "902"] {
        api.fail_next(&format!("/merchant_orders/{order}"), 1000, status(500))
            .await;
        app.post(&format!("topic=merchant_order&id={order}"), &[], None)
            .await;
    }
    for _ in 0..8 {
        app.run_jobs().await;
        clock.advance(Duration::from_secs(400));
    }
    for missed in ["98", "99"] {
        app.sql.execute(
            &format!(
                "INSERT INTO deliveries (received_at, account, kind, topic, resource_id, query,
                     headers, remote_addr, fingerprint, signature, job_key)
                 VALUES (1, 'default', {}, 'payment', '{missed}', '', '{{}}', '', $1, 0,
                         'payment:{missed}')",
                pointhook::domain::Kind::Reconcile as i16
            ),
            &[SqlValue::Bytes(vec![missed.as_bytes()[1]; 32])],
        );
    }
    let first = app.count("SELECT id FROM deliveries WHERE resource_id = '98'");
    let second = app.count("SELECT id FROM deliveries WHERE resource_id = '99'");

    // The API lists typed items: the group under its typed key, each
    // missed notification with what it offers.
    let (status, body) = app.admin("GET", "/api/items", TOKEN).await;
    assert_eq!(status, 200, "{body}");
    let items = body["items"].as_array().unwrap();
    let group = items
        .iter()
        .find(|i| i["kind"] == "dead_jobs")
        .expect("the dead jobs' group");
    assert_eq!(group["count"], 2, "{group}");
    assert_eq!(group["actions"], json!(["retry"]));
    let group_key = group["key"].as_str().unwrap().to_string();
    assert!(
        group_key.starts_with("job_group:server error 500/merchant_order/"),
        "{group_key}"
    );
    let missed: Vec<&Value> = items.iter().filter(|i| i["kind"] == "missed").collect();
    assert_eq!(missed.len(), 2, "{body}");
    assert_eq!(missed[0]["actions"], json!(["acknowledge"]));
    let (_, one) = app.admin("GET", "/api/items?kind=missed", TOKEN).await;
    assert_eq!(one["items"].as_array().unwrap().len(), 2, "{one}");

    // The CLI lists the same keys and acts on one.
    let (ok, out, err) = cli_async(&app, &["items", "list"]).await;
    assert!(ok, "{err}");
    assert!(out.contains(&format!("missed:{first}")), "{out}");
    assert!(out.contains(&group_key), "{out}");
    let key = format!("missed:{first}");
    let (ok, out, err) = cli_async(&app, &["items", "act", &key, "acknowledge"]).await;
    assert!(ok && out.contains("acknowledged"), "{out}{err}");
    let (ok, _, err) = cli_async(&app, &["items", "act", &key, "acknowledge"]).await;
    assert!(!ok && err.contains("acknowledged already"), "{err}");

    // The API: what the kind does not offer is refused; what it offers is done.
    let (status, _) = post_json(
        &app,
        "/api/items/act",
        json!({"item": group_key, "action": "acknowledge"}),
    )
    .await;
    assert_eq!(status, 400);
    let (status, body) = post_json(
        &app,
        "/api/items/act",
        json!({"item": group_key, "action": "retry"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["done"], "2 pending again", "{body}");

    // The console: one route, the token, back to the inbox.
    let key = format!("missed:{second}");
    let (_, _, html) = b.get("/").await;
    assert!(html.contains(&key), "{html}");
    let (status, _) = b
        .act(
            "/items/act",
            &[("item", "missed:x"), ("action", "acknowledge")],
        )
        .await;
    assert_eq!(status, 400);
    let (status, html) = b
        .act("/items/act", &[("item", &key), ("action", "acknowledge")])
        .await;
    assert_eq!(status, 303);
    assert!(html.contains("Nothing needs you."), "{html}");
    // The CLI's second try is audited as refused.
    for (item, via, entries) in [
        (format!("missed:{first}"), 2, 2),
        (format!("missed:{second}"), 1, 1),
    ] {
        assert_eq!(
            app.count(&format!(
                "SELECT count(*) FROM audit WHERE item = '{item}' AND via = {via}"
            )),
            entries,
            "{item} by {via}"
        );
    }
    app.stop().await;
}
