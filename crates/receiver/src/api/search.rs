//! The platform's search answers, read as tolerantly as its resources
//! (docs/reconciliation.md; bodies in `fixtures/api/search/`): what
//! reconciliation lists to find changes that came with no notification.

use serde::Deserialize;

use super::wire::{OrderRef, loose_ids, null_as_default};
use crate::domain::platform::PaymentStatus;
use crate::domain::{ChargebackId, IntentId, MerchantOrderId, PaymentId};

/// `GET /v1/payments/search`: `{"paging":{…},"results":[…]}`.
#[derive(Debug, Clone, Deserialize)]
pub struct PaymentPage {
    #[serde(default)]
    pub paging: Paging,
    #[serde(default, deserialize_with = "null_as_default")]
    pub results: Vec<FoundPayment>,
}

/// Paging as the searches write it: numbers, or (the Orders API) numbers
/// in strings.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Paging {
    #[serde(default, deserialize_with = "loose_count")]
    pub total: Option<u64>,
    #[serde(default, deserialize_with = "loose_count")]
    pub limit: Option<u64>,
    #[serde(default, deserialize_with = "loose_count")]
    pub offset: Option<u64>,
}

fn loose_count<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(match serde_json::Value::deserialize(d)? {
        serde_json::Value::Number(n) => n.as_u64(),
        serde_json::Value::String(s) => s.trim().parse().ok(),
        _ => None,
    })
}

/// A payment as a search lists it: what says it changed, and what to fetch.
#[derive(Debug, Clone, Deserialize)]
pub struct FoundPayment {
    pub id: PaymentId,
    #[serde(deserialize_with = "super::wire::payment_status")]
    pub status: PaymentStatus,
    #[serde(default)]
    pub date_last_updated: Option<String>,
    #[serde(default)]
    pub order: Option<OrderRef>,
}

impl FoundPayment {
    /// A chargeback may stand behind this payment.
    pub fn may_have_chargeback(&self) -> bool {
        matches!(
            self.status,
            PaymentStatus::ChargedBack | PaymentStatus::InMediation
        )
    }
}

/// `GET /merchant_orders/search`: `{"elements":[…],"next_offset":…,"total":…}`.
#[derive(Debug, Clone, Deserialize)]
pub struct OrderPage {
    #[serde(default, deserialize_with = "null_as_default")]
    pub elements: Vec<FoundOrder>,
    #[serde(default)]
    pub next_offset: Option<u64>,
    #[serde(default)]
    pub total: Option<u64>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct FoundOrder {
    pub id: MerchantOrderId,
    #[serde(default)]
    pub last_updated: Option<String>,
}

/// The Point integration API's list of intent events:
/// `{"events":[{"payment_intent_id","status","created_on"}]}`.
#[derive(Debug, Clone, Deserialize)]
pub struct IntentEvents {
    #[serde(default, deserialize_with = "null_as_default")]
    pub events: Vec<IntentEvent>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct IntentEvent {
    pub payment_intent_id: IntentId,
    /// The state the intent reached.
    pub status: String,
    /// A day (`YYYY-MM-DD`), not an instant.
    #[serde(default)]
    pub created_on: Option<String>,
}

/// `GET /v1/orders?begin_date&end_date` (the Orders API):
/// `{"data":[…],"paging":{…}}`.
#[derive(Debug, Clone, Deserialize)]
pub struct PlatformOrderPage {
    #[serde(default, deserialize_with = "null_as_default")]
    pub data: Vec<FoundPlatformOrder>,
    #[serde(default)]
    pub paging: Paging,
}

#[derive(Debug, Clone, Deserialize)]
pub struct FoundPlatformOrder {
    pub id: crate::domain::PlatformOrderId,
    pub status: String,
    #[serde(default)]
    pub last_updated_date: Option<String>,
}

/// `GET /v1/chargebacks/search?payment_id=`: `{"paging","results"}`.
#[derive(Debug, Clone, Deserialize)]
pub struct ChargebackPage {
    #[serde(default)]
    pub paging: Paging,
    #[serde(default, deserialize_with = "null_as_default")]
    pub results: Vec<FoundChargeback>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct FoundChargeback {
    pub id: ChargebackId,
    #[serde(default, deserialize_with = "loose_ids")]
    pub payments: Vec<PaymentId>,
    #[serde(default)]
    pub date_last_updated: Option<String>,
}
