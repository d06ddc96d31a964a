//! The release rule for merchant orders, and the decisions it leads to.

use pointhook_common::money::{Money, Overflow};
use serde_json::json;

use crate::domain::platform::{MerchantOrder, PaymentStatus};
use crate::domain::subject::Subject;
use crate::domain::{Decision, Effects, EventType, Guard, Mark, OrderSeen, PaymentId, Slot};

/// What the release rule says about a merchant order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    /// Paid in full, and nothing to wait for: hand the goods over.
    Release,
    /// Paid in full, but the first shipment is not ready to ship yet.
    AwaitingShipment,
    NotPaid,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleaseDecision {
    pub outcome: Release,
    pub paid: Money,
    pub total: Money,
    /// The approved payments that make up `paid`.
    pub payment_ids: Vec<PaymentId>,
}

/// Shipment statuses at or past `ready_to_ship`.
const SHIPPABLE: &[&str] = &["ready_to_ship", "shipped", "delivered"];

/// paid = the sum over approved payments of `transaction_amount` net of
/// what was refunded of each. Paid in full (and at least one approved
/// payment: an order of `total_amount <= 0` is never released on nothing)
/// with no shipments releases; with shipments, only once the first one is
/// `ready_to_ship` or later.
pub fn release(order: &MerchantOrder) -> Result<ReleaseDecision, Overflow> {
    let approved: Vec<_> = order
        .payments
        .iter()
        .filter(|p| p.status == PaymentStatus::Approved)
        .collect();
    let nets = approved
        .iter()
        .map(|p| p.amount.checked_sub(p.refunded))
        .collect::<Result<Vec<_>, _>>()?;
    let paid = Money::checked_sum(nets)?;
    let outcome = if approved.is_empty() || paid < order.total {
        Release::NotPaid
    } else {
        match order.shipments.first() {
            None => Release::Release,
            Some(Some(s)) if SHIPPABLE.contains(&s.as_str()) => Release::Release,
            Some(_) => Release::AwaitingShipment,
        }
    };
    Ok(ReleaseDecision {
        outcome,
        paid,
        total: order.total,
        payment_ids: approved.iter().map(|p| p.id.clone()).collect(),
    })
}

/// The decision the release rule leads to for `order`, and its amounts.
pub fn order_effects(order: &MerchantOrder) -> Result<Effects, Overflow> {
    let d = release(order)?;
    let oid = order.id.clone();
    let data = json!({
        "merchant_order_id": oid,
        "total_amount": d.total.to_string(),
        "paid_amount": d.paid.to_string(),
        "payment_ids": d.payment_ids,
        "external_reference": order.external_reference,
    });
    let reason = reason(order, &d);
    let decision = |event: EventType, guards: Vec<Guard>, marks: Vec<Mark>| Decision {
        subject: Subject::merchant_order(&oid).to_string(),
        key: event.as_str().into(),
        event,
        data: data.clone(),
        guards,
        marks,
        slot: Slot::Once,
        reason: reason.clone(),
    };
    let decision = match d.outcome {
        Release::Release => Some(decision(
            EventType::OrderReleased,
            vec![Guard::OrderNotBlocked(oid.clone())],
            vec![Mark::OrderReleased(oid.clone())],
        )),
        Release::AwaitingShipment => Some(decision(
            EventType::OrderAwaitingShipment,
            vec![
                Guard::OrderNotReleased(oid.clone()),
                Guard::OrderNotBlocked(oid.clone()),
            ],
            vec![],
        )),
        Release::NotPaid => None,
    };
    Ok(Effects {
        decisions: decision.into_iter().collect(),
        orders: vec![OrderSeen {
            order_id: oid,
            total_amount: d.total.to_string(),
            paid_amount: d.paid.to_string(),
        }],
        ..Effects::default()
    })
}

/// The rule's reason in words, with what it read: "paid 99.90 of 99.90
/// from payment 123 approved 50.00 and payment 456 approved 49.90; no
/// shipment → released".
pub fn reason(order: &MerchantOrder, d: &ReleaseDecision) -> String {
    let payments: Vec<String> = order
        .payments
        .iter()
        .map(|p| {
            let mut s = format!("payment {} {} {}", p.id, p.status, p.amount);
            if p.refunded > Money::ZERO {
                s.push_str(&format!(" (refunded {})", p.refunded));
            }
            if p.status != PaymentStatus::Approved {
                s.push_str(" not counted");
            }
            s
        })
        .collect();
    let from = match payments.as_slice() {
        [] => "no payment".to_string(),
        [one] => one.clone(),
        [first @ .., last] => format!("{} and {last}", first.join(", ")),
    };
    let shipment = match order.shipments.first() {
        None => "no shipment".to_string(),
        Some(Some(s)) => format!("first shipment {}", pointhook_common::text::printable(s)),
        Some(None) => "first shipment without a status".to_string(),
    };
    let outcome = match d.outcome {
        Release::Release => "released",
        Release::AwaitingShipment => "awaiting shipment",
        Release::NotPaid => "not paid",
    };
    format!(
        "paid {} of {} from {from}; {shipment} → {outcome}",
        d.paid, d.total
    )
}
