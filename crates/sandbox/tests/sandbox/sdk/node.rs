//! The official Node SDK driving the sandbox (`tests/sdk/flow.js`).

use std::path::Path;
use std::time::Duration;

use super::*;
use crate::runner::{run_script, script, sdk_node_modules, summary};

/// `node`, when there is one.
pub(super) fn node() -> Option<std::path::PathBuf> {
    let found = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join("node"))
        .find(|p| p.exists());
    if found.is_none() {
        assert!(
            std::env::var("POINTHOOK_TEST_SDK_REQUIRED").as_deref() != Ok("1"),
            "POINTHOOK_TEST_SDK_REQUIRED=1 but there is no node on PATH"
        );
        eprintln!("skipped: no node on PATH");
    }
    found
}

/// The official Node SDK (npm `mercadopago`, pinned by `.ci/run`) on a
/// fresh sandbox: card tokens and a payment for each documented test
/// cardholder name, the device the account starts with and an intent on
/// it, one Orders API order created and read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_node_sdk_drives_cards_devices_and_an_order() {
    let (Some(modules), Some(node)) = (sdk_node_modules(), node()) else {
        return;
    };
    let (sb, _clock) = crate::support::on_manual_clock(vec![account(None)]).await;
    let env = [
        ("POINTHOOK_SANDBOX_URL", sb.url.clone()),
        ("POINTHOOK_SANDBOX_TOKEN", TOKEN.to_string()),
        ("NODE_PATH", modules.display().to_string()),
    ];
    let flow = script("flow.js");
    let (status, stdout, stderr) = tokio::task::spawn_blocking(move || {
        run_script(Path::new(&node), &flow, &env, Duration::from_secs(120))
    })
    .await
    .unwrap();
    assert!(
        status.success(),
        "the Node SDK flow failed ({status}):\n{stderr}"
    );
    let summary = summary(&stdout, &stderr);
    assert_eq!(summary["device"], pointhook_sandbox::FIRST_DEVICE);
    assert_eq!(
        summary["payments"].as_object().unwrap().len(),
        8,
        "{summary}"
    );
    // The order the SDK made is the sandbox's.
    let (status, order) = sb
        .call(
            reqwest::Method::GET,
            &format!("/v1/orders/{}", summary["order"].as_str().unwrap()),
            None,
        )
        .await;
    assert_eq!(status, 200, "{order}");
    assert_eq!(order["external_reference"], "node-sdk-order");
    sb.stop().await;
}
