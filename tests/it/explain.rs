//! `pointhook explain ID`: an order found by any id it is known by, its
//! story oldest first with the reason of each decision.

use serde_json::Value;

use crate::helpers::*;
use crate::platform::*;

on_both_backends!(explain_tells_an_orders_story_with_the_reason_of_its_decision);

const ORDER: &str = "4945357007";
const PAYMENT: &str = "23064274473";

async fn explain_tells_an_orders_story_with_the_reason_of_its_decision() {
    let api = FakeApi::start().await;
    let app = spawn_app_with(TestConfig::default().api(&api.uri())).await;
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
    let (ok, out, err) = cli_async(&app, &["explain", "4945357008"]).await;
    assert!(ok, "{err}");
    assert!(
        out.contains("paid 50.00 of 50.00 from payment 23064274474 approved 50.00; first shipment pending → awaiting shipment"),
        "{out}"
    );

    let (ok, _, err) = cli_async(&app, &["explain", "no-such-thing"]).await;
    assert!(!ok);
    assert_eq!(err.trim(), "pointhook: nothing known by \"no-such-thing\"");
    app.stop().await;
}
