//! Every refusal has its status and a JSON body naming the problem.

use std::time::Duration;

use crate::helpers::*;
use serde_json::json;

on_both_backends!(
    storage_that_cannot_commit_is_503_never_200,
    readyz_is_cheap_follows_commits_and_names_no_internals,
    a_dead_jobs_failure_is_kept_typed_and_grouped_by_it,
);

async fn refused(res: reqwest::Response, status: u16, code: &str) -> String {
    let content_type = res
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string());
    let (got, body) = answer(res).await;
    assert_eq!(got, status, "{body}");
    assert_eq!(content_type.as_deref(), Some("application/json"));
    assert_eq!(body["status"], "error");
    assert_eq!(body["error"], code, "{body}");
    body["message"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn bad_requests_name_the_problem() {
    let app = spawn_app().await;
    let m = refused(
        app.post("", &[], Some(b"{not json")).await,
        400,
        "malformed_json",
    )
    .await;
    assert!(m.contains("JSON"), "{m}");
    let m = refused(
        app.post("topic=payment", &[], None).await,
        400,
        "missing_field",
    )
    .await;
    assert!(m.contains("id"), "{m}");
    let m = refused(
        app.post("type=payment", &[], None).await,
        400,
        "missing_field",
    )
    .await;
    assert!(m.contains("data.id"), "{m}");
    let m = refused(
        app.post("topic=payment&id=a%20b", &[], None).await,
        400,
        "invalid_id",
    )
    .await;
    assert!(m.contains("id"), "{m}");
    let long = "1".repeat(129);
    refused(
        app.post(&format!("topic=payment&id={long}"), &[], None)
            .await,
        400,
        "invalid_id",
    )
    .await;
    let m = refused(
        app.post_json("", &json!({"hello": "world"})).await,
        400,
        "unrecognised_notification",
    )
    .await;
    assert!(m.contains("topic"), "{m}");
    refused(
        app.post("", &[], None).await,
        400,
        "unrecognised_notification",
    )
    .await;
    // Ids that would climb out of their API path are refused, and nothing
    // is stored for them.
    for query in [
        "topic=chargebacks&id=..%2F..%2Fv1%2Fpayments%2F1",
        "topic=payment&id=1%2F..",
        "type=topic_merchant_order_wh&data.id=..",
        "topic=point_integration_ipn&id=a%2Fb",
    ] {
        let m = refused(app.post(query, &[], None).await, 400, "invalid_id").await;
        assert!(m.contains("id"), "{m}");
    }
    assert_eq!(app.count("SELECT count(*) FROM deliveries"), 0);
    // A fraud alert that names nothing is kept: its job resolves it.
    let (status, body) = answer(
        app.post_json(
            "topic=delivery_cancellation&id=1",
            &json!({"description": "x"}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    // Nothing refused was stored, only that one.
    assert_eq!(app.count("SELECT count(*) FROM deliveries"), 1);
    app.stop().await;
}

#[tokio::test]
async fn unknown_routes_and_methods() {
    let app = spawn_app().await;
    let res = app.client.get(app.url("/nope")).send().await.unwrap();
    refused(res, 404, "not_found").await;
    let res = app
        .client
        .get(app.url("/notifications"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["allow"], "POST");
    refused(res, 405, "method_not_allowed").await;
    app.stop().await;
}

#[tokio::test]
async fn bodies_over_the_limit_are_413() {
    let app = spawn_app_with(TestConfig::default().extra("[server]\nmax_body_bytes = 100\n")).await;
    let big = vec![b'x'; 101];
    refused(
        app.post("topic=payment&id=1", &[], Some(&big)).await,
        413,
        "body_too_large",
    )
    .await;
    // Without a content-length (chunked), the limit still holds.
    let chunk = " ".repeat(60);
    let request = format!(
        "POST /notifications?topic=payment&id=1 HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n\
         3c\r\n{chunk}\r\n3c\r\n{chunk}\r\n0\r\n\r\n"
    );
    let response = raw_exchange(app.addr, request.as_bytes()).await;
    assert!(response.starts_with("HTTP/1.1 413"), "{response}");
    let exact = vec![b' '; 100];
    assert_eq!(
        app.post("topic=payment&id=1", &[], Some(&exact))
            .await
            .status(),
        200
    );
    app.stop().await;
}

async fn storage_that_cannot_commit_is_503_never_200() {
    let app = spawn_app().await;
    assert_eq!(
        app.client
            .get(app.url("/readyz"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    app.store.fail_commits(true);
    let m = refused(
        app.post("topic=payment&id=1", &[], None).await,
        503,
        "storage_unavailable",
    )
    .await;
    assert!(m.contains("again"), "{m}");
    refused(
        app.client.get(app.url("/readyz")).send().await.unwrap(),
        503,
        "storage_unavailable",
    )
    .await;
    assert_eq!(
        app.client
            .get(app.url("/healthz"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    app.store.fail_commits(false);
    assert_eq!(
        app.post("topic=payment&id=2", &[], None).await.status(),
        200
    );
    let ids: Vec<String> = app
        .sql
        .rows("SELECT resource_id FROM deliveries", &[])
        .iter()
        .map(|r| r[0].text())
        .collect();
    assert_eq!(ids, ["2"], "the refused delivery was not kept");
    app.stop().await;
}

/// `/readyz` writes at most once a second (not per request), says "not
/// ready" as soon as a commit fails, and names no internals.
async fn readyz_is_cheap_follows_commits_and_names_no_internals() {
    let app = spawn_app().await;
    let ready = || async { answer(app.client.get(app.url("/readyz")).send().await.unwrap()).await };
    assert_eq!(ready().await.0, 200);
    // Each write of the check replaces a mark the test leaves in its row:
    // counted request by request, so a write per request cannot hide in
    // two writes of the same millisecond.
    let mark = || app.sql.execute("UPDATE health SET checked_at = -1", &[]);
    let written = || app.sql.value("SELECT checked_at FROM health", &[]).int() != -1;
    let started = std::time::Instant::now();
    let mut writes = 0u64;
    mark();
    for _ in 0..20 {
        assert_eq!(ready().await.0, 200);
        if written() {
            writes += 1;
            mark();
        }
    }
    // One write a second at most, whatever the machine's pace.
    let allowed = started.elapsed().as_secs() + 1;
    assert!(
        writes <= allowed,
        "{writes} writes for 20 requests in {:?}: not once a second",
        started.elapsed()
    );
    app.store.fail_commits(true);
    assert_eq!(
        app.post("topic=payment&id=1", &[], None).await.status(),
        503
    );
    let (status, body) = ready().await;
    assert_eq!(status, 503, "at once, whatever was cached");
    assert_eq!(body["message"], "storage is not taking writes");
    app.store.fail_commits(false);
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    assert_eq!(
        app.post("topic=payment&id=2", &[], None).await.status(),
        200
    );
    assert_eq!(ready().await.0, 200);
    app.stop().await;
}

/// PostgreSQL stops taking connections mid-load (every open one cut): each
/// request meanwhile is a 503, never a 200 left unstored, and `/readyz`
/// says so; when the database is back the service recovers by itself,
/// and everything acknowledged is there with its job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_outage_is_503_then_recovery_losing_nothing() {
    let Some(backend) = Backend::postgres() else {
        return;
    };
    let Backend::Postgres(pg) = backend.clone() else {
        unreachable!()
    };
    let app = std::sync::Arc::new(
        spawn_app_with(TestConfig {
            backend,
            ..Default::default()
        })
        .await,
    );
    let answers = std::sync::Arc::new(std::sync::Mutex::new(Vec::<(u32, u16)>::new()));
    let stop = tokio_util::sync::CancellationToken::new();
    let mut load = Vec::new();
    for lane in 0..4u32 {
        let (app, answers, stop) = (app.clone(), answers.clone(), stop.clone());
        load.push(tokio::spawn(async move {
            let mut n = lane;
            while !stop.is_cancelled() {
                let res = app
                    .post(&format!("topic=payment&id={}", 1000 + n), &[], None)
                    .await;
                answers
                    .lock()
                    .unwrap()
                    .push((1000 + n, res.status().as_u16()));
                n += 4;
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }));
    }
    let count = |status: u16| {
        answers
            .lock()
            .unwrap()
            .iter()
            .filter(|a| a.1 == status)
            .count()
    };
    let ready = || async {
        app.client
            .get(app.url("/readyz"))
            .send()
            .await
            .unwrap()
            .status()
    };

    wait_for("100 acknowledged", async || count(200) >= 100).await;
    pg.allow_connections(false);
    wait_for("refusals during the outage", async || count(503) >= 20).await;
    // Once its cached answer (a second) is stale.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while ready().await != 503 {
        assert!(
            std::time::Instant::now() < deadline,
            "/readyz follows the outage"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let acked_before = count(200);
    pg.allow_connections(true);
    wait_for("acknowledgements after the outage", async || {
        count(200) >= acked_before + 100
    })
    .await;
    stop.cancel();
    for l in load {
        l.await.unwrap();
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while ready().await != 200 {
        assert!(
            std::time::Instant::now() < deadline,
            "ready again by itself"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let answers = answers.lock().unwrap().clone();
    let odd: Vec<_> = answers
        .iter()
        .filter(|a| a.1 != 200 && a.1 != 503)
        .collect();
    assert!(odd.is_empty(), "only 200 or 503: {odd:?}");
    let stored: std::collections::HashSet<String> = app
        .sql
        .rows(
            "SELECT d.resource_id FROM deliveries d JOIN jobs j ON j.job_key = d.job_key",
            &[],
        )
        .into_iter()
        .map(|r| r[0].text())
        .collect();
    for (id, status) in &answers {
        if *status == 200 {
            assert!(stored.contains(&id.to_string()), "acknowledged {id} lost");
        }
    }
    // The worker's side of the pool works again too.
    assert!(app.run_jobs().await >= stored.len());
    assert_eq!(app.count("SELECT count(*) FROM jobs WHERE attempts = 0"), 0);
    std::sync::Arc::into_inner(app).unwrap().stop().await;
}

/// A job's failure is kept typed beside its words (class, the platform's
/// status, the endpoint): the inbox groups dead jobs by it and retries a
/// group from it, whatever the words say.
async fn a_dead_jobs_failure_is_kept_typed_and_grouped_by_it() {
    use crate::console::signed_in;
    use crate::platform::{FakeApi, status};
    use pointhook_common::clock::ManualClock;
    use std::sync::Arc;
    use std::time::SystemTime;

    let api = FakeApi::start().await;
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let (app, mut b) = signed_in(TestConfig::default().api(&api.uri()).clock(clock.clone())).await;
    for order in ["811", "812"] {
        api.fail_next(&format!("/merchant_orders/{order}"), 1000, status(502))
            .await;
        app.post(&format!("topic=merchant_order&id={order}"), &[], None)
            .await;
    }
    for _ in 0..8 {
        app.run_jobs().await;
        clock.advance(Duration::from_secs(400));
    }
    let dead = JobState::Dead as i64;
    let failures = app.sql.rows(
        &format!(
            "SELECT failure_class, failure_status, failure_endpoint FROM jobs
             WHERE state = {dead} ORDER BY id"
        ),
        &[],
    );
    let server_error = vec![
        SqlValue::Text("server_error".into()),
        SqlValue::Int(502),
        SqlValue::Text("merchant_order".into()),
    ];
    assert_eq!(failures, [server_error.clone(), server_error]);
    // Words nothing could read a cause from: the inbox does not need them.
    app.sql.execute(
        &format!("UPDATE jobs SET last_error = 'words' WHERE state = {dead}"),
        &[],
    );
    let (_, _, html) = b.get("/").await;
    assert!(
        html.contains("2 dead: server error 502 on merchant_order"),
        "{html}"
    );
    let hour = html
        .split("name=\"hour\" value=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_string();
    let (code, html) = b
        .act(
            "/jobs/retry-group",
            &[
                ("class", "server error 502"),
                ("endpoint", "merchant_order"),
                ("hour", &hour),
            ],
        )
        .await;
    assert_eq!(code, 303);
    assert!(html.contains("2 of 2 pending again"), "{html}");
    app.stop().await;
}
