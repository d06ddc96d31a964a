//! Fraud alerts (DESIGN section 4): what an alert may do, how a payment is
//! undone, and the decisions each step records.
//!
//! An alert is verified against the API first (the payment exists and
//! belongs to the merchant order it names). Then it blocks the order for
//! good, and only an alert that may move money cancels or refunds: an
//! authenticated one (a webhook whose signature binds its payment), one a
//! person confirmed, or any verified one on an account that chose `act`
//! (possible only without webhook secrets). The others are held for a
//! person. An order released already is never undone automatically.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::api::types::{Payment, PaymentStatus};
use crate::domain::{
    Decision, EventType, Guard, HeldAlert, Mark, MerchantOrderId, PaymentId, Review, Slot,
    UnauthenticatedAlerts,
};

/// What an alert may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// Block the order and undo the payment.
    Act,
    /// Block the order and wait for a person.
    Hold,
    /// A person dismissed it: nothing more.
    Nothing,
}

impl Plan {
    /// What an alert may do when what it names was learnt from the API
    /// rather than said by the alert: never more than hold.
    pub fn at_most_hold(self) -> Plan {
        match self {
            Plan::Act => Plan::Hold,
            other => other,
        }
    }
}

pub fn plan(
    authenticated: bool,
    unauthenticated: UnauthenticatedAlerts,
    review: Option<Review>,
) -> Plan {
    match (review, authenticated) {
        (Some(Review::Confirmed), _) | (_, true) => Plan::Act,
        (Some(Review::Dismissed), false) => Plan::Nothing,
        (Some(Review::Held), false) => Plan::Hold,
        (None, false) => match unauthenticated {
            UnauthenticatedAlerts::Act => Plan::Act,
            UnauthenticatedAlerts::Hold => Plan::Hold,
        },
    }
}

/// The order the alert is about, once the API confirmed the payment is in
/// it; `Err` says why the alert is rejected.
pub fn verify(
    named: Option<&MerchantOrderId>,
    payment: &Payment,
) -> Result<MerchantOrderId, String> {
    let owner = payment.merchant_order_id();
    match (named, owner) {
        (None, _) => Err("the alert names no merchant order".into()),
        (Some(n), Some(o)) if *n == o => Ok(o),
        (Some(n), owner) => Err(format!(
            "payment {} belongs to {}, not {n}",
            payment.id,
            owner.map_or("no merchant order".to_string(), |o| format!(
                "merchant order {o}"
            ))
        )),
    }
}

/// How a payment is undone, by its status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Undo {
    Cancel,
    Refund,
    /// Undone already (perhaps by an earlier run of the same job).
    AlreadyDone(EventType),
    /// Rejected: no money moved, nothing to undo.
    NothingMoved,
    /// Cannot be undone automatically: a person takes it from here.
    Impossible(String),
}

pub fn undo(status: &PaymentStatus) -> Undo {
    match status {
        PaymentStatus::Pending | PaymentStatus::InProcess | PaymentStatus::Authorized => {
            Undo::Cancel
        }
        PaymentStatus::Approved => Undo::Refund,
        PaymentStatus::Cancelled => Undo::AlreadyDone(EventType::PaymentCancelled),
        PaymentStatus::Refunded => Undo::AlreadyDone(EventType::PaymentRefunded),
        PaymentStatus::Rejected => Undo::NothingMoved,
        other => Undo::Impossible(format!(
            "a payment in status {} cannot be undone automatically",
            other.as_str()
        )),
    }
}

/// The same alert always gives the same key, so a retried refund is one
/// refund at the platform.
pub fn idempotency_key(account: &str, order: &MerchantOrderId, payment: &PaymentId) -> String {
    let mut h = Sha256::new();
    for part in [account, order.as_str(), payment.as_str()] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    format!("pointhook-fraud-{}", hex::encode(&h.finalize()[..16]))
}

/// One alert, as its decisions describe it.
#[derive(Debug, Clone)]
pub struct Alert {
    /// `fraud_alert:…`, from the job's key.
    pub subject: String,
    pub job_key: String,
    pub merchant_order: Option<MerchantOrderId>,
    pub payment: Option<PaymentId>,
    pub description: Option<String>,
    pub delivery_id: Option<i64>,
    pub authenticated: bool,
}

impl Alert {
    /// The alert's subject for a job key `fraud:…`.
    pub fn subject_of(job_key: &str) -> String {
        format!(
            "fraud_alert:{}",
            job_key.strip_prefix("fraud:").unwrap_or(job_key)
        )
    }

    fn data(&self) -> Value {
        json!({
            "merchant_order_id": self.merchant_order,
            "payment_id": self.payment,
            "description": self.description,
            "delivery_id": self.delivery_id.map(|d| d.to_string()),
            "authenticated": self.authenticated,
        })
    }

    fn decision(&self, key: &str, event: EventType, data: Value) -> Decision {
        Decision {
            subject: self.subject.clone(),
            key: key.into(),
            event,
            data,
            guards: vec![],
            marks: vec![],
            slot: Slot::Once,
        }
    }

    pub fn rejected(&self, reason: &str) -> Decision {
        let mut data = self.data();
        data["reason"] = Value::from(reason);
        self.decision("rejected", EventType::FraudAlertRejected, data)
    }

    /// The order is blocked by this alert (never released while it stands).
    pub fn block(&self, order: &MerchantOrderId, payment: Option<&PaymentId>) -> Decision {
        Decision {
            subject: format!("merchant_order:{order}"),
            key: format!("order.blocked:{}", self.subject),
            event: EventType::OrderBlocked,
            data: json!({
                "merchant_order_id": order,
                "payment_id": payment,
                "description": self.description,
                "authenticated": self.authenticated,
            }),
            guards: vec![Guard::OrderNotReleased(order.clone())],
            marks: vec![Mark::OrderBlocked {
                order: order.clone(),
                alert: self.subject.clone(),
            }],
            slot: Slot::Once,
        }
    }

    /// Held for a person: nothing cancelled or refunded.
    pub fn unverified(&self, reason: &str) -> Decision {
        let mut data = self.data();
        data["reason"] = Value::from(reason);
        Decision {
            marks: vec![Mark::HoldForReview(HeldAlert {
                job_key: self.job_key.clone(),
                alert: self.subject.clone(),
                merchant_order: self.merchant_order.clone(),
                payment: self.payment.clone(),
                reason: reason.into(),
            })],
            ..self.decision("unverified", EventType::FraudAlertUnverified, data)
        }
    }

    /// The goods are gone: a person decides.
    pub fn after_release(&self, order: &MerchantOrderId) -> Decision {
        Decision {
            subject: format!("merchant_order:{order}"),
            key: format!("order.fraud_after_release:{}", self.subject),
            event: EventType::OrderFraudAfterRelease,
            data: self.data(),
            guards: vec![Guard::OrderReleased(order.clone())],
            marks: vec![],
            slot: Slot::Once,
        }
    }
}

/// How undoing `payment` ended: `payment.cancelled`, `payment.refunded` or
/// `payment.cancel_failed` (with the reason).
pub fn undone(
    payment: &Payment,
    order: &MerchantOrderId,
    event: EventType,
    reason: Option<String>,
) -> Decision {
    let mut data = json!({
        "payment_id": payment.id,
        "merchant_order_id": order,
        "amount": payment.transaction_amount.map(|a| a.to_string()),
        "status": payment.status.as_str(),
    });
    if let Some(r) = reason {
        data["reason"] = Value::from(r);
    }
    Decision {
        subject: format!("payment:{}", payment.id),
        key: event.as_str().into(),
        event,
        data,
        guards: vec![],
        marks: vec![],
        slot: Slot::Once,
    }
}
