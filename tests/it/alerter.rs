//! The alerter end to end, on both stores: what needs a person reaches a
//! real SMTP server and a real webhook receiver on loopback, once per
//! incident, with a link into the console, and the resolution after; a
//! dead SMTP server delays nothing; several instances on one PostgreSQL
//! tell once. Rounds are driven by the test (the loop's interval is an
//! hour), messages awaited as they arrive.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use pointhook::domain::AuditOutcome;
use pointhook_common::clock::{ManualClock, unix_ms_now};

use crate::alerting::*;
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
    a_platform_gone_silent_is_told_and_its_next_notification_resolves_it,
);

const ORDER: &str = "4945357007";
const PAYMENT: &str = "23064274473";

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
            ADMIN_TOKEN,
            "pointhook_attention_items{kind=\"fraud_review_held\"}"
        )
        .await,
        1
    );
    assert_eq!(
        metric(&app, ADMIN_TOKEN, "pointhook_fraud_reviews_held").await,
        1
    );
    // Once per incident, however many rounds see it.
    assert_eq!(round(&app).await, 0);
    clock.advance(Duration::from_secs(600));
    assert_eq!(round(&app).await, 0);
    // A person dismisses it: told resolved, once, saying how and by whom.
    let actions = pointhook::actions::Actions {
        store: app.store.clone(),
        clock: clock.clone(),
    };
    actions
        .dismiss_review(&pointhook::operators::Actor::operator("ana"), id)
        .await
        .unwrap();
    assert_eq!(round(&app).await, 1);
    let (mails, hooks) = told(&smtp, &hook, 2).await;
    assert!(
        mails[1].contains("[pointhook] resolved, fraud alert held for you"),
        "{}",
        mails[1]
    );
    assert_eq!(
        hooks[1]["text"],
        format!(
            "resolved, fraud alert held for you: fraud review {id} dismissed by ana: \
             merchant order {ORDER} unblocked, decided again"
        )
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
        m["text"].as_str().unwrap().starts_with("5 jobs gave up"),
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
    for item in &items {
        assert_eq!(item.matches("attempts").count(), 1, "said once: {item}");
    }
    // A mail any client reads as UTF-8 text, dated and identified.
    let mail = mails[0].to_ascii_lowercase();
    for header in [
        "mime-version: 1.0",
        "content-type: text/plain; charset=utf-8",
        "message-id: <",
        "date: ",
    ] {
        assert!(
            mail.lines().any(|l| l.starts_with(header)),
            "{header}: {mail}"
        );
    }
    clock.advance(Duration::from_secs(120));
    assert_eq!(round(&app).await, 0, "once, past the digest too");
    assert_eq!(
        metric(
            &app,
            ADMIN_TOKEN,
            "pointhook_attention_items{kind=\"dead_jobs\"}"
        )
        .await,
        5
    );
    // Retried: one resolution for the five.
    assert_eq!(app.store.retry_dead_jobs(unix_ms_now()).await.unwrap(), 5);
    assert_eq!(round(&app).await, 1);
    let (_, hooks) = told(&smtp, &hook, 2).await;
    assert_eq!(hooks[1]["text"], "resolved, 5 jobs gave up");
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
            ADMIN_TOKEN,
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
    // The admin API's inbox lists it too.
    let (status, inbox) = app.admin("GET", "/api/inbox", ADMIN_TOKEN).await;
    assert_eq!(status, 200);
    assert_eq!(inbox["destinations"][0]["name"], "default");
    assert_eq!(inbox["destinations"][0]["state"], "disabled");
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

async fn a_platform_gone_silent_is_told_and_its_next_notification_resolves_it() {
    let (smtp, hook) = (SmtpServer::start().await, Hook::start().await);
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let app = alerting(
        TestConfig {
            accounts: "[[accounts]]\nname = \"default\"\naccess_token = \"tok\"\n\
                       expect_notifications_within_secs = 3600\n\
                       [[accounts]]\nname = \"quiet\"\naccess_token = \"tok\"\n\
                       expect_notifications_within_secs = 3600\n"
                .into(),
            ..TestConfig::default().clock(clock.clone())
        },
        smtp.port,
        &hook,
        "",
    )
    .await;
    assert_eq!(
        app.post("topic=payment&id=777", &[], None).await.status(),
        200
    );
    clock.advance(Duration::from_secs(3000));
    assert_eq!(round(&app).await, 0, "heard within the hour");
    clock.advance(Duration::from_secs(700));
    assert_eq!(
        round(&app).await,
        1,
        "default is silent; quiet never heard anything, so is not"
    );
    let (_, hooks) = told(&smtp, &hook, 1).await;
    assert_eq!(hooks[0]["kind"], "platform_silent");
    assert_eq!(
        hooks[0]["text"],
        "platform silent: account default has heard nothing from the platform for 61 minutes"
    );
    assert_eq!(
        metric(
            &app,
            ADMIN_TOKEN,
            "pointhook_seconds_since_last_notification{account=\"default\"}"
        )
        .await,
        3700
    );
    assert_eq!(round(&app).await, 0);
    // The next notification, read since the last look: resolved.
    assert_eq!(
        app.post("topic=payment&id=778", &[], None).await.status(),
        200
    );
    assert_eq!(round(&app).await, 1);
    let (_, hooks) = told(&smtp, &hook, 2).await;
    assert_eq!(hooks[1]["severity"], "info");
    app.stop().await;
}
