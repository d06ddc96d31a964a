//! The work a notification asks for. Classification builds it once, it is
//! stored with the job (as JSON), and the worker runs it: nobody parses a
//! notification body twice.

use serde::{Deserialize, Serialize};

use super::ids::{ChargebackId, IntentId, MerchantOrderId, PaymentId, PlatformOrderId, ResourceId};
use super::states::JobKind;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Work {
    /// Fetch the payment (and its merchant order) and decide.
    Payment {
        id: PaymentId,
    },
    MerchantOrder {
        id: MerchantOrderId,
    },
    Chargeback {
        id: ChargebackId,
    },
    /// Fetch the intent, whatever state a notification claimed for it.
    PaymentIntent {
        id: IntentId,
    },
    /// Fetch an order of the Orders API (`ORD…`) and decide.
    PlatformOrder {
        id: PlatformOrderId,
    },
    FraudAlert(FraudAlert),
}

/// What a fraud alert names. Its ids are verified against the API before
/// anything is done; `authenticated` says whether it may move money.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FraudAlert {
    pub merchant_order: Option<MerchantOrderId>,
    pub payment: Option<PaymentId>,
    /// The IPN's own `id`, kept for an alert whose body names nothing: the
    /// job resolves what it can from it.
    pub notified_id: Option<ResourceId>,
    pub description: Option<String>,
    /// Came as a webhook whose valid signature binds the alert's payment.
    pub authenticated: bool,
}

/// Longest fraud-alert description kept.
pub const DESCRIPTION_MAX: usize = 500;

impl Work {
    pub fn job_kind(&self) -> JobKind {
        match self {
            Work::Payment { .. } => JobKind::Payment,
            Work::MerchantOrder { .. } => JobKind::MerchantOrder,
            Work::Chargeback { .. } => JobKind::Chargeback,
            Work::PaymentIntent { .. } => JobKind::PaymentIntent,
            Work::PlatformOrder { .. } => JobKind::PlatformOrder,
            Work::FraudAlert(_) => JobKind::FraudAlert,
        }
    }

    /// The coalescing key within an account. Every
    /// notification of one intent shares a key: none of them decides, each
    /// only asks for the intent to be fetched again.
    pub fn job_key(&self) -> String {
        match self {
            Work::Payment { id } => format!("payment:{id}"),
            Work::MerchantOrder { id } => format!("merchant_order:{id}"),
            Work::Chargeback { id } => format!("chargeback:{id}"),
            Work::PaymentIntent { id } => format!("payment_intent:{id}"),
            Work::PlatformOrder { id } => format!("platform_order:{id}"),
            Work::FraudAlert(a) => match (&a.merchant_order, &a.payment, &a.notified_id) {
                (None, None, Some(n)) => format!("fraud:ipn:{n}"),
                (o, p, _) => format!(
                    "fraud:{}:{}",
                    o.as_ref().map_or("-", |o| o.as_str()),
                    p.as_ref().map_or("-", |p| p.as_str())
                ),
            },
        }
    }

    /// The resource the job is about, as text (the payment for a fraud alert).
    pub fn resource_id(&self) -> String {
        match self {
            Work::Payment { id } => id.to_string(),
            Work::MerchantOrder { id } => id.to_string(),
            Work::Chargeback { id } => id.to_string(),
            Work::PaymentIntent { id } => id.to_string(),
            Work::PlatformOrder { id } => id.to_string(),
            Work::FraudAlert(a) => a
                .payment
                .as_ref()
                .map(|p| p.to_string())
                .or_else(|| a.merchant_order.as_ref().map(|o| o.to_string()))
                .or_else(|| a.notified_id.as_ref().map(|n| n.to_string()))
                .unwrap_or_else(|| "-".into()),
        }
    }

    /// When two notifications coalesce into one job, the work of the one
    /// with the higher rank is kept (ties: the newer). An authenticated
    /// fraud alert is never replaced by an unauthenticated one.
    pub fn rank(&self) -> i64 {
        match self {
            Work::FraudAlert(a) if a.authenticated => 1,
            _ => 0,
        }
    }

    pub fn to_json(&self) -> String {
        // A plain enum of strings and options: serialising cannot fail.
        serde_json::to_string(self).unwrap_or_else(|_| "null".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_keys_follow_the_design() {
        let w = Work::MerchantOrder {
            id: MerchantOrderId::parse("9").unwrap(),
        };
        assert_eq!(w.job_key(), "merchant_order:9");
        let alert = FraudAlert {
            merchant_order: Some(MerchantOrderId::parse("1").unwrap()),
            payment: Some(PaymentId::parse("2").unwrap()),
            notified_id: None,
            description: None,
            authenticated: false,
        };
        assert_eq!(Work::FraudAlert(alert.clone()).job_key(), "fraud:1:2");
        let bare = FraudAlert {
            merchant_order: None,
            payment: None,
            notified_id: Some(ResourceId::parse("77").unwrap()),
            ..alert
        };
        assert_eq!(Work::FraudAlert(bare).job_key(), "fraud:ipn:77");
    }

    #[test]
    fn work_round_trips_as_json() {
        let w = Work::PaymentIntent {
            id: IntentId::parse("7f25f9aa-eea6").unwrap(),
        };
        let text = w.to_json();
        assert_eq!(text, r#"{"kind":"payment_intent","id":"7f25f9aa-eea6"}"#);
        assert_eq!(serde_json::from_str::<Work>(&text).unwrap(), w);
    }
}
