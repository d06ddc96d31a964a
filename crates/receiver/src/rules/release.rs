//! The release rule for merchant orders, and the decisions it leads to.

use serde_json::json;

use crate::api::types::{MerchantOrder, PaymentStatus};
use crate::domain::{Decision, Effects, EventType, Guard, Mark, OrderSeen, PaymentId, Slot};
use crate::money::{Money, Overflow};

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
        .map(|p| p.transaction_amount.checked_sub(p.refunded()))
        .collect::<Result<Vec<_>, _>>()?;
    let paid = Money::checked_sum(nets)?;
    let outcome = if approved.is_empty() || paid < order.total_amount {
        Release::NotPaid
    } else {
        match order.shipments.first() {
            None => Release::Release,
            Some(s) if s.status.as_deref().is_some_and(|s| SHIPPABLE.contains(&s)) => {
                Release::Release
            }
            Some(_) => Release::AwaitingShipment,
        }
    };
    Ok(ReleaseDecision {
        outcome,
        paid,
        total: order.total_amount,
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
    let decision = |event: EventType, guards: Vec<Guard>, marks: Vec<Mark>| Decision {
        subject: format!("merchant_order:{oid}"),
        key: event.as_str().into(),
        event,
        data: data.clone(),
        guards,
        marks,
        slot: Slot::Once,
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
    })
}
