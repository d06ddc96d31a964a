//! `pointhook alerts test` through the real binary, and the monitoring
//! `packaging/` ships (Prometheus rules, a Grafana dashboard) held to the
//! metrics `/metrics` really has.

use std::time::Duration;

use pointhook_common::clock::unix_ms_now;

use crate::alerting::{Hook, PUBLIC, alerting, told};
use crate::helpers::*;
use crate::platform::Merchant;
use crate::smtp::SmtpServer;

/// `pointhook alerts test` through the real binary: every channel told,
/// each said ok or why not, and the command fails when one did.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alerts_test_sends_to_every_channel_and_says_how_each_went() {
    let (smtp, hook) = (SmtpServer::start().await, Hook::start().await);
    // Nothing listens on port 9 of loopback.
    let dead = "[[alerts]]\nkind = \"webhook\"\nurl = \"http://127.0.0.1:9/hook\"\n";
    let app = alerting(TestConfig::default().extra(dead), smtp.port, &hook, "").await;
    let (ok, out, err) = cli_async(&app, &["alerts", "test"]).await;
    assert!(!ok, "one channel failed: {out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(
        lines[0].starts_with(
            "failed webhook http://127.0.0.1:9/…: the alert webhook cannot be reached"
        ),
        "{out}"
    );
    assert_eq!(
        lines[1],
        format!(
            "ok     e-mail to ops@shop.example via 127.0.0.1:{}",
            smtp.port
        )
    );
    assert!(
        lines[2].starts_with("ok     webhook http://127.0.0.1:"),
        "{out}"
    );
    assert!(
        !out.contains("/hook"),
        "a webhook URL's path is never shown: {out}"
    );
    assert!(err.contains("1 of 3 channel(s) failed"), "{err}");
    let (mails, hooks) = told(&smtp, &hook, 1).await;
    assert!(mails[0].contains("pointhook test message"), "{}", mails[0]);
    assert!(mails[0].contains(&format!("{PUBLIC}/")), "{}", mails[0]);
    assert_eq!(hooks[0]["kind"], "test");
    app.stop().await;
}

/// The Prometheus rules and the Grafana dashboard in `packaging/` name
/// only metrics that `/metrics` exposes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shipped_rules_and_dashboard_name_only_metrics_that_exist() {
    let merchant = Merchant::start().await;
    let app = spawn_app_with(TestConfig::default().extra(&merchant.config())).await;
    assert_eq!(
        app.post("topic=payment&id=777", &[], None).await.status(),
        200
    );
    // A family shows once it has a series: one of each counter, and the
    // store's gauges read from a store with a destination and a delivery.
    let m = pointhook::metrics::Metrics::new();
    m.delivery("ipn", "accepted");
    m.acked_in(Duration::from_millis(1));
    m.missed("default", "payment");
    m.reconcile_pass("ok");
    m.alert_sent("email", "sent");
    m.job_run("done");
    let exposition = m.render(&app.store, unix_ms_now()).await.unwrap();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("packaging");
    for file in [
        "prometheus/pointhook.rules.yml",
        "grafana/pointhook-dashboard.json",
    ] {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let mut named = 0;
        for (at, _) in text.match_indices("pointhook_") {
            let name: String = text[at..]
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            let family = ["_total", "_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| name.strip_suffix(s))
                .unwrap_or(&name);
            assert!(
                exposition.contains(&format!("# TYPE {family} ")),
                "{file} names {name}, which /metrics does not have"
            );
            named += 1;
        }
        assert!(named > 10, "{file} names {named} metrics");
    }
    app.stop().await;
}
