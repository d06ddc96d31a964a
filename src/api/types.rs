//! The platform's resources as the API returns them (see `fixtures/api/`),
//! read tolerantly: ids as numbers or strings, unknown fields ignored,
//! unknown statuses kept as text.

use serde::{Deserialize, Deserializer};

use crate::domain::ResourceId;
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
    #[serde(deserialize_with = "loose_id")]
    pub id: ResourceId,
    pub status: PaymentStatus,
    #[serde(default)]
    pub status_detail: Option<String>,
    #[serde(default)]
    pub transaction_amount: Option<Money>,
    #[serde(default)]
    pub external_reference: Option<String>,
    #[serde(default)]
    pub order: Option<OrderRef>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct OrderRef {
    #[serde(default, deserialize_with = "loose_opt_id")]
    pub id: Option<ResourceId>,
}

impl Payment {
    pub fn order_id(&self) -> Option<&ResourceId> {
        self.order.as_ref().and_then(|o| o.id.as_ref())
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct MerchantOrder {
    #[serde(deserialize_with = "loose_id")]
    pub id: ResourceId,
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
    #[serde(deserialize_with = "loose_id")]
    pub id: ResourceId,
    pub transaction_amount: Money,
    pub status: PaymentStatus,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Shipment {
    #[serde(default, deserialize_with = "loose_opt_id")]
    pub id: Option<ResourceId>,
    #[serde(default)]
    pub status: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Chargeback {
    #[serde(deserialize_with = "loose_id")]
    pub id: ResourceId,
    #[serde(default, deserialize_with = "loose_ids")]
    pub payments: Vec<ResourceId>,
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
    #[serde(deserialize_with = "loose_id")]
    pub id: ResourceId,
    pub state: String,
    #[serde(default)]
    pub payment: Option<IntentPayment>,
    #[serde(default)]
    pub additional_info: Option<AdditionalInfo>,
    /// Cents.
    #[serde(default)]
    pub amount: Option<i64>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct IntentPayment {
    #[serde(default, deserialize_with = "loose_opt_id")]
    pub id: Option<ResourceId>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct AdditionalInfo {
    #[serde(default)]
    pub external_reference: Option<String>,
    #[serde(default)]
    pub ticket_number: Option<String>,
}

impl PaymentIntent {
    pub fn payment_id(&self) -> Option<&ResourceId> {
        self.payment.as_ref().and_then(|p| p.id.as_ref())
    }
}

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
        let message = self.message.as_deref().unwrap_or("no message");
        match &self.error {
            Some(e) => write!(f, "{e}: {message}")?,
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
            write!(f, " ({})", causes.join("; "))?;
        }
        Ok(())
    }
}

fn id_from_value(v: serde_json::Value) -> Option<ResourceId> {
    let text = match v {
        serde_json::Value::String(s) => s,
        serde_json::Value::Number(n) => n.to_string(),
        _ => return None,
    };
    ResourceId::parse(&text).ok()
}

fn loose_id<'de, D: Deserializer<'de>>(d: D) -> Result<ResourceId, D::Error> {
    id_from_value(serde_json::Value::deserialize(d)?)
        .ok_or_else(|| serde::de::Error::custom("expected an id (a string or a number)"))
}

fn loose_opt_id<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ResourceId>, D::Error> {
    match serde_json::Value::deserialize(d)? {
        serde_json::Value::Null => Ok(None),
        v => id_from_value(v)
            .map(Some)
            .ok_or_else(|| serde::de::Error::custom("expected an id (a string or a number)")),
    }
}

fn loose_ids<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<ResourceId>, D::Error> {
    let values: Option<Vec<serde_json::Value>> = Option::deserialize(d)?;
    Ok(values
        .unwrap_or_default()
        .into_iter()
        .filter_map(id_from_value)
        .collect())
}

fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
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
        let path = format!("{}/fixtures/api/{name}", env!("CARGO_MANIFEST_DIR"));
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
    }

    #[test]
    fn fixtures_parse_with_ids_as_numbers_or_strings() {
        let p: Payment = fixture("payment-approved.json");
        assert_eq!(p.status, PaymentStatus::Approved);
        assert_eq!(p.order_id().unwrap().as_str(), "4945357007");
        let p: Payment = fixture("payment-pending.json");
        assert_eq!(p.status, PaymentStatus::InProcess);
        assert_eq!(p.order_id().unwrap().as_str(), "4945357007");
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
        let e: PlatformError = fixture("error-not-found.json");
        assert_eq!(
            e.to_string(),
            "not_found: Payment not found (Payment not found)"
        );
    }
}
