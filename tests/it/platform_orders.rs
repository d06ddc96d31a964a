//! Orders of the Orders API (`ORD…`, webhook type `order`): a pointer like
//! every other notification; decided from the fetched order (and its
//! payment when it asks to be checked on the terminal), each outcome once.

use serde_json::{Value, json};
use wiremock::matchers::{header_exists, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::helpers::{TestApp, TestConfig, answer, cli_async, fixture, spawn_app_with};

pub(crate) const ID: &str = "ORD01JYH1Z1YJN4HZ8J3Q0RB3YP6D";

/// The order as `GET /v1/orders/{id}` answers, with `extra` fields.
pub(crate) fn order(status: &str, extra: Value) -> Value {
    let mut o = json!({
        "id": ID, "type": "point", "status": status, "status_detail": status,
        "external_reference": "table-7", "total_amount": "120.00", "total_paid_amount": "120.00",
        "last_updated_date": "2026-11-23T04:00:00.000Z",
        "transactions": {"payments": [{"id": "PAY01K22Y503EJ8JHGF64KGY1PZ2B", "amount": "120.00",
                                       "status": status, "reference_id": "1700000001"}]},
    });
    for (k, v) in extra.as_object().unwrap() {
        o[k] = v.clone();
    }
    o
}

pub(crate) async fn serve(api: &MockServer, order: Value, payment_status: Option<&str>) {
    api.reset().await;
    Mock::given(method("GET"))
        .and(path(format!("/v1/orders/{ID}")))
        .respond_with(ResponseTemplate::new(200).set_body_json(order))
        .mount(api)
        .await;
    if let Some(status) = payment_status {
        Mock::given(method("GET"))
            .and(path("/v1/payments/1700000001"))
            .respond_with(ResponseTemplate::new(200).set_body_json(
                json!({"id": 1700000001u64, "status": status, "transaction_amount": 120}),
            ))
            .mount(api)
            .await;
    }
}

async fn app_on(api: &MockServer) -> TestApp {
    spawn_app_with(TestConfig::default().api(&api.uri())).await
}

pub(crate) async fn notify(app: &TestApp, action: &str) {
    let body = json!({"action": action, "type": "order", "data": {"id": ID, "version": 2}});
    let res = app
        .post_json(&format!("data.id={ID}&type=order"), &body)
        .await;
    assert_eq!(res.status(), 200);
}

fn told(app: &TestApp) -> Vec<String> {
    app.event_types()
        .into_iter()
        .filter(|t| t.starts_with("platform_order."))
        .collect()
}

async fn each_outcome_is_told_once() {
    for (status, event) in [
        ("processed", "platform_order.processed"),
        ("canceled", "platform_order.canceled"),
        ("failed", "platform_order.failed"),
        ("expired", "platform_order.expired"),
    ] {
        let api = MockServer::start().await;
        serve(&api, order(status, json!({})), None).await;
        let app = app_on(&api).await;
        notify(&app, &format!("order.{status}")).await;
        app.run_jobs().await;
        // The platform sends it again: nothing more is told.
        notify(&app, &format!("order.{status}")).await;
        app.run_jobs().await;
        assert_eq!(told(&app), vec![event.to_string()], "{status}");
        let (_, data) = app.events().pop().unwrap();
        assert_eq!(data["platform_order_id"], ID);
        assert_eq!(data["type"], "point");
        assert_eq!(data["total_amount"], "120.00");
        assert_eq!(data["payment_ids"], json!(["1700000001"]));
        app.stop().await;
    }
}

async fn action_required_is_confirmed_or_refused_by_its_payment() {
    for (payment, event) in [
        ("approved", Some("platform_order.confirmed")),
        ("rejected", Some("platform_order.not_approved")),
        ("in_process", None),
    ] {
        let api = MockServer::start().await;
        serve(&api, order("action_required", json!({})), Some(payment)).await;
        let app = app_on(&api).await;
        notify(&app, "order.action_required").await;
        app.run_jobs().await;
        match event {
            Some(e) => assert_eq!(told(&app), vec![e.to_string()], "{payment}"),
            None => {
                assert!(told(&app).is_empty());
                let (state, _, error) = app.job(&format!("platform_order:{ID}"));
                assert_eq!(state, pointhook::domain::JobState::Pending);
                assert!(error.unwrap().contains("still in_process"));
            }
        }
        app.stop().await;
    }
}

async fn money_taken_back_after_processing_is_told() {
    let api = MockServer::start().await;
    serve(&api, order("processed", json!({})), None).await;
    let app = app_on(&api).await;
    notify(&app, "order.processed").await;
    app.run_jobs().await;
    let partial = json!({"status_detail": "partially_refunded", "transactions": {
        "payments": [{"id": "PAY01K22Y503EJ8JHGF64KGY1PZ2B", "amount": "120.00",
                      "reference_id": "1700000001", "refunded_amount": "20.00"}],
        "refunds": [{"id": "REF01", "amount": "20.00", "status": "processed"}]}});
    serve(&api, order("processed", partial), None).await;
    notify(&app, "order.refunded").await;
    app.run_jobs().await;
    serve(&api, order("refunded", json!({})), None).await;
    notify(&app, "order.refunded").await;
    app.run_jobs().await;
    notify(&app, "order.refunded").await;
    app.run_jobs().await;
    assert_eq!(
        told(&app),
        [
            "platform_order.processed",
            "platform_order.refunded",
            "platform_order.refunded"
        ]
    );
    let refunds: Vec<String> = app
        .events()
        .iter()
        .filter(|(t, _)| t == "platform_order.refunded")
        .map(|(_, d)| d["refunded_amount"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(refunds, ["20.00", "120.00"]);
    app.stop().await;
}

on_both_backends!(
    each_outcome_is_told_once,
    action_required_is_confirmed_or_refused_by_its_payment,
    money_taken_back_after_processing_is_told,
    the_payment_behind_an_order_is_not_a_missed_notification,
);

#[tokio::test]
async fn a_webhook_signed_over_the_upper_case_id_is_accepted() {
    let api = MockServer::start().await;
    serve(&api, order("processed", json!({})), None).await;
    let app = spawn_app_with(TestConfig::with_secret().api(&api.uri())).await;
    let f = fixture("webhook-order-point-processed.json").signed();
    assert!(f.query.contains(ID));
    let (status, body) = answer(app.post_fixture(&f).await).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        app.count("SELECT count(*) FROM deliveries WHERE signature = 1"),
        1
    );
    app.run_jobs().await;
    assert_eq!(told(&app), ["platform_order.processed"]);
    app.stop().await;
}

#[tokio::test]
async fn a_malformed_order_id_is_refused_with_its_name() {
    let app = spawn_app_with(TestConfig::default()).await;
    let (status, body) = answer(
        app.post_json(
            "data.id=ORD..%2Fv1%2Fpayments%2F1&type=order",
            &json!({"type": "order", "action": "order.processed"}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(body["error"], "invalid_id");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("ORD followed by 26"),
        "{body}"
    );
    assert_eq!(app.count("SELECT count(*) FROM deliveries"), 0);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_order_is_shown_and_refunded_from_the_cli_with_a_stable_key() {
    let api = MockServer::start().await;
    serve(&api, order("processed", json!({})), None).await;
    Mock::given(method("POST"))
        .and(path(format!("/v1/orders/{ID}/refund")))
        .and(header_exists("x-idempotency-key"))
        .respond_with(
            ResponseTemplate::new(201).set_body_json(json!({"id": ID, "status": "processed"})),
        )
        .mount(&api)
        .await;
    let app = app_on(&api).await;
    notify(&app, "order.processed").await;
    app.run_jobs().await;
    let (ok, out, err) = cli_async(&app, &["orders", "show", ID, "--json"]).await;
    assert!(ok, "{err}");
    let shown: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(shown["kind"], "platform_order");
    assert_eq!(shown["deliveries"].as_array().unwrap().len(), 1);
    assert_eq!(shown["fetches"][0]["endpoint"], "platform_order");
    assert_eq!(shown["events"][0]["type"], "platform_order.processed");

    let partial = [
        "platform-orders",
        "refund",
        ID,
        "--transaction",
        "PAY01K22Y503EJ8JHGF64KGY1PZ2B",
        "--amount",
        "20.00",
    ];
    // Money moves: with nobody at a terminal to ask, only --yes refunds,
    // and nothing is even read.
    let reads = || async {
        api.received_requests()
            .await
            .unwrap()
            .iter()
            .filter(|r| r.method.as_str() == "GET" && r.url.path() == format!("/v1/orders/{ID}"))
            .count()
    };
    let read_before = reads().await;
    let (ok, out, err) = cli_async(&app, &partial).await;
    assert_eq!(reads().await, read_before, "nothing read");
    assert!(!ok && out.is_empty(), "{out}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("refund 20.00 of its payment PAY01K22Y503EJ8JHGF64KGY1PZ2B")
            && err.contains("--yes"),
        "{err}"
    );
    // On a terminal it shows the order as the platform has it and asks.
    let asked = tokio::task::block_in_place(|| {
        crate::helpers::on_a_terminal(&app, &["platform-orders", "refund", ID], "n\n")
    });
    assert!(
        asked.contains(&format!(
            "Order {ID} of account default (processed, total 120.00, paid 120.00): refund it in full."
        )) && asked.contains("Confirm? [y/N]")
            && asked.contains("not confirmed: nothing was done"),
        "{asked}"
    );
    let refunds = api
        .received_requests()
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.url.path().ends_with("/refund"))
        .count();
    assert_eq!(refunds, 0, "nothing was refunded");
    let partial_yes: Vec<&str> = partial.iter().copied().chain(["--yes"]).collect();
    for _ in 0..2 {
        let (ok, _, err) = cli_async(&app, &partial_yes).await;
        assert!(ok, "{err}");
    }
    let (ok, _, err) = cli_async(&app, &["platform-orders", "refund", ID, "--yes"]).await;
    assert!(ok, "{err}");
    let refunds: Vec<(String, Value)> = api
        .received_requests()
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.url.path().ends_with("/refund"))
        .map(|r| {
            (
                r.headers["x-idempotency-key"].to_str().unwrap().to_string(),
                serde_json::from_slice(&r.body).unwrap_or(Value::Null),
            )
        })
        .collect();
    assert_eq!(refunds.len(), 3);
    assert_eq!(refunds[0].0, refunds[1].0, "the same refund, the same key");
    assert_ne!(refunds[0].0, refunds[2].0, "another refund, another key");
    assert_eq!(
        refunds[0].1["transactions"][0],
        json!({"id": "PAY01K22Y503EJ8JHGF64KGY1PZ2B", "amount": "20.00"})
    );
    // No clear answer (a 5xx) is not a refusal: the order may have changed,
    // and asking again is safe.
    Mock::given(method("POST"))
        .and(path(format!("/v1/orders/{ID}/cancel")))
        .respond_with(ResponseTemplate::new(500))
        .up_to_n_times(1)
        .mount(&api)
        .await;
    let (ok, _, err) = cli_async(&app, &["platform-orders", "cancel", ID, "--yes"]).await;
    assert!(!ok, "{err}");
    assert!(
        err.contains("no clear answer from the platform")
            && err.contains("may have changed")
            && !err.contains("not changed"),
        "{err}"
    );
    // The platform refusing (here a 404) is said, and nothing is counted as
    // done.
    let (ok, _, err) = cli_async(&app, &["platform-orders", "cancel", ID, "--yes"]).await;
    assert!(
        !ok && err.contains("not changed: the platform refused it"),
        "{err}"
    );
    // Each action a person took is in the order's story, with how it ended;
    // what was not confirmed is not.
    let (ok, out, err) = cli_async(&app, &["explain", ID]).await;
    assert!(ok, "{err}");
    let actions: Vec<&str> = out.lines().filter(|l| l.contains("  action")).collect();
    assert_eq!(actions.len(), 5, "{out}");
    assert_eq!(
        actions
            .iter()
            .filter(|l| l.contains("refund_order by") && l.contains("(cli): done at the platform"))
            .count(),
        3,
        "{out}"
    );
    assert!(
        actions[3].contains("cancel_order by") && actions[3].contains("no clear answer"),
        "{out}"
    );
    assert!(
        actions[4].contains("cancel_order by") && actions[4].contains("the platform refused it"),
        "{out}"
    );
    let (ok, _, err) = cli_async(&app, &["platform-orders", "cancel", "123", "--yes"]).await;
    assert!(!ok);
    assert!(err.contains("not an order id"), "{err}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconciliation_finds_an_order_whose_notification_never_came() {
    let api = MockServer::start().await;
    let now = pointhook_common::clock::rfc3339(pointhook_common::clock::unix_ms_now() - 60_000);
    // The same instant as the search lists it, in another form.
    let read_as = now.replace('Z', "+00:00");
    serve(
        &api,
        order("processed", json!({"last_updated_date": read_as})),
        None,
    )
    .await;
    let empty = [
        (
            "/v1/payments/search",
            json!({"paging": {"total": 0}, "results": []}),
        ),
        (
            "/merchant_orders/search",
            json!({"elements": [], "total": 0}),
        ),
        (
            "/point/integration-api/payment-intents/events",
            json!({"events": []}),
        ),
    ];
    for (at, body) in empty {
        Mock::given(method("GET"))
            .and(path(at))
            .respond_with(ResponseTemplate::new(200).set_body_json(body))
            .mount(&api)
            .await;
    }
    let listed = |status: &str| {
        json!({"data": [{"id": ID, "status": status, "last_updated_date": now}],
               "paging": {"total": 1, "offset": 0, "limit": 50}})
    };
    Mock::given(method("GET"))
        .and(path("/v1/orders"))
        .respond_with(ResponseTemplate::new(200).set_body_json(listed("processed")))
        .mount(&api)
        .await;
    let app = app_on(&api).await;
    let since =
        pointhook_common::clock::rfc3339(pointhook_common::clock::unix_ms_now() - 3_600_000);
    let (ok, out, err) = cli_async(&app, &["reconcile", "--since", &since]).await;
    assert!(ok, "{err}");
    assert!(out.contains("1 enqueued (platform_order 1)"), "{out}");
    app.run_jobs().await;
    assert_eq!(told(&app), ["platform_order.processed"]);
    // Read since: known, and the search names only its window (RFC 3339).
    let (ok, out, err) = cli_async(&app, &["reconcile", "--since", &since]).await;
    assert!(ok, "{err}");
    assert!(out.contains("1 already known, 0 enqueued"), "{out}");
    let searched = api
        .received_requests()
        .await
        .unwrap()
        .into_iter()
        .find(|r| r.url.path() == "/v1/orders")
        .unwrap();
    let q: std::collections::HashMap<String, String> =
        searched.url.query_pairs().into_owned().collect();
    assert!(q["begin_date"].parse::<jiff::Timestamp>().is_ok(), "{q:?}");
    assert!(q["end_date"].parse::<jiff::Timestamp>().is_ok(), "{q:?}");
    assert_eq!(q["page"], "1");
    app.stop().await;
}

/// The classic payment behind an order of the Orders API is listed by the
/// payments search, but its story is the order's: the sweeper takes it as
/// known, not as a notification that never came (a person would be asked
/// about every sale), whether the order was decided or is still being
/// checked. A payment of no order is still missed.
async fn the_payment_behind_an_order_is_not_a_missed_notification() {
    for (status, payment, decided) in [
        ("processed", None, vec!["platform_order.processed"]),
        ("action_required", Some("in_process"), vec![]),
    ] {
        let api = MockServer::start().await;
        serve(&api, order(status, json!({})), payment).await;
        let changed =
            pointhook_common::clock::rfc3339(pointhook_common::clock::unix_ms_now() - 60_000);
        let payment =
            |id: u64| json!({"id": id, "status": "approved", "date_last_updated": changed});
        for (at, body) in [
            (
                "/v1/payments/search",
                json!({"paging": {"total": 2}, "results": [payment(1700000001), payment(1700000002)]}),
            ),
            (
                "/merchant_orders/search",
                json!({"elements": [], "total": 0}),
            ),
            (
                "/point/integration-api/payment-intents/events",
                json!({"events": []}),
            ),
            (
                "/v1/orders",
                json!({"data": [], "paging": {"total": 0, "offset": 0, "limit": 50}}),
            ),
        ] {
            Mock::given(method("GET"))
                .and(path(at))
                .respond_with(ResponseTemplate::new(200).set_body_json(body))
                .mount(&api)
                .await;
        }
        let app = app_on(&api).await;
        notify(&app, &format!("order.{status}")).await;
        app.run_jobs().await;
        assert_eq!(told(&app), decided, "{status}");
        let since =
            pointhook_common::clock::rfc3339(pointhook_common::clock::unix_ms_now() - 3_600_000);
        let (ok, out, err) = cli_async(&app, &["reconcile", "--since", &since]).await;
        assert!(ok, "{err}");
        assert!(
            out.contains("2 changes found, 1 already known, 1 enqueued (payment 1)"),
            "{status}: {out}"
        );
        let (ok, out, err) = cli_async(
            &app,
            &["deliveries", "list", "--kind", "reconcile", "--json"],
        )
        .await;
        assert!(ok, "{err}");
        let missed: Vec<Value> = serde_json::from_str(&out).unwrap();
        let ids: Vec<&str> = missed
            .iter()
            .filter_map(|d| d["resource_id"].as_str())
            .collect();
        assert_eq!(ids, ["1700000002"], "{status}: {out}");
        app.stop().await;
    }
}
