//! Missed means missed: a change whose notification
//! arrived is not counted missed even when its job died, the sweeper never
//! erases a dead job's attempts or error, and a change the platform made
//! after the death is the sweeper's new work, recorded beside the old.

use std::sync::Arc;

use pointhook::domain::{JobState, Kind};
use pointhook_common::clock::SystemClock;
use serde_json::json;

use crate::helpers::{SqlValue, TestApp, TestConfig, cli_async, spawn_app_with};
use crate::platform::{RunningSandbox, TOKEN, account, start_sandbox};

on_both_backends!(a_dead_job_whose_notification_came_is_not_missed_and_keeps_its_history);

const PAYMENT: &str = "1400000777";

async fn changed_at(sb: &RunningSandbox, at: i64) {
    sb.sandbox
        .set_resource(
            "default",
            "payment",
            PAYMENT,
            &json!({
                "id": PAYMENT.parse::<u64>().unwrap(), "status": "approved",
                "status_detail": "accredited", "transaction_amount": 10,
                "date_created": pointhook_common::clock::rfc3339(at - 1000),
                "date_last_updated": pointhook_common::clock::rfc3339(at),
            }),
        )
        .unwrap();
}

fn job(app: &TestApp) -> (JobState, i64, Option<String>) {
    app.job(&format!("payment:{PAYMENT}"))
}

fn found_by_reconciliation(app: &TestApp) -> i64 {
    app.count(&format!(
        "SELECT count(*) FROM deliveries WHERE kind = {}",
        Kind::Reconcile as i16
    ))
}

async fn reconcile(app: &TestApp) -> String {
    let since =
        pointhook_common::clock::rfc3339(pointhook_common::clock::unix_ms_now() - 3_600_000);
    let (ok, out, err) = cli_async(app, &["reconcile", "--since", &since]).await;
    assert!(ok, "{err}");
    out
}

async fn a_dead_job_whose_notification_came_is_not_missed_and_keeps_its_history() {
    let sb = start_sandbox(vec![account(None)], Arc::new(SystemClock), 1.0, false, None).await;
    let app = spawn_app_with(TestConfig {
        accounts: format!("[[accounts]]\nname = \"default\"\naccess_token = \"{TOKEN}\"\n"),
        ..TestConfig::default().api(&sb.url)
    })
    .await;
    let now = pointhook_common::clock::unix_ms_now();
    changed_at(&sb, now - 600_000).await;
    // Its notification came; its job died on the platform's errors.
    let res = app
        .post(&format!("topic=payment&id={PAYMENT}"), &[], None)
        .await;
    assert_eq!(res.status(), 200);
    let error = format!("after 6 attempts: payment {PAYMENT}: the platform answered 500: boom");
    app.sql.execute(
        &format!(
            "UPDATE jobs SET state = {}, attempts = 6, last_error = $1, updated_at = $2",
            JobState::Dead as i16
        ),
        &[SqlValue::Text(error.clone()), SqlValue::Int(now - 300_000)],
    );

    let out = reconcile(&app).await;
    assert!(out.contains("0 enqueued"), "{out}");
    assert_eq!(found_by_reconciliation(&app), 0, "not missed");
    assert_eq!(
        job(&app),
        (JobState::Dead, 6, Some(error.clone())),
        "dead, with its attempts and error, in front of a person"
    );

    // The platform changes the payment again after the death: that is new
    // work, the sweeper's, and the death stays on record beside it.
    changed_at(&sb, now - 60_000).await;
    let out = reconcile(&app).await;
    assert!(out.contains("1 enqueued"), "{out}");
    assert_eq!(found_by_reconciliation(&app), 1);
    let (state, attempts, _) = job(&app);
    assert_eq!((state, attempts), (JobState::Pending, 0));
    let deaths = app.store.job_deaths(1).await.unwrap();
    assert_eq!(deaths.len(), 1, "{deaths:?}");
    assert_eq!(deaths[0].attempts, 6);
    assert_eq!(deaths[0].last_error.as_deref(), Some(error.as_str()));
    app.stop().await;
    sb.stop().await;
}
