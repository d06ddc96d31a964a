//! The platform's search answers, read as tolerantly as its resources
//! (docs/reconciliation.md; bodies in `fixtures/api/search/`): what
//! reconciliation lists to find changes that came with no notification.

use serde::Deserialize;

use super::endpoint::Endpoint;
use super::error::ApiError;
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

impl super::ApiClient {
    /// One page of the payments whose `date_last_updated` falls in
    /// `[begin, end]`, oldest change first.
    pub async fn search_payments(
        &self,
        account: &str,
        begin: jiff::Timestamp,
        end: jiff::Timestamp,
        offset: u64,
        limit: u64,
    ) -> Result<PaymentPage, ApiError> {
        let query = [
            ("sort", "date_last_updated".to_string()),
            ("criteria", "asc".to_string()),
            ("range", "date_last_updated".to_string()),
            ("begin_date", search_time(begin)),
            ("end_date", search_time(end)),
            ("offset", offset.to_string()),
            ("limit", limit.to_string()),
        ];
        self.search(
            account,
            Endpoint::PaymentSearch,
            "/v1/payments/search",
            &query,
        )
        .await
    }

    /// One page of the merchant orders last updated in `[begin, end]`.
    pub async fn search_merchant_orders(
        &self,
        account: &str,
        begin: jiff::Timestamp,
        end: jiff::Timestamp,
        offset: u64,
        limit: u64,
    ) -> Result<OrderPage, ApiError> {
        let query = [
            ("last_updated_from", search_time(begin)),
            ("last_updated_to", search_time(end)),
            ("offset", offset.to_string()),
            ("limit", limit.to_string()),
        ];
        self.search(
            account,
            Endpoint::MerchantOrderSearch,
            "/merchant_orders/search",
            &query,
        )
        .await
    }

    /// The payment-intent events of the days from `start` to `end`.
    pub async fn intent_events(
        &self,
        account: &str,
        start: jiff::civil::Date,
        end: jiff::civil::Date,
    ) -> Result<IntentEvents, ApiError> {
        let query = [
            ("startDate", start.to_string()),
            ("endDate", end.to_string()),
        ];
        let path = format!("{}/events", self.intent_path.trim_end_matches("/{id}"));
        self.search(account, Endpoint::IntentEvents, &path, &query)
            .await
    }

    /// One page (from 1) of the Orders API's orders of `[begin, end]`, a
    /// window of at most 30 days.
    pub async fn search_platform_orders(
        &self,
        account: &str,
        begin: jiff::Timestamp,
        end: jiff::Timestamp,
        page: u64,
        page_size: u64,
    ) -> Result<PlatformOrderPage, ApiError> {
        let query = [
            ("begin_date", search_time(begin)),
            ("end_date", search_time(end)),
            ("page", page.to_string()),
            ("page_size", page_size.to_string()),
        ];
        self.search(account, Endpoint::PlatformOrderSearch, "/v1/orders", &query)
            .await
    }

    /// The chargebacks of a payment.
    pub async fn search_chargebacks(
        &self,
        account: &str,
        payment: &PaymentId,
    ) -> Result<ChargebackPage, ApiError> {
        let query = [("payment_id", payment.to_string())];
        self.search(
            account,
            Endpoint::ChargebackSearch,
            "/v1/chargebacks/search",
            &query,
        )
        .await
    }
}

/// A time as the search APIs take it: milliseconds and an offset.
fn search_time(t: jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%S%.3f%:z").to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn search_times_have_milliseconds_and_an_offset() {
        let t: jiff::Timestamp = "2026-11-23T05:02:03.5Z".parse().unwrap();
        assert_eq!(super::search_time(t), "2026-11-23T05:02:03.500+00:00");
    }
}
