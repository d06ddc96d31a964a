//! `pointhook explain ID`: an order found by any id it is known by, its
//! story oldest first with the reason of each decision.

use serde_json::Value;

use crate::helpers::*;
use crate::platform::*;
use crate::platform_orders;

on_both_backends!(
    explain_tells_an_orders_story_with_the_reason_of_its_decision,
    an_intent_confirmed_is_explained,
    a_fraud_block_is_explained,
    an_orders_api_order_is_explained,
    a_strangers_topic_never_prints_a_line_or_a_control_of_its_own,
);

const ORDER: &str = "4945357007";
const PAYMENT: &str = "23064274473";

async fn explain_tells_an_orders_story_with_the_reason_of_its_decision() {
    let api = FakeApi::start().await;
    let app = spawn_app_with(TestConfig::default().api(&api.uri()).admin(TOKEN)).await;
    api.payment(PAYMENT, "approved", "100", Some(ORDER));
    api.order(ORDER, "100", &[(PAYMENT, "100", "approved")], None);
    app.post(&format!("topic=payment&id={PAYMENT}"), &[], None)
        .await;
    app.run_jobs().await;

    let (ok, out, err) = cli_async(&app, &["explain", PAYMENT]).await;
    assert!(ok, "{err}");
    assert!(
        out.starts_with(&format!(
            "merchant order {ORDER} (account default; found by its payment)"
        )),
        "{out}"
    );
    let line = |what: &str| {
        out.lines()
            .position(|l| l.contains(&format!("  {what}")))
            .unwrap_or_else(|| panic!("no {what} line in {out}"))
    };
    let (notification, answer, decision) =
        (line("notification"), line("API answer"), line("decision"));
    assert!(
        notification < answer && answer < decision,
        "oldest first: {out}"
    );
    let decided = out.lines().nth(decision).unwrap();
    assert!(
        decided.contains("order.released")
            && decided.contains(&format!(
                "paid 100.00 of 100.00 from payment {PAYMENT} approved 100.00"
            )),
        "{decided}"
    );

    let (ok, out, err) = cli_async(&app, &["explain", ORDER, "--json"]).await;
    assert!(ok, "{err}");
    let t: Value = serde_json::from_str(&out).unwrap();
    let reasons: Vec<&str> = t["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e[1]["reason"].as_str())
        .collect();
    assert!(
        reasons.iter().any(|r| r.starts_with("paid 100.00")),
        "{out}"
    );

    // `orders show` says why too.
    let (ok, out, err) = cli_async(&app, &["orders", "show", ORDER]).await;
    assert!(ok, "{err}");
    let why = out.split("decisions (why):").nth(1).unwrap_or_default();
    assert!(
        why.contains("order.released: paid 100.00 of 100.00"),
        "{out}"
    );

    // An order paid in full whose shipment is not ready waits, and says so.
    api.payment("23064274474", "approved", "50", Some("4945357008"));
    api.order(
        "4945357008",
        "50",
        &[("23064274474", "50", "approved")],
        Some("pending"),
    );
    app.post("topic=payment&id=23064274474", &[], None).await;
    app.run_jobs().await;
    told_everywhere(
        &app,
        "4945357008",
        "order.awaiting_shipment",
        &["paid 50.00 of 50.00 from payment 23064274474 approved 50.00; first shipment pending → awaiting shipment"],
    )
    .await;
    told_everywhere(&app, ORDER, "order.released", &["paid 100.00 of 100.00"]).await;

    let (ok, _, err) = cli_async(&app, &["explain", "no-such-thing"]).await;
    assert!(!ok);
    assert_eq!(err.trim(), "pointhook: nothing known by \"no-such-thing\"");
    app.stop().await;
}

const TOKEN: &str = "explain-admin-secret-0123456789abcdef";

/// `explain ID`, `orders show ID` and `/api/orders/ID` each tell the
/// decision `event` of `id` with a reason containing every one of `says`.
async fn told_everywhere(app: &TestApp, id: &str, event: &str, says: &[&str]) {
    let holds = |reason: &str| says.iter().all(|s| reason.contains(s));
    let (ok, out, err) = cli_async(app, &["explain", id]).await;
    assert!(ok, "{err}");
    assert!(
        out.lines()
            .any(|l| l.contains("  decision") && l.contains(event) && holds(l)),
        "explain: no {event} decision saying {says:?} in\n{out}"
    );

    let (ok, out, err) = cli_async(app, &["orders", "show", id]).await;
    assert!(ok, "{err}");
    let why = out.split("decisions (why):").nth(1).unwrap_or_default();
    assert!(
        why.lines()
            .any(|l| l.contains(&format!("{event}: ")) && holds(l)),
        "orders show: no {event} reason saying {says:?} in\n{out}"
    );

    let (status, o) = app.admin("GET", &format!("/api/orders/{id}"), TOKEN).await;
    assert_eq!(status, 200, "{o}");
    assert!(
        o["decisions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| { d["event_type"] == event && d["reason"].as_str().is_some_and(holds) }),
        "/api/orders: no {event} reason saying {says:?} in {o}"
    );
}

async fn an_intent_confirmed_is_explained() {
    let api = FakeApi::start().await;
    let app = spawn_app_with(TestConfig::default().api(&api.uri()).admin(TOKEN)).await;
    let intent = "7f25f9aa-eea6-4f9c-bf16-a341f71ba2f1";
    api.intent(intent, "CONFIRMATION_REQUIRED", Some(PAYMENT));
    api.payment(PAYMENT, "approved", "15", None);
    app.post(
        &format!("type=point_integration_wh&data.id={intent}"),
        &[],
        None,
    )
    .await;
    app.run_jobs().await;
    assert_eq!(app.event_types(), ["payment_intent.confirmed"]);
    told_everywhere(
        &app,
        intent,
        "payment_intent.confirmed",
        &[
            "intent CONFIRMATION_REQUIRED",
            &format!("payment {PAYMENT} approved, amount 15.00 matches"),
            "→ confirmed",
        ],
    )
    .await;
    let (ok, out, _) = cli_async(&app, &["orders", "show", intent]).await;
    assert!(ok && out.contains("payment intent"), "{out}");
    app.stop().await;
}

async fn a_fraud_block_is_explained() {
    let api = FakeApi::start().await;
    let app = spawn_app_with(TestConfig::acting().api(&api.uri()).admin(TOKEN)).await;
    api.payment(PAYMENT, "in_process", "250", Some(ORDER));
    app.post_fixture(&fixture("ipn-fraud-alert.json")).await;
    app.run_jobs().await;
    assert_eq!(app.event_types(), ["order.blocked", "payment.cancelled"]);
    told_everywhere(
        &app,
        ORDER,
        "order.blocked",
        &[&format!(
            "the API confirms payment {PAYMENT} (in_process) is in merchant order {ORDER} → blocked"
        )],
    )
    .await;
    // The story goes on to the payment the alert undid, which says the
    // state it was left in.
    let (ok, out, err) = cli_async(&app, &["explain", ORDER]).await;
    assert!(ok, "{err}");
    assert!(
        out.lines().any(|l| l.contains("payment.cancelled")
            && l.contains(&format!(
                "payment {PAYMENT} was in_process for 250.00 → cancelled"
            ))),
        "{out}"
    );
    let cancelled = app.events().pop().unwrap().1;
    assert_eq!(cancelled["status"], "cancelled");
    app.stop().await;
}

async fn an_orders_api_order_is_explained() {
    let api = wiremock::MockServer::start().await;
    platform_orders::serve(
        &api,
        platform_orders::order("action_required", serde_json::json!({})),
        Some("approved"),
    )
    .await;
    let app = spawn_app_with(TestConfig::default().api(&api.uri()).admin(TOKEN)).await;
    platform_orders::notify(&app, "order.action_required").await;
    app.run_jobs().await;
    told_everywhere(
        &app,
        platform_orders::ID,
        "platform_order.confirmed",
        &[&format!(
            "order {} action_required, its payment approved → confirmed",
            platform_orders::ID
        )],
    )
    .await;
    // Its classic payment leads to it too.
    let (ok, out, err) = cli_async(&app, &["explain", "1700000001"]).await;
    assert!(ok, "{err}");
    assert!(
        out.starts_with(&format!(
            "platform order {} (account default; found by its payment)",
            platform_orders::ID
        )),
        "{out}"
    );
    app.stop().await;
}

/// A topic is the sender's text: in the story it stays inside its own
/// line, escaped, and neither the story nor `--json` prints a raw C1 or
/// bidirectional control.
async fn a_strangers_topic_never_prints_a_line_or_a_control_of_its_own() {
    let api = FakeApi::start().await;
    let app = spawn_app_with(TestConfig::default().api(&api.uri()).admin(TOKEN)).await;
    api.payment(PAYMENT, "approved", "100", Some(ORDER));
    api.order(ORDER, "100", &[(PAYMENT, "100", "approved")], None);
    app.post(&format!("topic=payment&id={PAYMENT}"), &[], None)
        .await;
    app.run_jobs().await;
    let forged = "x\n2099-01-01T00:00:00.000Z  decision      order.released (FORGED): paid in full\r\u{9b}2J\u{9c}\u{9d}52;c;aGk=\u{7}\u{202e}gnp.exe\u{2066}";
    let topic: String = form_urlencoded::byte_serialize(forged.as_bytes()).collect();
    let res = app
        .post(&format!("topic={topic}&id={ORDER}"), &[], None)
        .await;
    assert_eq!(res.status(), 200);

    let (ok, out, err) = cli_async(&app, &["explain", ORDER]).await;
    assert!(ok, "{err}");
    assert!(
        !out.lines().any(|l| l.starts_with("2099")),
        "a stranger's line printed as the story's own: {out}"
    );
    let line = out
        .lines()
        .find(|l| l.contains("FORGED"))
        .unwrap_or_else(|| panic!("the topic is not in the story: {out}"));
    assert!(line.contains("notification"), "{line}");
    assert!(line.contains("\\u{a}2099"), "{line}");
    for raw in [
        '\r', '\u{9b}', '\u{9c}', '\u{9d}', '\u{7}', '\u{202e}', '\u{2066}',
    ] {
        assert!(!out.contains(raw), "raw {raw:?} printed: {out:?}");
    }

    let (ok, out, err) = cli_async(&app, &["explain", ORDER, "--json"]).await;
    assert!(ok, "{err}");
    for raw in [
        '\r', '\u{9b}', '\u{9c}', '\u{9d}', '\u{7}', '\u{202e}', '\u{2066}',
    ] {
        assert!(!out.contains(raw), "raw {raw:?} printed: {out:?}");
    }
    assert!(out.contains("\\u009b") && out.contains("\\u202e"), "{out}");
    let t: Value = serde_json::from_str(&out).unwrap();
    assert!(t.to_string().contains("FORGED"), "still the same JSON");
    app.stop().await;
}
