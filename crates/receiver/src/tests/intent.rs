use serde_json::json;

use super::{intent_of, m, pay};
use crate::domain::platform::PaymentStatus;
use crate::domain::{EventType, IntentState};
use crate::rules::{IntentDecision, IntentOutcome, intent};

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

#[test]
fn a_payment_must_belong_to_its_intent() {
    let p = |amount: &str, reference: Option<&str>| {
        pay(
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
    let no_amount = pay(json!({"id": 5, "status": "approved"}));
    assert!(intent::payment_matches(&intent_of(1500, None), &no_amount).is_err());
}

#[test]
fn an_intent_decision_takes_the_final_slot_with_string_ids() {
    let i = intent_of(1500, Some("t-12"));
    let p = pay(json!({"id": 5, "status": "approved", "transaction_amount": 15}));
    let d = intent::decision(&i, IntentState::Finished, Some(&p), IntentOutcome::Finished);
    assert_eq!(d.slot, crate::domain::Slot::Final);
    assert_eq!(d.event, EventType::IntentFinished);
    assert_eq!(d.data["payment_id"], "5");
    assert_eq!(d.data["payment_intent_id"], "i-1");
    assert_eq!(d.data["amount"], "15.00");
    assert_eq!(d.data["external_reference"], "t-12");
    assert_eq!(d.data["ticket_number"], "T1");
}
