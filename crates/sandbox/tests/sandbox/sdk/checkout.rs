//! The official Python and Node SDKs as an online shop and a point of
//! sale use them against the sandbox (`tests/sdk/checkout.py`,
//! `tests/sdk/checkout.js`): preferences, the site's catalogs, stores and
//! points of sale, a paid preference's payment read with what a shop
//! reads.

use std::path::Path;
use std::time::Duration;

use super::*;
use crate::runner::{run_script, script, sdk_node_modules, sdk_python, summary};

/// Runs `name` with `program` against a fresh sandbox; its summary.
async fn drive(
    program: std::path::PathBuf,
    name: &str,
    extra: Vec<(&'static str, String)>,
) -> (RunningSandbox, Value) {
    let (sb, _clock) =
        crate::support::on_manual_clock(vec![account(Some("http://127.0.0.1:9/ipn".into()))]).await;
    let mut env = vec![
        ("POINTHOOK_SANDBOX_URL", sb.url.clone()),
        ("POINTHOOK_SANDBOX_TOKEN", TOKEN.to_string()),
    ];
    env.extend(extra);
    let file = script(name);
    let (status, stdout, stderr) = tokio::task::spawn_blocking(move || {
        run_script(Path::new(&program), &file, &env, Duration::from_secs(120))
    })
    .await
    .unwrap();
    assert!(status.success(), "{name} failed ({status}):\n{stderr}");
    let summary = summary(&stdout, &stderr);
    (sb, summary)
}

/// The paid preference's merchant order, as the sandbox keeps it.
async fn paid_order(sb: &RunningSandbox, summary: &Value) {
    let (status, order) = sb
        .call(
            Method::GET,
            &format!("/merchant_orders/{}", summary["merchant_order"]),
            None,
        )
        .await;
    assert_eq!(status, 200, "{order}");
    assert_eq!(order["preference_id"], summary["preference"]);
    assert_eq!(order["payments"][0]["id"], summary["payment"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_sets_up_a_shop_and_reads_a_paid_preference() {
    let Some(python) = sdk_python() else {
        return;
    };
    let (sb, summary) = drive(python, "checkout.py", Vec::new()).await;
    assert!(
        summary["payment_methods"].as_u64().unwrap() >= 3,
        "{summary}"
    );
    paid_order(&sb, &summary).await;
    let (status, _) = sb
        .call(Method::GET, &format!("/pos/{}", summary["pos"]), None)
        .await;
    assert_eq!(status, 404, "the script removed its POS");
    sb.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_node_sdk_sets_up_a_shop_and_reads_a_paid_preference() {
    let (Some(modules), Some(node)) = (sdk_node_modules(), super::node::node()) else {
        return;
    };
    let (sb, summary) = drive(
        node,
        "checkout.js",
        vec![("NODE_PATH", modules.display().to_string())],
    )
    .await;
    paid_order(&sb, &summary).await;
    sb.stop().await;
}
