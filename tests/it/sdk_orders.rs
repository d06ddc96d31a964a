//! The official Python SDK's order methods driving the sandbox's Orders
//! API (`tests/sdk/orders.py`), with pointhook receiving the signed `order`
//! webhooks, its sweeper on, and telling the merchant: each outcome decided
//! once as a `platform_order.*` event.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use pointhook::domain::{JobState, Kind};
use pointhook_sandbox::AccountSpec;
use serde_json::Value;

use crate::backends::SqlValue;
use crate::helpers::*;
use crate::platform::{Merchant, RunningSandbox, TOKEN};
use crate::runner::{run_script, script, sdk_python};

/// One terminal per flow of the script, so that their presets never meet.
const ADMIN: &str = "admin-token-for-tests-0123456789abcdef";
const TERMINALS: [&str; 8] = [
    "PAX_A910__SDKORDERS0001",
    "PAX_A910__SDKORDERS0002",
    "PAX_A910__SDKORDERS0003",
    "PAX_A910__SDKORDERS0004",
    "PAX_A910__SDKORDERS0005",
    "PAX_A910__SDKORDERS0006",
    "PAX_A910__SDKORDERS0007",
    "PAX_A910__SDKORDERS0008",
];

/// The sandbox (time scaled by 0.01: terminal steps take milliseconds)
/// sending its signed webhooks to pointhook, which has the account's
/// webhook secret and sweeps every second with a grace of three seconds.
async fn wired() -> (RunningSandbox, TestApp, Merchant) {
    crate::platform::wired_both(
        |a| AccountSpec {
            webhook_secret: Some(SECRET.into()),
            devices: TERMINALS.iter().map(|t| t.to_string()).collect(),
            ..a
        },
        |tc| TestConfig {
            accounts: format!(
                "[[accounts]]\nname = \"default\"\naccess_token = \"{TOKEN}\"\nwebhook_secret = \"{SECRET}\"\n"
            ),
            reconcile: "enabled = true\ninterval_secs = 1\nlookback_secs = 3600\ngrace_secs = 3"
                .into(),
            admin_token: Some(ADMIN.into()),
            ..tc
        },
    )
    .await
}

/// The `platform_order.*` events the merchant got, per order, in the order
/// received; a redelivery (the same event id) counts once.
async fn told(merchant: &Merchant) -> BTreeMap<String, Vec<(String, Value)>> {
    let mut seen = BTreeSet::new();
    let mut out: BTreeMap<String, Vec<(String, Value)>> = BTreeMap::new();
    for r in merchant.received().await {
        let Ok(event) = serde_json::from_slice::<Value>(&r.body) else {
            continue;
        };
        let kind = event["type"].as_str().unwrap_or_default();
        if !kind.starts_with("platform_order.") || !seen.insert(event["id"].to_string()) {
            continue;
        }
        let order = event["data"]["platform_order_id"]
            .as_str()
            .unwrap_or_else(|| panic!("an order event names its order: {event}"))
            .to_string();
        out.entry(order)
            .or_default()
            .push((kind.to_string(), event["data"].clone()));
    }
    out
}

fn kinds(events: &[(String, Value)]) -> Vec<&str> {
    events.iter().map(|(k, _)| k.as_str()).collect()
}

/// Through the official SDK (create, get, search, cancel, refund): a paid
/// order refunded in full, orders canceled, failed and expired on their
/// terminals, two asking to be checked on the terminal (their payment
/// approved, and refused), one cancelled through the API while on the
/// terminal (202, then the webhook), a QR order cancelled while still
/// created (200), searches (by reference, and paged three at a time by
/// the SDK's own iterator), an idempotency key reused with the
/// same body and with another, a busy terminal, and an order whose
/// notification the sandbox dropped. pointhook, verifying each webhook's
/// signature over the upper-case id, tells the merchant each outcome once;
/// the dropped one is found by its sweeper.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_drives_orders_and_pointhook_tells_each_outcome_once() {
    let Some(python) = sdk_python() else {
        return;
    };
    let (sb, app, merchant) = wired().await;
    let script = script("orders.py");
    let env = [
        ("POINTHOOK_SANDBOX_URL", sb.url.clone()),
        ("POINTHOOK_SANDBOX_TOKEN", TOKEN.to_string()),
        ("POINTHOOK_SANDBOX_TERMINALS", TERMINALS.join(",")),
    ];
    let (status, stdout, stderr) = tokio::task::spawn_blocking(move || {
        run_script(&python, &script, &env, Duration::from_secs(120))
    })
    .await
    .unwrap();
    assert!(
        status.success(),
        "the SDK orders flow failed ({status}):\n{stderr}"
    );
    let summary: Value = serde_json::from_str(stdout.trim().lines().last().unwrap_or(""))
        .unwrap_or_else(|e| panic!("no summary from the script ({e}): {stdout}\n{stderr}"));
    let id = |flow: &str| {
        summary[flow]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("no {flow} order: {summary}"))
            .to_string()
    };

    // What each order must come to, in order, and nothing else.
    let expected: BTreeMap<String, Vec<&str>> = [
        (
            "paid",
            vec!["platform_order.processed", "platform_order.refunded"],
        ),
        ("canceled", vec!["platform_order.canceled"]),
        ("failed", vec!["platform_order.failed"]),
        ("expired", vec!["platform_order.expired"]),
        ("confirmed", vec!["platform_order.confirmed"]),
        ("refused", vec!["platform_order.not_approved"]),
        ("cancel_api", vec!["platform_order.canceled"]),
        ("cancel_created", vec!["platform_order.canceled"]),
        ("dropped", vec!["platform_order.processed"]),
    ]
    .into_iter()
    .map(|(flow, events)| (id(flow), events))
    .collect();
    assert_eq!(expected.len(), 9, "nine distinct orders: {summary}");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let got = told(&merchant).await;
        let complete = expected
            .iter()
            .all(|(order, want)| got.get(order).map_or(0, Vec::len) >= want.len());
        if complete {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the merchant was not told everything: {got:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Two more sweeps, and every job and event settled: then nothing more
    // can come. The outbox promises no order between events, so they are
    // compared as sets here and in order below, as decided.
    let passes = async || {
        metric(
            &app,
            ADMIN,
            "pointhook_reconcile_passes_total{outcome=\"ok\"}",
        )
        .await
    };
    let before = passes().await;
    wait_for("two more sweeps, everything settled", async || {
        passes().await >= before + 2 && app.unsettled() == 0
    })
    .await;
    let got = told(&merchant).await;
    let sorted = |mut v: Vec<&'static str>| {
        v.sort_unstable();
        v
    };
    let got_kinds: BTreeMap<String, Vec<&str>> = got
        .iter()
        .map(|(o, e)| {
            let mut k = kinds(e);
            k.sort_unstable();
            (o.clone(), k)
        })
        .collect();
    let want_kinds: BTreeMap<String, Vec<&str>> = expected
        .iter()
        .map(|(o, k)| (o.clone(), sorted(k.clone())))
        .collect();
    assert_eq!(
        got_kinds, want_kinds,
        "each outcome once, for these orders only"
    );
    // The decisions behind them: one event each, in the order expected.
    let mut decided: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (kind, data) in app.events() {
        if kind.starts_with("platform_order.") {
            decided
                .entry(data["platform_order_id"].as_str().unwrap().to_string())
                .or_default()
                .push(kind);
        }
    }
    let want: BTreeMap<String, Vec<String>> = expected
        .iter()
        .map(|(o, k)| (o.clone(), k.iter().map(|k| k.to_string()).collect()))
        .collect();
    assert_eq!(decided, want);
    // One job per order, each finished without an error.
    let jobs: BTreeMap<String, (JobState, Option<String>)> = app
        .sql
        .rows(
            "SELECT job_key, state, last_error FROM jobs WHERE job_key LIKE 'platform_order:%'",
            &[],
        )
        .iter()
        .map(|r| (r[0].text(), (r[1].job_state(), r[2].opt_text())))
        .collect();
    let done: BTreeMap<String, (JobState, Option<String>)> = expected
        .keys()
        .map(|o| (format!("platform_order:{o}"), (JobState::Done, None)))
        .collect();
    assert_eq!(jobs, done);
    let event = |flow: &str, kind: &str| -> Value {
        got[&id(flow)]
            .iter()
            .find(|(k, _)| k == kind)
            .map(|(_, d)| d.clone())
            .unwrap()
    };

    // What the events say.
    for (flow, kind_of_order, amount) in [
        ("paid", "point", "24.00"),
        ("canceled", "point", "11.00"),
        ("failed", "point", "12.00"),
        ("expired", "point", "13.00"),
        ("confirmed", "point", "14.00"),
        ("refused", "point", "15.00"),
        ("cancel_api", "point", "16.00"),
        ("cancel_created", "qr", "18.00"),
        ("dropped", "point", "17.00"),
    ] {
        for (kind, data) in &got[&id(flow)] {
            assert_eq!(data["type"], kind_of_order, "{flow} {kind}: {data}");
            assert_eq!(
                data["external_reference"], summary[flow]["external_reference"],
                "{flow} {kind}: {data}"
            );
            assert_eq!(data["total_amount"], amount, "{flow} {kind}: {data}");
        }
    }
    let processed = event("paid", "platform_order.processed");
    assert_eq!(processed["total_paid_amount"], "24.00", "{processed}");
    assert_eq!(processed["payment_ids"], summary["paid"]["payment_ids"]);
    let refunded = event("paid", "platform_order.refunded");
    assert_eq!(refunded["refunded_amount"], "24.00", "{refunded}");
    for flow in ["confirmed", "refused"] {
        let (_, data) = &got[&id(flow)][0];
        assert_eq!(data["status"], "action_required", "{data}");
        assert_eq!(data["payment_ids"], summary[flow]["payment_ids"], "{data}");
        assert_eq!(data["payment_ids"].as_array().unwrap().len(), 1, "{data}");
    }
    for (flow, status) in [
        ("canceled", "canceled"),
        ("failed", "failed"),
        ("expired", "expired"),
        ("cancel_api", "canceled"),
        ("cancel_created", "canceled"),
        ("dropped", "processed"),
    ] {
        assert_eq!(got[&id(flow)][0].1["status"], status, "{flow}");
    }

    // The sandbox's side: every order webhook sent was delivered (pointhook
    // answered 2xx), and the dropped order's only one never left.
    let log = sb.log().await;
    let order_hooks: Vec<&Value> = log.iter().filter(|d| d["topic"] == "order").collect();
    let dropped = id("dropped");
    let sent: Vec<&Value> = order_hooks
        .iter()
        .copied()
        .filter(|d| d["state"] != "dropped")
        .collect();
    let lost: Vec<&str> = order_hooks
        .iter()
        .filter(|d| d["state"] == "dropped")
        .map(|d| d["resource_id"].as_str().unwrap())
        .collect();
    assert_eq!(lost, [dropped.as_str()], "{order_hooks:#?}");
    for d in &sent {
        let statuses: Vec<&Value> = d["attempts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| &a["status"])
            .collect();
        assert_eq!(statuses, [&Value::from(200)], "accepted at once: {d}");
    }
    // One webhook per final status: the paid order's two (processed,
    // refunded), one for each of the seven others that reached pointhook.
    let mut per_order: BTreeMap<&str, usize> = BTreeMap::new();
    for d in &sent {
        *per_order
            .entry(d["resource_id"].as_str().unwrap())
            .or_default() += 1;
    }
    let want_hooks: BTreeMap<&str, usize> = expected
        .iter()
        .filter(|(o, _)| **o != dropped)
        .map(|(o, ks)| (o.as_str(), ks.len()))
        .collect();
    assert_eq!(per_order, want_hooks);

    // pointhook's side: each of those webhooks stored with a valid
    // signature over the id as issued, upper case.
    let rows = app.sql.rows(
        &format!("SELECT resource_id, query, signature FROM deliveries WHERE kind = {} AND topic = 'order' ORDER BY id", Kind::Webhook as i16),
        &[],
    );
    assert_eq!(rows.len(), sent.len(), "every order webhook stored once");
    for r in &rows {
        let (resource, query, signature) = (r[0].text(), r[1].text(), r[2].int());
        assert!(
            resource.starts_with("ORD") && resource == resource.to_uppercase(),
            "{resource}"
        );
        assert!(query.contains(&format!("data.id={resource}")), "{query}");
        assert_eq!(signature, 1, "signature valid, bound to {resource}");
    }
    // The secret is enforced: the same webhook signed with another secret
    // is refused, and signed with the account's (a control) accepted.
    let (resource, query) = (rows[0][0].text(), rows[0][1].text());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    for (secret, want) in [(&b"another-secret"[..], 401), (SECRET.as_bytes(), 200)] {
        let request_id = format!("req-{want}");
        let signature =
            pointhook_common::signature::sign(secret, Some(&resource), Some(&request_id), now);
        let res = client()
            .post(app.url(&format!("/notifications?{query}")))
            .header("x-request-id", &request_id)
            .header("x-signature", signature)
            .json(&serde_json::json!({"action": "order.processed", "type": "order", "data": {"id": resource}}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), want);
    }

    // The sweeper found the dropped order, and only it: the others'
    // webhooks had told pointhook already.
    let found = app.sql.rows(
        &format!(
            "SELECT resource_id FROM deliveries WHERE kind = {} AND topic = 'platform_order'",
            Kind::Reconcile as i16
        ),
        &[],
    );
    let found: Vec<String> = found.iter().map(|r| r[0].text()).collect();
    assert_eq!(found, std::slice::from_ref(&dropped));
    assert_eq!(
        app.sql
            .value(
                &format!(
                    "SELECT count(*) FROM deliveries WHERE kind = {} AND resource_id = $1",
                    Kind::Webhook as i16
                ),
                &[SqlValue::Text(dropped.clone())],
            )
            .int(),
        0
    );
    app.stop().await;
    sb.stop().await;
}
