use serde_json::json;

use super::platform_order as order;
use crate::domain::EventType;
use crate::domain::platform::PaymentStatus;
use crate::rules::platform_order;

#[test]
fn the_platform_order_table() {
    use platform_order::{OrderDecision::*, checked, status};
    let s = |st: &str| status(&order(json!({"status": st})));
    assert_eq!(s("processed"), Final(EventType::PlatformOrderProcessed));
    assert_eq!(s("canceled"), Final(EventType::PlatformOrderCanceled));
    assert_eq!(s("cancelled"), Final(EventType::PlatformOrderCanceled));
    assert_eq!(s("failed"), Final(EventType::PlatformOrderFailed));
    assert_eq!(s("expired"), Final(EventType::PlatformOrderExpired));
    // Refunded and charged back only ever follow processed: told too.
    assert_eq!(s("refunded"), Final(EventType::PlatformOrderProcessed));
    assert_eq!(s("charged_back"), Final(EventType::PlatformOrderProcessed));
    assert_eq!(s("action_required"), CheckPayment);
    for moving in ["created", "at_terminal", "processing", "something_new"] {
        assert_eq!(s(moving), NotFinal, "{moving}");
    }
    assert_eq!(
        checked(&PaymentStatus::Approved),
        Some(EventType::PlatformOrderConfirmed)
    );
    for refused in [
        PaymentStatus::Rejected,
        PaymentStatus::Cancelled,
        PaymentStatus::Refunded,
    ] {
        assert_eq!(checked(&refused), Some(EventType::PlatformOrderNotApproved));
    }
    assert_eq!(checked(&PaymentStatus::InProcess), None);
    assert_eq!(checked(&PaymentStatus::Pending), None);
}

#[test]
fn money_taken_back_is_told_once_per_amount_after_the_outcome() {
    use platform_order::decisions;
    let events = |v| {
        decisions(&order(v), EventType::PlatformOrderProcessed, None)
            .unwrap()
            .into_iter()
            .map(|d| (d.event, d.key, d.data["refunded_amount"].clone()))
            .collect::<Vec<_>>()
    };
    let processed = events(json!({"status": "processed"}));
    assert_eq!(processed.len(), 1);
    assert_eq!(processed[0].1, "final");
    let partial = events(
        json!({"status": "processed", "status_detail": "partially_refunded",
        "transactions": {"payments": [{"id": "PAY01", "amount": "100.00", "reference_id": "77"}],
                         "refunds": [{"id": "REF01", "amount": "30.00", "status": "processed"}]}}),
    );
    assert_eq!(
        partial[1],
        (
            EventType::PlatformOrderRefunded,
            "refunded:30.00".into(),
            json!("30.00")
        )
    );
    let full = events(json!({"status": "refunded"}));
    assert_eq!(full[1].1, "refunded:100.00");
    let charged = events(json!({"status": "charged_back"}));
    assert_eq!(
        charged.last().unwrap().0,
        EventType::PlatformOrderChargedBack
    );
    // Nothing was paid out on a failure: nothing is taken back.
    let failed = decisions(
        &order(json!({"status": "failed", "transactions": {"refunds": [{"amount": "5"}]}})),
        EventType::PlatformOrderFailed,
        None,
    )
    .unwrap();
    assert_eq!(failed.len(), 1);
    // Ids are strings; amounts are decimal strings.
    let d = &decisions(
        &order(json!({"status": "processed",
            "transactions": {"payments": [{"id": "PAY01", "reference_id": 1234567890123u64}]}})),
        EventType::PlatformOrderProcessed,
        None,
    )
    .unwrap()[0]
        .data;
    assert_eq!(d["payment_ids"], json!(["1234567890123"]));
    assert_eq!(d["total_amount"], "100.00");
    assert_eq!(d["platform_order_id"], "ORD01JQ4S4KY8HWQ6NA5PXB65B3D3");
}
