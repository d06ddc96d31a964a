//! Orders of the Orders API (`ORD…`; ../shared/platform/orders-api.md):
//! decided from the order as the API reports it (and, for one that asks to
//! be checked on the terminal, its payment), never from a notification.
//!
//! One outcome per order takes its final slot: processed, confirmed (an
//! `action_required` order whose payment was approved), not approved,
//! canceled, failed, expired. Money taken back afterwards is told once per
//! amount refunded, and a chargeback once.

use pointhook_common::money::{Money, Overflow};
use pointhook_common::text::printable;
use serde_json::json;

use crate::domain::platform::{PaymentStatus, PlatformOrder};
use crate::domain::subject::{Subject, SubjectKind};
use crate::domain::{Decision, EventType, OrderPayment, Slot};

/// What an order's status says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OrderDecision {
    /// Its final outcome.
    Final(EventType),
    /// `action_required` (check on the terminal): its payment decides.
    CheckPayment,
    /// `created`, `at_terminal`, `processing`, or a status this version
    /// does not know: asked again for a while.
    NotFinal,
}

/// The status table. Both spellings of canceled are read: the API moved
/// from `cancelled` to `canceled` in 2024.
pub fn status(order: &PlatformOrder) -> OrderDecision {
    use OrderDecision::*;
    match order.status.as_str() {
        "processed" | "refunded" | "charged_back" => Final(EventType::PlatformOrderProcessed),
        "action_required" => CheckPayment,
        "canceled" | "cancelled" => Final(EventType::PlatformOrderCanceled),
        "failed" => Final(EventType::PlatformOrderFailed),
        "expired" => Final(EventType::PlatformOrderExpired),
        _ => NotFinal,
    }
}

/// An `action_required` order, by the status of its payment: `None` while
/// the payment is still being decided.
pub fn checked(payment: &PaymentStatus) -> Option<EventType> {
    use PaymentStatus as P;
    match payment {
        P::Approved => Some(EventType::PlatformOrderConfirmed),
        P::Rejected | P::Cancelled | P::Refunded | P::ChargedBack => {
            Some(EventType::PlatformOrderNotApproved)
        }
        _ => None,
    }
}

/// The decisions for an order whose outcome is `outcome`: that outcome in
/// the final slot, then any money taken back since. `checked`: the status
/// of the payment checked for an `action_required` order.
pub fn decisions(
    order: &PlatformOrder,
    outcome: EventType,
    checked: Option<&PaymentStatus>,
) -> Result<Vec<Decision>, Overflow> {
    let data = data(order)?;
    let status = printable(&order.status);
    let read = match checked {
        Some(p) => format!("order {} {status}, its payment {p}", order.id),
        None => format!("order {} {status}", order.id),
    };
    let mut out = vec![Decision {
        subject: subject(order),
        key: "final".into(),
        event: outcome,
        data: data.clone(),
        guards: vec![],
        marks: vec![],
        slot: Slot::Final,
        reason: format!(
            "{read} → {}",
            outcome.as_str().trim_start_matches("platform_order.")
        ),
    }];
    let paid_out = matches!(
        outcome,
        EventType::PlatformOrderProcessed | EventType::PlatformOrderConfirmed
    );
    let refunded = refunded(order)?;
    if paid_out && refunded > Money::ZERO {
        // Each new total refunded is news: a second partial refund too.
        out.push(Decision {
            subject: subject(order),
            key: format!("refunded:{refunded}"),
            event: EventType::PlatformOrderRefunded,
            data: data.clone(),
            guards: vec![],
            marks: vec![],
            slot: Slot::Once,
            reason: format!("{read}, {refunded} refunded in all → told once per total refunded"),
        });
    }
    if paid_out && order.status == "charged_back" {
        out.push(Decision {
            subject: subject(order),
            key: "charged_back".into(),
            event: EventType::PlatformOrderChargedBack,
            data,
            guards: vec![],
            marks: vec![],
            slot: Slot::Once,
            reason: format!("{read} → charged back"),
        });
    }
    Ok(out)
}

fn subject(order: &PlatformOrder) -> String {
    Subject::new(SubjectKind::PlatformOrder, &order.id).to_string()
}

/// What was refunded: the refunds listed, else what the payments say, else
/// everything paid when the order says it was refunded in full.
fn refunded(order: &PlatformOrder) -> Result<Money, Overflow> {
    let listed = Money::checked_sum(
        order
            .refunds
            .iter()
            .filter(|r| r.status.as_deref() != Some("failed"))
            .filter_map(|r| r.amount),
    )?;
    if listed > Money::ZERO {
        return Ok(listed);
    }
    let on_payments = Money::checked_sum(order.payments.iter().filter_map(|p| p.refunded))?;
    if on_payments > Money::ZERO {
        return Ok(on_payments);
    }
    let full = order.status == "refunded" || order.status_detail.as_deref() == Some("refunded");
    Ok(if full {
        order.total_paid.or(order.total).unwrap_or(Money::ZERO)
    } else {
        Money::ZERO
    })
}

/// The classic payments behind `order`, each the order's (the sweeper
/// takes them as known).
pub fn payments(order: &PlatformOrder) -> Vec<OrderPayment> {
    order
        .payments
        .iter()
        .filter_map(|t| t.payment_id())
        .map(|payment| OrderPayment {
            payment,
            order: order.id.clone(),
        })
        .collect()
}

/// The event's data: ids as strings, amounts as decimal strings.
fn data(order: &PlatformOrder) -> Result<serde_json::Value, Overflow> {
    let payments = &order.payments;
    Ok(json!({
        "platform_order_id": order.id,
        "type": order.kind,
        "status": order.status,
        "status_detail": order.status_detail,
        "external_reference": order.external_reference,
        "total_amount": order.total.map(|m| m.to_string()),
        "total_paid_amount": order.total_paid.map(|m| m.to_string()),
        "refunded_amount": refunded(order)?.to_string(),
        "transaction_ids": payments.iter().filter_map(|p| p.id.clone()).collect::<Vec<_>>(),
        "payment_ids": payments.iter().filter_map(|p| p.reference.clone()).collect::<Vec<_>>(),
    }))
}
