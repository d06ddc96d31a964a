//! Duplicates are marked, never suppressed; jobs coalesce by key. On both
//! backends.

use crate::helpers::*;

on_both_backends!(
    the_same_notification_twice_while_pending_is_one_job_and_a_duplicate,
    a_different_body_is_not_a_duplicate_but_the_same_job,
    a_notification_during_a_run_marks_it_to_run_again,
    a_notification_after_the_job_is_done_enqueues_it_again,
    accounts_do_not_share_jobs_or_fingerprints,
);

/// (state, re-run requested, attempts) of the one job.
fn job(app: &TestApp) -> (JobState, bool, i64) {
    let r = app
        .sql
        .rows("SELECT state, rerun, attempts FROM jobs", &[])
        .pop()
        .unwrap();
    (r[0].job_state(), r[1].int() == 1, r[2].int())
}

fn set_state(app: &TestApp, state: JobState, attempts: i64) {
    app.sql.execute(
        &format!(
            "UPDATE jobs SET state = {}, attempts = {attempts}",
            state as i16
        ),
        &[],
    );
}

async fn the_same_notification_twice_while_pending_is_one_job_and_a_duplicate() {
    let app = spawn_app().await;
    let f = fixture("ipn-payment.json");
    let (_, first) = answer(app.post_fixture(&f).await).await;
    let (_, second) = answer(app.post_fixture(&f).await).await;
    assert_eq!(first["duplicate"], false);
    assert_eq!(second["duplicate"], true);
    assert_eq!(app.count("SELECT count(*) FROM jobs"), 1);
    assert_eq!(
        job(&app),
        (JobState::Pending, false, 0),
        "still pending, nothing added"
    );
    let dup_of = app.sql.value(
        "SELECT duplicate_of FROM deliveries WHERE id = $1",
        &[SqlValue::Int(second["delivery_id"].as_i64().unwrap())],
    );
    assert_eq!(dup_of.int(), first["delivery_id"].as_i64().unwrap());
    app.stop().await;
}

async fn a_different_body_is_not_a_duplicate_but_the_same_job() {
    let app = spawn_app().await;
    let (_, a) = answer(app.post("topic=payment&id=1", &[], Some(b"{}")).await).await;
    let (_, b) = answer(app.post("topic=payment&id=1", &[], None).await).await;
    assert_eq!(a["duplicate"], false);
    assert_eq!(b["duplicate"], false);
    assert_eq!(app.count("SELECT count(*) FROM jobs"), 1);
    app.stop().await;
}

async fn a_notification_during_a_run_marks_it_to_run_again() {
    let app = spawn_app().await;
    let f = fixture("webhook-merchant-order.json");
    app.post_fixture(&f).await;
    set_state(&app, JobState::Running, 1);
    let (status, body) = answer(app.post_fixture(&f).await).await;
    assert_eq!(status, 200);
    assert_eq!(body["duplicate"], true);
    assert_eq!(job(&app), (JobState::Running, true, 1), "re-run requested");
    app.stop().await;
}

async fn a_notification_after_the_job_is_done_enqueues_it_again() {
    let app = spawn_app().await;
    let f = fixture("ipn-chargeback.json");
    app.post_fixture(&f).await;
    set_state(&app, JobState::Done, 3);
    app.sql.execute("UPDATE jobs SET last_error = 'x'", &[]);
    let (_, body) = answer(app.post_fixture(&f).await).await;
    assert_eq!(body["duplicate"], true, "a duplicate still does its work");
    assert_eq!(
        job(&app),
        (JobState::Pending, false, 0),
        "again, fresh attempts"
    );
    assert_eq!(
        app.count("SELECT count(*) FROM jobs WHERE last_error IS NULL"),
        1
    );
    // Dead jobs are revived the same way.
    set_state(&app, JobState::Dead, 12);
    app.post_fixture(&f).await;
    assert_eq!(job(&app), (JobState::Pending, false, 0));
    app.stop().await;
}

async fn accounts_do_not_share_jobs_or_fingerprints() {
    let app = spawn_app_with(TestConfig {
        accounts: "[[accounts]]\nname = \"default\"\naccess_token = \"a\"\n\
                       [[accounts]]\nname = \"b\"\naccess_token = \"b\"\n"
            .into(),
        ..Default::default()
    })
    .await;
    let (_, x) = answer(app.post("topic=payment&id=1", &[], None).await).await;
    let (_, y) = answer(app.post("topic=payment&id=1&customer=b", &[], None).await).await;
    assert_eq!(x["duplicate"], false);
    assert_eq!(y["duplicate"], false);
    assert_eq!(app.count("SELECT count(*) FROM jobs"), 2);
    app.stop().await;
}
