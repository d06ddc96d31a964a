//! What a job decides, as data: `rules` builds it, `store` records it (each
//! decision once per account, subject and key, its guards checked in the
//! recording transaction), and the outbox tells it.

use strum::{EnumIter, EnumString, IntoStaticStr};

use super::ids::MerchantOrderId;

/// Every event pointhook tells the merchant (DESIGN section 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, IntoStaticStr, EnumString, EnumIter)]
pub enum EventType {
    #[strum(serialize = "order.released")]
    OrderReleased,
    #[strum(serialize = "order.awaiting_shipment")]
    OrderAwaitingShipment,
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
}

impl std::fmt::Display for EventType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a job decided.
#[derive(Debug, Clone, Default)]
pub struct Effects {
    pub decisions: Vec<Decision>,
    /// The latest amounts seen for merchant orders.
    pub orders: Vec<OrderSeen>,
}

impl Effects {
    pub fn one(decision: Decision) -> Effects {
        Effects {
            decisions: vec![decision],
            orders: Vec::new(),
        }
    }
}

#[derive(Debug, Clone)]
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
    /// a conflict (`rules::finality`), recorded without an event.
    pub slot: Slot,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// Recorded once per key.
    Once,
    /// The subject's final outcome.
    Final,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Guard {
    OrderReleased(MerchantOrderId),
    OrderNotReleased(MerchantOrderId),
    OrderNotBlocked(MerchantOrderId),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mark {
    OrderReleased(MerchantOrderId),
    /// One fraud alert's block; the order stays blocked while any stands.
    OrderBlocked {
        order: MerchantOrderId,
        alert: String,
    },
    OrderAtRisk(MerchantOrderId),
    /// An alert that may not move money on its own waits for a person.
    HoldForReview(HeldAlert),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldAlert {
    pub job_key: String,
    pub alert: String,
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
