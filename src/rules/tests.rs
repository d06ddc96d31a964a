use proptest::prelude::*;

use super::*;
use crate::api::types::{OrderPayment, Shipment};

fn id(s: &str) -> ResourceId {
    ResourceId::parse(s).unwrap()
}

fn m(s: &str) -> Money {
    Money::parse(s).unwrap()
}

fn order(total: &str, payments: &[(&str, &str)], shipments: &[&str]) -> MerchantOrder {
    MerchantOrder {
        id: id("1"),
        total_amount: m(total),
        payments: payments
            .iter()
            .enumerate()
            .map(|(i, (amount, status))| OrderPayment {
                id: id(&format!("p{i}")),
                transaction_amount: m(amount),
                status: PaymentStatus::parse(status),
            })
            .collect(),
        shipments: shipments
            .iter()
            .map(|s| Shipment {
                id: None,
                status: Some(s.to_string()),
            })
            .collect(),
        external_reference: None,
    }
}

#[test]
fn paid_in_full_without_shipments_releases() {
    let d = release(&order(
        "100",
        &[("60", "approved"), ("40", "approved")],
        &[],
    ));
    assert_eq!(d.outcome, Release::Release);
    assert_eq!(d.paid, m("100"));
    assert_eq!(d.payment_ids.len(), 2);
}

#[test]
fn only_approved_payments_count() {
    let d = release(&order(
        "100",
        &[("60", "approved"), ("40", "rejected")],
        &[],
    ));
    assert_eq!(d.outcome, Release::NotPaid);
    assert_eq!(d.paid, m("60"));
    let d = release(&order("100", &[("100", "pending")], &[]));
    assert_eq!(d.outcome, Release::NotPaid);
}

#[test]
fn overpaid_counts_as_paid() {
    let d = release(&order("100", &[("100.01", "approved")], &[]));
    assert_eq!(d.outcome, Release::Release);
}

#[test]
fn shipments_wait_for_ready_to_ship_on_the_first() {
    let paid = [("350.5", "approved")];
    assert_eq!(
        release(&order("350.5", &paid, &["ready_to_ship"])).outcome,
        Release::Release
    );
    assert_eq!(
        release(&order("350.5", &paid, &["pending"])).outcome,
        Release::AwaitingShipment
    );
    // Only the first shipment decides.
    assert_eq!(
        release(&order("350.5", &paid, &["pending", "ready_to_ship"])).outcome,
        Release::AwaitingShipment
    );
}

#[test]
fn decimal_sums_are_exact() {
    let d = release(&order(
        "0.3",
        &[("0.1", "approved"), ("0.2", "approved")],
        &[],
    ));
    assert_eq!(d.outcome, Release::Release);
    let d = release(&order(
        "0.8",
        &[("0.7", "approved"), ("0.1", "approved")],
        &[],
    ));
    assert_eq!(d.outcome, Release::Release);
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
    ];
    for (state, payment, expected) in cases {
        let status = payment.map(p);
        assert_eq!(
            &intent(*state, status.as_ref()),
            expected,
            "{state:?} {payment:?}"
        );
    }
    for still in ["pending", "in_process", "authorized"] {
        assert!(matches!(
            intent(S::ConfirmationRequired, Some(&p(still))),
            RetryLater(_)
        ));
    }
    assert!(matches!(intent(S::Finished, None), RetryLater(_)));
}

#[test]
fn final_states_never_change() {
    use IntentOutcome::*;
    assert_eq!(finality(None, Finished), Finality::New);
    assert_eq!(finality(Some(Finished), Finished), Finality::Same);
    assert_eq!(finality(Some(Finished), Canceled), Finality::Conflict);
    assert_eq!(finality(Some(Canceled), Confirmed), Finality::Conflict);
    for o in [Finished, Confirmed, NotApproved, Canceled, Error] {
        assert_eq!(IntentOutcome::parse_event_type(o.event_type()), Some(o));
    }
}

fn cents(c: u32) -> String {
    format!("{}.{:02}", c / 100, c % 100)
}

proptest! {
    /// The rule, restated independently in integer cents.
    #[test]
    fn release_matches_a_cents_model(
        total in 1u32..100_000,
        payments in prop::collection::vec((1u32..50_000, prop::sample::select(vec!["approved", "rejected", "pending", "refunded"])), 0..6),
        shipment in prop::option::of(prop::sample::select(vec!["ready_to_ship", "pending", "shipped"])),
    ) {
        let paid_cents: u64 = payments.iter().filter(|(_, s)| *s == "approved").map(|(c, _)| *c as u64).sum();
        let expected = if paid_cents < total as u64 {
            Release::NotPaid
        } else if shipment.is_none_or(|s| s == "ready_to_ship") {
            Release::Release
        } else {
            Release::AwaitingShipment
        };
        let amounts: Vec<(String, &str)> = payments.iter().map(|(c, s)| (cents(*c), *s)).collect();
        let refs: Vec<(&str, &str)> = amounts.iter().map(|(a, s)| (a.as_str(), *s)).collect();
        let shipments: Vec<&str> = shipment.into_iter().collect();
        let d = release(&order(&cents(total), &refs, &shipments));
        prop_assert_eq!(d.outcome, expected);
        prop_assert_eq!(d.paid.to_string(), cents(paid_cents as u32));
    }

    /// Payments in any order decide the same.
    #[test]
    fn release_ignores_payment_order(
        amounts in prop::collection::vec(1u32..10_000, 1..6),
        total in 1u32..30_000,
    ) {
        let strings: Vec<String> = amounts.iter().map(|c| cents(*c)).collect();
        let forward: Vec<(&str, &str)> = strings.iter().map(|a| (a.as_str(), "approved")).collect();
        let mut backward = forward.clone();
        backward.reverse();
        let a = release(&order(&cents(total), &forward, &[]));
        let b = release(&order(&cents(total), &backward, &[]));
        prop_assert_eq!(a.outcome, b.outcome);
        prop_assert_eq!(a.paid, b.paid);
    }
}
