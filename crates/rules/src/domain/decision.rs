//! What a job decides, as data: `rules` builds it, `store` records it (each
//! decision once per account, subject and key, its guards checked in the
//! recording transaction, by `rules::kernel`), and the outbox tells it.

use sha2::{Digest, Sha256};
use strum::{EnumIter, EnumString, IntoStaticStr};

use super::ids::MerchantOrderId;

/// Every event pointhook tells the merchant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, IntoStaticStr, EnumString, EnumIter)]
pub enum EventType {
    #[strum(serialize = "order.released")]
    OrderReleased,
    #[strum(serialize = "order.awaiting_shipment")]
    OrderAwaitingShipment,
    #[strum(serialize = "order.held")]
    OrderHeld,
    #[strum(serialize = "order.blocked")]
    OrderBlocked,
    #[strum(serialize = "order.fraud_after_release")]
    OrderFraudAfterRelease,
    #[strum(serialize = "order.at_risk")]
    OrderAtRisk,
    #[strum(serialize = "payment.updated")]
    PaymentUpdated,
    #[strum(serialize = "payment.cancelled")]
    PaymentCancelled,
    #[strum(serialize = "payment.refunded")]
    PaymentRefunded,
    #[strum(serialize = "payment.cancel_failed")]
    PaymentCancelFailed,
    #[strum(serialize = "payment_intent.finished")]
    IntentFinished,
    #[strum(serialize = "payment_intent.confirmed")]
    IntentConfirmed,
    #[strum(serialize = "payment_intent.not_approved")]
    IntentNotApproved,
    #[strum(serialize = "payment_intent.canceled")]
    IntentCanceled,
    #[strum(serialize = "payment_intent.error")]
    IntentError,
    #[strum(serialize = "payment_intent.abandoned")]
    IntentAbandoned,
    #[strum(serialize = "chargeback.updated")]
    ChargebackUpdated,
    #[strum(serialize = "fraud_alert.unverified")]
    FraudAlertUnverified,
    #[strum(serialize = "fraud_alert.rejected")]
    FraudAlertRejected,
    #[strum(serialize = "fraud_alert.dismissed")]
    FraudAlertDismissed,
    /// Orders of the Orders API (`ORD…`): under a prefix of their own, apart
    /// from the merchant orders' `order.*`.
    #[strum(serialize = "platform_order.processed")]
    PlatformOrderProcessed,
    #[strum(serialize = "platform_order.confirmed")]
    PlatformOrderConfirmed,
    #[strum(serialize = "platform_order.not_approved")]
    PlatformOrderNotApproved,
    #[strum(serialize = "platform_order.canceled")]
    PlatformOrderCanceled,
    #[strum(serialize = "platform_order.failed")]
    PlatformOrderFailed,
    #[strum(serialize = "platform_order.expired")]
    PlatformOrderExpired,
    #[strum(serialize = "platform_order.refunded")]
    PlatformOrderRefunded,
    #[strum(serialize = "platform_order.charged_back")]
    PlatformOrderChargedBack,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    pub fn parse(s: &str) -> Option<EventType> {
        s.parse().ok()
    }

    pub fn all() -> impl Iterator<Item = EventType> {
        <EventType as strum::IntoEnumIterator>::iter()
    }
}

impl std::fmt::Display for EventType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a job decided.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Effects {
    pub decisions: Vec<Decision>,
    /// The latest amounts seen for merchant orders.
    pub orders: Vec<OrderSeen>,
    /// The classic payments behind an order of the Orders API, as read.
    pub order_payments: Vec<OrderPayment>,
    /// What the orders read are known by (`refs`), kept with them.
    pub refs: Vec<super::OrderRef>,
}

impl Effects {
    pub fn one(decision: Decision) -> Effects {
        Effects {
            decisions: vec![decision],
            ..Effects::default()
        }
    }
}

/// A classic payment (`/v1/payments/{id}`) behind an order of the Orders
/// API. The payment search lists it, but its story is the order's: the
/// sweeper takes it as known, not as a notification that never came.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderPayment {
    pub payment: super::PaymentId,
    pub order: super::PlatformOrderId,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// What it is about: `merchant_order:123`, `payment_intent:…`.
    pub subject: String,
    /// What was decided; includes the state seen when the same subject can
    /// legitimately be decided again (a chargeback's new status).
    pub key: String,
    pub event: EventType,
    /// The event's `data`; every id in it is a JSON string.
    pub data: serde_json::Value,
    /// Every guard must hold, or the decision is skipped (and can be taken
    /// later, when it does).
    pub guards: Vec<Guard>,
    /// State recorded when the decision is taken.
    pub marks: Vec<Mark>,
    /// `Final`: the subject's one final outcome; a later, different one is
    /// a conflict (`rules::kernel`), recorded without an event.
    pub slot: Slot,
    /// Why, for a person: the rule's reason and what it read ("paid 99.90
    /// of 99.90 …; no shipment → released"). Stored with the decision.
    pub reason: String,
}

/// The stable id of the event for a decision: the same decision gives the
/// same id on every run, redelivery and destination.
pub fn event_id(account: &str, subject: &str, key: &str) -> String {
    let mut h = Sha256::new();
    for part in [account, subject, key] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    format!("evt_{}", hex::encode(&h.finalize()[..16]))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// Recorded once per key.
    Once,
    /// The subject's final outcome.
    Final,
}

/// A condition a decision needs, checked in the transaction that records
/// it, so racing jobs cannot both pass it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Guard {
    OrderReleased(MerchantOrderId),
    OrderNotReleased(MerchantOrderId),
    OrderNotBlocked(MerchantOrderId),
    /// Fewer than this many blocks were placed by unauthenticated fraud
    /// alerts of the account in the last hour.
    UnauthenticatedBlocksUnder(u32),
    /// A person approved the hold of this kind on this subject: a decision
    /// that waits for a person carries it.
    HoldApproved {
        kind: &'static str,
        subject: String,
    },
}

/// What the guards of a decision read, as the recording transaction sees
/// it (the store reads only what the guards name).
#[derive(Debug, Clone, Default)]
pub struct GuardFacts {
    /// Flags of the orders the guards name; an order absent has none.
    pub orders: std::collections::HashMap<String, OrderFlags>,
    /// Blocks placed by unauthenticated alerts of the account in the last
    /// hour.
    pub unauthenticated_blocks_last_hour: u32,
    /// The state of each hold the guards name, by (kind, subject); a hold
    /// absent is not approved.
    pub holds: std::collections::HashMap<(String, String), super::HoldState>,
}

impl GuardFacts {
    pub fn order(&self, order: &MerchantOrderId) -> OrderFlags {
        self.orders.get(order.as_str()).copied().unwrap_or_default()
    }
}

/// A merchant order's flags as recorded (an order never seen has none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OrderFlags {
    pub released: bool,
    pub blocked: bool,
}

impl Guard {
    /// The one place that says what a guard means.
    pub fn holds(&self, facts: &GuardFacts) -> bool {
        match self {
            Guard::OrderReleased(o) => facts.order(o).released,
            Guard::OrderNotReleased(o) => !facts.order(o).released,
            Guard::OrderNotBlocked(o) => !facts.order(o).blocked,
            Guard::UnauthenticatedBlocksUnder(n) => facts.unauthenticated_blocks_last_hour < *n,
            Guard::HoldApproved { kind, subject } => {
                facts.holds.get(&(kind.to_string(), subject.clone()))
                    == Some(&super::HoldState::Approved)
            }
        }
    }

    /// The merchant order it reads, if any.
    pub fn order(&self) -> Option<&MerchantOrderId> {
        match self {
            Guard::OrderReleased(o) | Guard::OrderNotReleased(o) | Guard::OrderNotBlocked(o) => {
                Some(o)
            }
            Guard::UnauthenticatedBlocksUnder(_) | Guard::HoldApproved { .. } => None,
        }
    }

    /// The hold it reads, if any: (kind, subject).
    pub fn hold(&self) -> Option<(&'static str, &str)> {
        match self {
            Guard::HoldApproved { kind, subject } => Some((kind, subject)),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mark {
    OrderReleased(MerchantOrderId),
    /// One fraud alert's block; the order stays blocked while any stands.
    OrderBlocked {
        order: MerchantOrderId,
        alert: String,
        /// Placed by an alert that is not authenticated (counted against
        /// `fraud_unauthenticated_blocks_per_hour`).
        unauthenticated: bool,
    },
    OrderAtRisk(MerchantOrderId),
    /// A fraud alert a person must see: held (waiting for a decision) or
    /// rejected (the API did not confirm it; kept to be seen).
    Review(ReviewMark),
    /// A hold placed for a person (`domain::holds`).
    Hold(super::HoldMark),
}

impl Mark {
    /// The merchant order it changes, if any.
    pub fn order(&self) -> Option<&MerchantOrderId> {
        match self {
            Mark::OrderReleased(o) | Mark::OrderAtRisk(o) => Some(o),
            Mark::OrderBlocked { order, .. } => Some(order),
            Mark::Review(_) | Mark::Hold(_) => None,
        }
    }
}

/// The latest review of a fraud alert's key, as recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReviewSeen {
    pub state: super::Review,
    pub round: u32,
    /// The delivery it covers.
    pub delivery_id: Option<i64>,
}

/// How the alert's order stands with the reviews, read before an alert
/// that may only hold blocks anything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OrderReviews {
    /// The job key of a review held for this order, if one waits.
    pub held: Option<String>,
    /// Reviews the account opened in the last hour (rejections aside).
    pub opened_last_hour: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewMark {
    pub job_key: String,
    /// Which review of the key: a decided review covers the deliveries it
    /// saw, and a later alert opens the next round.
    pub round: u32,
    /// The alert's subject (its block's name).
    pub alert: String,
    /// `Held` or `Rejected`.
    pub state: super::Review,
    /// The delivery the review covers (the job's input).
    pub delivery_id: Option<i64>,
    pub merchant_order: Option<MerchantOrderId>,
    pub payment: Option<super::PaymentId>,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderSeen {
    pub order_id: MerchantOrderId,
    pub total_amount: String,
    pub paid_amount: String,
}
