//! `pointhook sandbox trigger`: every bundled fixture, run by the real
//! binary against the sandbox with pointhook receiving, makes pointhook
//! tell the merchant what the fixture expects.

use std::process::Command;
use std::time::Duration;

use pointhook_sandbox::fixture::matches;
use serde_json::Value;

use crate::helpers::wait_for;
use crate::platform::{Merchant, TOKEN, wired};

/// Runs the binary with `args`: success, standard output, standard error.
async fn pointhook(args: Vec<String>) -> (bool, String, String) {
    tokio::task::spawn_blocking(move || {
        let out = Command::new(env!("CARGO_BIN_EXE_pointhook"))
            .args(&args)
            .env_remove("POINTHOOK_SANDBOX_TOKEN")
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

/// The events the merchant received: (type, data).
async fn received(merchant: &Merchant) -> Vec<(String, Value)> {
    merchant
        .received()
        .await
        .into_iter()
        .filter_map(|r| serde_json::from_slice::<Value>(&r.body).ok())
        .map(|e| {
            (
                e["type"].as_str().unwrap_or_default().to_string(),
                e["data"].clone(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bundled_trigger_makes_pointhook_tell_the_merchant() {
    let (sb, app, merchant) = wired().await;
    let (ok, list, err) =
        pointhook(vec!["sandbox".into(), "trigger".into(), "--list".into()]).await;
    assert!(ok, "{err}");
    let names: Vec<String> = list
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    assert!(names.len() >= 12, "{list}");
    let mut expected = Vec::new();
    for name in &names {
        let (ok, out, err) = pointhook(
            [
                "sandbox", "trigger", name, "--url", &sb.url, "--token", TOKEN, "--json",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        )
        .await;
        assert!(ok, "{name}: {err}");
        let ran: Value = serde_json::from_str(out.trim())
            .unwrap_or_else(|e| panic!("{name}: not one JSON line ({e}): {out}"));
        let expect = ran["expect"].as_array().unwrap();
        assert!(!expect.is_empty(), "{name} expects nothing");
        for e in expect {
            expected.push((name.clone(), e.clone()));
        }
    }
    // Each expectation met by an event the merchant got.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let got = received(&merchant).await;
        let missing: Vec<&(String, Value)> = expected
            .iter()
            .filter(|(_, e)| {
                !got.iter().any(|(kind, data)| {
                    e["event"] == kind.as_str()
                        && e["where"].as_object().is_none_or(|m| matches(m, data))
                })
            })
            .collect();
        if missing.is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never told: {missing:#?}\nthe merchant got: {got:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    app.stop().await;
    sb.stop().await;
}

/// A tester's own file runs the same way; a name that is neither bundled
/// nor a file, a malformed file, and a token no account has are refused.
#[tokio::test]
async fn a_testers_file_runs_and_mistakes_are_named() {
    let (sb, app, _merchant) = wired().await;
    let dir = tempfile::tempdir().unwrap();
    let mine = dir.path().join("mine.json");
    std::fs::write(
        &mine,
        r#"{"_meta": {"format": 1}, "name": "mine", "description": "two steps",
            "steps": [
              {"name": "order", "method": "POST", "path": "/sandbox/merchant_orders", "body": {"total_amount": 5}},
              {"say": "the order is ${order:id}", "method": "GET", "path": "/merchant_orders/${order:id}", "status": 200}
            ]}"#,
    )
    .unwrap();
    let run = |target: &str, token: &str| {
        [
            "sandbox", "trigger", target, "--url", &sb.url, "--token", token,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<String>>()
    };
    let (ok, out, err) = pointhook(run(mine.to_str().unwrap(), TOKEN)).await;
    assert!(ok, "{err}");
    assert!(out.contains("2. the order is 49454"), "{out}");
    let (ok, _, err) = pointhook(run("no-such-flow", TOKEN)).await;
    assert!(!ok && err.contains("neither a bundled fixture"), "{err}");
    std::fs::write(
        &mine,
        r#"{"_meta": {"format": 1}, "name": "mine", "description": "x", "steps": [{"jump": 1}]}"#,
    )
    .unwrap();
    let (ok, _, err) = pointhook(run(mine.to_str().unwrap(), TOKEN)).await;
    assert!(!ok && err.contains("step 1"), "{err}");
    let (ok, _, err) = pointhook(run("payment-approved", "not-a-token")).await;
    assert!(!ok && err.contains("401"), "{err}");
    app.stop().await;
    sb.stop().await;
}

/// The fixture docs/sandbox.md shows (seeded resources, recorded
/// notifications, time passing) runs as written and pointhook decides
/// what it expects.
#[tokio::test]
async fn the_documented_fixture_runs_as_written() {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/sandbox.md")).unwrap();
    let format = doc.find("### The format").expect("the format's section");
    let start = format + doc[format..].find("```json\n").unwrap() + "```json\n".len();
    let end = start + doc[start..].find("```").unwrap();
    let (sb, app, merchant) = wired().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("incident.json");
    std::fs::write(&file, &doc[start..end]).unwrap();
    let (ok, out, err) = pointhook(
        [
            "sandbox",
            "trigger",
            file.to_str().unwrap(),
            "--url",
            &sb.url,
            "--token",
            TOKEN,
            "--json",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
    )
    .await;
    assert!(ok, "{err}");
    let ran: Value = serde_json::from_str(out.trim()).unwrap();
    let expect = &ran["expect"][0];
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !received(&merchant).await.iter().any(|(kind, data)| {
        expect["event"] == kind.as_str() && matches(expect["where"].as_object().unwrap(), data)
    }) {
        assert!(
            std::time::Instant::now() < deadline,
            "never told {expect}: {:#?}",
            received(&merchant).await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    app.stop().await;
    sb.stop().await;
}

/// Waits until the merchant got an event of `kind`; its data.
async fn told(merchant: &Merchant, kind: &str) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Some((_, data)) = received(merchant)
            .await
            .into_iter()
            .find(|(k, _)| k == kind)
        {
            return data;
        }
        assert!(std::time::Instant::now() < deadline, "never told {kind}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// What pointhook saw of an order, exported as a scenario, replays on a
/// fresh sandbox and a fresh pointhook with the same decision, and holds
/// no secret.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_order_exported_as_a_scenario_replays_on_a_fresh_sandbox() {
    let (sb, app, merchant) = wired().await;
    let (ok, _, err) = pointhook(
        [
            "sandbox",
            "trigger",
            "merchant-order-paid-in-two-payments",
            "--url",
            &sb.url,
            "--token",
            TOKEN,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
    )
    .await;
    assert!(ok, "{err}");
    let released = told(&merchant, "order.released").await;
    let order = released["merchant_order_id"].as_str().unwrap().to_string();
    // The release may come before the payments' own jobs have run (the
    // order's read already showed them paid); what is exported is what
    // pointhook saw, so let it see everything first.
    wait_for("every job run", async || app.unsettled() == 0).await;

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("incident.json");
    let (ok, _, err) = pointhook(vec![
        "orders".into(),
        "export-scenario".into(),
        order.clone(),
        "--config".into(),
        app.config_path.display().to_string(),
        "--out".into(),
        file.display().to_string(),
    ])
    .await;
    assert!(ok, "{err}");
    app.stop().await;
    sb.stop().await;
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains(TOKEN), "a secret in the fixture: {text}");
    assert!(!text.to_lowercase().contains("x-signature"), "{text}");
    let fixture: Value = serde_json::from_str(&text).unwrap();
    let steps = fixture["steps"].as_array().unwrap();
    let seeded = |kind: &str| steps.iter().filter(|s| s["seed"]["kind"] == kind).count();
    assert!(
        seeded("merchant_order") >= 1 && seeded("payment") >= 1,
        "{text}"
    );
    let notified = steps.iter().filter(|s| s.get("notify").is_some()).count();
    assert!(notified >= 2, "{text}");
    let first_seed = steps.iter().position(|s| s.get("seed").is_some()).unwrap();
    // Each read is seeded before a notification (the one whose job read it).
    let last_notify = steps
        .iter()
        .rposition(|s| s.get("notify").is_some())
        .unwrap();
    assert!(first_seed < last_notify, "{text}");
    assert!(
        fixture["expect"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["event"] == "order.released"
                && e["where"]["merchant_order_id"] == order.as_str()),
        "{text}"
    );

    // A fresh sandbox and a fresh pointhook, which have never seen it.
    let (sb, app, merchant) = wired().await;
    let (ok, _, err) = pointhook(vec![
        "sandbox".into(),
        "trigger".into(),
        file.display().to_string(),
        "--url".into(),
        sb.url.clone(),
        "--token".into(),
        TOKEN.into(),
    ])
    .await;
    assert!(ok, "{err}");
    let again = told(&merchant, "order.released").await;
    assert_eq!(again["merchant_order_id"], order.as_str());
    assert_eq!(again["paid_amount"], released["paid_amount"]);
    app.stop().await;
    sb.stop().await;
}
