//! The fraud saga as a plan: driven step by step against a made-up API,
//! with no database and no network.

use proptest::prelude::*;
use serde_json::json;

use super::{merchant_order, pay};
use crate::domain::platform::{MerchantOrder, Payment, PaymentStatus};
use crate::domain::{
    EventType, FraudAlert, Mark, MerchantOrderId, OrderReviews, PaymentId, ResourceId, Review,
    ReviewSeen, UnauthenticatedAlerts,
};
use crate::rules::Policy;
use crate::rules::fraud::{self, BlockSeen, Finish, Lookup, Saga, Step, Undo, Undone, undo_for};

/// What the made-up platform and store answer.
#[derive(Clone)]
struct World {
    payment: Option<Payment>,
    order: Option<MerchantOrder>,
    released: bool,
    /// The block brake lets this alert's block through.
    block_allowed: bool,
    refused: Option<String>,
    /// How the order stands with the reviews.
    reviews: OrderReviews,
}

impl World {
    fn with(status: &str, order: &str) -> World {
        World {
            payment: Some(pay(
                json!({"id": 5, "status": status, "transaction_amount": "480",
                                     "order": {"id": order, "type": "mercadopago"}}),
            )),
            order: Some(merchant_order(json!({"id": order, "total_amount": "480",
                "payments": [{"id": 5, "transaction_amount": "480", "status": status}]}))),
            released: false,
            block_allowed: true,
            refused: None,
            reviews: OrderReviews::default(),
        }
    }
}

fn alert(order: Option<&str>, payment: Option<&str>, authenticated: bool) -> FraudAlert {
    FraudAlert {
        merchant_order: order.map(|o| MerchantOrderId::parse(o).unwrap()),
        payment: payment.map(|p| PaymentId::parse(p).unwrap()),
        notified_id: None,
        description: Some("<b>\u{202e}refund me</b>".into()),
        authenticated,
    }
}

fn saga(a: FraudAlert, unauthenticated: UnauthenticatedAlerts, review: Option<ReviewSeen>) -> Saga {
    Saga::new(
        "default".into(),
        a,
        "fraud:7:5".into(),
        Some(3),
        false,
        Policy {
            fraud_unauthenticated: unauthenticated,
            fraud_blocks_per_hour: 10,
            holds: Default::default(),
        },
        review,
    )
}

/// Runs the saga to its end; returns every step taken.
fn drive(mut s: Saga, w: &World) -> (Vec<Step>, Finish) {
    let mut steps = Vec::new();
    for _ in 0..20 {
        let step = fraud::next(&s);
        steps.push(step.clone());
        match step {
            Step::FetchPayment(id) => {
                s.payment = match &w.payment {
                    Some(p) if p.id == id => Lookup::Found(p.clone()),
                    _ => Lookup::Missing,
                }
            }
            Step::FetchOrder(id) => {
                s.order = match &w.order {
                    Some(o) if o.id == id => Lookup::Found(o.clone()),
                    _ => Lookup::Missing,
                }
            }
            Step::ReadOrderReviews { .. } => s.order_reviews = Some(w.reviews.clone()),
            Step::Block(_) => {
                s.block = Some(BlockSeen {
                    released: w.released,
                    blocked_by_alert: !w.released && w.block_allowed,
                })
            }
            Step::Cancel(_) | Step::Refund { .. } => {
                s.undone = Some(match &w.refused {
                    Some(r) => Undone::Refused(r.clone()),
                    None => Undone::Done,
                })
            }
            Step::Finish(f) => return (steps, f),
        }
    }
    panic!("the saga did not end: {steps:?}");
}

fn events(f: &Finish) -> Vec<EventType> {
    f.effects.decisions.iter().map(|d| d.event).collect()
}

fn moved_money(steps: &[Step]) -> bool {
    steps
        .iter()
        .any(|s| matches!(s, Step::Cancel(_) | Step::Refund { .. }))
}

fn blocked(steps: &[Step]) -> bool {
    steps.iter().any(|s| matches!(s, Step::Block(_)))
}

#[test]
fn an_authenticated_alert_verifies_blocks_then_refunds() {
    let mut s = saga(
        alert(Some("7"), Some("5"), true),
        UnauthenticatedAlerts::Hold,
        None,
    );
    s.authenticated = true;
    let (steps, f) = drive(s, &World::with("approved", "7"));
    assert!(matches!(steps[0], Step::FetchPayment(_)), "verify first");
    assert!(matches!(steps[1], Step::Block(_)), "then block");
    assert!(matches!(steps[2], Step::Refund { .. }), "then refund");
    assert_eq!(events(&f), [EventType::PaymentRefunded]);
    let d = &f.effects.decisions[0];
    assert_eq!(d.data["status"], "refunded", "the state after the decision");
    assert!(d.reason.contains("→ refunded"), "{}", d.reason);
    let mut s = saga(
        alert(Some("7"), Some("5"), true),
        UnauthenticatedAlerts::Hold,
        None,
    );
    s.authenticated = true;
    let (steps, f) = drive(s, &World::with("in_process", "7"));
    assert!(matches!(steps[2], Step::Cancel(_)));
    assert_eq!(f.effects.decisions[0].data["status"], "cancelled");
}

#[test]
fn an_unauthenticated_alert_is_held_by_default_and_acts_only_when_opted_in() {
    let a = alert(Some("7"), Some("5"), false);
    let (steps, f) = drive(
        saga(a.clone(), UnauthenticatedAlerts::Hold, None),
        &World::with("approved", "7"),
    );
    assert!(blocked(&steps));
    assert!(!moved_money(&steps));
    assert_eq!(events(&f), [EventType::FraudAlertUnverified]);
    let d = &f.effects.decisions[0];
    assert_eq!(d.data["description"], json!(null), "no attacker text");
    assert!(matches!(&d.marks[0], Mark::Review(r) if r.state == Review::Held && r.round == 0));
    let (steps, _) = drive(
        saga(a, UnauthenticatedAlerts::Act, None),
        &World::with("approved", "7"),
    );
    assert!(moved_money(&steps));
}

#[test]
fn what_the_api_does_not_confirm_blocks_nothing_and_is_not_told() {
    let cases = [
        ("payment_not_found", alert(Some("7"), Some("5"), false), {
            let mut w = World::with("approved", "7");
            w.payment = None;
            w
        }),
        (
            "payment_not_in_order",
            alert(Some("8"), Some("5"), false),
            World::with("approved", "7"),
        ),
        (
            "order_not_found",
            alert(Some("9"), None, false),
            World::with("approved", "7"),
        ),
        ("order_without_payment", alert(Some("7"), None, false), {
            let mut w = World::with("approved", "7");
            w.order = Some(merchant_order(json!({"id": 7, "total_amount": 1})));
            w
        }),
    ];
    for (reason, a, w) in cases {
        let (steps, f) = drive(saga(a, UnauthenticatedAlerts::Act, None), &w);
        assert!(!blocked(&steps), "{reason}: nothing blocked");
        assert!(!moved_money(&steps), "{reason}");
        assert_eq!(f.rejected, Some(reason));
        assert_eq!(events(&f), [EventType::FraudAlertRejected]);
        assert!(!crate::rules::kernel::told(EventType::FraudAlertRejected));
        assert!(
            matches!(&f.effects.decisions[0].marks[0], Mark::Review(r) if r.state == Review::Rejected)
        );
    }
}

#[test]
fn an_alert_naming_only_an_existing_order_blocks_and_holds() {
    let (steps, f) = drive(
        saga(
            alert(Some("7"), None, true),
            UnauthenticatedAlerts::Act,
            None,
        ),
        &World::with("approved", "7"),
    );
    assert!(matches!(steps[0], Step::FetchOrder(_)));
    assert!(blocked(&steps));
    assert!(!moved_money(&steps));
    assert_eq!(events(&f), [EventType::FraudAlertUnverified]);
}

#[test]
fn past_the_brake_an_alert_is_held_without_blocking() {
    let mut w = World::with("approved", "7");
    w.block_allowed = false;
    let (steps, f) = drive(
        saga(
            alert(Some("7"), Some("5"), false),
            UnauthenticatedAlerts::Act,
            None,
        ),
        &w,
    );
    assert!(!moved_money(&steps));
    assert_eq!(events(&f), [EventType::FraudAlertUnverified]);
    assert!(
        f.effects.decisions[0]
            .reason
            .contains("held without blocking")
    );
    let Step::Block(b) = &steps[1] else { panic!() };
    assert!(
        b.guards
            .iter()
            .any(|g| matches!(g, crate::domain::Guard::UnauthenticatedBlocksUnder(10))),
        "an unauthenticated block is counted against the brake"
    );
}

#[test]
fn an_order_released_already_is_never_undone() {
    let mut w = World::with("approved", "7");
    w.released = true;
    let mut s = saga(
        alert(Some("7"), Some("5"), true),
        UnauthenticatedAlerts::Act,
        None,
    );
    s.authenticated = true;
    let (steps, f) = drive(s, &w);
    assert!(!moved_money(&steps));
    assert_eq!(events(&f), [EventType::OrderFraudAfterRelease]);
}

#[test]
fn a_dismissal_covers_what_was_reviewed_and_a_later_alert_opens_a_new_round() {
    let dismissed = ReviewSeen {
        state: Review::Dismissed,
        round: 0,
        delivery_id: Some(3),
    };
    // The same delivery again: nothing.
    let (steps, f) = drive(
        saga(
            alert(Some("7"), Some("5"), false),
            UnauthenticatedAlerts::Hold,
            Some(dismissed),
        ),
        &World::with("approved", "7"),
    );
    assert!(steps.len() == 1 && f.effects.decisions.is_empty());
    // A later delivery: a new round that blocks and holds again.
    let mut s = saga(
        alert(Some("7"), Some("5"), false),
        UnauthenticatedAlerts::Hold,
        Some(dismissed),
    );
    s.delivery_id = Some(4);
    assert_eq!(s.round(), 1);
    assert_eq!(s.subject(), "fraud_alert:7:5#1");
    let (steps, f) = drive(s, &World::with("approved", "7"));
    assert!(matches!(&steps[1], Step::ReadOrderReviews { .. }));
    let Step::Block(b) = &steps[2] else { panic!() };
    assert_eq!(b.key, "order.blocked:fraud_alert:7:5#1");
    assert!(matches!(&f.effects.decisions[0].marks[0], Mark::Review(r) if r.round == 1));
}

#[test]
fn a_confirmed_review_moves_the_money() {
    let confirmed = ReviewSeen {
        state: Review::Confirmed,
        round: 0,
        delivery_id: Some(3),
    };
    let (steps, f) = drive(
        saga(
            alert(Some("7"), Some("5"), false),
            UnauthenticatedAlerts::Hold,
            Some(confirmed),
        ),
        &World::with("approved", "7"),
    );
    assert!(moved_money(&steps));
    assert_eq!(events(&f), [EventType::PaymentRefunded]);
    let Step::Block(b) = &steps[1] else { panic!() };
    assert!(b.guards.len() == 1, "a person's confirmation is not braked");
}

#[test]
fn a_refused_undo_is_cancel_failed_for_a_person() {
    let mut w = World::with("approved", "7");
    w.refused = Some("refund refused".into());
    let mut s = saga(
        alert(Some("7"), Some("5"), true),
        UnauthenticatedAlerts::Hold,
        None,
    );
    s.authenticated = true;
    let (_, f) = drive(s, &w);
    assert_eq!(events(&f), [EventType::PaymentCancelFailed]);
    assert_eq!(f.effects.decisions[0].data["reason"], "refund refused");
}

#[test]
fn an_alert_naming_nothing_is_resolved_from_its_id_and_only_held() {
    let mut a = alert(None, None, false);
    a.notified_id = Some(ResourceId::parse("5").unwrap());
    let (steps, f) = drive(
        saga(a, UnauthenticatedAlerts::Act, None),
        &World::with("approved", "7"),
    );
    assert!(blocked(&steps));
    assert!(!moved_money(&steps), "learnt from the API, not said: hold");
    assert_eq!(events(&f), [EventType::FraudAlertUnverified]);
    let mut a = alert(None, None, false);
    a.notified_id = Some(ResourceId::parse("404").unwrap());
    let (_, f) = drive(
        saga(a, UnauthenticatedAlerts::Act, None),
        &World::with("approved", "7"),
    );
    assert_eq!(f.rejected, Some("names_nothing"));
}

#[test]
fn how_a_payment_is_undone() {
    let p = PaymentStatus::parse;
    assert_eq!(undo_for(&p("pending")), Undo::Cancel);
    assert_eq!(undo_for(&p("in_process")), Undo::Cancel);
    assert_eq!(undo_for(&p("authorized")), Undo::Cancel);
    assert_eq!(undo_for(&p("approved")), Undo::Refund);
    assert_eq!(
        undo_for(&p("cancelled")),
        Undo::AlreadyDone(EventType::PaymentCancelled)
    );
    assert_eq!(
        undo_for(&p("refunded")),
        Undo::AlreadyDone(EventType::PaymentRefunded)
    );
    assert_eq!(undo_for(&p("rejected")), Undo::NothingMoved);
    assert!(matches!(undo_for(&p("in_mediation")), Undo::Impossible(_)));
    assert!(matches!(undo_for(&p("charged_back")), Undo::Impossible(_)));
    let o = MerchantOrderId::parse("7").unwrap();
    let key = fraud::idempotency_key("a", &o, &PaymentId::parse("5").unwrap());
    assert_eq!(
        key,
        fraud::idempotency_key("a", &o, &PaymentId::parse("5").unwrap())
    );
    assert!(key.starts_with("pointhook-fraud-"));
}

proptest! {
    /// Whatever the alert says and the API answers: money moves only for
    /// an authenticated alert, a person's confirmation, or an account that
    /// opted into `act`, and only the payment the alert named (or, once a
    /// person confirmed, its order's one payment); nothing is blocked or moved before the API
    /// confirmed the payment is in the order; a rejection tells nothing;
    /// and an unauthenticated alert's text is never in an event.
    #[test]
    fn the_saga_never_moves_money_it_may_not(
        authenticated in any::<bool>(),
        act in any::<bool>(),
        review in prop::option::of((0u8..4, 0u32..3, prop::option::of(1i64..6))),
        named_order in prop::option::of(prop::sample::select(vec!["7", "8"])),
        named_payment in prop::option::of(prop::sample::select(vec!["5", "6"])),
        status in prop::sample::select(vec!["approved", "pending", "rejected", "refunded", "in_mediation"]),
        released in any::<bool>(),
        block_allowed in any::<bool>(),
        delivery in 1i64..6,
    ) {
        let review = review.map(|(s, round, delivery_id)| ReviewSeen {
            state: [Review::Held, Review::Confirmed, Review::Dismissed, Review::Rejected][s as usize],
            round,
            delivery_id,
        });
        let mut s = saga(
            alert(named_order, named_payment, authenticated),
            if act { UnauthenticatedAlerts::Act } else { UnauthenticatedAlerts::Hold },
            review,
        );
        s.authenticated = authenticated;
        s.delivery_id = Some(delivery);
        let confirmed = review.is_some_and(|r| r.state == Review::Confirmed);
        let mut w = World::with(status, "7");
        w.released = released;
        w.block_allowed = block_allowed;
        let (steps, f) = drive(s, &w);
        if moved_money(&steps) {
            prop_assert!(authenticated || act || confirmed);
            // A named payment, or the order's own payment once a person
            // confirmed the review that named it.
            prop_assert!(named_order == Some("7"));
            prop_assert!(named_payment == Some("5") || (named_payment.is_none() && confirmed));
            prop_assert!(!released);
        }
        if blocked(&steps) {
            let verified = steps.iter().position(|s| matches!(s, Step::FetchPayment(_) | Step::FetchOrder(_)));
            let block = steps.iter().position(|s| matches!(s, Step::Block(_)));
            prop_assert!(verified < block, "verified before blocking");
        }
        if f.rejected.is_some() {
            prop_assert!(!blocked(&steps));
            prop_assert!(events(&f).iter().all(|e| !crate::rules::kernel::told(*e)));
        }
        for d in &f.effects.decisions {
            if !authenticated {
                prop_assert!(d.data.get("description").is_none_or(|v| v.is_null()));
            }
        }
    }
}

#[test]
fn an_alert_that_may_only_hold_joins_the_review_held_for_its_order() {
    let mut w = World::with("approved", "7");
    w.reviews.held = Some("fraud:7:-".into());
    let (steps, f) = drive(
        saga(
            alert(Some("7"), Some("5"), false),
            UnauthenticatedAlerts::Hold,
            None,
        ),
        &w,
    );
    assert!(!blocked(&steps), "the order is blocked by the held review");
    assert_eq!(events(&f), [EventType::FraudAlertUnverified]);
    assert!(f.effects.decisions[0].reason.contains("joins the review"));
    // Its own review held: it goes on as before.
    w.reviews.held = Some("fraud:7:5".into());
    let (steps, _) = drive(
        saga(
            alert(Some("7"), Some("5"), false),
            UnauthenticatedAlerts::Hold,
            None,
        ),
        &w,
    );
    assert!(blocked(&steps));
}

#[test]
fn past_the_hourly_cap_an_unauthenticated_alert_is_recorded_not_held() {
    let mut w = World::with("approved", "7");
    w.reviews.opened_last_hour = 30;
    let (steps, f) = drive(
        saga(
            alert(Some("7"), Some("5"), false),
            UnauthenticatedAlerts::Hold,
            None,
        ),
        &w,
    );
    assert!(!blocked(&steps));
    assert_eq!(f.rejected, Some("over_review_cap"));
    assert_eq!(events(&f), [EventType::FraudAlertRejected]);
    let Mark::Review(r) = &f.effects.decisions[0].marks[0] else {
        panic!()
    };
    assert_eq!(r.state, Review::Rejected);
    // An authenticated alert is not capped.
    let mut s = saga(
        alert(Some("7"), Some("5"), true),
        UnauthenticatedAlerts::Hold,
        None,
    );
    s.authenticated = true;
    let (steps, _) = drive(s, &w);
    assert!(moved_money(&steps));
}

#[test]
fn an_alert_naming_only_its_order_reads_the_orders_payment_for_the_review() {
    let w = World::with("approved", "7");
    let (steps, f) = drive(
        saga(
            alert(Some("7"), None, false),
            UnauthenticatedAlerts::Act,
            None,
        ),
        &w,
    );
    assert!(
        steps
            .iter()
            .any(|s| matches!(s, Step::FetchPayment(p) if p.as_str() == "5"))
    );
    assert!(!moved_money(&steps), "learnt from the API: held");
    let held = &f.effects.decisions[0];
    assert_eq!(held.event, EventType::FraudAlertUnverified);
    assert_eq!(held.data["payment_id"], "5");
    assert_eq!(held.data["payment_status"], "approved");
    assert_eq!(held.data["amount"], "480.00");
    let Mark::Review(r) = &held.marks[0] else {
        panic!()
    };
    assert_eq!(r.payment.as_ref().map(|p| p.as_str()), Some("5"));
    // Confirmed by a person: refunded.
    let confirmed = ReviewSeen {
        state: Review::Confirmed,
        round: 0,
        delivery_id: Some(3),
    };
    let (steps, f) = drive(
        saga(
            alert(Some("7"), None, false),
            UnauthenticatedAlerts::Hold,
            Some(confirmed),
        ),
        &w,
    );
    assert!(moved_money(&steps));
    assert_eq!(events(&f), [EventType::PaymentRefunded]);
}
