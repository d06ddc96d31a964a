//! Payment intents: decided from the intent and the
//! payment as the API reports them, never from a notification's body.

use pointhook_common::money::Money;
use serde_json::json;

use crate::domain::platform::{Payment, PaymentIntent, PaymentStatus};
use crate::domain::subject::{Subject, SubjectKind};
use crate::domain::{Decision, EventType, IntentState, Slot};

/// The final outcome of a payment intent, which names its event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntentOutcome {
    Finished,
    Confirmed,
    NotApproved,
    Canceled,
    Error,
    Abandoned,
}

impl IntentOutcome {
    pub fn event(self) -> EventType {
        match self {
            IntentOutcome::Finished => EventType::IntentFinished,
            IntentOutcome::Confirmed => EventType::IntentConfirmed,
            IntentOutcome::NotApproved => EventType::IntentNotApproved,
            IntentOutcome::Canceled => EventType::IntentCanceled,
            IntentOutcome::Error => EventType::IntentError,
            IntentOutcome::Abandoned => EventType::IntentAbandoned,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IntentDecision {
    Decided(IntentOutcome),
    /// Final, but its payment is still being decided (or not attached
    /// yet): ask again, up to the job's attempts.
    Wait(&'static str),
    /// Not final yet (OPEN, ON_TERMINAL, PROCESSING, PROCESSED): ask again
    /// for a while; a later notification brings the change.
    NotFinal(IntentState),
}

/// Whether deciding `state` needs its payment.
pub fn needs_payment(state: IntentState) -> bool {
    matches!(
        state,
        IntentState::Finished | IntentState::ConfirmationRequired
    )
}

/// The payment-intent table. `payment` is the status of the payment as
/// fetched from the API, never the notification's own `payment.state`.
pub fn intent(state: IntentState, payment: Option<&PaymentStatus>) -> IntentDecision {
    use IntentDecision::*;
    use IntentState as S;
    use PaymentStatus as P;
    match (state, payment) {
        (S::Open | S::OnTerminal | S::Processing | S::Processed, _) => NotFinal(state),
        (S::Canceled, _) => Decided(IntentOutcome::Canceled),
        (S::Error, _) => Decided(IntentOutcome::Error),
        (S::Abandoned, _) => Decided(IntentOutcome::Abandoned),
        (S::Finished | S::ConfirmationRequired, None) => Wait("the intent names no payment yet"),
        (S::Finished, Some(P::Approved)) => Decided(IntentOutcome::Finished),
        (S::Finished, Some(_)) => Decided(IntentOutcome::NotApproved),
        (S::ConfirmationRequired, Some(P::Approved)) => Decided(IntentOutcome::Confirmed),
        (
            S::ConfirmationRequired,
            Some(P::Rejected | P::Cancelled | P::Refunded | P::ChargedBack),
        ) => Decided(IntentOutcome::NotApproved),
        (S::ConfirmationRequired, Some(_)) => Wait("the payment is still being decided"),
    }
}

/// Why a payment cannot be the intent's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Mismatch {
    #[error("payment {payment} is of {paid}, the intent of {asked}")]
    Amount {
        payment: String,
        paid: String,
        asked: String,
    },
    #[error("payment {payment} has no amount to compare with the intent's")]
    NoAmount { payment: String },
    #[error("payment {payment} has external reference {paid:?}, the intent {asked:?}")]
    Reference {
        payment: String,
        paid: String,
        asked: String,
    },
}

/// The payment must belong to the intent: the same amount (intents count in
/// cents) and, where both carry one, the same external reference.
pub fn payment_matches(intent: &PaymentIntent, payment: &Payment) -> Result<(), Mismatch> {
    let pid = payment.id.to_string();
    let (Some(cents), Some(paid)) = (intent.amount_cents, payment.amount) else {
        return Err(Mismatch::NoAmount { payment: pid });
    };
    let asked = Money::from_cents(cents);
    if asked != paid {
        return Err(Mismatch::Amount {
            payment: pid,
            paid: paid.to_string(),
            asked: asked.to_string(),
        });
    }
    if let (Some(asked), Some(paid)) = (
        intent.external_reference.as_ref().filter(|r| !r.is_empty()),
        payment
            .external_reference
            .as_ref()
            .filter(|r| !r.is_empty()),
    ) && asked != paid
    {
        return Err(Mismatch::Reference {
            payment: pid,
            paid: paid.clone(),
            asked: asked.clone(),
        });
    }
    Ok(())
}

/// The intent's final outcome as a decision: its one final slot.
pub fn decision(
    intent: &PaymentIntent,
    state: IntentState,
    payment: Option<&Payment>,
    outcome: IntentOutcome,
) -> Decision {
    let amount = intent.amount_cents.map(Money::from_cents);
    let read = match payment {
        Some(p) => format!(
            "payment {} {}{}",
            p.id,
            p.status,
            match amount {
                Some(a) => format!(", amount {a} matches"),
                None => String::new(),
            }
        ),
        None => "no payment".to_string(),
    };
    Decision {
        subject: Subject::new(SubjectKind::PaymentIntent, &intent.id).to_string(),
        key: "final".into(),
        event: outcome.event(),
        data: json!({
            "payment_intent_id": intent.id,
            "payment_id": payment.map(|p| &p.id),
            "state": state.as_str(),
            "payment_status": payment.map(|p| p.status.as_str()),
            "amount": amount.map(|a| a.to_string()),
            "external_reference": intent.external_reference,
            "ticket_number": intent.ticket_number,
            "device_id": intent.device_id,
        }),
        guards: vec![],
        marks: vec![],
        slot: Slot::Final,
        reason: format!(
            "intent {}, {read} → {}",
            state.as_str(),
            outcome
                .event()
                .as_str()
                .trim_start_matches("payment_intent.")
        ),
    }
}
