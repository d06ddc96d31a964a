//! The decisions a fraud alert leads to, each with its reason: rejected
//! (recorded, never told), blocked, held for a person, found released
//! already, and how undoing its payment ended; and how a payment is undone.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::saga::{Saga, Standing, Verified};
use crate::domain::platform::{Payment, PaymentStatus};
use crate::domain::verdict::DismissedReview;
use crate::domain::{
    Decision, EventType, Guard, Mark, MerchantOrderId, PaymentId, Review, ReviewMark, Slot,
};

/// The alert's facts for its events. Its words only when authenticated:
/// an unconfirmed sender's text never reaches the merchant signed by us.
fn data(s: &Saga, order: Option<&MerchantOrderId>, payment: Option<&PaymentId>) -> Value {
    json!({
        "merchant_order_id": order.or(s.alert.merchant_order.as_ref()),
        "payment_id": payment.or(s.alert.payment.as_ref()),
        "description": if s.authenticated { s.alert.description.clone() } else { None },
        "delivery_id": s.delivery_id.map(|d| d.to_string()),
        "authenticated": s.authenticated,
    })
}

fn review(s: &Saga, state: Review, v: Option<&Verified<'_>>, reason: &str) -> Mark {
    Mark::Review(ReviewMark {
        job_key: s.job_key.clone(),
        round: s.round(),
        alert: s.subject(),
        state,
        delivery_id: s.delivery_id,
        merchant_order: v
            .map(|v| v.order.clone())
            .or(s.alert.merchant_order.clone()),
        payment: v
            .and_then(|v| v.payment.map(|p| p.id.clone()))
            .or(s.alert.payment.clone()),
        reason: reason.into(),
    })
}

/// Not confirmed by the API: nothing blocked, nothing told; kept for a
/// person to see.
pub(super) fn reject(s: &Saga, reason: &str) -> Decision {
    let mut data = data(s, None, None);
    data["reason"] = Value::from(reason);
    Decision {
        subject: s.subject(),
        key: "rejected".into(),
        event: EventType::FraudAlertRejected,
        data,
        guards: vec![],
        marks: vec![review(s, Review::Rejected, None, reason)],
        slot: Slot::Once,
        reason: format!("{reason} → rejected: nothing blocked, nothing told"),
    }
}

/// `order.blocked`'s data: the alert's facts and the order's external
/// reference as the API gave it (the merchant's own name for the order).
fn blocked_data(s: &Saga, v: &Verified<'_>) -> Value {
    let payment = v.payment.map(|p| p.id.clone());
    let mut data = data(s, Some(&v.order), payment.as_ref());
    let reference = match &s.order {
        super::saga::Lookup::Found(o) => o.external_reference.as_deref(),
        _ => None,
    }
    .or(v.payment.and_then(|p| p.external_reference.as_deref()));
    if let Some(reference) = reference {
        data["external_reference"] = Value::from(reference);
    }
    data
}

/// The order is blocked by this alert (never released while it stands).
pub(super) fn block(s: &Saga, v: &Verified<'_>) -> Decision {
    let mut guards = vec![Guard::OrderNotReleased(v.order.clone())];
    // A person's confirmation is not counted against the brake.
    let unauthenticated = !s.authenticated && s.standing() != Standing::Confirmed;
    if unauthenticated {
        guards.push(Guard::UnauthenticatedBlocksUnder(
            s.policy.fraud_blocks_per_hour,
        ));
    }
    Decision {
        subject: format!("merchant_order:{}", v.order),
        key: format!("order.blocked:{}", s.subject()),
        event: EventType::OrderBlocked,
        data: blocked_data(s, v),
        guards,
        marks: vec![Mark::OrderBlocked {
            order: v.order.clone(),
            alert: s.subject(),
            unauthenticated,
        }],
        slot: Slot::Once,
        reason: match v.payment {
            Some(p) => format!(
                "the API confirms payment {} ({}) is in merchant order {} → blocked",
                p.id, p.status, v.order
            ),
            None => format!(
                "the API confirms merchant order {} exists with payments → blocked",
                v.order
            ),
        },
    }
}

/// Held for a person: nothing cancelled or refunded. The payment as it
/// was read is kept with it (status, amount, currency), so the review
/// names the cancel or refund a confirmation would make, and its amount.
pub(super) fn hold(s: &Saga, v: &Verified<'_>, reason: &str) -> Decision {
    let payment = v.payment.map(|p| p.id.clone());
    let mut data = data(s, Some(&v.order), payment.as_ref());
    data["reason"] = Value::from(reason);
    if let Some(p) = v.payment {
        data["payment_status"] = Value::from(p.status.as_str());
        data["amount"] = json!(p.amount.map(|a| a.to_string()));
        data["currency_id"] = json!(p.currency);
    }
    Decision {
        subject: s.subject(),
        key: "unverified".into(),
        event: EventType::FraudAlertUnverified,
        data,
        guards: vec![],
        marks: vec![review(s, Review::Held, Some(v), reason)],
        slot: Slot::Once,
        reason: format!("{reason} → held for a person"),
    }
}

/// The goods are gone: a person decides.
pub(super) fn after_release(s: &Saga, order: &MerchantOrderId) -> Decision {
    Decision {
        subject: format!("merchant_order:{order}"),
        key: format!("order.fraud_after_release:{}", s.subject()),
        event: EventType::OrderFraudAfterRelease,
        data: data(s, Some(order), None),
        guards: vec![Guard::OrderReleased(order.clone())],
        marks: vec![],
        slot: Slot::Once,
        reason: format!(
            "merchant order {order} was released before the alert → nothing undone, a person decides"
        ),
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

pub fn undo_for(status: &PaymentStatus) -> Undo {
    match status {
        PaymentStatus::Pending | PaymentStatus::InProcess | PaymentStatus::Authorized => {
            Undo::Cancel
        }
        PaymentStatus::Approved => Undo::Refund,
        PaymentStatus::Cancelled => Undo::AlreadyDone(EventType::PaymentCancelled),
        PaymentStatus::Refunded => Undo::AlreadyDone(EventType::PaymentRefunded),
        PaymentStatus::Rejected => Undo::NothingMoved,
        other => Undo::Impossible(format!(
            "a payment in status {other} cannot be undone automatically"
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

/// How undoing `payment` ended: `payment.cancelled`, `payment.refunded` or
/// `payment.cancel_failed` (with the reason). The status is the payment's
/// after the decision.
pub fn undone(
    payment: &Payment,
    order: &MerchantOrderId,
    event: EventType,
    refused: Option<String>,
) -> Decision {
    let status = match event {
        EventType::PaymentCancelled => PaymentStatus::Cancelled.as_str().to_string(),
        EventType::PaymentRefunded => PaymentStatus::Refunded.as_str().to_string(),
        _ => payment.status.as_str().to_string(),
    };
    let mut data = json!({
        "payment_id": payment.id,
        "merchant_order_id": order,
        "amount": payment.amount.map(|a| a.to_string()),
        "status": status,
    });
    let reason = match &refused {
        Some(r) => format!(
            "payment {} ({}) could not be undone: {r} → a person decides",
            payment.id, payment.status
        ),
        None => format!(
            "fraud alert on merchant order {order}: payment {} was {}{} → {status}",
            payment.id,
            payment.status,
            payment
                .amount
                .map(|a| format!(" for {a}"))
                .unwrap_or_default()
        ),
    };
    if let Some(r) = refused {
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
        reason,
    }
}

/// `fraud_alert.dismissed` for a review a person dismissed.
pub fn dismissed(r: &DismissedReview) -> Decision {
    Decision {
        subject: r.alert.clone(),
        key: "dismissed".into(),
        event: EventType::FraudAlertDismissed,
        data: json!({
            "review_id": r.review_id.to_string(),
            "merchant_order_id": r.merchant_order,
            "payment_id": r.payment,
            "reason": r.reason,
        }),
        guards: vec![],
        marks: vec![],
        slot: Slot::Once,
        reason: "a person dismissed the alert → its block is lifted and the order looked at again"
            .into(),
    }
}
