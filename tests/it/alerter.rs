//! The alerter end to end, on both stores: what needs a person reaches a
//! real SMTP server and a real webhook receiver on loopback, once per
//! incident, with a link into the console, and the resolution after; a
//! dead SMTP server delays nothing; several instances on one PostgreSQL
//! tell once. Rounds are driven by the test (the loop's interval is an
//! hour), messages awaited as they arrive.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use pointhook::clock::{ManualClock, unix_ms_now};
use pointhook::domain::AuditOutcome;
use serde_json::Value;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::backends::Backend;
use crate::console::Browser;
use crate::helpers::*;
use crate::platform::*;
use crate::smtp::SmtpServer;

on_both_backends!(
    a_held_fraud_review_is_told_once_on_both_channels_then_resolved,
    five_jobs_dying_of_one_cause_are_one_message_and_one_resolution,
    a_destination_failing_past_its_threshold_is_told_and_its_recovery_too,
    a_dead_smtp_server_delays_nothing,
    storage_not_taking_writes_is_told_by_the_instance_that_sees_it,
);

const TOKEN: &str = "admin-secret-for-the-alerter-tests";
const PUBLIC: &str = "https://ph.shop.example:8081";
const ORDER: &str = "4945357007";
const PAYMENT: &str = "23064274473";

/// A chat tool's incoming webhook: takes every POST to `/hook`.
struct Hook {
    server: MockServer,
}

impl Hook {
    async fn start() -> Hook {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/hook"))
            .respond_with(ResponseTemplate::new(200))
            .mount(&server)
            .await;
        Hook { server }
    }

    fn url(&self) -> String {
        format!("{}/hook", self.server.uri())
    }

    async fn messages(&self) -> Vec<Value> {
        self.server
            .received_requests()
            .await
            .unwrap_or_default()
            .iter()
            .map(|r| serde_json::from_slice(&r.body).unwrap())
            .collect()
    }
}

/// Both channels: e-mail through `smtp_port`, and the hook.
fn channels(smtp_port: u16, hook: &Hook, rules: &str) -> String {
    format!(
        "[[alerts]]\nkind = \"email\"\nto = [\"ops@shop.example\"]\n\
         [[alerts]]\nkind = \"webhook\"\nurl = \"{}\"\n\
         [smtp]\nhost = \"127.0.0.1\"\nport = {smtp_port}\nstarttls = false\n\
         from = \"pointhook@shop.example\"\n\
         [alert_rules]\ncheck_interval_secs = 3600\n{rules}\n",
        hook.url()
    )
}

/// An app that tells both channels, with an admin listener whose public
/// address the messages link to.
async fn alerting(tc: TestConfig, smtp_port: u16, hook: &Hook, rules: &str) -> TestApp {
    spawn_app_with(TestConfig {
        admin_token: Some(TOKEN.into()),
        admin: format!("public_url = \"{PUBLIC}\"\nsession_idle_secs = 100000000"),
        ..tc.extra(&channels(smtp_port, hook, rules))
    })
    .await
}

/// Messages handed to the channels by one round.
async fn round(app: &TestApp) -> usize {
    app.alerter
        .as_ref()
        .expect("[[alerts]]")
        .round()
        .await
        .messages
}

/// Waits until the SMTP server holds `n` mails and the hook `n` messages.
async fn told(smtp: &SmtpServer, hook: &Hook, n: usize) -> (Vec<String>, Vec<Value>) {
    wait_for(&format!("{n} message(s) on both channels"), async || {
        smtp.mails().len() >= n && hook.messages().await.len() >= n
    })
    .await;
    let (mails, messages) = (smtp.mails(), hook.messages().await);
    assert_eq!((mails.len(), messages.len()), (n, n), "{messages:?}");
    (mails, messages)
}

/// Waits until the audit holds `n` sends by the alerts, all ended as
/// `outcome`.
async fn audited(app: &TestApp, n: i64, outcome: AuditOutcome) {
    let sql = format!(
        "SELECT count(*) FROM audit WHERE actor = 'alerts' AND outcome = {}",
        outcome as i16
    );
    wait_for(&format!("{n} alert(s) audited"), async || {
        app.count(&sql) >= n
    })
    .await;
    assert_eq!(app.count(&sql), n);
}

async fn a_held_fraud_review_is_told_once_on_both_channels_then_resolved() {
    let (smtp, hook, api) = (
        SmtpServer::start().await,
        Hook::start().await,
        FakeApi::start().await,
    );
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let app = alerting(
        TestConfig::with_secret()
            .api(&api.uri())
            .clock(clock.clone()),
        smtp.port,
        &hook,
        "",
    )
    .await;
    assert_eq!(round(&app).await, 0, "nothing needs a person yet");
    // Half paid, so not released: the alert is held for a person.
    api.payment(PAYMENT, "approved", "250.00", Some(ORDER));
    api.order(ORDER, "500.00", &[(PAYMENT, "250.00", "approved")], None);
    app.post(&format!("topic=payment&id={PAYMENT}"), &[], None)
        .await;
    app.run_jobs().await;
    app.post_fixture(&fixture("ipn-fraud-alert.json")).await;
    app.run_jobs().await;
    let id = app.count("SELECT id FROM fraud_reviews");
    assert_eq!(round(&app).await, 1);
    let (mails, hooks) = told(&smtp, &hook, 1).await;
    let link = format!("{PUBLIC}/fraud-reviews/{id}");
    let mail = &mails[0];
    assert!(
        mail.contains("[pointhook] fraud alert held for you"),
        "{mail}"
    );
    assert!(
        mail.contains(&link),
        "every message links into the console: {mail}"
    );
    assert!(mail.contains("refund 250.00 to the buyer"), "{mail}");
    assert_eq!(hooks[0]["kind"], "fraud_review_held");
    assert_eq!(hooks[0]["severity"], "critical");
    assert_eq!(hooks[0]["url"], link.as_str());
    let text = hooks[0]["text"].as_str().unwrap();
    assert!(text.contains(&format!("merchant order {ORDER}")), "{text}");
    assert!(text.contains("refund 250.00 to the buyer"), "{text}");
    assert_eq!(
        metric(
            &app,
            TOKEN,
            "pointhook_attention_items{kind=\"fraud_review_held\"}"
        )
        .await,
        1
    );
    assert_eq!(metric(&app, TOKEN, "pointhook_fraud_reviews_held").await, 1);
    // Once per incident, however many rounds see it.
    assert_eq!(round(&app).await, 0);
    clock.advance(Duration::from_secs(600));
    assert_eq!(round(&app).await, 0);
    // A person dismisses it: told resolved, once.
    app.store.dismiss_review(id, unix_ms_now()).await.unwrap();
    assert_eq!(round(&app).await, 1);
    let (mails, hooks) = told(&smtp, &hook, 2).await;
    assert!(
        mails[1].contains("[pointhook] resolved, fraud alert held for you"),
        "{}",
        mails[1]
    );
    assert_eq!(hooks[1]["severity"], "info");
    assert_eq!(hooks[1]["url"], link.as_str());
    assert_eq!(round(&app).await, 0, "resolved once");
    // Each send is in the audit, as the review's own.
    audited(&app, 4, AuditOutcome::Done).await;
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) FROM audit WHERE actor = 'alerts' AND item = 'fraud_review:{id}'"
        )),
        4
    );
    app.stop().await;
}

async fn five_jobs_dying_of_one_cause_are_one_message_and_one_resolution() {
    let (smtp, hook, api) = (
        SmtpServer::start().await,
        Hook::start().await,
        FakeApi::start().await,
    );
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let app = alerting(
        TestConfig::default().api(&api.uri()).clock(clock.clone()),
        smtp.port,
        &hook,
        "digest_secs = 60",
    )
    .await;
    let orders = ["801", "802", "803", "804", "805"];
    for order in orders {
        api.fail_next(&format!("/merchant_orders/{order}"), 1000, status(500))
            .await;
        app.post(&format!("topic=merchant_order&id={order}"), &[], None)
            .await;
    }
    for _ in 0..8 {
        app.run_jobs().await;
        clock.advance(Duration::from_secs(400));
    }
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) FROM jobs WHERE state = {}",
            JobState::Dead as i16
        )),
        5
    );
    assert_eq!(round(&app).await, 1, "one message for the burst");
    let (mails, hooks) = told(&smtp, &hook, 1).await;
    let m = &hooks[0];
    assert_eq!(m["kind"], "dead_jobs");
    assert_eq!(m["severity"], "warning");
    assert_eq!(m["url"], format!("{PUBLIC}/#dead-jobs"));
    assert!(
        m["text"].as_str().unwrap().starts_with("5 job(s) gave up"),
        "{m}"
    );
    let items: Vec<&str> = m["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i.as_str().unwrap())
        .collect();
    assert_eq!(items.len(), 5);
    for order in orders {
        assert!(
            items
                .iter()
                .any(|i| i.contains(&format!("merchant_order:{order}")) && i.contains("500")),
            "{items:?}"
        );
    }
    assert!(
        mails[0].contains(&format!("{PUBLIC}/#dead-jobs")),
        "{}",
        mails[0]
    );
    assert!(
        mails[0].contains("- job "),
        "the e-mail lists each: {}",
        mails[0]
    );
    clock.advance(Duration::from_secs(120));
    assert_eq!(round(&app).await, 0, "once, past the digest too");
    assert_eq!(
        metric(&app, TOKEN, "pointhook_attention_items{kind=\"dead_jobs\"}").await,
        5
    );
    // Retried: one resolution for the five.
    assert_eq!(app.store.retry_dead_jobs(unix_ms_now()).await.unwrap(), 5);
    assert_eq!(round(&app).await, 1);
    let (_, hooks) = told(&smtp, &hook, 2).await;
    assert_eq!(hooks[1]["text"], "resolved, 5 job(s) gave up");
    assert_eq!(hooks[1]["items"].as_array().unwrap().len(), 5);
    assert_eq!(round(&app).await, 0);
    audited(&app, 4, AuditOutcome::Done).await;
    app.stop().await;
}

async fn a_destination_failing_past_its_threshold_is_told_and_its_recovery_too() {
    let (smtp, hook, api) = (
        SmtpServer::start().await,
        Hook::start().await,
        FakeApi::start().await,
    );
    let merchant = Merchant::start().await;
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let app = alerting(
        TestConfig::default()
            .api(&api.uri())
            .clock(clock.clone())
            .extra(&merchant.config()),
        smtp.port,
        &hook,
        "destination_failing_secs = 2",
    )
    .await;
    api.payment(PAYMENT, "approved", "100.5", Some(ORDER));
    api.order(ORDER, "100.5", &[(PAYMENT, "100.5", "approved")], None);
    app.post(&format!("topic=payment&id={PAYMENT}"), &[], None)
        .await;
    app.run_jobs().await;
    let events = app.count("SELECT count(*) FROM outbox") as u64;
    assert!(events > 0);
    merchant.fail_next(events, 500).await;
    assert_eq!(app.deliver_events().await, events as usize);
    assert_eq!(round(&app).await, 0, "failing, not yet for the threshold");
    clock.advance(Duration::from_secs(3));
    assert_eq!(round(&app).await, 1);
    let (mails, hooks) = told(&smtp, &hook, 1).await;
    assert_eq!(hooks[0]["kind"], "destination_failing");
    assert_eq!(hooks[0]["url"], format!("{PUBLIC}/destinations/default"));
    let text = hooks[0]["text"].as_str().unwrap();
    assert!(
        text.contains("destination default has failed every attempt for 3 seconds"),
        "{text}"
    );
    assert!(
        mails[0].contains(&format!("{PUBLIC}/destinations/default")),
        "{}",
        mails[0]
    );
    assert_eq!(
        metric(
            &app,
            TOKEN,
            "pointhook_destination_failing_seconds{destination=\"default\"}"
        )
        .await,
        3
    );
    // The inbox shows it, with the way to its page.
    crate::console::with_operator(&app, "ana").await;
    let mut b = Browser::new(&app);
    assert_eq!(
        b.sign_in("ana", crate::console::PASSWORD).await.status(),
        303
    );
    let (_, _, html) = b.get("/").await;
    assert!(html.contains("Destinations that need you (1)"), "{html}");
    assert!(html.contains("href=\"/destinations/default\""), "{html}");
    let (status, _, html) = b.get("/destinations/default").await;
    assert_eq!(status, 200);
    assert!(html.contains("id=\"state-default\">failing"), "{html}");
    assert_eq!(round(&app).await, 0, "told once");
    // The endpoint answers again: the next attempts succeed.
    clock.advance(Duration::from_secs(5));
    assert_eq!(app.deliver_events().await, events as usize);
    assert_eq!(round(&app).await, 1);
    let (_, hooks) = told(&smtp, &hook, 2).await;
    assert_eq!(hooks[1]["severity"], "info");
    assert!(
        hooks[1]["text"]
            .as_str()
            .unwrap()
            .starts_with("resolved, destination failing: destination default"),
        "{}",
        hooks[1]
    );
    let (_, _, html) = b.get("/").await;
    assert!(!html.contains("Destinations that need you"), "{html}");
    audited(&app, 4, AuditOutcome::Done).await;
    app.stop().await;
}

/// An SMTP server that accepts connections and never says a word.
async fn dead_smtp() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    port
}

async fn a_dead_smtp_server_delays_nothing() {
    let (hook, merchant) = (Hook::start().await, Merchant::start().await);
    let app = alerting(
        TestConfig::default().extra(&merchant.config()),
        dead_smtp().await,
        &hook,
        "send_timeout_secs = 300",
    )
    .await;
    assert!(
        app.store
            .disable_destination("default", "the endpoint answered 410 Gone", unix_ms_now())
            .await
            .unwrap()
    );
    assert_eq!(round(&app).await, 1, "the round hands over and returns");
    wait_for("the webhook's message", async || {
        hook.messages().await.len() == 1
    })
    .await;
    let m = &hook.messages().await[0];
    assert_eq!(m["kind"], "destination_failing");
    assert!(
        m["text"]
            .as_str()
            .unwrap()
            .contains("destination default is disabled: the endpoint answered 410 Gone"),
        "{m}"
    );
    // The e-mail is still on its way (started, not ended)...
    let sending = format!(
        "SELECT count(*) FROM audit WHERE actor = 'alerts' AND outcome = {} AND detail LIKE '%e-mail%'",
        AuditOutcome::Started as i16
    );
    wait_for("the e-mail's send begun", async || app.count(&sending) == 1).await;
    // ...and a notification is still acknowledged at once.
    let res = app.post("topic=payment&id=777", &[], None).await;
    assert_eq!(res.status(), 200);
    // A person enables it in the console: the webhook hears it resolved.
    crate::console::with_operator(&app, "ana").await;
    let mut b = Browser::new(&app);
    assert_eq!(
        b.sign_in("ana", crate::console::PASSWORD).await.status(),
        303
    );
    let (_, _, html) = b.get("/").await;
    assert!(html.contains("Destinations that need you (1)"), "{html}");
    assert!(
        html.contains("action=\"/destinations/default/enable\""),
        "{html}"
    );
    let (status, html) = b.act("/destinations/default/enable", &[]).await;
    assert_eq!(status, 303);
    assert!(html.contains("enable destination default"), "{html}");
    assert!(html.contains("id=\"state-default\">enabled"), "{html}");
    assert_eq!(round(&app).await, 1);
    wait_for("the resolution on the webhook", async || {
        hook.messages().await.len() == 2
    })
    .await;
    assert_eq!(hook.messages().await[1]["severity"], "info");
    assert_eq!(app.count(&sending), 1, "the e-mail still hangs");
    // Stopping does not wait for it either (`stop` fails past 20 s).
    app.stop().await;
}

async fn storage_not_taking_writes_is_told_by_the_instance_that_sees_it() {
    let (smtp, hook) = (SmtpServer::start().await, Hook::start().await);
    let app = alerting(
        TestConfig::default(),
        smtp.port,
        &hook,
        "storage_not_ready_secs = 1",
    )
    .await;
    app.store.fail_commits(true);
    let res = app.post("topic=payment&id=777", &[], None).await;
    assert_eq!(res.status(), 503);
    // Told once a second has passed with no commit.
    wait_for("storage not ready told", async || round(&app).await == 1).await;
    let (_, hooks) = told(&smtp, &hook, 1).await;
    assert_eq!(hooks[0]["kind"], "storage_not_ready");
    assert_eq!(hooks[0]["severity"], "critical");
    assert_eq!(hooks[0]["url"], format!("{PUBLIC}/health"));
    assert_eq!(round(&app).await, 0);
    app.store.fail_commits(false);
    let res = app.post("topic=payment&id=778", &[], None).await;
    assert_eq!(res.status(), 200);
    assert_eq!(round(&app).await, 1);
    let (_, hooks) = told(&smtp, &hook, 2).await;
    assert_eq!(hooks[1]["severity"], "info");
    app.stop().await;
}

/// Two instances on one PostgreSQL database: a round each, at once, and
/// one message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_instances_tell_once() {
    let Some(db) = Backend::postgres() else {
        return;
    };
    let (smtp, hook, merchant) = (
        SmtpServer::start().await,
        Hook::start().await,
        Merchant::start().await,
    );
    let one = || TestConfig {
        backend: db.clone(),
        ..TestConfig::default().extra(&merchant.config())
    };
    let a = alerting(one(), smtp.port, &hook, "").await;
    let b = alerting(one(), smtp.port, &hook, "").await;
    assert!(
        a.store
            .disable_destination("default", "gone", unix_ms_now())
            .await
            .unwrap()
    );
    let (x, y) = tokio::join!(round(&a), round(&b));
    assert_eq!(x + y, 1, "one instance tells");
    told(&smtp, &hook, 1).await;
    assert_eq!(round(&a).await + round(&b).await, 0);
    a.stop().await;
    b.stop().await;
}

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
