//! Several destinations over real HTTP: each gets exactly the event types
//! and accounts it takes, signed with each of its secrets, on a queue of
//! its own; a `410` disables one, a person enables and recovers it; a
//! secret that is not a Standard Webhooks one stops start-up.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use pointhook_common::clock::{Clock, ManualClock};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::helpers::*;
use crate::platform::*;

on_both_backends!(
    two_destinations_with_filters_get_exactly_their_types,
    rotation_verifies_with_either_secret,
    a_410_disables_and_recover_since_delivers_the_held_events_with_their_ids,
    a_failing_destination_never_delays_the_other,
    the_short_form_is_the_destination_default_unchanged,
);

const ORDER: &str = "4945357007";
const PAYMENT: &str = "123456789";
const TOKEN: &str = "admin-token-0123456789-0123456789-abcd";

/// A `[[destinations]]` entry for `merchant` with `extra` keys.
fn destination(name: &str, merchant: &Merchant, extra: &str) -> String {
    format!(
        "[[destinations]]\nname = \"{name}\"\nurl = \"{}/events\"\ntimeout_secs = 2\n{extra}\n",
        merchant.server.uri()
    )
}

async fn app_with(api: &FakeApi, clock: Arc<ManualClock>, destinations: &str) -> TestApp {
    spawn_app_with(
        TestConfig::default()
            .api(&api.uri())
            .clock(clock)
            .admin(TOKEN)
            .extra(destinations),
    )
    .await
}

/// A released order and its approved payment: `order.released` and
/// `payment.updated`.
async fn decide_an_order_and_its_payment(api: &FakeApi, app: &TestApp) {
    api.payment(PAYMENT, "approved", "100.5", Some(ORDER));
    api.order(ORDER, "100.5", &[(PAYMENT, "100.5", "approved")], None);
    app.post(&format!("topic=payment&id={PAYMENT}"), &[], None)
        .await;
    app.run_jobs().await;
}

/// `(webhook-id, type)` of every POST `merchant` received.
async fn got(merchant: &Merchant) -> Vec<(String, String)> {
    merchant
        .received()
        .await
        .iter()
        .map(|r| {
            let body: Value = serde_json::from_slice(&r.body).unwrap();
            (
                r.headers["webhook-id"].to_str().unwrap().to_string(),
                body["type"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The id of the event of `event_type`, as stored.
fn id_of(app: &TestApp, event_type: &str) -> String {
    app.sql
        .value(
            "SELECT id FROM events WHERE type = $1",
            &[SqlValue::Text(event_type.into())],
        )
        .text()
}

async fn two_destinations_with_filters_get_exactly_their_types() {
    let (shop, erp, all) = (
        Merchant::start().await,
        Merchant::start().await,
        Merchant::start().await,
    );
    let api = FakeApi::start().await;
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let config = destination(
        "shop",
        &shop,
        &format!("secret = \"{MERCHANT_SECRET}\"\ntypes = [\"order.*\"]"),
    ) + &destination(
        "erp",
        &erp,
        &format!("secret = \"{MERCHANT_SECRET}\"\ntypes = [\"payment.*\"]"),
    ) + &destination(
        "elsewhere",
        &all,
        &format!("secret = \"{MERCHANT_SECRET}\"\naccounts = [\"default\"]"),
    );
    let app = app_with(&api, clock, &config).await;
    decide_an_order_and_its_payment(&api, &app).await;
    assert_eq!(app.deliver_events().await, 4, "2 + 1 + 1 posts");
    let (released, updated) = (
        id_of(&app, "order.released"),
        id_of(&app, "payment.updated"),
    );
    assert_eq!(
        got(&shop).await,
        [(released.clone(), "order.released".into())]
    );
    assert_eq!(
        got(&erp).await,
        [(updated.clone(), "payment.updated".into())]
    );
    let mut everything = got(&all).await;
    everything.sort();
    let mut expected = vec![
        (released, "order.released".to_string()),
        (updated, "payment.updated".to_string()),
    ];
    expected.sort();
    assert_eq!(everything, expected, "the same ids at every destination");
    // Every destination finished: each event is delivered as a whole.
    assert_eq!(
        app.count("SELECT count(*) FROM events WHERE state = 1"),
        2,
        "{:?}",
        app.sql.rows("SELECT type, state FROM events", &[])
    );
    let (status, body) = app.admin("GET", "/api/destinations", TOKEN).await;
    assert_eq!(status, 200);
    let names: Vec<&str> = body["destinations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["elsewhere", "erp", "shop"]);
    app.stop().await;
}

async fn rotation_verifies_with_either_secret() {
    let merchant = Merchant::start().await;
    let api = FakeApi::start().await;
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let new = pointhook::config::SigningKey::generate();
    let config = destination(
        "shop",
        &merchant,
        &format!("secrets = [\"{MERCHANT_SECRET}\", \"{new}\"]"),
    );
    let app = app_with(&api, clock, &config).await;
    decide_an_order_and_its_payment(&api, &app).await;
    app.deliver_events().await;
    let received = merchant.received().await;
    assert_eq!(received.len(), 2);
    for r in &received {
        let signature = r.headers["webhook-signature"].to_str().unwrap();
        assert_eq!(signature.split(' ').count(), 2, "{signature}");
        for secret in [MERCHANT_SECRET, new.as_str()] {
            let wh = standardwebhooks::Webhook::new(secret).unwrap();
            wh.verify(&r.body, &r.headers)
                .unwrap_or_else(|e| panic!("{secret}: {e:?}"));
        }
        let stranger =
            standardwebhooks::Webhook::new(&pointhook::config::SigningKey::generate()).unwrap();
        assert!(stranger.verify(&r.body, &r.headers).is_err());
    }
    app.stop().await;
}

async fn a_410_disables_and_recover_since_delivers_the_held_events_with_their_ids() {
    let (gone, other) = (Merchant::start().await, Merchant::start().await);
    gone.fail_next(1, 410).await;
    let api = FakeApi::start().await;
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let config = destination(
        "shop",
        &gone,
        &format!("secret = \"{MERCHANT_SECRET}\"\ntypes = [\"order.*\"]"),
    ) + &destination("erp", &other, &format!("secret = \"{MERCHANT_SECRET}\""));
    let app = app_with(&api, clock.clone(), &config).await;
    let before = pointhook_common::clock::rfc3339(pointhook::store::unix_ms(clock.now()) - 1000);
    decide_an_order_and_its_payment(&api, &app).await;
    app.deliver_events().await;
    let (_, shop) = app.admin("GET", "/api/destinations/shop", TOKEN).await;
    assert_eq!(shop["state"], "disabled", "{shop}");
    assert_eq!(shop["disabled_reason"], "the endpoint answered 410 Gone");
    assert_eq!(shop["backlog"], 1);
    assert_eq!(shop["paused"], 1);
    // The other destination goes on.
    assert_eq!(got(&other).await.len(), 2);
    // Another order, decided while the shop is disabled: paused too.
    api.order("4945357008", "10", &[("555", "10", "approved")], None);
    app.post("topic=merchant_order&id=4945357008", &[], None)
        .await;
    app.run_jobs().await;
    clock.advance(Duration::from_secs(5));
    app.deliver_events().await;
    assert_eq!(got(&gone).await.len(), 1, "nothing posted while disabled");
    let gauge = |name: &str| format!("pointhook_destination_{name}{{destination=\"shop\"}}");
    assert_eq!(metric(&app, TOKEN, &gauge("disabled")).await, 1);
    assert_eq!(metric(&app, TOKEN, &gauge("backlog")).await, 2);
    // Recovering a disabled destination is refused; enabled, it is not.
    let on = &app;
    let recover = |since: String| async move {
        on.client
            .post(format!(
                "http://{}/api/destinations/shop/recover",
                on.admin_addr.unwrap()
            ))
            .bearer_auth(TOKEN)
            .json(&json!({ "since": since }))
            .send()
            .await
            .unwrap()
    };
    assert_eq!(recover(before.clone()).await.status(), 409);
    let (status, _) = app
        .admin("POST", "/api/destinations/shop/enable", TOKEN)
        .await;
    assert_eq!(status, 200);
    app.deliver_events().await;
    assert_eq!(
        got(&gone).await.len(),
        1,
        "enabled: paused events still wait"
    );
    let (status, answer) = answer(recover(before).await).await;
    assert_eq!(
        (status, answer["queued"].clone()),
        (200, json!(2)),
        "{answer}"
    );
    app.deliver_events().await;
    let held = got(&gone).await;
    let released = id_of(&app, "order.released");
    let ids: Vec<&str> = held.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids.len(), 3, "{held:?}");
    assert_eq!(ids[0], released, "the first attempt, refused with 410");
    assert!(ids[1..].contains(&released.as_str()), "the same id again");
    let (_, shop) = app.admin("GET", "/api/destinations/shop", TOKEN).await;
    assert_eq!(shop["state"], "enabled");
    assert_eq!(shop["backlog"], 0);
    // Each action of a person on the destination is in the audit, as `api`,
    // the refused recovery too.
    assert_eq!(
        app.count("SELECT count(*) FROM audit WHERE item = 'destination:shop' AND actor = 'api'"),
        3,
        "the recovery refused while disabled, the enable, the recovery"
    );
    // The CLI acts as the OS user, through the same record.
    let (ok, _, err) = cli_async(&app, &["destinations", "disable", "shop"]).await;
    assert!(ok, "{err}");
    let (ok, _, err) = cli_async(&app, &["destinations", "enable", "nope"]).await;
    assert!(!ok && err.contains("no destination"), "{err}");
    assert_eq!(
        app.count("SELECT count(*) FROM audit WHERE item = 'destination:shop'"),
        4
    );
    assert_eq!(shop["recovery"]["delivered"], 2, "{shop}");
    assert_eq!(shop["recovery"]["waiting"], 0);
    app.stop().await;
}

/// The ERP holds each POST for seconds and then fails; the shop answers at
/// once. Every event reaches the shop while every one of the ERP's is
/// still out or failed: the shop's queue never waits for the ERP's.
async fn a_failing_destination_never_delays_the_other() {
    let slow = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/events"))
        .respond_with(ResponseTemplate::new(500).set_delay(Duration::from_secs(20)))
        .mount(&slow)
        .await;
    let shop = Merchant::start().await;
    let api = FakeApi::start().await;
    const ORDERS: usize = 6;
    let orders: Vec<String> = (0..ORDERS).map(|i| format!("49453572{i:02}")).collect();
    for (i, order) in orders.iter().enumerate() {
        api.order(order, "10", &[(&format!("30{i}"), "10", "approved")], None);
    }
    let config = format!(
        "[[destinations]]\nname = \"erp\"\nurl = \"{}/events\"\nunsigned = true\ntimeout_secs = 30\nmax_in_flight = 2\n",
        slow.uri()
    ) + &destination("shop", &shop, &format!("secret = \"{MERCHANT_SECRET}\""));
    let mut tc = TestConfig::default()
        .api(&api.uri())
        .admin(TOKEN)
        .extra(&config);
    tc.worker_loop = true;
    let app = spawn_app_with(tc).await;
    for order in &orders {
        app.post(&format!("topic=merchant_order&id={order}"), &[], None)
            .await;
    }
    let at = |destination: &str, state: EventState| {
        app.count(&format!(
            "SELECT count(*) FROM outbox WHERE destination = '{destination}' AND state = {}",
            state as i16
        ))
    };
    wait_for("every event delivered to the shop", async || {
        at("shop", EventState::Delivered) == ORDERS as i64
    })
    .await;
    assert_eq!(got(&shop).await.len(), ORDERS);
    assert_eq!(
        at("erp", EventState::Delivered),
        0,
        "the ERP has answered nothing yet"
    );
    assert_eq!(at("erp", EventState::Pending), ORDERS as i64);
    // At most its own two POSTs are out at the ERP; the rest wait there.
    assert!(slow.received_requests().await.unwrap().len() <= 2);
    app.stop().await;
}

async fn the_short_form_is_the_destination_default_unchanged() {
    let merchant = Merchant::start().await;
    let api = FakeApi::start().await;
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let app = app_with(&api, clock, &merchant.config()).await;
    decide_an_order_and_its_payment(&api, &app).await;
    assert_eq!(app.deliver_events().await, 2);
    for r in merchant.received().await {
        let signature = r.headers["webhook-signature"].to_str().unwrap();
        assert!(!signature.contains(' '), "one secret, one signature");
        standardwebhooks::Webhook::new(MERCHANT_SECRET)
            .unwrap()
            .verify(&r.body, &r.headers)
            .unwrap();
    }
    let (_, body) = app.admin("GET", "/api/destinations", TOKEN).await;
    let d = &body["destinations"][0];
    assert_eq!(d["name"], "default");
    assert_eq!(d["state"], "enabled");
    assert!(d["url"].as_str().unwrap().ends_with("/events"), "{d}");
    app.stop().await;
}

/// `check-config` and `serve` refuse a secret the official libraries would
/// read otherwise, with one line naming the key, exit 64.
#[test]
fn non_standard_secrets_are_refused_at_start_up() {
    let dir = tempfile::tempdir().unwrap();
    for (secret, key) in [
        ("whsec_aGVsbG8=", "destinations[0].secret"),
        (
            "your_secret_key_here_0123456789abcdef",
            "destinations[0].secret",
        ),
        (
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS",
            "destinations[0].secret",
        ),
    ] {
        let config = dir.path().join("c.toml");
        std::fs::write(
            &config,
            format!(
                "[storage]\npath = \"x.db\"\n[api]\nbase_url = \"http://127.0.0.1:1\"\n\
                 [[accounts]]\nname = \"default\"\naccess_token = \"t\"\n\
                 [[destinations]]\nname = \"erp\"\nurl = \"http://127.0.0.1:9/e\"\nsecret = \"{secret}\"\n"
            ),
        )
        .unwrap();
        for command in ["check-config", "serve"] {
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_pointhook"))
                .args(["--config", config.to_str().unwrap(), command])
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(64), "{command} {secret}");
            let stderr = String::from_utf8(out.stderr).unwrap();
            assert_eq!(stderr.lines().count(), 1, "{stderr}");
            assert!(stderr.contains(key), "{stderr}");
            assert!(
                !stderr.contains(secret),
                "the secret is not printed: {stderr}"
            );
        }
    }
}

#[test]
fn secret_generate_prints_a_secret_the_official_crate_reads() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pointhook"))
        .args(["secret", "generate"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let secret = String::from_utf8(out.stdout).unwrap();
    let secret = secret.trim();
    assert!(secret.starts_with("whsec_"), "{secret}");
    pointhook::config::SigningKey::parse(secret).unwrap();
    standardwebhooks::Webhook::new(secret).unwrap();
}
