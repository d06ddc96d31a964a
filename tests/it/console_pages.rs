//! The console's lists and second questions over real HTTP: every fraud
//! review on `/fraud-reviews`, dismissing asks again, the command line's
//! name of a list accepted, alert sends filtered out of the audit, an
//! acknowledgement that names its order, "acknowledge all" for missed
//! notifications, and the command line's user named in the audit.

use std::sync::Arc;
use std::time::SystemTime;

use pointhook::store::console_views::Sample;
use pointhook_common::clock::{ManualClock, unix_ms_now};

use crate::console::{TOKEN, signed_in};
use crate::helpers::*;
use crate::platform::*;

on_both_backends!(
    every_review_is_listed_and_dismissing_asks_again,
    lists_take_the_command_lines_names_and_the_audit_hides_alert_sends,
    missed_notifications_are_acknowledged_at_once_by_name,
    health_names_its_lines_fits_a_young_instance_and_blames_the_platform_fairly,
);

const ORDER: &str = "4945357007";
const PAYMENT: &str = "23064274473";

async fn every_review_is_listed_and_dismissing_asks_again() {
    let api = FakeApi::start().await;
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let (app, mut b) = signed_in(TestConfig::default().api(&api.uri()).clock(clock.clone())).await;
    api.payment(PAYMENT, "approved", "250.00", Some(ORDER));
    api.order(ORDER, "500.00", &[(PAYMENT, "250.00", "approved")], None);
    app.post(&format!("topic=payment&id={PAYMENT}"), &[], None)
        .await;
    app.run_jobs().await;
    app.post_fixture(&fixture("ipn-fraud-alert.json")).await;
    app.run_jobs().await;
    let id = app.count("SELECT id FROM fraud_reviews");
    let (status, _, html) = b.get("/fraud-reviews").await;
    assert_eq!(status, 200, "{html}");
    assert!(
        html.contains("<!DOCTYPE html>") || html.contains("<html"),
        "{html}"
    );
    assert!(
        html.contains(&format!(
            "href=\"/fraud-reviews/{id}\">Fraud review {id}</a> <strong>held</strong>"
        )),
        "{html}"
    );
    let (status, _, _) = b.get("/fraud-reviews?state=nonsense").await;
    assert_eq!(status, 400);
    // Dismissing lifts the block, which can release goods: it asks again.
    let path = format!("/fraud-reviews/{id}/dismiss");
    let (status, html) = b.act(&path, &[]).await;
    assert_eq!(status, 200, "asks again");
    assert!(
        html.contains(&format!("Lift the block on merchant order {ORDER}")),
        "{html}"
    );
    assert_eq!(
        app.count("SELECT count(*) FROM fraud_reviews WHERE state = 1"),
        1,
        "still held"
    );
    let (status, html) = b.act(&path, &[("sure", "yes")]).await;
    assert_eq!(status, 303);
    assert!(html.contains("review-state\">dismissed"), "{html}");
    let (_, _, html) = b.get("/fraud-reviews?state=held").await;
    assert!(html.contains("None here."), "{html}");
    let (_, _, html) = b.get("/fraud-reviews?state=dismissed").await;
    assert!(html.contains(&format!("Fraud review {id}</a>")), "{html}");
    app.stop().await;
}

async fn lists_take_the_command_lines_names_and_the_audit_hides_alert_sends() {
    let (app, mut b) = signed_in(TestConfig::default()).await;
    let (status, _, html) = b.get("/orders?state=released_before_fraud_alert").await;
    assert_eq!(status, 200, "{html}");
    // An alert send and a person's action, both in the audit.
    for (actor, via, action, item) in [("alerts", 4, 8, "job:1"), ("ana", 1, 3, "job:2")] {
        app.sql.execute(
            &format!(
                "INSERT INTO audit (at, actor, via, action, item, detail, outcome)
                 VALUES (1, '{actor}', {via}, {action}, '{item}', 'what {actor} did', 1)"
            ),
            &[],
        );
    }
    let (_, _, html) = b.get("/audit").await;
    assert!(html.contains("what alerts did") && html.contains("what ana did"));
    let (_, _, html) = b.get("/audit?alerts=hide").await;
    assert!(!html.contains("what alerts did"), "{html}");
    assert!(html.contains("what ana did"), "{html}");
    let (status, body) = app.admin("GET", "/api/audit?alerts=hide", TOKEN).await;
    assert_eq!(status, 200);
    assert_eq!(body.as_array().unwrap().len(), 1, "{body}");
    app.stop().await;
}

async fn missed_notifications_are_acknowledged_at_once_by_name() {
    let (app, mut b) = signed_in(TestConfig::default()).await;
    for (n, id) in [(1u8, "99"), (2, "98")] {
        app.sql.execute(
            &format!(
                "INSERT INTO deliveries (received_at, account, kind, topic, resource_id, query,
                     headers, remote_addr, fingerprint, signature, job_key)
                 VALUES (1, 'default', {}, 'payment', '{id}', '', '{{}}', '', $1, 0, 'payment:{id}')",
                pointhook::domain::Kind::Reconcile as i16
            ),
            &[SqlValue::Bytes(vec![n; 32])],
        );
    }
    let (_, _, html) = b.get("/").await;
    assert!(html.contains("Acknowledge all 2"), "{html}");
    // One acknowledged alone: the flash names the payment, not a key.
    let first = app.count("SELECT id FROM deliveries WHERE resource_id = '99'");
    let (status, html) = b
        .act("/acknowledge", &[("item", &format!("missed:{first}"))])
        .await;
    assert_eq!(status, 303);
    let flash = html.split("id=\"outcome\"").nth(1).unwrap();
    let flash = flash.split("</div>").next().unwrap();
    assert!(flash.contains("payment 99"), "{flash}");
    assert!(!flash.contains("missed:"), "{flash}");
    // A third, then all that are left at once.
    app.sql.execute(
        &format!(
            "INSERT INTO deliveries (received_at, account, kind, topic, resource_id, query,
                 headers, remote_addr, fingerprint, signature, job_key)
             VALUES (1, 'default', {}, 'payment', '97', '', '{{}}', '', $1, 0, 'payment:97')",
            pointhook::domain::Kind::Reconcile as i16
        ),
        &[SqlValue::Bytes(vec![3; 32])],
    );
    let (_, _, html) = b.get("/").await;
    assert!(html.contains("Acknowledge all 2"), "{html}");
    let (status, html) = b.act("/acknowledge/missed", &[]).await;
    assert_eq!(status, 303);
    assert!(html.contains("Nothing needs you."), "{html}");
    assert!(
        html.contains("acknowledge 2 missed notifications: payment "),
        "{html}"
    );
    assert_eq!(
        app.count("SELECT count(*) FROM audit WHERE item = 'missed:all'"),
        1
    );
    app.stop().await;
}

async fn health_names_its_lines_fits_a_young_instance_and_blames_the_platform_fairly() {
    let api = FakeApi::start().await;
    let (app, mut b) = signed_in(TestConfig::default().api(&api.uri())).await;
    // A payment the platform does not know: its answer is 404.
    app.post("topic=payment&id=555", &[], None).await;
    app.run_jobs().await;
    let minute = unix_ms_now() / 60_000 * 60_000 - 10 * 60_000;
    let sample = |series: &str, value| Sample {
        minute,
        instance: "a".into(),
        series: series.into(),
        value,
    };
    app.store
        .record_samples(vec![
            sample("notifications.ipn", 3),
            sample("notifications.webhook", 2),
            sample("ack.p50_us", 800),
            sample("ack.p99_us", 4000),
        ])
        .await
        .unwrap();
    let (status, _, html) = b.get("/health").await;
    assert_eq!(status, 200);
    let api_line = html.split("<dt>Platform API</dt>").nth(1).unwrap();
    let api_line = api_line.split("</dd>").next().unwrap();
    assert!(api_line.contains("answered 404"), "{api_line}");
    assert!(
        api_line.contains("class=\"ok\""),
        "a stranger's id is not the platform's fault: {api_line}"
    );
    assert!(
        api_line.contains(" UTC, ") && api_line.contains("ago") || api_line.contains("just now"),
        "{api_line}"
    );
    // Ten minutes of samples: the last hour, not a day.
    assert!(
        html.contains("Notifications per minute, by kind (last hour)"),
        "{html}"
    );
    for name in [
        "ipn",
        "webhook",
        "p50: half answered faster",
        "p99: 99 in 100 answered faster",
    ] {
        assert!(
            html.contains(&format!("</span>{name}</li>")),
            "legend {name}: {html}"
        );
    }
    // No time to the millisecond anywhere on the page.
    let ms = html
        .as_bytes()
        .windows(6)
        .any(|w| w[0] == b'.' && w[1..4].iter().all(u8::is_ascii_digit) && w[4] == b'Z');
    assert!(!ms, "{html}");
    app.stop().await;
}
