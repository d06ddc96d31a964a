//! Two destinations walked from the alert to the recovery, over real HTTP
//! on both stores: `erp` fails, gives up and then answers `410 Gone`;
//! `shop` fails a while and then takes everything. Each attempt names its
//! destination (event page, timeline, inbox, `explain`, CLI, API), what
//! gave up at `erp` is listed while `shop` still holds the event, "deliver
//! again" goes only where it gave up, and the recovery's default is the
//! failure's start, kept after enable, picking events decided just before
//! it.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use pointhook_common::clock::{Clock, ManualClock, rfc3339};
use serde_json::{Value, json};

use crate::alerting::*;
use crate::console::{Browser, PASSWORD, with_operator};
use crate::helpers::*;
use crate::platform::*;
use crate::smtp::SmtpServer;

on_both_backends!(two_destinations_one_failing_then_gone_from_the_alert_to_the_recovery,);

const ORDER: &str = "4945357007";
const PAYMENT: &str = "123456789";

fn destination(name: &str, merchant: &Merchant, extra: &str) -> String {
    format!(
        "[[destinations]]\nname = \"{name}\"\nurl = \"{}/events\"\ntimeout_secs = 2\n\
         secret = \"{MERCHANT_SECRET}\"\n{extra}\n",
        merchant.server.uri()
    )
}

/// The webhook ids `merchant` was sent, in order.
async fn ids(merchant: &Merchant) -> Vec<String> {
    merchant
        .received()
        .await
        .iter()
        .map(|r| r.headers["webhook-id"].to_str().unwrap().to_string())
        .collect()
}

fn id_of(app: &TestApp, event_type: &str, subject: &str) -> String {
    app.sql
        .value(
            "SELECT id FROM events WHERE type = $1 AND subject = $2",
            &[
                SqlValue::Text(event_type.into()),
                SqlValue::Text(subject.into()),
            ],
        )
        .text()
}

async fn api(app: &TestApp, verb: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let url = format!("http://{}{path}", app.admin_addr.unwrap());
    let req = match verb {
        "GET" => app.client.get(url),
        _ => app.client.post(url),
    }
    .bearer_auth(ADMIN_TOKEN);
    let req = match body {
        Some(b) => req.json(&b),
        None => req,
    };
    answer(req.send().await.unwrap()).await
}

async fn two_destinations_one_failing_then_gone_from_the_alert_to_the_recovery() {
    let (smtp, hook, platform) = (
        SmtpServer::start().await,
        Hook::start().await,
        FakeApi::start().await,
    );
    let (shop, erp) = (Merchant::start().await, Merchant::start().await);
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let config =
        destination("shop", &shop, "") + &destination("erp", &erp, "give_up_after_hours = 1");
    let app = alerting(
        TestConfig::default()
            .api(&platform.uri())
            .clock(clock.clone())
            .extra(&config),
        smtp.port,
        &hook,
        "destination_failing_secs = 2",
    )
    .await;
    // Decided a few milliseconds before either destination first fails.
    platform.payment(PAYMENT, "approved", "100.5", Some(ORDER));
    platform.order(ORDER, "100.5", &[(PAYMENT, "100.5", "approved")], None);
    app.post(&format!("topic=payment&id={PAYMENT}"), &[], None)
        .await;
    app.run_jobs().await;
    let released = id_of(&app, "order.released", &format!("merchant_order:{ORDER}"));
    let updated = id_of(&app, "payment.updated", &format!("payment:{PAYMENT}"));
    clock.advance(Duration::from_millis(5));
    let failure_began = rfc3339(pointhook::store::unix_ms(clock.now()));
    // Each fails both events twice: once now, once an hour later.
    erp.fail_next(4, 500).await;
    shop.fail_next(4, 500).await;
    assert_eq!(app.deliver_events().await, 4);

    // The alert names erp and links to its page.
    clock.advance(Duration::from_secs(3));
    let n = round(&app).await;
    assert!(n >= 2, "shop and erp, each failing: {n}");
    let (_, told) = told(&smtp, &hook, n).await;
    let alert = told
        .iter()
        .find(|m| m["text"].as_str().unwrap().contains("destination erp"))
        .unwrap_or_else(|| panic!("{told:?}"));
    let link = alert["url"].as_str().unwrap();
    assert_eq!(link, format!("{PUBLIC}/destinations/erp"));
    with_operator(&app, "ana").await;
    let mut b = Browser::new(&app);
    assert_eq!(b.sign_in("ana", PASSWORD).await.status(), 303);
    let (status, _, page) = b.get(link.trim_start_matches(PUBLIC)).await;
    assert_eq!(status, 200);
    assert!(page.contains("id=\"state-erp\">failing"), "{page}");

    // An hour on, erp gives both up while shop still holds them.
    clock.advance(Duration::from_secs(3600));
    assert_eq!(app.deliver_events().await, 4);
    let (_, e) = api(&app, "GET", &format!("/api/events/{released}"), None).await;
    assert_eq!(e["state"], "pending", "shop still holds it: {e}");
    let at: Vec<(&str, &str, i64)> = e["destinations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["destination"].as_str().unwrap(),
                d["state"].as_str().unwrap(),
                d["attempts"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(at, [("erp", "dead", 2), ("shop", "pending", 2)], "{e}");
    // Listed as given up at erp at once: API, console list, inbox, CLI.
    let (_, dead) = api(&app, "GET", "/api/events?state=dead", None).await;
    let listed: Vec<(&str, &str)> = dead
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["id"].as_str().unwrap(), e["listed_at"].as_str().unwrap()))
        .collect();
    assert_eq!(listed.len(), 2, "{dead}");
    assert!(listed.contains(&(released.as_str(), "erp")), "{dead}");
    let (_, at_shop) = api(&app, "GET", "/api/events?state=dead&destination=shop", None).await;
    assert_eq!(at_shop, json!([]));
    let (_, _, page) = b.get("/destinations/erp").await;
    assert!(page.contains("<dt>Gave up</dt><dd>2 event(s)"), "{page}");
    let href = "/events?state=dead&#38;destination=erp";
    assert!(page.contains(href), "{page}");
    let (_, _, list) = b.get(&href.replace("&#38;", "&")).await;
    assert!(list.contains(&format!("/events/{released}")), "{list}");
    assert!(list.contains("gave up at erp"), "{list}");
    assert!(!list.contains("None here"), "{list}");
    let (_, _, inbox) = b.get("/").await;
    assert!(
        inbox.contains("Events that gave up at a destination (2)")
            && inbox.contains("<strong>gave up at erp</strong>"),
        "{inbox}"
    );
    let (ok, out, err) = cli_async(&app, &["events", "list", "--state", "dead"]).await;
    assert!(ok, "{err}");
    assert!(
        out.contains(&released) && out.contains("gave up at erp"),
        "{out}"
    );
    // The event page, the timeline, `explain` and `events show` name each
    // destination and count its own attempts.
    let (_, _, page) = b.get(&format!("/events/{released}")).await;
    assert!(
        page.contains("id=\"event-state\">gave up at erp, failing at shop<"),
        "{page}"
    );
    assert!(
        page.contains("id=\"at-erp\"") && page.contains("id=\"at-shop\""),
        "{page}"
    );
    assert!(page.contains("attempt 2 at erp,"), "{page}");
    assert!(!page.contains("fulfillment URL"), "{page}");
    let (_, _, timeline) = b.get(&format!("/orders/{ORDER}?account=default")).await;
    assert!(
        timeline.contains("attempt 1 at shop,") && timeline.contains("attempt 2 at erp,"),
        "{timeline}"
    );
    // Found by its payment written with leading zeros.
    let (_, found) = api(&app, "GET", &format!("/api/search?q=000{PAYMENT}"), None).await;
    assert_eq!(found[0]["id"], ORDER, "{found}");
    let (ok, out, err) = cli_async(&app, &["explain", ORDER]).await;
    assert!(ok, "{err}");
    assert!(
        out.contains("gave up at erp after 2 attempts, failing at shop after 2 attempts"),
        "{out}"
    );
    let (ok, out, err) = cli_async(&app, &["events", "show", &released]).await;
    assert!(ok, "{err}");
    assert!(
        out.contains("at erp: dead, 2 attempt(s)")
            && out.contains("at shop: pending, 2 attempt(s)"),
        "{out}"
    );

    // shop takes both; "deliver again" then goes to erp alone, which is
    // gone (410): disabled, the event paused there.
    clock.advance(Duration::from_secs(600));
    assert_eq!(app.deliver_events().await, 2);
    let shop_got = ids(&shop).await.len();
    erp.fail_next(1, 410).await;
    let (_, _, _) = b.get(&format!("/events/{released}")).await;
    let (status, page) = b.act(&format!("/events/{released}/redeliver"), &[]).await;
    assert_eq!(status, 303, "{page}");
    assert_eq!(app.deliver_events().await, 1, "erp only");
    assert_eq!(ids(&shop).await.len(), shop_got, "shop took it already");
    assert_eq!(ids(&erp).await.last(), Some(&released));
    let (_, d) = api(&app, "GET", "/api/destinations/erp", None).await;
    assert_eq!(d["state"], "disabled", "{d}");
    assert_eq!(d["disabled_reason"], "the endpoint answered 410 Gone");
    // Another order while erp is gone: shop takes it, erp keeps it paused.
    platform.order("4945357008", "10", &[("555", "10", "approved")], None);
    app.post("topic=merchant_order&id=4945357008", &[], None)
        .await;
    app.run_jobs().await;
    app.deliver_events().await;
    let later = id_of(&app, "order.released", "merchant_order:4945357008");

    // erp is back: enabled, its page offers the failure's start; the
    // recovery, with no time given, sends again everything that failed,
    // was paused or gave up since then, the events decided before it too.
    let (_, _, _) = b.get("/destinations/erp").await;
    let (status, _) = b.act("/destinations/erp/enable", &[]).await;
    assert_eq!(status, 303);
    let (_, _, page) = b.get("/destinations/erp").await;
    assert!(
        page.contains(&format!("id=\"since-erp\" value=\"{failure_began}\"")),
        "{failure_began}: {page}"
    );
    assert!(!page.contains(" required>"), "{page}");
    let (_, d) = api(&app, "GET", "/api/destinations/erp", None).await;
    assert_eq!(d["recover_since"], failure_began.as_str(), "{d}");
    let (status, page) = b.act("/destinations/erp/recover", &[("since", "")]).await;
    assert_eq!(status, 303, "{page}");
    let before = ids(&erp).await.len();
    let queued = app.deliver_events().await;
    let sent: Vec<String> = ids(&erp).await.split_off(before);
    assert_eq!(sent.len(), queued);
    for id in [&released, &updated, &later] {
        assert!(sent.contains(id), "{id} in {sent:?}");
    }
    let (_, d) = api(&app, "GET", "/api/destinations/erp", None).await;
    assert_eq!(d["recovery"]["queued"], queued, "{d}");
    assert_eq!(d["recovery"]["delivered"], queued, "{d}");
    assert_eq!(d["gave_up"], 0);
    assert_eq!(d["paused"], 0);
    let (_, _, page) = b.get(&format!("/events/{released}")).await;
    assert!(
        page.contains("id=\"event-state\">delivered to erp, delivered to shop<"),
        "{page}"
    );
    // Every destination took it: "deliver again" has nowhere to go, and
    // to every destination, asked in those words, it goes to both.
    let (status, refused) = api(
        &app,
        "POST",
        &format!("/api/events/{updated}/redeliver"),
        None,
    )
    .await;
    assert_eq!(
        (status, refused["error"].clone()),
        (409, json!("nothing_failed"))
    );
    let (status, again) = api(
        &app,
        "POST",
        &format!("/api/events/{updated}/redeliver-all"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{again}");
    let mut to: Vec<&str> = again["to"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    to.sort();
    assert_eq!(to, ["erp", "shop"]);
    assert_eq!(app.deliver_events().await, 2);
    app.stop().await;
}
