//! `GET /api/event-types`: every event type pointhook tells, with its
//! JSON Schema (draft 2020-12) and an example, as `docs/events/` holds
//! them (built in). `fraud_alert.rejected` is recorded for a person only,
//! never told: it is listed with `told: false` and no schema.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};

use super::Shared;
use crate::domain::EventType;

/// (type, schema, example), from `docs/events/`.
macro_rules! entry {
    ($t:literal) => {
        (
            $t,
            include_str!(concat!("../../../../../docs/events/", $t, ".schema.json")),
            include_str!(concat!("../../../../../docs/events/", $t, ".example.json")),
        )
    };
}

const CATALOG: &[(&str, &str, &str)] = &[
    entry!("chargeback.updated"),
    entry!("fraud_alert.dismissed"),
    entry!("fraud_alert.unverified"),
    entry!("order.at_risk"),
    entry!("order.awaiting_shipment"),
    entry!("order.blocked"),
    entry!("order.fraud_after_release"),
    entry!("order.held"),
    entry!("order.released"),
    entry!("payment.cancel_failed"),
    entry!("payment.cancelled"),
    entry!("payment.refunded"),
    entry!("payment.updated"),
    entry!("payment_intent.abandoned"),
    entry!("payment_intent.canceled"),
    entry!("payment_intent.confirmed"),
    entry!("payment_intent.error"),
    entry!("payment_intent.finished"),
    entry!("payment_intent.not_approved"),
    entry!("platform_order.canceled"),
    entry!("platform_order.charged_back"),
    entry!("platform_order.confirmed"),
    entry!("platform_order.expired"),
    entry!("platform_order.failed"),
    entry!("platform_order.not_approved"),
    entry!("platform_order.processed"),
    entry!("platform_order.refunded"),
];

pub(super) fn routes() -> Router<Shared> {
    Router::new().route("/api/event-types", get(event_types))
}

/// Every event type, in the order `EventType` names them.
pub fn catalog() -> Vec<Value> {
    EventType::all()
        .map(
            |t| match CATALOG.iter().find(|(name, ..)| *name == t.as_str()) {
                Some((name, schema, example)) => json!({
                    "type": name,
                    "told": true,
                    "schema": serde_json::from_str::<Value>(schema).unwrap_or(Value::Null),
                    "example": serde_json::from_str::<Value>(example).unwrap_or(Value::Null),
                }),
                None => json!({"type": t.as_str(), "told": false}),
            },
        )
        .collect()
}

async fn event_types(State(_): State<Shared>) -> Response {
    Json(json!({ "event_types": catalog() })).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_told_has_a_schema_and_an_example_and_no_other() {
        for entry in catalog() {
            let t = EventType::parse(entry["type"].as_str().unwrap()).unwrap();
            assert_eq!(entry["told"], crate::rules::kernel::told(t), "{t}");
            if crate::rules::kernel::told(t) {
                assert_eq!(entry["schema"]["properties"]["type"]["const"], t.as_str());
                assert_eq!(entry["example"]["type"], t.as_str());
            }
        }
        assert_eq!(
            CATALOG.len(),
            EventType::all()
                .filter(|t| crate::rules::kernel::told(*t))
                .count()
        );
    }
}
