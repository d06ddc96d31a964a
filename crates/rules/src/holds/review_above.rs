//! `review_above = "500.00"` on an account: an order whose total is above
//! it is not released until a person approves (`order.held`, then
//! `order.released`); a rejection blocks it (`order.blocked`, the hold
//! and its reason).

use pointhook_common::money::Money;
use serde_json::json;

use super::{Held, Kind};
use crate::domain::{Decision, EventType, HoldSeen, Mark, MerchantOrderId, Slot};

pub static REVIEW_ABOVE: Kind = Kind {
    name: "review_above",
    title: "Order above the review amount",
    check: |v| match Money::parse(v) {
        Some(m) if m > Money::ZERO => Ok(()),
        _ => Err(format!(
            "must be an amount above 0, such as \"500.00\", not {v:?}"
        )),
    },
    holds,
    approve: "release the order (order.released)",
    reject: "block the order (order.blocked); it is never released",
    rejected,
};

fn holds(d: &Decision, setting: &str) -> Option<Held> {
    let total = d.data["total_amount"].as_str().and_then(Money::parse)?;
    let above = Money::parse(setting)?;
    if d.event != EventType::OrderReleased || total <= above {
        return None;
    }
    let reason = format!("total {total} is above the review amount {above}");
    Some(Held {
        event: EventType::OrderHeld,
        data: json!({
            "merchant_order_id": d.data["merchant_order_id"],
            "total_amount": total.to_string(),
            "review_above": above.to_string(),
            "external_reference": d.data["external_reference"],
            "reason": reason,
        }),
        reason,
    })
}

fn rejected(h: &HoldSeen) -> Vec<Decision> {
    let Some(order) = h.subject.strip_prefix("merchant_order:") else {
        return Vec::new();
    };
    let Ok(oid) = MerchantOrderId::parse(order) else {
        return Vec::new();
    };
    vec![Decision {
        subject: h.subject.clone(),
        key: format!("order.blocked:hold:{}", h.id),
        event: EventType::OrderBlocked,
        data: json!({
            "merchant_order_id": order,
            "hold": {"id": h.id.to_string(), "kind": h.kind},
            "reason": h.reason,
        }),
        guards: vec![],
        marks: vec![Mark::OrderBlocked {
            order: oid,
            alert: format!("hold:{}", h.id),
            unauthenticated: false,
        }],
        slot: Slot::Once,
        reason: format!("hold {} rejected: {}", h.id, h.reason),
    }]
}
