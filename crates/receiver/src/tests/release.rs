use proptest::prelude::*;
use serde_json::json;

use super::{m, merchant_order, order, order_refunded, pay};
use crate::domain::EventType;
use crate::rules::{Release, payment, release};
use pointhook_common::money::Overflow;

fn outcome(o: &crate::domain::platform::MerchantOrder) -> Release {
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
    let o = merchant_order(json!({
        "id": 1, "total_amount": 100,
        "payments": [{"id": 5, "transaction_amount": 100, "status": "approved", "amount_refunded": 1}],
    }));
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

#[test]
fn each_payment_status_is_told_once() {
    let p = pay(
        json!({"id": 9, "status": "approved", "transaction_amount": 5,
                           "order": {"id": "77", "type": "mercadopago"}}),
    );
    let d = payment::updated(&p);
    assert_eq!(d.key, "payment.updated:approved");
    assert_eq!(d.data["payment_id"], "9");
    assert_eq!(d.data["merchant_order_id"], "77");
    assert_eq!(d.data["amount"], "5.00");
    let p = pay(json!({"id": 9, "status": "refunded"}));
    assert_eq!(payment::updated(&p).key, "payment.updated:refunded");
    assert_eq!(payment::updated(&p).data["merchant_order_id"], json!(null));
}

#[test]
fn only_this_platforms_merchant_orders_are_looked_up() {
    let with =
        |order: serde_json::Value| pay(json!({"id": 1, "status": "approved", "order": order}));
    assert!(
        with(json!({"id": 7, "type": "mercadopago"}))
            .merchant_order
            .is_some()
    );
    assert!(with(json!({"id": "7"})).merchant_order.is_some());
    assert!(
        with(json!({"id": 7, "type": "mercadolibre"}))
            .merchant_order
            .is_none()
    );
    assert!(
        with(json!({"id": "ML-7", "type": "mercadopago"}))
            .merchant_order
            .is_none()
    );
    assert!(with(json!(null)).merchant_order.is_none());
}

#[test]
fn an_order_that_does_not_list_an_approved_payment_is_behind() {
    let p = pay(json!({"id": 100, "status": "approved"}));
    assert!(payment::order_is_behind(&p, &order("10", &[], &[])));
    assert!(payment::order_is_behind(
        &p,
        &order("10", &[("10", "pending")], &[])
    ));
    assert!(!payment::order_is_behind(
        &p,
        &order("10", &[("10", "approved")], &[])
    ));
    let pending = pay(json!({"id": 100, "status": "pending"}));
    assert!(!payment::order_is_behind(&pending, &order("10", &[], &[])));
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

#[test]
fn a_release_says_why_with_what_it_read() {
    let o = merchant_order(json!({
        "id": 1, "total_amount": "99.90",
        "payments": [
            {"id": 123, "transaction_amount": "50.00", "status": "approved"},
            {"id": 456, "transaction_amount": "49.90", "status": "approved"},
            {"id": 789, "transaction_amount": "10.00", "status": "rejected"}]}));
    let d = &release::order_effects(&o).unwrap().decisions[0];
    assert_eq!(
        d.reason,
        "paid 99.90 of 99.90 from payment 123 approved 50.00, payment 456 approved 49.90 \
         and payment 789 rejected 10.00 not counted; no shipment → released"
    );
    let waiting = order("10", &[("10", "approved")], &["pending"]);
    let d = &release::order_effects(&waiting).unwrap().decisions[0];
    assert!(
        d.reason
            .ends_with("first shipment pending → awaiting shipment"),
        "{}",
        d.reason
    );
    let refunded = order_refunded("5", &[("10", "approved", "5")], &[]);
    let d = &release::order_effects(&refunded).unwrap().decisions[0];
    assert!(
        d.reason.contains("approved 10.00 (refunded 5.00)"),
        "{}",
        d.reason
    );
}
