//! Reconciliation: changes the platform made whose notifications never
//! came (the sandbox drops them) are found through its search APIs, by the
//! sweeper and by `pointhook reconcile`, and decided once.

use std::sync::Arc;
use std::time::Duration;

use pointhook::domain::{JobKind, Kind};
use pointhook_common::clock::SystemClock;
use pointhook_sandbox::faults::Fault;
use serde_json::{Value, json};

use crate::helpers::{
    TestApp, TestConfig, cli, cli_async, client, metric, spawn_app_with, wait_for,
};
use crate::platform::Merchant;
use crate::platform::{RunningSandbox, account, start_sandbox, wired_with};

use crate::platform::TOKEN;
const ADMIN: &str = "admin-token-for-tests-0123456789abcdef";

/// The sandbox notifying pointhook, whose sweeper passes every second and
/// gives a notification `grace_secs` to arrive.
async fn wired(grace_secs: u64) -> (RunningSandbox, TestApp, Merchant) {
    wired_with(|tc| TestConfig {
        admin_token: Some(ADMIN.into()),
        reconcile: format!(
            "enabled = true\ninterval_secs = 1\nlookback_secs = 3600\ngrace_secs = {grace_secs}"
        ),
        ..tc
    })
    .await
}

async fn metrics(app: &TestApp) -> String {
    client()
        .get(format!("http://{}/metrics", app.admin_addr.unwrap()))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// `pointhook_notifications_missed_total` for `topic` (0 when absent).
async fn missed(app: &TestApp, topic: &str) -> u64 {
    metrics(app)
        .await
        .lines()
        .find(|l| {
            l.starts_with("pointhook_notifications_missed_total{")
                && l.contains(&format!("topic=\"{topic}\""))
        })
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap_or(0)
}

/// Sweeper passes that ended well.
async fn passes(app: &TestApp) -> u64 {
    metric(
        app,
        ADMIN,
        "pointhook_reconcile_passes_total{outcome=\"ok\"}",
    )
    .await
}

fn reconcile_deliveries(app: &TestApp) -> i64 {
    app.count(&format!(
        "SELECT count(*) FROM deliveries WHERE kind = {}",
        Kind::Reconcile as i16
    ))
}

async fn drop_all(sb: &RunningSandbox) {
    let (status, _) = sb
        .control("faults", json!({"drop_notifications": 1000}))
        .await;
    assert_eq!(status, 201);
}

async fn paid_order(sb: &RunningSandbox) -> (Value, Value) {
    let (_, order) = sb
        .control("merchant_orders", json!({"total_amount": 100}))
        .await;
    let (_, payment) = sb
        .control(
            &format!("merchant_orders/{}/payments", order["id"]),
            json!({"amount": 100}),
        )
        .await;
    (order, payment)
}

async fn a_dropped_payment_is_released_by_the_sweeper_once() {
    let (sb, app, _merchant) = wired(1).await;
    drop_all(&sb).await;
    let (order, payment) = paid_order(&sb).await;
    let order_id = order["id"].to_string();
    wait_for("the release", async || {
        app.events()
            .iter()
            .any(|(t, d)| t == "order.released" && d["merchant_order_id"] == order_id.as_str())
    })
    .await;
    // Nothing was sent: the sandbox dropped every notification.
    assert!(
        sb.log().await.iter().all(|d| d["state"] == "dropped"),
        "{:?}",
        sb.log().await
    );
    assert_eq!(missed(&app, "payment").await, 1);
    // Recorded as what it is, and the job links to it.
    let pid = payment["id"].to_string();
    assert_eq!(
        app.sql
            .value(
                &format!(
                    "SELECT count(*) FROM deliveries d JOIN jobs j ON j.input_delivery_id = d.id
                     WHERE d.kind = {} AND d.topic = 'payment' AND d.resource_id = $1",
                    Kind::Reconcile as i16
                ),
                &[crate::backends::SqlValue::Text(pid.clone())],
            )
            .int(),
        1
    );
    let (ok, out, _) = cli(
        &app,
        &["deliveries", "list", "--kind", "reconcile", "--json"],
    );
    assert!(ok && out.contains(&pid), "{out}");
    // In front of a person, until acknowledged.
    let (status, inbox) = app.admin("GET", "/api/inbox", ADMIN).await;
    assert_eq!(status, 200);
    assert!(
        inbox["missed"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["delivery"]["resource_id"] == pid.as_str()),
        "{inbox}"
    );

    // The notification arrives late: it is a duplicate of nothing decided.
    let before = app.event_bodies();
    let passes_before = reconcile_deliveries(&app);
    let res = app
        .post(&format!("topic=payment&id={pid}"), &[], None)
        .await;
    assert_eq!(res.status(), 200);
    wait_for("the late notification's job", async || app.unsettled() == 0).await;
    // Two more passes: nothing new is found missed either.
    let before_passes = passes(&app).await;
    wait_for("two more passes", async || {
        passes(&app).await >= before_passes + 2
    })
    .await;
    assert_eq!(app.event_bodies(), before);
    assert_eq!(reconcile_deliveries(&app), passes_before);
    assert_eq!(missed(&app, "payment").await, 1);
    app.stop().await;
    sb.stop().await;
}

async fn a_finished_intent_whose_webhook_was_dropped_is_told() {
    let (sb, app, _merchant) = wired(1).await;
    let (_, intent) = sb.control("payment_intents", json!({"amount": 1500})).await;
    let id = intent["id"].as_str().unwrap().to_string();
    drop_all(&sb).await;
    let (status, _) = sb
        .control(
            &format!("payment_intents/{id}/state"),
            json!({"state": "FINISHED"}),
        )
        .await;
    assert_eq!(status, 200);
    wait_for("payment_intent.finished", async || {
        app.events()
            .iter()
            .any(|(t, d)| t == "payment_intent.finished" && d["payment_intent_id"] == id.as_str())
    })
    .await;
    assert_eq!(missed(&app, "payment_intent").await, 1);
    app.stop().await;
    sb.stop().await;
}

async fn a_pass_with_nothing_missing_enqueues_nothing() {
    let (sb, app, _merchant) = wired(2).await;
    let (order, _) = paid_order(&sb).await;
    let order_id = order["id"].to_string();
    wait_for("the release", async || {
        app.events()
            .iter()
            .any(|(t, d)| t == "order.released" && d["merchant_order_id"] == order_id.as_str())
    })
    .await;
    // Passes that began past the grace (2 s, a pass a second): everything
    // was notified, so none finds news.
    let before = passes(&app).await;
    wait_for("four more passes", async || {
        passes(&app).await >= before + 4
    })
    .await;
    let searched = sb
        .sandbox
        .faults()
        .calls()
        .iter()
        .filter(|c| c.path == "/v1/payments/search")
        .count();
    assert!(searched >= 3, "the sweeper searched {searched} times");
    assert_eq!(reconcile_deliveries(&app), 0);
    assert_eq!(missed(&app, "payment").await, 0);
    assert_eq!(missed(&app, "merchant_order").await, 0);
    app.stop().await;
    sb.stop().await;
}

on_both_backends!(
    a_dropped_payment_is_released_by_the_sweeper_once,
    a_finished_intent_whose_webhook_was_dropped_is_told,
    a_pass_with_nothing_missing_enqueues_nothing,
);

/// A day of payments whose notifications never came, spread over 24 hours.
async fn a_day_of_dropped_payments(n: u64) -> (RunningSandbox, TestApp) {
    let sb = start_sandbox(vec![account(None)], Arc::new(SystemClock), 1.0, false, None).await;
    let app = spawn_app_with(TestConfig {
        accounts: format!("[[accounts]]\nname = \"default\"\naccess_token = \"{TOKEN}\"\n"),
        ..TestConfig::default().api(&sb.url)
    })
    .await;
    let now = pointhook_common::clock::unix_ms_now();
    for i in 0..n {
        let at = now - 23 * 3_600_000 + (i as i64) * (23 * 3_600_000 / n as i64);
        let id = 1_400_000_000 + i;
        sb.sandbox
            .set_resource(
                "default",
                "payment",
                &id.to_string(),
                &json!({
                    "id": id, "status": "approved", "status_detail": "accredited",
                    "transaction_amount": 10, "date_created": pointhook_common::clock::rfc3339(at),
                    "date_last_updated": pointhook_common::clock::rfc3339(at),
                }),
            )
            .unwrap();
    }
    (sb, app)
}

#[tokio::test]
async fn reconcile_since_recovers_a_day_over_several_pages_and_dry_run_writes_nothing() {
    let (sb, app) = a_day_of_dropped_payments(120).await;
    let since =
        pointhook_common::clock::rfc3339(pointhook_common::clock::unix_ms_now() - 86_400_000);

    let (ok, out, err) = cli_async(
        &app,
        &["reconcile", "--since", &since, "--dry-run", "--json"],
    )
    .await;
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["accounts"]["default"]["enqueued"]["payment"], 120, "{v}");
    assert_eq!(v["dry_run"], true);
    assert!(
        v["accounts"]["default"]["pages"].as_u64().unwrap() >= 3,
        "{v}"
    );
    assert_eq!(reconcile_deliveries(&app), 0);
    assert_eq!(app.count("SELECT count(*) FROM jobs"), 0);

    let (ok, out, err) = cli_async(&app, &["reconcile", "--since", &since]).await;
    assert!(ok, "{err}");
    assert!(
        out.contains("120 changes found, 0 already known, 120 enqueued (payment 120)"),
        "{out}"
    );
    assert_eq!(reconcile_deliveries(&app), 120);
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) FROM jobs WHERE kind = {}",
            JobKind::Payment as i16
        )),
        120
    );
    // Worked, they are known: a second run finds nothing to enqueue.
    app.run_jobs().await;
    let (ok, out, err) = cli_async(&app, &["reconcile", "--since", &since]).await;
    assert!(ok, "{err}");
    assert!(out.contains("120 already known, 0 enqueued"), "{out}");
    assert_eq!(reconcile_deliveries(&app), 120);
    app.stop().await;
    sb.stop().await;
}

#[tokio::test]
async fn reconciliation_backs_off_on_429_like_the_worker() {
    let (sb, app) = a_day_of_dropped_payments(3).await;
    sb.sandbox.faults().add(Fault {
        method: Some("GET".into()),
        path: "/v1/payments/search".into(),
        status: Some(429),
        times: 2,
        delay_ms: 0,
        retry_after: Some(1),
    });
    let since =
        pointhook_common::clock::rfc3339(pointhook_common::clock::unix_ms_now() - 86_400_000);
    let started = std::time::Instant::now();
    let (ok, out, err) = cli_async(&app, &["reconcile", "--since", &since]).await;
    assert!(ok, "{err}");
    assert!(out.contains("3 enqueued"), "{out}");
    // Twice refused with Retry-After: 1, so at least two seconds of waiting.
    assert!(started.elapsed() >= Duration::from_secs(2));
    let searches = sb
        .sandbox
        .faults()
        .calls()
        .into_iter()
        .filter(|c| c.path == "/v1/payments/search")
        .count();
    assert_eq!(searches, 3);
    app.stop().await;
    sb.stop().await;
}

#[tokio::test]
async fn reconcile_refuses_a_window_backwards_and_an_unknown_account() {
    let (sb, app) = a_day_of_dropped_payments(0).await;
    let (ok, _, err) = cli_async(
        &app,
        &[
            "reconcile",
            "--since",
            "2026-01-02T00:00:00Z",
            "--until",
            "2026-01-01T00:00:00Z",
        ],
    )
    .await;
    assert!(!ok);
    assert!(err.contains("must be before"), "{err}");
    let (ok, _, err) = cli_async(
        &app,
        &[
            "reconcile",
            "--since",
            "2026-01-01T00:00:00Z",
            "--account",
            "nobody",
        ],
    )
    .await;
    assert!(!ok);
    assert!(err.contains("no account \"nobody\""), "{err}");
    let (ok, _, err) = cli_async(&app, &["reconcile", "--since", "yesterday"]).await;
    assert!(!ok);
    assert!(err.contains("--since"), "{err}");
    app.stop().await;
    sb.stop().await;
}

#[tokio::test]
async fn the_sandbox_searches_page_like_the_platform() {
    let (sb, app) = a_day_of_dropped_payments(60).await;
    let get = |q: &str| {
        let url = format!("{}/v1/payments/search?{q}", sb.url);
        async move {
            let res = client().get(url).bearer_auth(TOKEN).send().await.unwrap();
            let status = res.status().as_u16();
            (status, res.json::<Value>().await.unwrap())
        }
    };
    let (status, page) =
        get("range=date_last_updated&begin_date=NOW-2DAYS&end_date=NOW&limit=100&offset=10").await;
    assert_eq!(status, 200);
    assert_eq!(
        page["paging"],
        json!({"total": 60, "limit": 50, "offset": 10})
    );
    assert_eq!(page["results"].as_array().unwrap().len(), 50);
    let (status, _) = get("offset=10001").await;
    assert_eq!(status, 400);
    let (status, body) = get("range=date_last_updated&begin_date=yesterday").await;
    assert_eq!(status, 400);
    assert!(body["message"].as_str().unwrap().contains("begin_date"));
    app.stop().await;
    sb.stop().await;
}
