use proptest::prelude::*;
use serde_json::json;

use super::fraud::{Plan, Undo};
use super::*;
use crate::api::types::{MerchantOrder, Payment, PaymentIntent, PaymentStatus};
use crate::domain::{EventType, IntentState, MerchantOrderId, Review, UnauthenticatedAlerts};
use crate::money::{Money, Overflow};

fn m(s: &str) -> Money {
    Money::parse(s).unwrap()
}

/// A merchant order of `total`; payments are (amount, status, refunded).
fn order_refunded(
    total: &str,
    payments: &[(&str, &str, &str)],
    shipments: &[&str],
) -> MerchantOrder {
    let payments: Vec<_> = payments
        .iter()
        .enumerate()
        .map(|(i, (amount, status, refunded))| {
            json!({"id": 100 + i, "transaction_amount": m(amount), "status": status,
                   "transaction_amount_refunded": m(refunded)})
        })
        .collect();
    let shipments: Vec<_> = shipments
        .iter()
        .map(|s| json!({"id": 1, "status": s}))
        .collect();
    serde_json::from_value(json!({
        "id": 1, "total_amount": m(total), "payments": payments, "shipments": shipments,
    }))
    .unwrap()
}

fn order(total: &str, payments: &[(&str, &str)], shipments: &[&str]) -> MerchantOrder {
    let with: Vec<(&str, &str, &str)> = payments.iter().map(|(a, s)| (*a, *s, "0")).collect();
    order_refunded(total, &with, shipments)
}

fn outcome(o: &MerchantOrder) -> Release {
    release::release(o).unwrap().outcome
}

#[test]
fn paid_in_full_without_shipments_releases() {
    let d = release::release(&order(
        "100",
        &[("60", "approved"), ("40", "approved")],
        &[],
    ))
    .unwrap();
    assert_eq!(d.outcome, Release::Release);
    assert_eq!(d.paid, m("100"));
    assert_eq!(d.payment_ids.len(), 2);
}

#[test]
fn only_approved_payments_count() {
    let d = release::release(&order(
        "100",
        &[("60", "approved"), ("40", "rejected")],
        &[],
    ))
    .unwrap();
    assert_eq!(d.outcome, Release::NotPaid);
    assert_eq!(d.paid, m("60"));
    assert_eq!(
        outcome(&order("100", &[("100", "pending")], &[])),
        Release::NotPaid
    );
}

#[test]
fn overpaid_counts_as_paid() {
    assert_eq!(
        outcome(&order("100", &[("100.01", "approved")], &[])),
        Release::Release
    );
}

#[test]
fn refunds_are_taken_off_what_was_paid() {
    let o = order_refunded("100", &[("100", "approved", "30")], &[]);
    let d = release::release(&o).unwrap();
    assert_eq!(d.paid, m("70"));
    assert_eq!(d.outcome, Release::NotPaid);
    let o = order_refunded("70", &[("100", "approved", "30")], &[]);
    assert_eq!(outcome(&o), Release::Release);
    // Merchant orders name it amount_refunded.
    let o: MerchantOrder = serde_json::from_value(json!({
        "id": 1, "total_amount": 100,
        "payments": [{"id": 5, "transaction_amount": 100, "status": "approved", "amount_refunded": 1}],
    }))
    .unwrap();
    assert_eq!(outcome(&o), Release::NotPaid);
}

#[test]
fn nothing_is_released_on_nothing() {
    assert_eq!(outcome(&order("0", &[], &[])), Release::NotPaid);
    assert_eq!(
        outcome(&order("-5", &[("1", "rejected")], &[])),
        Release::NotPaid
    );
    assert_eq!(
        outcome(&order("0", &[("1", "approved")], &[])),
        Release::Release
    );
}

#[test]
fn shipments_wait_for_ready_to_ship_or_later_on_the_first() {
    let paid = [("350.5", "approved")];
    for ready in ["ready_to_ship", "shipped", "delivered"] {
        assert_eq!(
            outcome(&order("350.5", &paid, &[ready])),
            Release::Release,
            "{ready}"
        );
    }
    for not_yet in ["pending", "handling", "cancelled"] {
        assert_eq!(
            outcome(&order("350.5", &paid, &[not_yet])),
            Release::AwaitingShipment,
            "{not_yet}"
        );
    }
    // Only the first shipment decides.
    assert_eq!(
        outcome(&order("350.5", &paid, &["pending", "ready_to_ship"])),
        Release::AwaitingShipment
    );
}

#[test]
fn decimal_sums_are_exact() {
    assert_eq!(
        outcome(&order(
            "0.3",
            &[("0.1", "approved"), ("0.2", "approved")],
            &[]
        )),
        Release::Release
    );
    assert_eq!(
        outcome(&order(
            "0.8",
            &[("0.7", "approved"), ("0.1", "approved")],
            &[]
        )),
        Release::Release
    );
}

#[test]
fn overflowing_amounts_are_an_error() {
    let huge = "79228162514264337593543950335";
    let o = order(huge, &[(huge, "approved"), (huge, "approved")], &[]);
    assert_eq!(release::release(&o), Err(Overflow));
    assert!(release::order_effects(&o).is_err());
}

#[test]
fn release_decisions_are_guarded_and_carry_string_ids() {
    let e = release::order_effects(&order("10", &[("10", "approved")], &[])).unwrap();
    let d = &e.decisions[0];
    assert_eq!(d.event, EventType::OrderReleased);
    assert_eq!(d.data["merchant_order_id"], "1");
    assert_eq!(d.data["payment_ids"], json!(["100"]));
    assert_eq!(d.data["paid_amount"], "10.00");
    let e = release::order_effects(&order("10", &[("10", "approved")], &["pending"])).unwrap();
    assert_eq!(e.decisions[0].event, EventType::OrderAwaitingShipment);
    assert!(
        release::order_effects(&order("10", &[], &[]))
            .unwrap()
            .decisions
            .is_empty()
    );
}

fn payment(v: serde_json::Value) -> Payment {
    serde_json::from_value(v).unwrap()
}

#[test]
fn each_payment_status_is_told_once() {
    let p = payment(
        json!({"id": 9, "status": "approved", "transaction_amount": 5,
                           "order": {"id": "77", "type": "mercadopago"}}),
    );
    let d = payment::updated(&p);
    assert_eq!(d.key, "payment.updated:approved");
    assert_eq!(d.data["payment_id"], "9");
    assert_eq!(d.data["merchant_order_id"], "77");
    assert_eq!(d.data["amount"], "5.00");
    let p = payment(json!({"id": 9, "status": "refunded"}));
    assert_eq!(payment::updated(&p).key, "payment.updated:refunded");
    assert_eq!(payment::updated(&p).data["merchant_order_id"], json!(null));
}

#[test]
fn only_this_platforms_merchant_orders_are_looked_up() {
    let with =
        |order: serde_json::Value| payment(json!({"id": 1, "status": "approved", "order": order}));
    assert!(
        with(json!({"id": 7, "type": "mercadopago"}))
            .merchant_order_id()
            .is_some()
    );
    assert!(with(json!({"id": "7"})).merchant_order_id().is_some());
    assert!(
        with(json!({"id": 7, "type": "mercadolibre"}))
            .merchant_order_id()
            .is_none()
    );
    assert!(
        with(json!({"id": "ML-7", "type": "mercadopago"}))
            .merchant_order_id()
            .is_none()
    );
    assert!(with(json!(null)).merchant_order_id().is_none());
}

#[test]
fn an_order_that_does_not_list_an_approved_payment_is_behind() {
    let p = payment(json!({"id": 100, "status": "approved"}));
    assert!(payment::order_is_behind(&p, &order("10", &[], &[])));
    assert!(payment::order_is_behind(
        &p,
        &order("10", &[("10", "pending")], &[])
    ));
    assert!(!payment::order_is_behind(
        &p,
        &order("10", &[("10", "approved")], &[])
    ));
    let pending = payment(json!({"id": 100, "status": "pending"}));
    assert!(!payment::order_is_behind(&pending, &order("10", &[], &[])));
}

#[test]
fn the_intent_table() {
    use IntentDecision::*;
    use IntentOutcome::*;
    use IntentState as S;
    let p = PaymentStatus::parse;
    let cases: &[(S, Option<&str>, IntentDecision)] = &[
        (S::Finished, Some("approved"), Decided(Finished)),
        (S::Finished, Some("rejected"), Decided(NotApproved)),
        (S::Finished, Some("pending"), Decided(NotApproved)),
        (S::Finished, Some("weird"), Decided(NotApproved)),
        (
            S::ConfirmationRequired,
            Some("approved"),
            Decided(Confirmed),
        ),
        (
            S::ConfirmationRequired,
            Some("rejected"),
            Decided(NotApproved),
        ),
        (
            S::ConfirmationRequired,
            Some("cancelled"),
            Decided(NotApproved),
        ),
        (
            S::ConfirmationRequired,
            Some("refunded"),
            Decided(NotApproved),
        ),
        (
            S::ConfirmationRequired,
            Some("charged_back"),
            Decided(NotApproved),
        ),
        (S::Canceled, None, Decided(Canceled)),
        (S::Error, None, Decided(Error)),
        (S::Abandoned, None, Decided(Abandoned)),
    ];
    for (state, payment, expected) in cases {
        let status = payment.map(p);
        assert_eq!(
            &intent::intent(*state, status.as_ref()),
            expected,
            "{state:?} {payment:?}"
        );
    }
    for still in ["pending", "in_process", "authorized"] {
        assert!(matches!(
            intent::intent(S::ConfirmationRequired, Some(&p(still))),
            Wait(_)
        ));
    }
    assert!(matches!(intent::intent(S::Finished, None), Wait(_)));
    for moving in [S::Open, S::OnTerminal, S::Processing, S::Processed] {
        assert_eq!(
            intent::intent(moving, Some(&p("approved"))),
            NotFinal(moving)
        );
    }
    for o in [Finished, Confirmed, NotApproved, Canceled, Error, Abandoned] {
        assert!(o.event().as_str().starts_with("payment_intent."));
    }
}

fn intent_of(amount: i64, reference: Option<&str>) -> PaymentIntent {
    serde_json::from_value(json!({
        "id": "i-1", "state": "FINISHED", "amount": amount, "payment": {"id": 5},
        "additional_info": {"external_reference": reference, "ticket_number": "T1"},
    }))
    .unwrap()
}

#[test]
fn a_payment_must_belong_to_its_intent() {
    let p = |amount: &str, reference: Option<&str>| {
        payment(
            json!({"id": 5, "status": "approved", "transaction_amount": m(amount),
                       "external_reference": reference}),
        )
    };
    assert_eq!(
        intent::payment_matches(&intent_of(1500, Some("t-12")), &p("15", Some("t-12"))),
        Ok(())
    );
    assert_eq!(
        intent::payment_matches(&intent_of(1500, Some("t-12")), &p("15.00", None)),
        Ok(())
    );
    assert_eq!(
        intent::payment_matches(&intent_of(1500, None), &p("15", Some("x"))),
        Ok(())
    );
    assert!(matches!(
        intent::payment_matches(&intent_of(1500, None), &p("15.01", None)),
        Err(intent::Mismatch::Amount { .. })
    ));
    assert!(matches!(
        intent::payment_matches(&intent_of(1500, Some("t-12")), &p("15", Some("t-13"))),
        Err(intent::Mismatch::Reference { .. })
    ));
    let no_amount = payment(json!({"id": 5, "status": "approved"}));
    assert!(intent::payment_matches(&intent_of(1500, None), &no_amount).is_err());
}

#[test]
fn an_intent_decision_takes_the_final_slot_with_string_ids() {
    let i = intent_of(1500, Some("t-12"));
    let p = payment(json!({"id": 5, "status": "approved", "transaction_amount": 15}));
    let d = intent::decision(&i, IntentState::Finished, Some(&p), IntentOutcome::Finished);
    assert_eq!(d.slot, crate::domain::Slot::Final);
    assert_eq!(d.event, EventType::IntentFinished);
    assert_eq!(d.data["payment_id"], "5");
    assert_eq!(d.data["payment_intent_id"], "i-1");
    assert_eq!(d.data["amount"], "15.00");
    assert_eq!(d.data["external_reference"], "t-12");
    assert_eq!(d.data["ticket_number"], "T1");
}

#[test]
fn final_states_never_change() {
    use EventType::*;
    assert_eq!(finality(None, IntentFinished), Finality::New);
    assert_eq!(
        finality(Some(IntentFinished), IntentFinished),
        Finality::Same
    );
    assert_eq!(
        finality(Some(IntentFinished), IntentCanceled),
        Finality::Conflict
    );
    assert_eq!(
        finality(Some(IntentCanceled), IntentConfirmed),
        Finality::Conflict
    );
}

#[test]
fn what_a_fraud_alert_may_do() {
    use UnauthenticatedAlerts::{Act, Hold};
    let cases = [
        // (authenticated, account policy, review) → plan
        (true, Hold, None, Plan::Act),
        (true, Act, None, Plan::Act),
        (false, Act, None, Plan::Act),
        (false, Hold, None, Plan::Hold),
        (false, Hold, Some(Review::Held), Plan::Hold),
        (false, Act, Some(Review::Held), Plan::Hold),
        (false, Hold, Some(Review::Confirmed), Plan::Act),
        (false, Hold, Some(Review::Dismissed), Plan::Nothing),
        (true, Hold, Some(Review::Dismissed), Plan::Act),
    ];
    for (authenticated, policy, review, expected) in cases {
        assert_eq!(
            fraud::plan(authenticated, policy, review),
            expected,
            "{authenticated} {policy:?} {review:?}"
        );
    }
    assert_eq!(Plan::Act.at_most_hold(), Plan::Hold);
    assert_eq!(Plan::Nothing.at_most_hold(), Plan::Nothing);
}

#[test]
fn an_alert_is_verified_against_the_payments_order() {
    let o = |s: &str| MerchantOrderId::parse(s).unwrap();
    let p =
        payment(json!({"id": 5, "status": "approved", "order": {"id": 7, "type": "mercadopago"}}));
    assert_eq!(fraud::verify(Some(&o("7")), &p), Ok(o("7")));
    assert!(
        fraud::verify(Some(&o("8")), &p)
            .unwrap_err()
            .contains("not 8")
    );
    assert!(fraud::verify(None, &p).is_err());
    let orphan = payment(json!({"id": 5, "status": "approved"}));
    assert!(
        fraud::verify(Some(&o("7")), &orphan)
            .unwrap_err()
            .contains("no merchant order")
    );
}

#[test]
fn how_a_payment_is_undone() {
    let p = PaymentStatus::parse;
    assert_eq!(fraud::undo(&p("pending")), Undo::Cancel);
    assert_eq!(fraud::undo(&p("in_process")), Undo::Cancel);
    assert_eq!(fraud::undo(&p("authorized")), Undo::Cancel);
    assert_eq!(fraud::undo(&p("approved")), Undo::Refund);
    assert_eq!(
        fraud::undo(&p("cancelled")),
        Undo::AlreadyDone(EventType::PaymentCancelled)
    );
    assert_eq!(
        fraud::undo(&p("refunded")),
        Undo::AlreadyDone(EventType::PaymentRefunded)
    );
    assert_eq!(fraud::undo(&p("rejected")), Undo::NothingMoved);
    assert!(matches!(
        fraud::undo(&p("in_mediation")),
        Undo::Impossible(_)
    ));
    assert!(matches!(
        fraud::undo(&p("charged_back")),
        Undo::Impossible(_)
    ));
}

#[test]
fn fraud_decisions() {
    let o = MerchantOrderId::parse("7").unwrap();
    let alert = fraud::Alert {
        subject: fraud::Alert::subject_of("fraud:7:5"),
        job_key: "fraud:7:5".into(),
        merchant_order: Some(o.clone()),
        payment: None,
        description: Some("risk".into()),
        delivery_id: Some(3),
        authenticated: false,
    };
    assert_eq!(alert.subject, "fraud_alert:7:5");
    let block = alert.block(&o, None);
    assert_eq!(block.event, EventType::OrderBlocked);
    assert_eq!(block.key, "order.blocked:fraud_alert:7:5");
    let held = alert.unverified("why");
    assert_eq!(held.event, EventType::FraudAlertUnverified);
    assert!(matches!(
        held.marks[0],
        crate::domain::Mark::HoldForReview(_)
    ));
    assert_eq!(held.data["delivery_id"], "3");
    assert_eq!(alert.rejected("no").data["reason"], "no");
    let key = fraud::idempotency_key("a", &o, &crate::domain::PaymentId::parse("5").unwrap());
    assert_eq!(
        key,
        fraud::idempotency_key("a", &o, &crate::domain::PaymentId::parse("5").unwrap())
    );
    assert!(key.starts_with("pointhook-fraud-"));
}

fn cents(c: u64) -> String {
    format!("{}.{:02}", c / 100, c % 100)
}

proptest! {
    /// The rule, restated independently in integer cents.
    #[test]
    fn release_matches_a_cents_model(
        total in 1u64..100_000,
        payments in prop::collection::vec(
            (1u64..50_000, 0u64..100, prop::sample::select(vec!["approved", "rejected", "pending", "refunded"])),
            0..6),
        shipment in prop::option::of(prop::sample::select(vec!["ready_to_ship", "pending", "shipped", "delivered"])),
    ) {
        let approved: Vec<_> = payments.iter().filter(|(_, _, s)| *s == "approved").collect();
        // Refunded cents: a percentage of the amount, rounded down.
        let net = |(c, pct, _): &&(u64, u64, &str)| c - c * pct / 100;
        let paid_cents: u64 = approved.iter().map(net).sum();
        let expected = if approved.is_empty() || paid_cents < total {
            Release::NotPaid
        } else if shipment.is_none_or(|s| s != "pending") {
            Release::Release
        } else {
            Release::AwaitingShipment
        };
        let amounts: Vec<(String, &str, String)> = payments
            .iter()
            .map(|(c, pct, s)| (cents(*c), *s, cents(c * pct / 100)))
            .collect();
        let refs: Vec<(&str, &str, &str)> = amounts.iter().map(|(a, s, r)| (a.as_str(), *s, r.as_str())).collect();
        let shipments: Vec<&str> = shipment.into_iter().collect();
        let d = release::release(&order_refunded(&cents(total), &refs, &shipments)).unwrap();
        prop_assert_eq!(d.outcome, expected);
        prop_assert_eq!(d.paid.to_string(), cents(paid_cents));
    }

    /// Payments in any order decide the same.
    #[test]
    fn release_ignores_payment_order(
        amounts in prop::collection::vec(1u64..10_000, 1..6),
        total in 1u64..30_000,
    ) {
        let strings: Vec<String> = amounts.iter().map(|c| cents(*c)).collect();
        let forward: Vec<(&str, &str)> = strings.iter().map(|a| (a.as_str(), "approved")).collect();
        let mut backward = forward.clone();
        backward.reverse();
        let a = release::release(&order(&cents(total), &forward, &[])).unwrap();
        let b = release::release(&order(&cents(total), &backward, &[])).unwrap();
        prop_assert_eq!(a.outcome, b.outcome);
        prop_assert_eq!(a.paid, b.paid);
    }
}

fn platform_order(v: serde_json::Value) -> crate::api::types::PlatformOrder {
    let mut base = json!({"id": "ORD01JQ4S4KY8HWQ6NA5PXB65B3D3", "type": "point",
                          "total_amount": "100.00", "total_paid_amount": "100.00"});
    for (k, x) in v.as_object().unwrap() {
        base[k] = x.clone();
    }
    serde_json::from_value(base).unwrap()
}

#[test]
fn the_platform_order_table() {
    use platform_order::{OrderDecision::*, checked, status};
    let s = |st: &str| status(&platform_order(json!({"status": st})));
    assert_eq!(s("processed"), Final(EventType::PlatformOrderProcessed));
    assert_eq!(s("canceled"), Final(EventType::PlatformOrderCanceled));
    assert_eq!(s("cancelled"), Final(EventType::PlatformOrderCanceled));
    assert_eq!(s("failed"), Final(EventType::PlatformOrderFailed));
    assert_eq!(s("expired"), Final(EventType::PlatformOrderExpired));
    // Refunded and charged back only ever follow processed: told too.
    assert_eq!(s("refunded"), Final(EventType::PlatformOrderProcessed));
    assert_eq!(s("charged_back"), Final(EventType::PlatformOrderProcessed));
    assert_eq!(s("action_required"), CheckPayment);
    for moving in ["created", "at_terminal", "processing", "something_new"] {
        assert_eq!(s(moving), NotFinal, "{moving}");
    }
    assert_eq!(
        checked(&PaymentStatus::Approved),
        Some(EventType::PlatformOrderConfirmed)
    );
    for refused in [
        PaymentStatus::Rejected,
        PaymentStatus::Cancelled,
        PaymentStatus::Refunded,
    ] {
        assert_eq!(checked(&refused), Some(EventType::PlatformOrderNotApproved));
    }
    assert_eq!(checked(&PaymentStatus::InProcess), None);
    assert_eq!(checked(&PaymentStatus::Pending), None);
}

#[test]
fn money_taken_back_is_told_once_per_amount_after_the_outcome() {
    use platform_order::decisions;
    let events = |v| {
        decisions(&platform_order(v), EventType::PlatformOrderProcessed)
            .unwrap()
            .into_iter()
            .map(|d| (d.event, d.key, d.data["refunded_amount"].clone()))
            .collect::<Vec<_>>()
    };
    let processed = events(json!({"status": "processed"}));
    assert_eq!(processed.len(), 1);
    assert_eq!(processed[0].1, "final");
    let partial = events(
        json!({"status": "processed", "status_detail": "partially_refunded",
        "transactions": {"payments": [{"id": "PAY01", "amount": "100.00", "reference_id": "77"}],
                         "refunds": [{"id": "REF01", "amount": "30.00", "status": "processed"}]}}),
    );
    assert_eq!(
        partial[1],
        (
            EventType::PlatformOrderRefunded,
            "refunded:30.00".into(),
            json!("30.00")
        )
    );
    let full = events(json!({"status": "refunded"}));
    assert_eq!(full[1].1, "refunded:100.00");
    let charged = events(json!({"status": "charged_back"}));
    assert_eq!(
        charged.last().unwrap().0,
        EventType::PlatformOrderChargedBack
    );
    // Nothing was paid out on a failure: nothing is taken back.
    let failed = decisions(
        &platform_order(
            json!({"status": "failed", "transactions": {"refunds": [{"amount": "5"}]}}),
        ),
        EventType::PlatformOrderFailed,
    )
    .unwrap();
    assert_eq!(failed.len(), 1);
    // Ids are strings; amounts are decimal strings.
    let d = &decisions(
        &platform_order(json!({"status": "processed",
            "transactions": {"payments": [{"id": "PAY01", "reference_id": 1234567890123u64}]}})),
        EventType::PlatformOrderProcessed,
    )
    .unwrap()[0]
        .data;
    assert_eq!(d["payment_ids"], json!(["1234567890123"]));
    assert_eq!(d["total_amount"], "100.00");
    assert_eq!(d["platform_order_id"], "ORD01JQ4S4KY8HWQ6NA5PXB65B3D3");
}
