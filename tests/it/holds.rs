//! Holds (`rules::holds`): an account turns a kind on with its own key,
//! and a key that names no setting is refused by name. Each kind's own
//! walk (held, approved, rejected) follows below it.

use crate::helpers::*;

/// The account's keys are checked by hand now that the kinds' settings
/// sit among them: a misspelt one still stops the start, named.
#[test]
fn an_account_key_that_is_no_setting_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let config = TestConfig {
        accounts: "[[accounts]]\nname = \"default\"\naccess_token = \"tok\"\n\
                   fraud_unauthenticated_blocks_per_hoor = 5\n"
            .into(),
        backend: crate::backends::Backend::Sqlite,
        ..Default::default()
    };
    let path = dir.path().join("pointhook.toml");
    std::fs::write(&path, config.toml(&dir.path().join("db.sqlite"))).unwrap();
    let err = pointhook::config::Config::load(&path)
        .and_then(|c| c.resolve_accounts())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("accounts[0].fraud_unauthenticated_blocks_per_hoor")
            && err.contains("unknown key"),
        "{err}"
    );
}

// review_above, the worked example of docs/extending.md.

on_both_backends!(
    an_order_above_review_above_waits_for_approval,
    a_rejected_hold_blocks_the_order
);

const ADMIN: &str = "admin-token-for-the-holds-tests-0123456789";

/// An account holding orders above 100.00, and an order of 250.00 paid.
async fn held_order() -> (crate::platform::FakeApi, TestApp, i64) {
    let api = crate::platform::FakeApi::start().await;
    let app = spawn_app_with(
        TestConfig {
            accounts: "[[accounts]]\nname = \"default\"\naccess_token = \"tok\"\n\
                   review_above = \"100.00\"\n"
                .into(),
            admin_token: Some(ADMIN.into()),
            ..Default::default()
        }
        .api(&api.uri()),
    )
    .await;
    api.order("7001", "250", &[("9001", "250", "approved")], None);
    api.order("7002", "80", &[("9002", "80", "approved")], None);
    for id in ["7001", "7002"] {
        let query = format!("topic=merchant_order&id={id}");
        assert_eq!(app.post(&query, &[], None).await.status(), 200);
    }
    app.run_jobs().await;
    // Under the amount: released at once; above it: held, told and counted.
    assert_eq!(app.event_types_sorted(), ["order.held", "order.released"]);
    assert_eq!(
        app.event_where("order.held", "merchant_order_id", "7001")["review_above"],
        "100.00"
    );
    let (status, holds) = app.admin("GET", "/api/holds", ADMIN).await;
    assert_eq!(status, 200);
    let holds = holds.as_array().unwrap();
    assert_eq!(holds.len(), 1);
    assert_eq!(
        (holds[0]["kind"].as_str(), holds[0]["subject"].as_str()),
        (Some("review_above"), Some("merchant_order:7001"))
    );
    let series = "pointhook_attention_items{kind=\"hold_review_above\"}";
    assert_eq!(metric(&app, ADMIN, series).await, 1);
    // Asked again, the order stays held: nothing new is decided.
    app.post("topic=merchant_order&id=7001", &[], None).await;
    app.run_jobs().await;
    assert_eq!(app.event_types().len(), 2);
    (api, app, holds[0]["id"].as_i64().unwrap())
}

async fn an_order_above_review_above_waits_for_approval() {
    let (_api, app, id) = held_order().await;
    let (status, _) = app
        .admin("POST", &format!("/api/holds/{id}/approve"), ADMIN)
        .await;
    assert_eq!(status, 200);
    app.run_jobs().await;
    let released = app.event_where("order.released", "merchant_order_id", "7001");
    assert_eq!(released["total_amount"], "250.00");
    let (_, again) = app
        .admin("POST", &format!("/api/holds/{id}/approve"), ADMIN)
        .await;
    assert_eq!(again["error"], "already_decided", "{again}");
    let (_, audit) = app
        .admin("GET", &format!("/api/audit?item=hold:{id}"), ADMIN)
        .await;
    let actions: Vec<&str> = audit
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["approve", "approve"]);
    let series = "pointhook_attention_items{kind=\"hold_review_above\"}";
    assert_eq!(metric(&app, ADMIN, series).await, 0);
    app.stop().await;
}

async fn a_rejected_hold_blocks_the_order() {
    let (_api, app, id) = held_order().await;
    let (ok, out, err) = cli(&app, &["holds", "reject", &id.to_string(), "--yes"]);
    assert!(ok, "{err}");
    assert!(out.contains("rejected"), "{out}");
    app.run_jobs().await;
    let blocked = app.event_where("order.blocked", "merchant_order_id", "7001");
    assert_eq!(blocked["hold"]["kind"], "review_above");
    assert!(blocked.get("payment_id").is_none(), "{blocked}");
    // Notified again, the order is never released.
    app.post("topic=merchant_order&id=7001", &[], None).await;
    app.run_jobs().await;
    let mut types = app.event_types_sorted();
    types.dedup();
    assert_eq!(types, ["order.blocked", "order.held", "order.released"]);
    assert_eq!(
        app.count("SELECT count(*) FROM events WHERE type = 'order.released'"),
        1
    );
    app.stop().await;
}
