//! The official Python SDK driving the sandbox, with pointhook receiving
//! its notifications and telling the merchant.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use super::end_to_end::{merchant_got, wired_point};
use super::*;

/// The interpreter with the official Python SDK installed: the path in
/// `POINTHOOK_TEST_SDK_PYTHON`, else `target/sdk-venv/bin/python`.
pub(super) fn sdk_python() -> Option<PathBuf> {
    let path = std::env::var_os("POINTHOOK_TEST_SDK_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/sdk-venv/bin/python")
        });
    if path.exists() {
        return Some(path);
    }
    if std::env::var("POINTHOOK_TEST_SDK_REQUIRED").as_deref() == Ok("1") {
        panic!(
            "POINTHOOK_TEST_SDK_REQUIRED=1 but {} does not exist (set POINTHOOK_TEST_SDK_PYTHON to a Python with `mercadopago` installed)",
            path.display()
        );
    }
    eprintln!(
        "skipped: no Python with the mercadopago SDK at {} (set POINTHOOK_TEST_SDK_PYTHON)",
        path.display()
    );
    None
}

/// Runs `python script` with `env`, killed after `limit`.
pub(super) fn run_script(
    python: &std::path::Path,
    script: &std::path::Path,
    env: &[(&str, String)],
    limit: Duration,
) -> (std::process::ExitStatus, String, String) {
    let out = tempfile::tempdir().unwrap();
    let (stdout, stderr) = (out.path().join("stdout"), out.path().join("stderr"));
    let mut cmd = std::process::Command::new(python);
    cmd.arg(script)
        .stdout(std::fs::File::create(&stdout).unwrap())
        .stderr(std::fs::File::create(&stderr).unwrap());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = KillOnDrop(cmd.spawn().unwrap());
    let deadline = std::time::Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the SDK script ran longer than {limit:?}: {}",
            std::fs::read_to_string(&stderr).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    (
        status,
        std::fs::read_to_string(&stdout).unwrap(),
        std::fs::read_to_string(&stderr).unwrap(),
    )
}

/// The official Python SDK drives the sandbox: payments (create, search,
/// refunds), merchant orders (create, get, update, search), Point (devices,
/// an intent finished by the terminal, one cancelled), and the sandbox's
/// signed webhooks pass the SDK's `WebhookSignatureValidator`. pointhook,
/// notified by the sandbox, tells the merchant.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_drives_the_sandbox_and_pointhook_tells_the_merchant() {
    let Some(python) = sdk_python() else {
        return;
    };
    // Steps of half a second: the script cancels its second intent well
    // before the terminal takes it.
    let (sb, app, merchant) = wired_point(0.1).await;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/sdk/flow.py");
    let env = [
        ("POINTHOOK_SANDBOX_URL", sb.url.clone()),
        ("POINTHOOK_SANDBOX_TOKEN", TOKEN.to_string()),
        ("POINTHOOK_SANDBOX_SECRET", SECRET.to_string()),
        ("POINTHOOK_SANDBOX_DEVICE", DEVICE.to_string()),
    ];
    let (status, stdout, stderr) = tokio::task::spawn_blocking(move || {
        run_script(&python, &script, &env, Duration::from_secs(120))
    })
    .await
    .unwrap();
    assert!(
        status.success(),
        "the SDK flow failed ({status}):\n{stderr}"
    );
    let summary: Value = serde_json::from_str(stdout.trim().lines().last().unwrap_or(""))
        .unwrap_or_else(|e| panic!("no summary from the script ({e}): {stdout}\n{stderr}"));
    assert!(summary["signed_webhooks_checked"].as_u64().unwrap() >= 1);

    let finished = summary["finished_intent"].as_str().unwrap();
    let event = merchant_got(&merchant, "payment_intent.finished", finished).await;
    assert_eq!(
        event["data"]["payment_id"],
        summary["terminal_payment"].to_string()
    );
    let cancelled = summary["cancelled_intent"].as_str().unwrap();
    merchant_got(&merchant, "payment_intent.canceled", cancelled).await;
    app.stop().await;
    sb.stop().await;
}
