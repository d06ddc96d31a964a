//! The official Standard Webhooks library from PyPI (`standardwebhooks`,
//! as a merchant's developer installs it) verifies what every destination
//! received: the short form with one secret, a destination with one, and
//! one with two (rotation). Skipped, with one line, without a Python that
//! has it; failing instead when `POINTHOOK_TEST_SDK_REQUIRED=1`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use pointhook_common::clock::ManualClock;
use serde_json::{Value, json};

use crate::helpers::*;
use crate::platform::*;

/// The interpreter with `standardwebhooks` installed: the path in
/// `POINTHOOK_TEST_SDK_PYTHON`, else `target/sdk-venv/bin/python`.
fn python() -> Option<PathBuf> {
    let path = std::env::var_os("POINTHOOK_TEST_SDK_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/sdk-venv/bin/python")
        });
    let has_it = std::process::Command::new(&path)
        .args(["-c", "import standardwebhooks"])
        .output()
        .is_ok_and(|o| o.status.success());
    if has_it {
        return Some(path);
    }
    if std::env::var("POINTHOOK_TEST_SDK_REQUIRED").as_deref() == Ok("1") {
        panic!(
            "POINTHOOK_TEST_SDK_REQUIRED=1 but {} has no standardwebhooks (.ci/run installs it)",
            path.display()
        );
    }
    eprintln!(
        "skipped: no Python with standardwebhooks at {} (set POINTHOOK_TEST_SDK_PYTHON)",
        path.display()
    );
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_python_library_verifies_every_destination() {
    let Some(python) = python() else {
        return;
    };
    let (short, one, two) = (
        Merchant::start().await,
        Merchant::start().await,
        Merchant::start().await,
    );
    let next = pointhook::config::SigningKey::generate();
    let config = short.config()
        + &format!(
            "[[destinations]]\nname = \"shop\"\nurl = \"{}/events\"\nsecret = \"{MERCHANT_SECRET}\"\ntypes = [\"order.*\"]\n\
             [[destinations]]\nname = \"erp\"\nurl = \"{}/events\"\nsecrets = [\"{MERCHANT_SECRET}\", \"{next}\"]\n",
            one.server.uri(),
            two.server.uri()
        );
    let api = FakeApi::start().await;
    api.payment("123456789", "approved", "100.5", Some("4945357007"));
    api.order(
        "4945357007",
        "100.5",
        &[("123456789", "100.5", "approved")],
        None,
    );
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let app = spawn_app_with(
        TestConfig::default()
            .api(&api.uri())
            .clock(clock)
            .extra(&config),
    )
    .await;
    app.post("topic=payment&id=123456789", &[], None).await;
    app.run_jobs().await;
    assert_eq!(app.deliver_events().await, 2 + 1 + 2);
    let mut entries = Vec::new();
    for (name, merchant, secrets) in [
        ("default", &short, vec![MERCHANT_SECRET.to_string()]),
        ("shop", &one, vec![MERCHANT_SECRET.to_string()]),
        ("erp", &two, vec![MERCHANT_SECRET.to_string(), next.clone()]),
    ] {
        for r in merchant.received().await {
            let headers: serde_json::Map<String, Value> = r
                .headers
                .iter()
                .map(|(k, v)| (k.to_string(), Value::from(v.to_str().unwrap())))
                .collect();
            entries.push(json!({
                "destination": name,
                "secrets": secrets,
                "headers": headers,
                "body": String::from_utf8(r.body.clone()).unwrap(),
            }));
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("events.json");
    std::fs::write(&file, serde_json::to_vec(&entries).unwrap()).unwrap();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/sdk/verify_events.py");
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(python)
            .arg(script)
            .env("POINTHOOK_EVENTS", &file)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for line in [
        "default: 2 events verified",
        "erp: 2 events verified",
        "shop: 1 events verified",
    ] {
        assert!(stdout.contains(line), "{stdout}");
    }
    app.stop().await;
}
