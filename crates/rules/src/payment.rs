//! Payments: each new status is told once (`payment.updated`), with or
//! without a merchant order (Checkout API, Bricks and Point payments have
//! none), and a payment approved before its merchant order lists it is
//! waited for rather than decided "not paid".

use serde_json::json;

use crate::domain::platform::{MerchantOrder, Payment, PaymentStatus};
use crate::domain::subject::{Subject, SubjectKind};
use crate::domain::{Decision, EventType, Slot};

/// `payment.updated`, once per (payment, status).
pub fn updated(p: &Payment) -> Decision {
    Decision {
        subject: Subject::new(SubjectKind::Payment, &p.id).to_string(),
        key: format!("payment.updated:{}", p.status.as_str()),
        event: EventType::PaymentUpdated,
        data: json!({
            "payment_id": p.id,
            "status": p.status.as_str(),
            "status_detail": p.status_detail,
            "amount": p.amount.map(|a| a.to_string()),
            "currency_id": p.currency,
            "external_reference": p.external_reference,
            "merchant_order_id": p.merchant_order,
        }),
        guards: vec![],
        marks: vec![],
        slot: Slot::Once,
        reason: format!(
            "payment {} is {}{} as the API reports it → told once per status",
            p.id,
            p.status,
            p.amount.map(|a| format!(" for {a}")).unwrap_or_default()
        ),
    }
}

/// The two are not updated at once: an approved payment whose merchant
/// order does not list it as approved yet means the order is behind.
pub fn order_is_behind(p: &Payment, order: &MerchantOrder) -> bool {
    p.status == PaymentStatus::Approved
        && !order
            .payments
            .iter()
            .any(|o| o.id == p.id && o.status == PaymentStatus::Approved)
}
