//! A live sale never waits behind a flood or a backlog:
//! the order the worker takes jobs in, and what a new delivery gives a job
//! an earlier one left pending.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use pointhook_common::clock::ManualClock;

use crate::helpers::*;
use crate::platform::*;

on_both_backends!(
    a_fresh_notification_is_worked_before_a_burst_and_the_backlog,
    a_new_delivery_gives_a_pending_job_fresh_attempts,
);

async fn setup() -> (FakeApi, TestApp, Arc<ManualClock>) {
    let api = FakeApi::start().await;
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let app = spawn_app_with(TestConfig::default().api(&api.uri()).clock(clock.clone())).await;
    (api, app, clock)
}

/// The payments the API was asked for, in the order asked.
fn reads(app: &TestApp) -> Vec<String> {
    app.sql
        .rows("SELECT resource_id FROM fetches ORDER BY id", &[])
        .iter()
        .map(|r| r[0].text())
        .collect()
}

/// A retry (payment 7), an older burst (1 to 6) and a notification that
/// just came (8), all due: the fresh one is worked first, the burst newest
/// first, and one lease in four goes to the oldest due job of all, the
/// retry first, so the backlog keeps moving and nothing starves.
async fn a_fresh_notification_is_worked_before_a_burst_and_the_backlog() {
    let (api, app, clock) = setup().await;
    for id in 1..=8 {
        api.payment(&id.to_string(), "approved", "10", None);
    }
    api.fail_next("/v1/payments/7", 1, status(500)).await;
    app.post("topic=payment&id=7", &[], None).await;
    assert_eq!(
        app.worker.run_one().await.unwrap(),
        pointhook::worker::Outcome::Done
    );
    assert_eq!(app.job("payment:7").0, JobState::Pending, "a retry");
    clock.advance(Duration::from_secs(2));
    for id in 1..=6 {
        app.post(&format!("topic=payment&id={id}"), &[], None).await;
        clock.advance(Duration::from_secs(1));
    }
    app.post("topic=payment&id=8", &[], None).await;
    assert_eq!(app.run_jobs().await, 8);
    // The first lease (the retry's failed read) was the worker's first;
    // its fourth, eighth… are the backlog's.
    assert_eq!(reads(&app), ["7", "8", "6", "7", "5", "4", "3", "1", "2"]);
    app.stop().await;
}

/// An attacker's IPN for an id the API does not know yet spends attempts
/// of its job; the real notification that follows gives it fresh ones and
/// makes it due at once, so the platform's read-after-notify 404 cannot
/// end the real sale's job.
async fn a_new_delivery_gives_a_pending_job_fresh_attempts() {
    let (api, app, clock) = setup().await;
    app.post("topic=payment&id=555", &[], None).await;
    app.run_jobs().await;
    let (state, attempts, error) = app.job("payment:555");
    assert_eq!((state, attempts), (JobState::Pending, 1));
    assert!(error.unwrap().contains("not found"));

    // The real notification, while the API still does not read it.
    app.post("topic=payment&id=555", &[], None).await;
    assert_eq!(app.job("payment:555").1, 0, "fresh attempts");
    assert_eq!(app.run_jobs().await, 1, "due at once");
    assert_eq!(app.job("payment:555").0, JobState::Pending, "still waiting");

    api.payment("555", "approved", "10", None);
    clock.advance(Duration::from_secs(5));
    app.run_jobs().await;
    assert_eq!(app.job("payment:555").0, JobState::Done);
    assert_eq!(app.event_types(), ["payment.updated"]);
    app.stop().await;
}
