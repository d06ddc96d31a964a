//! The decision kernel, table by table: what recording one decision means.

use serde_json::json;

use crate::domain::verdict::{Context, EventPolicy, Route, Verdict};
use crate::domain::{
    Decision, EventState, EventType, Guard, GuardFacts, MerchantOrderId, OrderFlags, Slot,
};
use crate::rules::kernel::{FINAL_KEY, decide, told};

fn decision(event: EventType, slot: Slot, guards: Vec<Guard>) -> Decision {
    Decision {
        subject: "merchant_order:7".into(),
        key: event.as_str().into(),
        event,
        data: json!({"merchant_order_id": "7"}),
        guards,
        marks: vec![],
        slot,
        reason: "because".into(),
    }
}

fn ctx<'a>(facts: &'a GuardFacts, recorded: Option<EventType>) -> Context<'a> {
    Context {
        account: "default",
        now: 1_700_000_000_000,
        recorded_final: recorded,
        facts,
    }
}

/// One destination that takes every event of every account.
fn deliver() -> EventPolicy {
    EventPolicy::new(vec![Route {
        destination: "default".into(),
        types: EventType::all().collect(),
        accounts: None,
    }])
}

fn order(released: bool, blocked: bool) -> GuardFacts {
    GuardFacts {
        orders: [("7".to_string(), OrderFlags { released, blocked })].into(),
        ..GuardFacts::default()
    }
}

#[test]
fn a_guard_that_does_not_hold_skips_the_decision() {
    let o = MerchantOrderId::parse("7").unwrap();
    let cases = [
        (Guard::OrderNotBlocked(o.clone()), (false, true), false),
        (Guard::OrderNotBlocked(o.clone()), (false, false), true),
        (Guard::OrderReleased(o.clone()), (false, false), false),
        (Guard::OrderReleased(o.clone()), (true, false), true),
        (Guard::OrderNotReleased(o.clone()), (true, false), false),
        (Guard::OrderNotReleased(o.clone()), (false, true), true),
    ];
    for (guard, (released, blocked), holds) in cases {
        let facts = order(released, blocked);
        let d = decision(EventType::OrderReleased, Slot::Once, vec![guard.clone()]);
        let v = decide(&d, &ctx(&facts, None), &deliver());
        assert_eq!(
            matches!(v, Verdict::Record(_)),
            holds,
            "{guard:?} released={released} blocked={blocked}"
        );
    }
    // An order never seen has no flags.
    let none = GuardFacts::default();
    let d = decision(
        EventType::OrderAtRisk,
        Slot::Once,
        vec![Guard::OrderReleased(o)],
    );
    assert_eq!(decide(&d, &ctx(&none, None), &deliver()), Verdict::Skip);
}

#[test]
fn a_decision_waiting_on_a_hold_is_taken_only_once_approved() {
    use crate::domain::HoldState;
    let guard = Guard::HoldApproved {
        kind: "review_above",
        subject: "merchant_order:7".into(),
    };
    let d = decision(EventType::OrderReleased, Slot::Once, vec![guard]);
    let with = |state: Option<HoldState>| GuardFacts {
        holds: state
            .map(|s| {
                (
                    ("review_above".to_string(), "merchant_order:7".to_string()),
                    s,
                )
            })
            .into_iter()
            .collect(),
        ..GuardFacts::default()
    };
    for (state, records) in [
        (None, false),
        (Some(HoldState::Held), false),
        (Some(HoldState::Rejected), false),
        (Some(HoldState::Expired), false),
        (Some(HoldState::Approved), true),
    ] {
        let facts = with(state);
        let v = decide(&d, &ctx(&facts, None), &deliver());
        assert_eq!(matches!(v, Verdict::Record(_)), records, "{state:?}");
    }
}

#[test]
fn the_block_brake_counts_the_last_hour() {
    let d = decision(
        EventType::OrderBlocked,
        Slot::Once,
        vec![Guard::UnauthenticatedBlocksUnder(10)],
    );
    for (placed, records) in [(0, true), (9, true), (10, false), (11, false)] {
        let facts = GuardFacts {
            unauthenticated_blocks_last_hour: placed,
            ..Default::default()
        };
        assert_eq!(
            matches!(
                decide(&d, &ctx(&facts, None), &deliver()),
                Verdict::Record(_)
            ),
            records,
            "{placed} placed"
        );
    }
}

#[test]
fn final_states_never_change() {
    use EventType::*;
    let facts = GuardFacts::default();
    let d = decision(IntentFinished, Slot::Final, vec![]);
    let Verdict::Record(r) = decide(&d, &ctx(&facts, None), &deliver()) else {
        panic!("a first final outcome is recorded");
    };
    assert_eq!(r.key, FINAL_KEY);
    assert_eq!(
        decide(&d, &ctx(&facts, Some(IntentFinished)), &deliver()),
        Verdict::Same
    );
    for recorded in [IntentCanceled, IntentConfirmed] {
        let Verdict::Conflict { key, reason } =
            decide(&d, &ctx(&facts, Some(recorded)), &deliver())
        else {
            panic!("a different final outcome is a conflict");
        };
        assert_eq!(key, "conflict:payment_intent.finished");
        assert!(reason.contains(recorded.as_str()), "{reason}");
    }
}

#[test]
fn the_event_has_a_stable_id_an_envelope_and_the_policy_state() {
    let facts = GuardFacts::default();
    let d = decision(EventType::OrderReleased, Slot::Once, vec![]);
    let Verdict::Record(a) = decide(&d, &ctx(&facts, None), &deliver()) else {
        panic!()
    };
    let Verdict::Record(b) = decide(&d, &ctx(&facts, None), &EventPolicy::default()) else {
        panic!()
    };
    let (a, b) = (a.event.unwrap(), b.event.unwrap());
    assert_eq!(a.id, b.id, "the same decision, the same event id");
    assert!(a.id.starts_with("evt_"));
    assert_eq!(a.state, EventState::Pending);
    assert_eq!(a.destinations, ["default"]);
    assert_eq!(b.state, EventState::Stored);
    assert!(b.destinations.is_empty());
    let body: serde_json::Value = serde_json::from_str(&a.body).unwrap();
    assert_eq!(body["id"], a.id.as_str());
    assert_eq!(body["type"], "order.released");
    assert_eq!(body["account"], "default");
    assert_eq!(body["created_at"], "2023-11-14T22:13:20.000Z");
    assert_eq!(body["data"]["merchant_order_id"], "7");
}

#[test]
fn a_rejected_alert_is_recorded_and_never_told() {
    assert!(!told(EventType::FraudAlertRejected));
    assert!(told(EventType::FraudAlertUnverified));
    let facts = GuardFacts::default();
    let d = decision(EventType::FraudAlertRejected, Slot::Once, vec![]);
    let Verdict::Record(r) = decide(&d, &ctx(&facts, None), &deliver()) else {
        panic!()
    };
    assert!(r.event.is_none());
    assert_eq!(r.reason, "because");
}

#[test]
fn an_event_is_queued_for_every_destination_that_takes_it() {
    use EventType::*;
    let policy = EventPolicy::new(vec![
        Route {
            destination: "shop".into(),
            types: vec![OrderReleased, OrderBlocked],
            accounts: None,
        },
        Route {
            destination: "erp".into(),
            types: vec![OrderReleased, PaymentRefunded],
            accounts: Some(vec!["default".into()]),
        },
        Route {
            destination: "other-account".into(),
            types: EventType::all().collect(),
            accounts: Some(vec!["north".into()]),
        },
    ]);
    let facts = GuardFacts::default();
    let queued = |event: EventType| {
        let d = decision(event, Slot::Once, vec![]);
        match decide(&d, &ctx(&facts, None), &policy) {
            Verdict::Record(r) => r.event.unwrap(),
            v => panic!("{v:?}"),
        }
    };
    assert_eq!(queued(OrderReleased).destinations, ["shop", "erp"]);
    assert_eq!(queued(OrderBlocked).destinations, ["shop"]);
    assert_eq!(queued(PaymentRefunded).destinations, ["erp"]);
    // Taken by none: only stored, as without any destination.
    let nobody = queued(ChargebackUpdated);
    assert!(nobody.destinations.is_empty());
    assert_eq!(nobody.state, EventState::Stored);
    // The same event id whichever destinations take it.
    let d = decision(OrderReleased, Slot::Once, vec![]);
    let Verdict::Record(alone) = decide(&d, &ctx(&facts, None), &deliver()) else {
        panic!()
    };
    assert_eq!(alone.event.unwrap().id, queued(OrderReleased).id);
}

mod properties {
    use proptest::prelude::*;

    use super::*;

    /// Guards on order 7 (whose flags the facts hold) or 8 (never seen).
    fn guard() -> impl Strategy<Value = Guard> {
        let order =
            prop::sample::select(vec!["7", "8"]).prop_map(|o| MerchantOrderId::parse(o).unwrap());
        prop_oneof![
            order.clone().prop_map(Guard::OrderReleased),
            order.clone().prop_map(Guard::OrderNotReleased),
            order.prop_map(Guard::OrderNotBlocked),
            (0u32..4).prop_map(Guard::UnauthenticatedBlocksUnder),
            Just(Guard::HoldApproved {
                kind: "review_above",
                subject: "merchant_order:7".into(),
            }),
        ]
    }

    /// What a guard means, written out again from the facts generated (an
    /// order never seen is neither released nor blocked).
    fn holds(g: &Guard, released: bool, blocked: bool, blocks: u32, approved: bool) -> bool {
        let seen = |o: &MerchantOrderId| o.as_str() == "7";
        match g {
            Guard::OrderReleased(o) => seen(o) && released,
            Guard::OrderNotReleased(o) => !(seen(o) && released),
            Guard::OrderNotBlocked(o) => !(seen(o) && blocked),
            Guard::UnauthenticatedBlocksUnder(n) => blocks < *n,
            Guard::HoldApproved { .. } => approved,
        }
    }

    fn event_type() -> impl Strategy<Value = EventType> {
        prop::sample::select(EventType::all().collect::<Vec<_>>())
    }

    proptest! {
        /// Whatever the decision and what the transaction sees: it is
        /// recorded only when every guard holds; a final slot is written
        /// once, its repeat changes nothing and a different outcome is a
        /// conflict with no event; an event exists exactly when the type
        /// is told, and it waits for delivery exactly when a destination
        /// takes it.
        #[test]
        fn the_kernel_records_only_what_its_guards_and_slot_allow(
            event in event_type(),
            final_slot in any::<bool>(),
            guards in prop::collection::vec(guard(), 0..4),
            released in any::<bool>(),
            blocked in any::<bool>(),
            blocks in 0u32..4,
            recorded in prop::option::of(event_type()),
            delivering in any::<bool>(),
            approved in any::<bool>(),
        ) {
            let slot = if final_slot { Slot::Final } else { Slot::Once };
            let d = decision(event, slot, guards.clone());
            let mut facts = order(released, blocked);
            facts.unauthenticated_blocks_last_hour = blocks;
            if approved {
                let hold = ("review_above".to_string(), "merchant_order:7".to_string());
                facts.holds.insert(hold, crate::domain::HoldState::Approved);
            }
            let policy = if delivering { deliver() } else { EventPolicy::default() };
            let c = ctx(&facts, recorded);
            let v = decide(&d, &c, &policy);
            let guarded = guards
                .iter()
                .all(|g| holds(g, released, blocked, blocks, approved));
            match v {
                Verdict::Skip => prop_assert!(!guarded),
                Verdict::Same => {
                    prop_assert!(guarded && final_slot);
                    prop_assert_eq!(recorded, Some(event));
                }
                Verdict::Conflict { key, .. } => {
                    prop_assert!(guarded && final_slot);
                    prop_assert!(recorded.is_some() && recorded != Some(event));
                    prop_assert_eq!(key, format!("conflict:{event}"));
                }
                Verdict::Record(r) => {
                    prop_assert!(guarded);
                    prop_assert!(!final_slot || recorded.is_none());
                    prop_assert_eq!(&r.key, if final_slot { FINAL_KEY } else { event.as_str() });
                    // Only a rejected fraud alert is kept from the merchant.
                    prop_assert_eq!(r.event.is_some(), event != EventType::FraudAlertRejected);
                    if let Some(e) = r.event {
                        prop_assert_eq!(e.destinations.is_empty(), !delivering);
                        let state = if delivering { EventState::Pending } else { EventState::Stored };
                        prop_assert_eq!(e.state, state);
                    }
                }
            }
        }
    }
}
