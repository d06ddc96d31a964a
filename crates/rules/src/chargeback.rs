//! Chargebacks: each new status is told once, and an order already
//! released whose payment is charged back is flagged at risk, once per
//! chargeback.

use serde_json::json;

use crate::domain::platform::Chargeback;
use crate::domain::subject::{Subject, SubjectKind};
use crate::domain::{Decision, EventType, Guard, Mark, MerchantOrderId, PaymentId, Slot};

pub fn updated(cb: &Chargeback) -> Decision {
    Decision {
        subject: Subject::new(SubjectKind::Chargeback, &cb.id).to_string(),
        key: format!("chargeback.updated:{}", cb.status_key()),
        event: EventType::ChargebackUpdated,
        data: json!({
            "chargeback_id": cb.id,
            "payment_ids": cb.payments,
            "amount": cb.amount.map(|a| a.to_string()),
            "currency": cb.currency,
            "reason": cb.reason,
            "documentation_status": cb.documentation_status,
            "coverage_applied": cb.coverage_applied,
            "date_last_updated": cb.last_updated,
        }),
        guards: vec![],
        marks: vec![],
        slot: Slot::Once,
        reason: format!(
            "chargeback {} is {} as the API reports it → told once per status",
            cb.id,
            pointhook_common::text::printable(&cb.status_key())
        ),
    }
}

pub fn at_risk(cb: &Chargeback, payment: &PaymentId, order: &MerchantOrderId) -> Decision {
    Decision {
        subject: Subject::merchant_order(order).to_string(),
        key: format!("order.at_risk:{}", cb.id),
        event: EventType::OrderAtRisk,
        data: json!({
            "merchant_order_id": order,
            "chargeback_id": cb.id,
            "payment_id": payment,
        }),
        guards: vec![Guard::OrderReleased(order.clone())],
        marks: vec![Mark::OrderAtRisk(order.clone())],
        slot: Slot::Once,
        reason: format!(
            "chargeback {} names payment {payment} of merchant order {order}, released already → at risk",
            cb.id
        ),
    }
}
