//! What a hostile review found around the ack path: bounded waits, total
//! time formatting, panics, lost leases, one owner per database, re-runs
//! that must not be dropped, a writer that dies.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use pointhook::domain::{Decision, Effects, EventType, Slot};
use pointhook::store::{Finish, JobOutcome};
use pointhook_common::clock::ManualClock;
use serde_json::json;

use crate::helpers::*;
use crate::platform::*;

const ADMIN: &str = "robustness-admin-token-0123456789abcdef";

on_both_backends!(
    a_huge_retry_after_waits_at_most_the_longest_backoff,
    any_stored_time_can_be_shown,
    a_panicking_job_is_retried_with_its_message,
    overflowing_amounts_are_a_named_permanent_error,
    a_run_that_lost_its_lease_records_nothing,
    a_run_stops_when_its_renewal_finds_the_lease_lost,
    a_rerun_asked_for_during_a_dead_run_is_kept,
);

async fn setup() -> (FakeApi, TestApp, Arc<ManualClock>) {
    let api = FakeApi::start().await;
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let app = spawn_app_with(TestConfig {
        admin_token: Some(ADMIN.into()),
        ..TestConfig::default().api(&api.uri()).clock(clock.clone())
    })
    .await;
    (api, app, clock)
}

/// A `Retry-After` of years (or u64::MAX) waits the longest backoff, never
/// longer, and never wraps to "now".
async fn a_huge_retry_after_waits_at_most_the_longest_backoff() {
    let (api, app, _) = setup().await;
    for secs in [u64::MAX, 10_000_000_000, 400] {
        api.fail_next("/merchant_orders/1", 1, status(429).retry_after(secs))
            .await;
        app.post("topic=merchant_order&id=1", &[], None).await;
        assert_eq!(
            app.worker.run_one().await.unwrap(),
            pointhook::worker::Outcome::Done
        );
        let wait = app.count("SELECT run_at - updated_at FROM jobs");
        assert_eq!(wait, 300_000, "Retry-After {secs}");
        app.sql.execute(
            &format!("UPDATE jobs SET state = {}", JobState::Done as i64),
            &[],
        );
    }
    app.stop().await;
}

/// Times past year 9999 (a stored number, whatever put it there) show as
/// the last moment of 9999: the API answers, the CLI lists.
async fn any_stored_time_can_be_shown() {
    let (_api, app, _) = setup().await;
    app.post("topic=merchant_order&id=1", &[], None).await;
    app.sql.execute(
        "UPDATE jobs SET run_at = $1, updated_at = $1, created_at = -5",
        &[SqlValue::Int(i64::MAX)],
    );
    let (status, jobs) = app.admin("GET", "/api/jobs", ADMIN).await;
    assert_eq!(status, 200, "{jobs}");
    assert_eq!(jobs[0]["next_run"], "9999-12-31T23:59:59.999Z");
    let (status, _) = app
        .admin("GET", &format!("/api/jobs/{}", jobs[0]["id"]), ADMIN)
        .await;
    assert_eq!(status, 200);
    let (ok, out, err) = cli(&app, &["jobs", "list"]);
    assert!(ok, "{err}");
    assert!(out.contains("9999-12-31"), "{out}");
    crate::console::with_operator(&app, "ops").await;
    let mut b = crate::console::Browser::new(&app);
    b.sign_in("ops", "a long enough password").await;
    for page in ["/", "/jobs?state=pending"] {
        assert_eq!(b.get(page).await.0, 200, "{page}");
    }
    app.stop().await;
}

/// A handler that panics leaves its job pending with the message, not
/// running for ever; the next run goes on.
async fn a_panicking_job_is_retried_with_its_message() {
    let (api, app, clock) = setup().await;
    api.order("1", "10", &[("5", "10", "approved")], None);
    app.post("topic=merchant_order&id=1", &[], None).await;
    app.worker.panic_next_job();
    app.run_jobs().await;
    let (state, attempts, error) = app.job("merchant_order:1");
    assert_eq!((state, attempts), (JobState::Pending, 1));
    assert!(error.unwrap().contains("panicked: injected handler panic"));
    clock.advance(Duration::from_secs(2));
    app.run_jobs().await;
    assert_eq!(app.job("merchant_order:1").0, JobState::Done);
    assert_eq!(app.event_types(), ["order.released"]);
    app.stop().await;
}

/// Amounts too large to add are a named, permanent error, not a panic.
async fn overflowing_amounts_are_a_named_permanent_error() {
    let (api, app, _) = setup().await;
    let huge = "79228162514264337593543950335";
    api.order(
        "1",
        huge,
        &[("5", huge, "approved"), ("6", huge, "approved")],
        None,
    );
    app.post("topic=merchant_order&id=1", &[], None).await;
    app.run_jobs().await;
    let (state, _, error) = app.job("merchant_order:1");
    assert_eq!(state, JobState::Dead);
    assert!(error.unwrap().contains("too large"));
    app.stop().await;
}

fn a_decision(key: &str) -> Effects {
    Effects::one(Decision {
        subject: "test:1".into(),
        key: key.into(),
        event: EventType::OrderReleased,
        data: json!({}),
        guards: vec![],
        marks: vec![],
        slot: Slot::Once,
        reason: "test".into(),
    })
}

/// A run whose lease expired and was taken over can renew nothing and
/// record nothing: the run that took over decides.
async fn a_run_that_lost_its_lease_records_nothing() {
    let app = spawn_app().await;
    app.post("topic=merchant_order&id=1", &[], None).await;
    let now = pointhook::store::unix_ms_now() + 1000;
    let first = app
        .store
        .lease_jobs(now, 10, 1)
        .await
        .unwrap()
        .taken
        .pop()
        .unwrap();
    let second = app
        .store
        .lease_jobs(now + 100, 10_000, 1)
        .await
        .unwrap()
        .taken
        .pop()
        .expect("the expired lease is taken over");
    assert_eq!((first.attempt, second.attempt), (1, 2));
    assert!(
        !app.store
            .renew_lease(first.clone(), now + 200)
            .await
            .unwrap()
    );
    let lost = app
        .store
        .finish_job(
            first.clone(),
            JobOutcome::Done(a_decision("first")),
            vec![],
            now,
        )
        .await
        .unwrap();
    assert_eq!(lost, Finish::LeaseLost);
    let lost = app
        .store
        .record_effects(first.clone(), a_decision("first-step"), now)
        .await
        .unwrap();
    assert_eq!(lost, Finish::LeaseLost);
    app.store.release_job(first, now).await.unwrap();
    assert_eq!(app.count("SELECT count(*) FROM decisions"), 0);
    assert_eq!(
        app.job("merchant_order:1").0,
        JobState::Running,
        "still the second run's"
    );
    assert!(
        app.store
            .renew_lease(second.clone(), now + 200)
            .await
            .unwrap()
    );
    let done = app
        .store
        .finish_job(second, JobOutcome::Done(a_decision("second")), vec![], now)
        .await
        .unwrap();
    assert!(
        matches!(done, Finish::Recorded(ref e) if e.len() == 1),
        "{done:?}"
    );
    assert_eq!(app.job("merchant_order:1").0, JobState::Done);
    app.stop().await;
}

/// A run whose renewal finds the lease gone stops where it is: what it
/// would have decided is never recorded.
async fn a_run_stops_when_its_renewal_finds_the_lease_lost() {
    let api = FakeApi::start().await;
    api.order("1", "10", &[("5", "10", "approved")], None);
    api.set_delay(Duration::from_secs(4));
    let app = spawn_app_with(TestConfig {
        worker_loop: true,
        api_timeout_secs: 10,
        worker: "lease_secs = 2".into(),
        admin_token: Some(ADMIN.into()),
        ..TestConfig::default().api(&api.uri())
    })
    .await;
    app.post("topic=merchant_order&id=1", &[], None).await;
    wait_for("the run", async || {
        app.job("merchant_order:1").0 == JobState::Running
    })
    .await;
    // Another owner takes it over (as after an expired lease elsewhere),
    // and holds it for a while.
    app.sql.execute(
        "UPDATE jobs SET attempts = attempts + 10, lease_until = $1",
        &[SqlValue::Int(pointhook::store::unix_ms_now() + 3_600_000)],
    );
    // The run has ended, as lost, before anything is looked at.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let metrics = app
            .client
            .get(format!("http://{}/metrics", app.admin_addr.unwrap()))
            .bearer_auth(ADMIN)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        if metrics.contains("pointhook_job_runs_total{outcome=\"lease_lost\"} 1") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{metrics}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        app.events().is_empty(),
        "the run that lost its lease decided nothing"
    );
    let (state, attempts, _) = app.job("merchant_order:1");
    assert_eq!(
        (state, attempts),
        (JobState::Running, 11),
        "left as the new owner has it"
    );
    app.stop().await;
}

/// A notification that arrives while a run ends dead is not dropped: the
/// job starts over, and this time decides.
async fn a_rerun_asked_for_during_a_dead_run_is_kept() {
    let api = FakeApi::start().await;
    api.order("1", "10", &[("5", "10", "approved")], None);
    let app = spawn_app_with(TestConfig {
        worker_loop: true,
        ..TestConfig::default().api(&api.uri())
    })
    .await;
    // The first run gets a permanent refusal, late.
    api.fail_next(
        "/merchant_orders/1",
        1,
        pointhook_sandbox::faults::Fault {
            delay_ms: 800,
            ..status(403)
        },
    )
    .await;
    app.post("topic=merchant_order&id=1", &[], None).await;
    wait_for("the run", async || {
        app.job("merchant_order:1").0 == JobState::Running
    })
    .await;
    app.post("topic=merchant_order&id=1", &[], None).await;
    wait_for("the re-run", async || {
        app.job("merchant_order:1").0 == JobState::Done
    })
    .await;
    assert_eq!(app.event_types(), ["order.released"]);
    app.stop().await;
}

/// One process owns a SQLite database: a second `serve` on the same file
/// exits at once with one clear line, and the first keeps its jobs.
#[tokio::test]
async fn a_second_server_on_one_database_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config_with(
        dir.path(),
        "[worker]\nenabled = false\n[api]\nbase_url = \"http://127.0.0.1:9\"\n",
    );
    let mut first = serve_binary(&config, &[]);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pointhook"))
        .args(["serve", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    let last = err.lines().last().unwrap_or_default();
    assert!(last.contains("another pointhook is serving"), "{err}");
    let res = client()
        .post(format!(
            "http://{}/notifications?topic=payment&id=1",
            first.addr
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200, "the first still serves");
    first.child.kill().unwrap();
    first.child.wait().unwrap();
}

/// Without its writer a process could only answer 503: it exits instead,
/// non-zero, for the service manager to restart it. (The hook that kills
/// the writer is in debug builds only.)
#[cfg(debug_assertions)]
#[tokio::test]
async fn the_process_exits_when_its_writer_dies() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config_with(
        dir.path(),
        "[worker]\nenabled = false\n[api]\nbase_url = \"http://127.0.0.1:9\"\n",
    );
    let mut served = serve_binary(&config, &[("POINTHOOK_FAULT_PANIC_WRITER", "1")]);
    let res = client()
        .post(format!(
            "http://{}/notifications?topic=payment&id=1",
            served.addr
        ))
        .send()
        .await;
    assert!(
        res.map(|r| r.status() != 200).unwrap_or(true),
        "nothing acknowledged"
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = served.child.try_wait().unwrap() {
            break status;
        }
        assert!(std::time::Instant::now() < deadline, "still running");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(status.code(), Some(70));
}

/// The platform API client never follows a redirect: a 307 on a refund
/// would send the POST, with the account's token, wherever it points. The
/// answer is a refusal, and the other host hears nothing.
#[tokio::test]
async fn a_redirect_from_the_api_is_not_followed() {
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let elsewhere = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_string("{}"))
        .mount(&elsewhere)
        .await;
    let api = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(307).insert_header(
            "location",
            format!("{}/v1/payments/1/refunds", elsewhere.uri()),
        ))
        .mount(&api)
        .await;
    let config = pointhook::config::Config::from_toml(
        &format!(
            "[storage]\npath = \"x.db\"\n[api]\nbase_url = {:?}\n\
             [[accounts]]\nname = \"default\"\naccess_token = \"tok\"\n",
            api.uri()
        ),
        Vec::new(),
    )
    .unwrap();
    let client = pointhook::api::ApiClient::new(
        &config.api,
        &config.resolve_accounts().unwrap(),
        Arc::new(pointhook::metrics::Metrics::new()),
    )
    .unwrap();
    let payment = pointhook::domain::PaymentId::parse("1").unwrap();
    let answer = client
        .refund_payment(
            &pointhook::api::calls::CallLog::default(),
            "default",
            &payment,
            "key-1",
        )
        .await;
    assert!(
        matches!(
            answer,
            Err(pointhook::api::error::ApiError::Refused { status: 307, .. })
        ),
        "{answer:?}"
    );
    assert_eq!(api.received_requests().await.unwrap().len(), 1);
    assert!(
        elsewhere.received_requests().await.unwrap().is_empty(),
        "the redirect was followed"
    );
}
