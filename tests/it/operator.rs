//! The operator's surface: the admin API and the CLI, against a live app.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use pointhook_common::clock::ManualClock;
use serde_json::Value;

use crate::helpers::*;
use crate::platform::*;

on_both_backends!(
    the_admin_api_needs_its_token,
    deliveries_list_filter_page_and_show,
    jobs_dead_first_show_and_retry_until_it_succeeds,
    an_order_shows_its_state_and_history,
    events_list_show_and_redeliver_with_the_same_id,
    the_cli_reads_and_replays_a_live_servers_database,
    metrics_parse_and_move_with_traffic,
    the_console_shows_health_and_retries_a_dead_job,
);

const TOKEN: &str = "operator-admin-secret-0123456789abcdef";

struct Scene {
    api: FakeApi,
    merchant: Merchant,
    app: TestApp,
    clock: Arc<ManualClock>,
}

/// A released order, a dead job (the API refused it), and their deliveries.
async fn scene() -> Scene {
    let api = FakeApi::start().await;
    let merchant = Merchant::start().await;
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let app = spawn_app_with(TestConfig {
        admin_token: Some(TOKEN.into()),
        ..TestConfig::default()
            .api(&api.uri())
            .clock(clock.clone())
            .extra(&merchant.config())
    })
    .await;
    api.payment("123456789", "approved", "100", Some("4945357007"));
    api.order(
        "4945357007",
        "100",
        &[("123456789", "100", "approved")],
        None,
    );
    app.post_fixture(&fixture("ipn-payment.json")).await;
    app.post_fixture(&fixture("ipn-merchant-order.json")).await;
    api.fail_next("/merchant_orders/777", 1000, status(500))
        .await;
    app.post("topic=merchant_order&id=777", &[], None).await;
    for _ in 0..8 {
        app.run_jobs().await;
        clock.advance(Duration::from_secs(400));
    }
    assert_eq!(app.job("merchant_order:777").0, JobState::Dead);
    app.deliver_events().await;
    Scene {
        api,
        merchant,
        app,
        clock,
    }
}

impl Scene {
    async fn admin(&self, method: &str, path: &str) -> (u16, Value) {
        self.app.admin(method, path, TOKEN).await
    }
}

async fn the_admin_api_needs_its_token() {
    let s = scene().await;
    let url = format!("http://{}/api/jobs", s.app.admin_addr.unwrap());
    let res = s.app.client.get(&url).send().await.unwrap();
    assert_eq!(res.status(), 401);
    assert_eq!(res.headers()["www-authenticate"], "Bearer");
    let res = s
        .app
        .client
        .get(&url)
        .bearer_auth("wrong")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
    let (status, body) = answer(
        s.app
            .client
            .get(&url)
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    assert!(body.is_array());
    // The scheme in any case (RFC 7235); the token whole, no more, no less.
    for (header, expected) in [
        (format!("bearer {TOKEN}"), 200),
        (format!("BEARER {TOKEN}"), 200),
        (format!("Bearer  {TOKEN}"), 200),
        (format!("Bearer {}", &TOKEN[..TOKEN.len() - 1]), 401),
        (format!("Bearer {TOKEN}x"), 401),
        (format!("Bearerx {TOKEN}"), 401),
        (format!("Token {TOKEN}"), 401),
    ] {
        let res = s
            .app
            .client
            .get(&url)
            .header("authorization", &header)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), expected, "{header}");
    }
    s.app.stop().await;
}

/// Basic credentials (what a browser remembers; the old status page took
/// them) open
/// no API route, and no change is made for a request another site made.
#[tokio::test]
async fn the_api_takes_only_the_bearer_token_and_no_cross_site_writes() {
    let s = scene().await;
    let base = format!("http://{}", s.app.admin_addr.unwrap());
    for (method, path) in [
        ("GET", "/api/jobs"),
        ("POST", "/api/jobs/retry-dead"),
        ("GET", "/metrics"),
    ] {
        let req = match method {
            "POST" => s.app.client.post(format!("{base}{path}")),
            _ => s.app.client.get(format!("{base}{path}")),
        };
        let res = req.basic_auth("ops", Some(TOKEN)).send().await.unwrap();
        assert_eq!(res.status(), 401, "{method} {path} with Basic");
        assert_eq!(res.headers()["www-authenticate"], "Bearer");
    }
    let cross_site = [
        ("origin", "http://evil.example"),
        ("sec-fetch-site", "cross-site"),
        ("sec-fetch-site", "same-site"),
    ];
    for (name, value) in cross_site {
        let res = s
            .app
            .client
            .post(format!("{base}/api/jobs/retry-dead"))
            .bearer_auth(TOKEN)
            .header(name, value)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 403, "{name}: {value}");
        let res = s
            .app
            .client
            .post(format!("{base}/jobs/1/retry"))
            .basic_auth("ops", Some(TOKEN))
            .header(name, value)
            .form(&[("csrf", "x")])
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 403, "{name}: {value}");
    }
    // The page's own origin, a typed request, and reads from anywhere pass.
    for (name, value) in [
        ("origin", base.clone()),
        ("sec-fetch-site", "same-origin".to_string()),
        ("sec-fetch-site", "none".to_string()),
    ] {
        let res = s
            .app
            .client
            .post(format!("{base}/api/jobs/retry-dead"))
            .bearer_auth(TOKEN)
            .header(name, value.as_str())
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "{name}: {value}");
    }
    let res = s
        .app
        .client
        .get(format!("{base}/api/jobs"))
        .bearer_auth(TOKEN)
        .header("sec-fetch-site", "cross-site")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    s.app.stop().await;
}

#[tokio::test]
async fn the_admin_api_is_off_without_an_admin_section() {
    let app = spawn_app().await;
    assert!(app.admin_addr.is_none());
    app.stop().await;
}

async fn deliveries_list_filter_page_and_show() {
    let s = scene().await;
    let (status, all) = s.admin("GET", "/api/deliveries").await;
    assert_eq!(status, 200);
    let all = all.as_array().unwrap();
    assert_eq!(all.len(), 3);
    let ids: Vec<i64> = all.iter().map(|d| d["id"].as_i64().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "newest first: {ids:?}");

    let (_, payments) = s
        .admin(
            "GET",
            "/api/deliveries?topic=payment&kind=ipn&account=default",
        )
        .await;
    assert_eq!(payments.as_array().unwrap().len(), 1);
    let (_, none) = s.admin("GET", "/api/deliveries?account=nobody").await;
    assert!(none.as_array().unwrap().is_empty());
    let (_, page) = s
        .admin("GET", &format!("/api/deliveries?limit=1&before={}", ids[0]))
        .await;
    assert_eq!(page[0]["id"], ids[1]);
    let (_, recent) = s
        .admin("GET", "/api/deliveries?since=2000-01-01T00:00:00Z")
        .await;
    assert_eq!(recent.as_array().unwrap().len(), 3);
    let (status, _) = s.admin("GET", "/api/deliveries?since=yesterday").await;
    assert_eq!(status, 400);

    let payment = payments[0]["id"].as_i64().unwrap();
    let (status, d) = s.admin("GET", &format!("/api/deliveries/{payment}")).await;
    assert_eq!(status, 200);
    let f = fixture("ipn-payment.json");
    assert_eq!(
        d["body"].as_str().unwrap().as_bytes(),
        f.body.unwrap().as_slice(),
        "exactly as received"
    );
    assert_eq!(d["headers"]["user-agent"], "MercadoPago Feed v2.0 payment");
    assert_eq!(d["job"]["key"], "payment:123456789");
    assert_eq!(d["job"]["state"], "done");
    let (status, _) = s.admin("GET", "/api/deliveries/999999").await;
    assert_eq!(status, 404);
    s.app.stop().await;
}

async fn jobs_dead_first_show_and_retry_until_it_succeeds() {
    let s = scene().await;
    let (_, jobs) = s.admin("GET", "/api/jobs").await;
    assert_eq!(jobs[0]["state"], "dead", "{jobs}");
    let dead = jobs[0]["id"].as_i64().unwrap();
    let (_, only_dead) = s.admin("GET", "/api/jobs?state=dead").await;
    assert_eq!(only_dead.as_array().unwrap().len(), 1);
    let (status, _) = s.admin("GET", "/api/jobs?state=zombie").await;
    assert_eq!(status, 400);

    let (status, job) = s.admin("GET", &format!("/api/jobs/{dead}")).await;
    assert_eq!(status, 200);
    assert_eq!(job["attempts"], 6);
    assert!(job["last_error"].as_str().unwrap().contains("500"));
    assert_eq!(job["fetches"].as_array().unwrap().len(), 6);
    assert_eq!(job["fetches"][0]["status"], 500);
    assert_eq!(job["deliveries"].as_array().unwrap().len(), 1);

    // The fault is gone: a retry runs it again, and it succeeds.
    s.api.clear_faults();
    s.api.order("777", "5", &[("1", "5", "approved")], None);
    let (status, body) = s.admin("POST", &format!("/api/jobs/{dead}/retry")).await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = s.admin("POST", &format!("/api/jobs/{dead}/retry")).await;
    assert_eq!(status, 409, "not dead any more");
    s.app.run_jobs().await;
    let (_, job) = s.admin("GET", &format!("/api/jobs/{dead}")).await;
    assert_eq!(job["state"], "done");
    assert!(s.app.event_types().contains(&"order.released".to_string()));

    let (status, body) = s.admin("POST", "/api/jobs/retry-dead").await;
    assert_eq!((status, body["retried"].as_i64()), (200, Some(0)));
    s.app.stop().await;
}

async fn an_order_shows_its_state_and_history() {
    let s = scene().await;
    let (status, o) = s.admin("GET", "/api/orders/4945357007").await;
    assert_eq!(status, 200, "{o}");
    assert_eq!(o["paid_amount"], "100.00");
    assert_eq!(o["decision"], "order.released");
    assert_eq!(o["blocked"], false);
    assert_eq!(
        o["deliveries"].as_array().unwrap().len(),
        2,
        "the payment's and the order's"
    );
    assert!(o["fetches"].as_array().unwrap().len() >= 2);
    // Each read keeps the resource as the API answered it.
    let read = o["fetches"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["endpoint"] == "merchant_order")
        .expect("the order was read");
    assert_eq!(read["body"]["id"], 4945357007_u64, "{read}");
    // Each decision says why.
    let released = o["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["event_type"] == "order.released")
        .expect("the release decision");
    assert!(
        released["reason"]
            .as_str()
            .unwrap()
            .starts_with("paid 100.00 of 100.00"),
        "{released}"
    );
    let types: Vec<&str> = o["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    let mut types = types;
    types.sort();
    assert_eq!(types, ["order.released", "payment.updated"]);
    let (status, _) = s.admin("GET", "/api/orders/1").await;
    assert_eq!(status, 404);
    s.app.stop().await;
}

async fn events_list_show_and_redeliver_with_the_same_id() {
    let s = scene().await;
    let (_, events) = s.admin("GET", "/api/events?type=order.released").await;
    let id = events[0]["id"].as_str().unwrap().to_string();
    assert_eq!(events[0]["state"], "delivered");
    let (_, e) = s.admin("GET", &format!("/api/events/{id}")).await;
    assert_eq!(e["body"]["id"], id.as_str());
    assert_eq!(e["attempts"], 1);
    // Every destination took it: "deliver again" has nowhere to send it;
    // to every destination, asked in those words, it goes again.
    let (status, refused) = s
        .admin("POST", &format!("/api/events/{id}/redeliver"))
        .await;
    assert_eq!(status, 409, "{refused}");
    assert_eq!(refused["error"], "nothing_failed", "{refused}");
    let (status, _) = s
        .admin("POST", &format!("/api/events/{id}/redeliver-all"))
        .await;
    assert_eq!(status, 200);
    s.clock.advance(Duration::from_secs(1));
    s.app.deliver_events().await;
    let received = s.merchant.received().await;
    let same: Vec<_> = received
        .iter()
        .filter(|r| r.headers["webhook-id"] == id.as_str())
        .collect();
    assert_eq!(
        same.len(),
        2,
        "delivered, then delivered again with the same id"
    );
    assert_eq!(same[0].body, same[1].body);
    let (status, _) = s.admin("POST", "/api/events/evt_nope/redeliver").await;
    assert_eq!(status, 404);
    let (status, _) = s.admin("GET", "/api/nothing").await;
    assert_eq!(status, 404);
    s.app.stop().await;
}

async fn the_cli_reads_and_replays_a_live_servers_database() {
    let s = scene().await;
    // The scene's deliveries are the page before this id, however many of
    // the load's land before the CLI reads.
    let (_, all) = s.admin("GET", "/api/deliveries").await;
    let after_scene = (all[0]["id"].as_i64().unwrap() + 1).to_string();
    // Keep the server writing while the CLI reads.
    let app = &s.app;
    let load = {
        let client = app.client.clone();
        let url = app.url("/notifications");
        tokio::spawn(async move {
            for i in 0..200 {
                let _ = client
                    .post(format!("{url}?topic=payment&id=5{i}"))
                    .send()
                    .await;
            }
        })
    };
    let (ok, out, err) = tokio::task::block_in_place(|| cli(app, &["deliveries", "list"]));
    assert!(ok, "{err}");
    assert!(out.starts_with("ID"), "{out}");
    assert!(!err.contains("locked"), "{err}");
    let (ok, out, err) =
        tokio::task::block_in_place(|| cli(app, &["deliveries", "list", "--before", &after_scene]));
    assert!(ok, "{err}");
    assert!(out.contains("payment:123456789"), "{out}");

    let (ok, out, _) = tokio::task::block_in_place(|| {
        cli(
            app,
            &["deliveries", "list", "--json", "--topic", "merchant_order"],
        )
    });
    assert!(ok);
    let rows: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 2);
    let id = rows[0]["id"].as_i64().unwrap().to_string();

    let (ok, out, _) = tokio::task::block_in_place(|| cli(app, &["deliveries", "show", &id]));
    assert!(ok);
    assert!(out.contains("body:"), "{out}");

    let (ok, out, _) = tokio::task::block_in_place(|| cli(app, &["jobs", "list"]));
    assert!(ok);
    let first_row = out.lines().nth(1).unwrap();
    assert!(first_row.contains("dead"), "dead first: {out}");
    let dead_id = first_row.split_whitespace().next().unwrap().to_string();
    let (ok, out, _) = tokio::task::block_in_place(|| cli(app, &["jobs", "show", &dead_id]));
    assert!(ok);
    assert!(out.contains("API calls:") && out.contains("500"), "{out}");

    let (ok, out, _) = tokio::task::block_in_place(|| cli(app, &["orders", "show", "4945357007"]));
    assert!(ok);
    assert!(
        out.contains("order.released") && out.contains("100.00"),
        "{out}"
    );

    let (ok, out, _) = tokio::task::block_in_place(|| cli(app, &["events", "list", "--json"]));
    assert!(ok);
    let events: Value = serde_json::from_str(&out).unwrap();
    let event_id = events[0]["id"].as_str().unwrap().to_string();
    let (ok, out, _) = tokio::task::block_in_place(|| cli(app, &["events", "show", &event_id]));
    assert!(ok && out.contains(&event_id));
    let (ok, out, _) =
        tokio::task::block_in_place(|| cli(app, &["events", "redeliver-all", &event_id]));
    assert!(ok, "{out}");
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) FROM events WHERE state = {}",
            EventState::Pending as i16
        )),
        1
    );

    let (ok, out, _) = tokio::task::block_in_place(|| cli(app, &["jobs", "retry", &dead_id]));
    assert!(ok, "{out}");
    assert_eq!(app.job("merchant_order:777").0, JobState::Pending, "again");
    let (ok, _, err) = tokio::task::block_in_place(|| cli(app, &["jobs", "retry", &dead_id]));
    assert!(!ok);
    assert_eq!(err.lines().count(), 1, "one clear line: {err}");
    assert!(err.contains("not dead"), "{err}");
    let (ok, _, err) = tokio::task::block_in_place(|| cli(app, &["deliveries", "show", "999999"]));
    assert!(!ok && err.contains("no delivery 999999"), "{err}");
    load.await.unwrap();
    s.app.stop().await;
}

fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    let lines = text.lines().map(|l| Ok(l.to_string()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("Prometheus text");
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == name && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .map(|s| match s.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => v,
            prometheus_parse::Value::Histogram(ref h) => {
                h.iter().map(|b| b.count).fold(0.0, f64::max)
            }
            _ => 0.0,
        })
        .sum()
}

async fn metrics_parse_and_move_with_traffic() {
    let s = scene().await;
    let scrape = || async {
        let res = s
            .app
            .client
            .get(format!("http://{}/metrics", s.app.admin_addr.unwrap()))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        assert!(
            res.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/plain")
        );
        res.text().await.unwrap()
    };
    let before = scrape().await;
    let accepted = |t: &str| {
        sample(
            t,
            "pointhook_deliveries_total",
            &[("kind", "ipn"), ("result", "accepted")],
        )
    };
    assert_eq!(accepted(&before), 3.0);
    assert!(
        sample(
            &before,
            "pointhook_api_calls_total",
            &[("endpoint", "merchant_order"), ("result", "5xx")]
        ) >= 6.0
    );
    assert_eq!(sample(&before, "pointhook_dead_jobs", &[]), 1.0);
    assert_eq!(sample(&before, "pointhook_jobs", &[("state", "dead")]), 1.0);

    s.app.post("topic=payment&id=1", &[], None).await;
    s.app.post("", &[], Some(b"{nope")).await;
    let after = scrape().await;
    assert_eq!(accepted(&after), 4.0);
    assert_eq!(
        sample(
            &after,
            "pointhook_deliveries_total",
            &[("result", "malformed_json")]
        ),
        1.0
    );
    assert_eq!(
        sample(&after, "pointhook_jobs", &[("state", "pending")]),
        1.0
    );
    assert!(after.contains("pointhook_ack_seconds_bucket"));
    assert!(after.contains("pointhook_outbox_backlog"));
    let res = s
        .app
        .client
        .get(format!("http://{}/metrics", s.app.admin_addr.unwrap()))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401, "behind the admin token");
    s.app.stop().await;
}

async fn the_console_shows_health_and_retries_a_dead_job() {
    let s = scene().await;
    crate::console::with_operator(&s.app, "ops").await;
    let mut b = crate::console::Browser::new(&s.app);
    assert_eq!(
        b.sign_in("ops", "a long enough password").await.status(),
        303
    );
    let (status, _, html) = b.get("/health").await;
    assert_eq!(status, 200);
    for text in [
        "Storage",
        "takes writes",
        "Platform API",
        "Merchant endpoint",
    ] {
        assert!(html.contains(text), "{text} on the page");
    }
    let res = reqwest::Client::new()
        .get(format!("{}/", b.base))
        .send()
        .await
        .unwrap();
    assert!(
        res.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    assert_eq!(res.headers()["x-frame-options"], "DENY");
    assert!(
        res.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("frame-ancestors 'none'")
    );
    assert_eq!(res.headers()["cache-control"], "no-store");
    let dead = s.app.count(&format!(
        "SELECT id FROM jobs WHERE state = {}",
        JobState::Dead as i64
    ));
    let (_, _, html) = b.get(&format!("/jobs/{dead}")).await;
    assert!(html.contains("merchant_order:777"));
    assert!(html.contains(&format!("action=\"/jobs/{dead}/retry\"")));
    let (status, _) = b.act(&format!("/jobs/{dead}/retry"), &[]).await;
    assert_eq!(status, 303);
    assert_eq!(
        s.app.job("merchant_order:777").0,
        JobState::Pending,
        "re-queued"
    );
    // A form body is bounded.
    let big = "x".repeat(16 * 1024);
    let res = b
        .post(
            &format!("/jobs/{dead}/retry"),
            &[("csrf", "x"), ("pad", &big)],
        )
        .await;
    assert_eq!(res.status(), 413);
    s.app.stop().await;
}

/// Whatever a notification holds, the console shows it as text.
#[tokio::test]
async fn the_console_escapes_what_it_shows() {
    let app = spawn_app_with(TestConfig {
        admin_token: Some(TOKEN.into()),
        ..Default::default()
    })
    .await;
    let res = app
        .post("topic=%3Cscript%3Ealert(1)%3C%2Fscript%3E&id=1", &[], None)
        .await;
    assert_eq!(res.status(), 200);
    crate::console::with_operator(&app, "ops").await;
    let mut b = crate::console::Browser::new(&app);
    b.sign_in("ops", "a long enough password").await;
    let (_, _, html) = b.get("/deliveries").await;
    assert!(!html.contains("<script>alert(1)</script>"));
    assert!(
        html.contains("&#60;script&#62;alert(1)&#60;/script&#62;")
            || html.contains("&lt;script&gt;"),
        "{html}"
    );
    app.stop().await;
}

/// `since` that would overflow is a 400, not a wrapped time.
#[tokio::test]
async fn a_since_too_far_away_is_a_400() {
    let s = scene().await;
    let (status, body) = s
        .admin("GET", "/api/deliveries?since=9223372036854775807")
        .await;
    assert_eq!(status, 400, "{body}");
    s.app.stop().await;
}
