//! The business rules, as pure functions over typed data (DESIGN section 4):
//! no I/O, no clock, so every row of every table is a unit test.

use crate::api::types::{MerchantOrder, PaymentStatus};
use crate::domain::{IntentState, ResourceId};
use crate::money::Money;

/// What the release rule says about a merchant order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    /// Paid in full, and nothing to wait for: hand the goods over.
    Release,
    /// Paid in full, but the first shipment is not `ready_to_ship` yet.
    AwaitingShipment,
    NotPaid,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleaseDecision {
    pub outcome: Release,
    pub paid: Money,
    pub total: Money,
    /// The approved payments that make up `paid`.
    pub payment_ids: Vec<ResourceId>,
}

/// paid = the sum of `transaction_amount` over approved payments. Paid in
/// full with no shipments releases; with shipments, only once the first
/// shipment is `ready_to_ship`.
pub fn release(order: &MerchantOrder) -> ReleaseDecision {
    let approved: Vec<_> = order
        .payments
        .iter()
        .filter(|p| p.status == PaymentStatus::Approved)
        .collect();
    let paid: Money = approved.iter().map(|p| p.transaction_amount).sum();
    let outcome = if paid < order.total_amount {
        Release::NotPaid
    } else {
        match order.shipments.first() {
            None => Release::Release,
            Some(s) if s.status.as_deref() == Some("ready_to_ship") => Release::Release,
            Some(_) => Release::AwaitingShipment,
        }
    };
    ReleaseDecision {
        outcome,
        paid,
        total: order.total_amount,
        payment_ids: approved.iter().map(|p| p.id.clone()).collect(),
    }
}

/// The final outcome of a payment intent, which names its event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntentOutcome {
    Finished,
    Confirmed,
    NotApproved,
    Canceled,
    Error,
}

impl IntentOutcome {
    pub fn event_type(self) -> &'static str {
        match self {
            IntentOutcome::Finished => "payment_intent.finished",
            IntentOutcome::Confirmed => "payment_intent.confirmed",
            IntentOutcome::NotApproved => "payment_intent.not_approved",
            IntentOutcome::Canceled => "payment_intent.canceled",
            IntentOutcome::Error => "payment_intent.error",
        }
    }

    pub fn parse_event_type(s: &str) -> Option<IntentOutcome> {
        [
            IntentOutcome::Finished,
            IntentOutcome::Confirmed,
            IntentOutcome::NotApproved,
            IntentOutcome::Canceled,
            IntentOutcome::Error,
        ]
        .into_iter()
        .find(|o| o.event_type() == s)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IntentDecision {
    Decided(IntentOutcome),
    /// The payment is still being decided (or not attached yet): ask again.
    RetryLater(&'static str),
}

/// The payment-intent table. `payment` is the status of the payment as
/// fetched from the API, never the notification's own `payment.state`.
pub fn intent(state: IntentState, payment: Option<&PaymentStatus>) -> IntentDecision {
    use IntentDecision::*;
    use PaymentStatus as P;
    match (state, payment) {
        (IntentState::Canceled, _) => Decided(IntentOutcome::Canceled),
        (IntentState::Error, _) => Decided(IntentOutcome::Error),
        (IntentState::Finished | IntentState::ConfirmationRequired, None) => {
            RetryLater("the intent names no payment yet")
        }
        (IntentState::Finished, Some(P::Approved)) => Decided(IntentOutcome::Finished),
        (IntentState::Finished, Some(_)) => Decided(IntentOutcome::NotApproved),
        (IntentState::ConfirmationRequired, Some(P::Approved)) => Decided(IntentOutcome::Confirmed),
        (
            IntentState::ConfirmationRequired,
            Some(P::Rejected | P::Cancelled | P::Refunded | P::ChargedBack),
        ) => Decided(IntentOutcome::NotApproved),
        (IntentState::ConfirmationRequired, Some(_)) => {
            RetryLater("the payment is still being decided")
        }
    }
}

/// What a new intent outcome means against the one recorded, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finality {
    /// Nothing recorded: record and emit.
    New,
    /// The same outcome again: nothing to do.
    Same,
    /// A different outcome for an intent already final: recorded as a
    /// conflict, changes nothing.
    Conflict,
}

pub fn finality(recorded: Option<IntentOutcome>, new: IntentOutcome) -> Finality {
    match recorded {
        None => Finality::New,
        Some(r) if r == new => Finality::Same,
        Some(_) => Finality::Conflict,
    }
}

#[cfg(test)]
mod tests;
