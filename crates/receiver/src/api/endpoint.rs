//! What is asked of the API (`Endpoint`), at whose priority, and which
//! version of a resource an answer shows.

/// What says which version of a resource an answer shows: the stamp of
/// its last update, or an intent's state (intents carry no stamp). The
/// reconciliation compares it with what a search lists.
pub fn version_of(endpoint: Endpoint, body: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Version {
        date_last_updated: Option<String>,
        last_updated: Option<String>,
        last_updated_date: Option<String>,
        state: Option<String>,
    }
    let v: Version = serde_json::from_slice(body).ok()?;
    match endpoint {
        Endpoint::Payment | Endpoint::Chargeback => v.date_last_updated.map(|t| stamp(&t)),
        Endpoint::MerchantOrder => v.last_updated.map(|t| stamp(&t)),
        Endpoint::PaymentIntent => v.state,
        Endpoint::PlatformOrder => v.last_updated_date.map(|t| stamp(&t)),
        _ => None,
    }
}

/// A last-update stamp as one text per instant: the platform writes the
/// same instant as `…000-04:00` in one answer and `…000Z` in another.
/// Unix milliseconds when it reads as a time, else the text as it came.
pub fn stamp(text: &str) -> String {
    text.parse::<jiff::Timestamp>()
        .map(|t| t.as_millisecond().to_string())
        .unwrap_or_else(|_| text.to_string())
}

/// What was asked of the API, for logs and the job's error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Payment,
    MerchantOrder,
    Chargeback,
    PaymentIntent,
    PlatformOrder,
    Cancel,
    Refund,
    PlatformOrderCancel,
    PlatformOrderRefund,
    PaymentSearch,
    MerchantOrderSearch,
    IntentEvents,
    ChargebackSearch,
    PlatformOrderSearch,
}

/// Who is waiting for the account's rate limit: the worker (notifications)
/// goes first; reconciliation takes a slot only when nobody else waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Priority {
    Notification,
    Reconcile,
}

impl Endpoint {
    pub fn as_str(self) -> &'static str {
        match self {
            Endpoint::Payment => "payment",
            Endpoint::MerchantOrder => "merchant_order",
            Endpoint::Chargeback => "chargeback",
            Endpoint::PaymentIntent => "payment_intent",
            Endpoint::PlatformOrder => "platform_order",
            Endpoint::PlatformOrderCancel => "platform_order_cancel",
            Endpoint::PlatformOrderRefund => "platform_order_refund",
            Endpoint::Cancel => "cancel",
            Endpoint::Refund => "refund",
            Endpoint::PaymentSearch => "payment_search",
            Endpoint::MerchantOrderSearch => "merchant_order_search",
            Endpoint::IntentEvents => "payment_intent_events",
            Endpoint::ChargebackSearch => "chargeback_search",
            Endpoint::PlatformOrderSearch => "platform_order_search",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_name_one_instant_whatever_its_offset() {
        assert_eq!(
            stamp("2026-11-23T01:02:03.000-04:00"),
            stamp("2026-11-23T05:02:03.000Z")
        );
        assert_eq!(stamp("not a time"), "not a time");
    }
}
