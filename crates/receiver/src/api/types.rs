//! The platform's resources as the API returns them (see `fixtures/api/`),
//! read tolerantly: ids as numbers or strings, unknown fields ignored,
//! unknown statuses kept as text.

use serde::{Deserialize, Deserializer};

use crate::domain::{
    ChargebackId, IntentId, IntentState, MerchantOrderId, PaymentId, PlatformOrderId,
};
use crate::money::Money;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PaymentStatus {
    Pending,
    Approved,
    Authorized,
    InProcess,
    InMediation,
    Rejected,
    Cancelled,
    Refunded,
    ChargedBack,
    Other(String),
}

impl PaymentStatus {
    pub fn parse(s: &str) -> PaymentStatus {
        match s {
            "pending" => PaymentStatus::Pending,
            "approved" => PaymentStatus::Approved,
            "authorized" => PaymentStatus::Authorized,
            "in_process" => PaymentStatus::InProcess,
            "in_mediation" => PaymentStatus::InMediation,
            "rejected" => PaymentStatus::Rejected,
            "cancelled" => PaymentStatus::Cancelled,
            "refunded" => PaymentStatus::Refunded,
            "charged_back" => PaymentStatus::ChargedBack,
            other => PaymentStatus::Other(other.to_string()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            PaymentStatus::Pending => "pending",
            PaymentStatus::Approved => "approved",
            PaymentStatus::Authorized => "authorized",
            PaymentStatus::InProcess => "in_process",
            PaymentStatus::InMediation => "in_mediation",
            PaymentStatus::Rejected => "rejected",
            PaymentStatus::Cancelled => "cancelled",
            PaymentStatus::Refunded => "refunded",
            PaymentStatus::ChargedBack => "charged_back",
            PaymentStatus::Other(s) => s,
        }
    }
}

impl<'de> Deserialize<'de> for PaymentStatus {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(PaymentStatus::parse(&String::deserialize(d)?))
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct Payment {
    pub id: PaymentId,
    pub status: PaymentStatus,
    #[serde(default)]
    pub status_detail: Option<String>,
    #[serde(default)]
    pub transaction_amount: Option<Money>,
    #[serde(default)]
    pub transaction_amount_refunded: Option<Money>,
    #[serde(default)]
    pub currency_id: Option<String>,
    #[serde(default)]
    pub external_reference: Option<String>,
    #[serde(default)]
    pub order: Option<OrderRef>,
    #[serde(default)]
    pub date_last_updated: Option<String>,
}

/// The order a payment belongs to: a merchant order of this platform
/// (`type: mercadopago`), or something else (a marketplace order).
#[derive(Debug, Clone, Deserialize)]
pub struct OrderRef {
    #[serde(default, deserialize_with = "loose_text")]
    pub id: Option<String>,
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
}

impl Payment {
    /// The merchant order to look up, if the payment belongs to one of this
    /// platform's (an order of another type is not one).
    pub fn merchant_order_id(&self) -> Option<MerchantOrderId> {
        let order = self.order.as_ref()?;
        match order.kind.as_deref() {
            None | Some("mercadopago") => MerchantOrderId::parse(order.id.as_deref()?).ok(),
            Some(_) => None,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct MerchantOrder {
    pub id: MerchantOrderId,
    pub total_amount: Money,
    #[serde(default, deserialize_with = "null_as_default")]
    pub payments: Vec<OrderPayment>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub shipments: Vec<Shipment>,
    #[serde(default)]
    pub external_reference: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct OrderPayment {
    pub id: PaymentId,
    pub transaction_amount: Money,
    pub status: PaymentStatus,
    /// What was refunded of it; merchant orders and payments name it
    /// differently.
    #[serde(default)]
    pub transaction_amount_refunded: Option<Money>,
    #[serde(default)]
    pub amount_refunded: Option<Money>,
}

impl OrderPayment {
    pub fn refunded(&self) -> Money {
        self.transaction_amount_refunded
            .or(self.amount_refunded)
            .unwrap_or(Money::ZERO)
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct Shipment {
    #[serde(default, deserialize_with = "loose_text")]
    pub id: Option<String>,
    #[serde(default)]
    pub status: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Chargeback {
    pub id: ChargebackId,
    #[serde(default, deserialize_with = "loose_ids")]
    pub payments: Vec<PaymentId>,
    #[serde(default)]
    pub amount: Option<Money>,
    #[serde(default)]
    pub currency: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
    /// Chargebacks have no single status; the documentation status and the
    /// coverage decision are what changes.
    #[serde(default)]
    pub documentation_status: Option<String>,
    #[serde(default)]
    pub coverage_applied: Option<bool>,
    #[serde(default)]
    pub date_last_updated: Option<String>,
}

impl Chargeback {
    /// What "a new status" means for a chargeback: the parts that change.
    pub fn status_key(&self) -> String {
        format!(
            "{}/{}",
            self.documentation_status.as_deref().unwrap_or("-"),
            match self.coverage_applied {
                Some(true) => "covered",
                Some(false) => "not_covered",
                None => "undecided",
            }
        )
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct PaymentIntent {
    pub id: IntentId,
    pub state: String,
    #[serde(default)]
    pub payment: Option<IntentPayment>,
    #[serde(default)]
    pub additional_info: Option<AdditionalInfo>,
    /// Cents.
    #[serde(default)]
    pub amount: Option<i64>,
    #[serde(default)]
    pub device_id: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct IntentPayment {
    #[serde(default, deserialize_with = "loose_text")]
    pub id: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct AdditionalInfo {
    #[serde(default, deserialize_with = "loose_text")]
    pub external_reference: Option<String>,
    #[serde(default, deserialize_with = "loose_text")]
    pub ticket_number: Option<String>,
}

impl PaymentIntent {
    /// The intent's state; `None` for one this version does not know.
    pub fn state(&self) -> Option<IntentState> {
        IntentState::parse(&self.state)
    }

    /// The payment the intent names. An id that is not a payment id is
    /// treated as absent (the payment is not there yet).
    pub fn payment_id(&self) -> Option<PaymentId> {
        PaymentId::parse(self.payment.as_ref()?.id.as_deref()?).ok()
    }

    pub fn info(&self) -> AdditionalInfo {
        self.additional_info.clone().unwrap_or_default()
    }
}

/// An order of the Orders API (`/v1/orders/{id}`, `ORD…`), the platform's
/// current integration path for Point, QR and online payments.
#[derive(Debug, Clone, Deserialize)]
pub struct PlatformOrder {
    pub id: PlatformOrderId,
    /// `point`, `qr` or `online`.
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    pub status: String,
    #[serde(default)]
    pub status_detail: Option<String>,
    #[serde(default)]
    pub external_reference: Option<String>,
    #[serde(default)]
    pub total_amount: Option<Money>,
    #[serde(default)]
    pub total_paid_amount: Option<Money>,
    #[serde(default)]
    pub last_updated_date: Option<String>,
    #[serde(default)]
    pub transactions: Transactions,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Transactions {
    #[serde(default, deserialize_with = "null_as_default")]
    pub payments: Vec<OrderTransaction>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub refunds: Vec<OrderRefund>,
}

/// A payment of an order (`PAY…`); `reference_id` is the classic payment
/// (`/v1/payments/{id}`) behind it.
#[derive(Debug, Clone, Deserialize)]
pub struct OrderTransaction {
    #[serde(default, deserialize_with = "loose_text")]
    pub id: Option<String>,
    #[serde(default)]
    pub amount: Option<Money>,
    #[serde(default)]
    pub refunded_amount: Option<Money>,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub status_detail: Option<String>,
    #[serde(default, deserialize_with = "loose_text")]
    pub reference_id: Option<String>,
}

impl OrderTransaction {
    /// The classic payment behind this transaction, if it names one.
    pub fn payment_id(&self) -> Option<PaymentId> {
        PaymentId::parse(self.reference_id.as_deref()?).ok()
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct OrderRefund {
    #[serde(default, deserialize_with = "loose_text")]
    pub id: Option<String>,
    #[serde(default)]
    pub amount: Option<Money>,
    #[serde(default)]
    pub status: Option<String>,
}

/// The id a resource says it has, to check it is the one asked for.
pub trait Identified {
    fn id_text(&self) -> &str;
}

macro_rules! identified {
    ($($ty:ty),+) => {$(
        impl Identified for $ty {
            fn id_text(&self) -> &str {
                self.id.as_str()
            }
        }
    )+};
}
identified!(
    Payment,
    MerchantOrder,
    Chargeback,
    PaymentIntent,
    PlatformOrder
);

/// The platform's error body: `{"message","error","status","cause":[…]}`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct PlatformError {
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub status: Option<serde_json::Value>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub cause: Vec<serde_json::Value>,
}

impl std::fmt::Display for PlatformError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Text from the API: shown, never interpreted by a terminal.
        use crate::text::printable;
        let message = printable(self.message.as_deref().unwrap_or("no message"));
        match &self.error {
            Some(e) => write!(f, "{}: {message}", printable(e))?,
            None => write!(f, "{message}")?,
        }
        let causes: Vec<String> = self
            .cause
            .iter()
            .filter_map(|c| {
                c.get("description")
                    .and_then(|d| d.as_str())
                    .map(str::to_string)
            })
            .collect();
        if !causes.is_empty() {
            write!(f, " ({})", printable(&causes.join("; ")))?;
        }
        Ok(())
    }
}

/// An id or a reference sent as a string or a number; `null` is absent.
fn loose_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    match serde_json::Value::deserialize(d)? {
        serde_json::Value::Null => Ok(None),
        v => crate::domain::ids::loose_text(&v)
            .map(Some)
            .ok_or_else(|| serde::de::Error::custom("expected a string or a number")),
    }
}

/// Ids in a list; an entry that is not a payment id is left out.
pub(super) fn loose_ids<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<PaymentId>, D::Error> {
    let values: Option<Vec<serde_json::Value>> = Option::deserialize(d)?;
    Ok(values
        .unwrap_or_default()
        .iter()
        .filter_map(crate::domain::ids::loose_text)
        .filter_map(|t| PaymentId::parse(&t).ok())
        .collect())
}

pub(super) fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture<T: serde::de::DeserializeOwned>(name: &str) -> T {
        let path = format!("{}/../../fixtures/api/{name}", env!("CARGO_MANIFEST_DIR"));
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
    }

    #[test]
    fn fixtures_parse_with_ids_as_numbers_or_strings() {
        let p: Payment = fixture("payment-approved.json");
        assert_eq!(p.status, PaymentStatus::Approved);
        assert_eq!(p.merchant_order_id().unwrap().as_str(), "4945357007");
        let p: Payment = fixture("payment-pending.json");
        assert_eq!(p.status, PaymentStatus::InProcess);
        assert_eq!(p.merchant_order_id().unwrap().as_str(), "4945357007");
        let o: MerchantOrder = fixture("merchant-order-paid-shipping.json");
        assert_eq!(o.total_amount, Money::parse("350.5").unwrap());
        assert_eq!(o.payments.len(), 2);
        assert_eq!(o.shipments[0].status.as_deref(), Some("ready_to_ship"));
        let o: MerchantOrder = fixture("merchant-order-partly-paid.json");
        assert_eq!(o.payments[1].status, PaymentStatus::Rejected);
        let c: Chargeback = fixture("chargeback.json");
        assert_eq!(c.payments[0].as_str(), "123456789");
        assert_eq!(c.status_key(), "not_supplied/undecided");
        let i: PaymentIntent = fixture("payment-intent.json");
        assert_eq!(i.payment_id().unwrap().as_str(), "123456789");
        assert_eq!(i.state(), Some(IntentState::Finished));
        let e: PlatformError = fixture("error-not-found.json");
        assert_eq!(
            e.to_string(),
            "not_found: Payment not found (Payment not found)"
        );
    }
}
