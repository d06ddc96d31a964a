//! Integrator endpoints, device e-mails, and the client commands (real
//! binary) against the sandbox.

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use pointhook_common::clock::ManualClock;
use pointhook_sandbox::AccountSpec;
use pointhook_sandbox::MailSettings;
use serde_json::{Value, json};

use crate::helpers::*;
use crate::platform::{RunningSandbox, TOKEN, account, start_sandbox, start_sandbox_mailing};

async fn integrator(
    sb: &RunningSandbox,
    method: &str,
    body: Option<Value>,
    token: Option<&str>,
) -> (u16, Value) {
    let url = format!("{}/point/integration-api/integrator", sb.url);
    let mut req = match method {
        "PATCH" => client().patch(url),
        _ => client().get(url),
    };
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    if let Some(b) = body {
        req = req.json(&b);
    }
    answer(req.send().await.unwrap()).await
}

#[tokio::test]
async fn integrator_endpoints() {
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let with_webhooks = AccountSpec {
        webhook_url: Some("http://127.0.0.1:9/n".into()),
        ..account(None)
    };
    let sb = start_sandbox(vec![with_webhooks], clock.clone(), 1.0, false, None).await;
    let (status, e) = integrator(&sb, "GET", None, None).await;
    assert_eq!(status, 401);
    assert_eq!(e["error"], "unauthorized");
    let (status, e) = integrator(
        &sb,
        "PATCH",
        Some(json!({"event_channel_devices": ["sms"]})),
        Some(TOKEN),
    )
    .await;
    assert_eq!(status, 400);
    assert!(e["message"].as_str().unwrap().contains("sms"), "{e}");
    let (status, _) = integrator(&sb, "PATCH", Some(json!({"nothing": 1})), Some(TOKEN)).await;
    assert_eq!(status, 400);
    let (_, before) = integrator(&sb, "GET", None, Some(TOKEN)).await;
    assert_eq!(before["event_channel_devices"], json!([]));
    clock.advance(Duration::from_secs(60));
    let (status, patched) = integrator(
        &sb,
        "PATCH",
        Some(json!({"event_channel_devices": ["email"]})),
        Some(TOKEN),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(patched["event_channel_devices"], json!(["email"]));
    let (_, after) = integrator(&sb, "GET", None, Some(TOKEN)).await;
    assert_eq!(after["event_channel_devices"], json!(["email"]));
    assert_eq!(after["notification_url_enabled"], true);
    assert!(after["id"].is_number());
    let created = humantime::parse_rfc3339_weak(after["created_at"].as_str().unwrap()).unwrap();
    let updated = humantime::parse_rfc3339_weak(after["updated_at"].as_str().unwrap()).unwrap();
    assert!(updated.duration_since(created).unwrap() >= Duration::from_secs(60));
    sb.stop().await;
}

fn mailing_account() -> AccountSpec {
    AccountSpec {
        email: Some("ops@shop.example".into()),
        devices: vec!["PAX_A910__SMARTPOS1".into()],
        ..account(None)
    }
}

async fn device_event(sb: &RunningSandbox, event: Value) -> u16 {
    sb.control("devices/PAX_A910__SMARTPOS1/events", event)
        .await
        .0
}

#[tokio::test]
async fn device_mails_start_30_minutes_after_activation_one_per_event() {
    let spool = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let sb = start_sandbox_mailing(
        vec![mailing_account()],
        clock.clone(),
        1.0,
        false,
        None,
        MailSettings::Spool(spool.path().to_path_buf()),
    )
    .await;
    assert_eq!(device_event(&sb, json!({"event": "restart"})).await, 202);
    assert_eq!(device_event(&sb, json!({"event": "reboot"})).await, 400);
    assert_eq!(
        sb.control("devices/UNKNOWN/events", json!({"event": "restart"}))
            .await
            .0,
        404
    );
    integrator(
        &sb,
        "PATCH",
        Some(json!({"event_channel_devices": ["email"]})),
        Some(TOKEN),
    )
    .await;
    clock.advance(Duration::from_secs(10 * 60));
    device_event(&sb, json!({"event": "logout"})).await;
    assert_eq!(
        sb.sandbox.send_due_mails().await.unwrap(),
        0,
        "not before 30 minutes"
    );
    clock.advance(Duration::from_secs(21 * 60));
    device_event(&sb, json!({"event": "restart"})).await;
    device_event(&sb, json!({"event": "mode_change", "mode": "STANDALONE"})).await;
    assert_eq!(
        sb.sandbox.send_due_mails().await.unwrap(),
        2,
        "one per event after the start"
    );
    assert_eq!(sb.sandbox.send_due_mails().await.unwrap(), 0, "once");
    let mails: Vec<String> = std::fs::read_dir(spool.path())
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    assert_eq!(mails.len(), 2);
    assert!(
        mails
            .iter()
            .all(|m| m.contains("To: ops@shop.example") && m.contains("PAX_A910__SMARTPOS1"))
    );
    assert!(mails.iter().any(|m| m.contains("restarted")));
    assert!(mails.iter().any(|m| m.contains("from PDV to STANDALONE")));
    assert!(
        !mails.iter().any(|m| m.contains("logged out")),
        "events before the start are never sent"
    );
    sb.stop().await;
}

#[tokio::test]
async fn device_mails_go_through_smtp_when_configured() {
    let server = crate::smtp::SmtpServer::start().await;
    let (port, got) = (server.port, server.got.clone());
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let sb = start_sandbox_mailing(
        vec![mailing_account()],
        clock.clone(),
        0.01,
        false,
        None,
        MailSettings::Smtp {
            host: "127.0.0.1".into(),
            port,
        },
    )
    .await;
    integrator(
        &sb,
        "PATCH",
        Some(json!({"event_channel_devices": ["email"]})),
        Some(TOKEN),
    )
    .await;
    // 30 minutes at scale 0.01 is 18 seconds.
    clock.advance(Duration::from_secs(19));
    device_event(&sb, json!({"event": "logout"})).await;
    assert_eq!(sb.sandbox.send_due_mails().await.unwrap(), 1);
    let got = got.lock().unwrap().mails.clone();
    assert_eq!(got.len(), 1);
    assert!(
        got[0].contains("logged out") && got[0].contains("ops@shop.example"),
        "{}",
        got[0]
    );
    sb.stop().await;
}

async fn pointhook(args: Vec<String>) -> (bool, String, String) {
    tokio::task::spawn_blocking(move || {
        let out = Command::new(env!("CARGO_BIN_EXE_pointhook"))
            .args(&args)
            .env_remove("POINTHOOK_ACCESS_TOKEN")
            .env_remove("POINTHOOK_API_BASE_URL")
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    })
    .await
    .unwrap()
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn client_commands_against_the_sandbox() {
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let sb = start_sandbox(vec![account(None)], clock, 1.0, false, None).await;
    let api = ["--base-url", sb.url.as_str(), "--access-token", TOKEN];

    let (ok, out, err) = pointhook([args(&["integrator", "show"]), args(&api)].concat()).await;
    assert!(ok, "{err}");
    assert!(
        out.contains("event_channel_devices") && out.contains("[]"),
        "{out}"
    );
    let (ok, out, _) =
        pointhook([args(&["integrator", "enable-email"]), args(&api)].concat()).await;
    assert!(ok);
    assert!(out.contains("device e-mails start at"), "{out}");

    let payment = args(&[
        "payments",
        "create",
        "--amount",
        "100.50",
        "--token",
        "card-1",
        "--description",
        "Coffee",
        "--installments",
        "1",
        "--payment-method",
        "visa",
        "--issuer",
        "310",
        "--payer-email",
        "buyer@example.com",
        "--payer-id-type",
        "DNI",
        "--payer-id-number",
        "12345678",
    ]);
    let (ok, out, err) = pointhook([payment.clone(), args(&api)].concat()).await;
    assert!(ok, "{err}");
    assert!(
        out.contains("status         approved") && out.contains("status_detail  accredited"),
        "{out}"
    );

    let bad = [
        args(&[
            "payments",
            "create",
            "--amount=-5",
            "--token",
            "t",
            "--payer-email",
            "nope",
            "--payer-id-number",
            "1",
        ]),
        args(&api),
    ]
    .concat();
    let (ok, _, err) = pointhook(bad).await;
    assert!(!ok);
    assert_eq!(err.lines().count(), 1, "one clear line: {err}");
    assert!(
        err.contains("400") && err.contains("transaction_amount") && err.contains("payer.email"),
        "{err}"
    );

    let (ok, _, err) = pointhook(
        [args(&[
            "integrator",
            "show",
            "--base-url",
            sb.url.as_str(),
            "--access-token",
            "wrong",
        ])]
        .concat(),
    )
    .await;
    assert!(!ok);
    assert!(err.contains("401"), "{err}");
    sb.stop().await;
}

/// `notify --fraud-alert` sends either form of a fraud alert; the webhook,
/// signed over its payment, is one pointhook trusts.
#[tokio::test]
async fn notify_sends_a_fraud_alert_in_either_form() {
    let app = spawn_app_with(TestConfig::with_secret()).await;
    let url = app.url("/notifications");
    let alert = [
        "notify",
        "--url",
        &url,
        "--fraud-alert",
        "--order",
        "77",
        "--payment",
        "88",
    ];
    let (ok, out, err) = pointhook(args(&alert)).await;
    assert!(ok && out.contains("-> 200"), "{out} {err}");
    let (ok, out, err) =
        pointhook([args(&alert), args(&["--webhook", "--secret", SECRET])].concat()).await;
    assert!(ok && out.contains("-> 200"), "{out} {err}");
    let rows: Vec<(String, pointhook::domain::SignatureStatus)> = app
        .db()
        .prepare("SELECT topic, signature FROM deliveries ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    use pointhook::domain::SignatureStatus::{NotChecked, Valid};
    assert_eq!(
        rows,
        [
            ("delivery_cancellation".to_string(), NotChecked),
            ("stop_delivery_op_wh".to_string(), Valid)
        ]
    );
    let work: String = app
        .db()
        .query_row("SELECT work FROM jobs", [], |r| r.get(0))
        .unwrap();
    let work: serde_json::Value = serde_json::from_str(&work).unwrap();
    assert_eq!(
        work["authenticated"], true,
        "both forms, one job, authenticated"
    );
    let (ok, _, err) = pointhook(args(&["notify", "--url", &url, "--fraud-alert"])).await;
    assert!(!ok && err.contains("--order"), "{err}");
    app.stop().await;
}

#[tokio::test]
async fn notify_sends_what_the_receiver_accepts_signed_or_not() {
    let app = spawn_app_with(TestConfig::with_secret()).await;
    let url = app.url("/notifications");
    let (ok, out, err) = pointhook(args(&[
        "notify", "--url", &url, "--topic", "payment", "--id", "123",
    ]))
    .await;
    assert!(ok, "{err}");
    assert!(out.contains("attempt 1") && out.contains("-> 200"), "{out}");
    let (ok, out, err) = pointhook(args(&[
        "notify",
        "--url",
        &url,
        "--topic",
        "payment",
        "--id",
        "4321",
        "--webhook",
        "--secret",
        SECRET,
    ]))
    .await;
    assert!(ok, "{out} {err}");
    let (ok, out, _) = pointhook(args(&[
        "notify",
        "--url",
        &url,
        "--topic",
        "payment",
        "--id",
        "9",
        "--webhook",
        "--secret",
        "wrong",
    ]))
    .await;
    assert!(!ok);
    assert!(out.contains("-> 401"), "{out}");
    let signature: pointhook::domain::SignatureStatus = app
        .db()
        .query_row(
            "SELECT signature FROM deliveries WHERE resource_id = '4321'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(signature, pointhook::domain::SignatureStatus::Valid);
    app.stop().await;
}

#[tokio::test]
async fn notify_retries_on_the_schedule() {
    let target = wiremock::MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .respond_with(wiremock::ResponseTemplate::new(500))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&target)
        .await;
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .respond_with(wiremock::ResponseTemplate::new(200))
        .mount(&target)
        .await;
    // 15 minutes at 0.001 is 0.9 s.
    let (ok, out, err) = pointhook(args(&[
        "notify",
        "--url",
        &target.uri(),
        "--topic",
        "merchant_order",
        "--id",
        "1",
        "--schedule",
        "--time-scale",
        "0.001",
    ]))
    .await;
    assert!(ok, "{out} {err}");
    assert!(
        out.contains("attempt 1")
            && out.contains("-> 500")
            && out.contains("attempt 2")
            && out.contains("-> 200"),
        "{out}"
    );
}

#[tokio::test]
async fn the_demo_runs_every_scenario_to_completion() {
    let (ok, out, err) = pointhook(args(&["demo", "--exit-after-scenarios"])).await;
    assert!(ok, "{out}\n{err}");
    // Every bundled trigger, then the demo's own scenarios.
    let mut names: Vec<String> = pointhook_sandbox::fixture::bundled::TRIGGERS
        .iter()
        .map(|(name, _)| name.to_string())
        .collect();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/scenarios");
    for entry in std::fs::read_dir(dir).unwrap() {
        let s: Value =
            serde_json::from_str(&std::fs::read_to_string(entry.unwrap().path()).unwrap()).unwrap();
        names.push(s["name"].as_str().unwrap().to_string());
    }
    for name in &names {
        assert!(
            out.contains(&format!("Scenario: {name}")),
            "{name} ran: {out}"
        );
    }
    let names = names.len();
    assert!(
        out.contains(&format!("{names} of {names} scenarios passed")),
        "{out}"
    );
    assert!(!out.contains("FAILED"), "{out}");
    assert!(
        out.contains("delivered after 1 refusal(s), same id every time"),
        "{out}"
    );
    assert!(out.contains("an e-mail in the spool"), "{out}");
    // Each scenario's events are its own, received under it.
    for section in out.split("Scenario: ").skip(1) {
        for line in section.lines().filter(|l| l.trim_start().starts_with("✓ ")) {
            let words: Vec<&str> = line.split_whitespace().collect();
            if let [_, kind, id, ..] = words.as_slice()
                && id.starts_with("evt_")
            {
                assert!(
                    section.contains(&format!("merchant endpoint: received {kind} {id}")),
                    "{kind} {id} is received under its own scenario:\n{section}"
                );
            }
        }
    }
    // It leaves the console with what a person meets, and says where.
    for needs in [
        "What needs a person now",
        "held: an alert nobody signed blocked merchant order",
        "/fraud-reviews/",
        "at risk: released, then charged back",
        "destination warehouse failing",
        "/destinations/warehouse",
    ] {
        assert!(out.contains(needs), "{needs}: {out}");
    }
}
