//! The platform's resources as the API writes them (see `fixtures/api/`),
//! read tolerantly: ids as numbers or strings, unknown fields ignored,
//! unknown statuses kept as text. Each converts into its `domain::platform`
//! type here, at the edge: the rules never see these.

use pointhook_common::money::Money;
use serde::{Deserialize, Deserializer};

use crate::domain::platform::{self as domain, PaymentStatus};
use crate::domain::{
    ChargebackId, IntentId, IntentState, MerchantOrderId, PaymentId, PlatformOrderId,
};

/// A payment status as the API writes it; an unknown one is kept as text.
pub fn payment_status<'de, D: Deserializer<'de>>(d: D) -> Result<PaymentStatus, D::Error> {
    Ok(PaymentStatus::parse(&String::deserialize(d)?))
}

#[derive(Debug, Clone, Deserialize)]
pub struct Payment {
    pub id: PaymentId,
    #[serde(deserialize_with = "payment_status")]
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
    /// Who paid, read loosely: only its e-mail is used (a reference a
    /// person searches by), and no shape of it fails the payment.
    #[serde(default)]
    pub payer: Option<serde_json::Value>,
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
    #[serde(deserialize_with = "payment_status")]
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

#[derive(Debug, Clone, Deserialize)]
pub struct OrderRefund {
    #[serde(default, deserialize_with = "loose_text")]
    pub id: Option<String>,
    #[serde(default)]
    pub amount: Option<Money>,
    #[serde(default)]
    pub status: Option<String>,
}

impl From<Payment> for domain::Payment {
    fn from(p: Payment) -> domain::Payment {
        let merchant_order = p.merchant_order_id();
        domain::Payment {
            id: p.id,
            status: p.status,
            status_detail: p.status_detail,
            amount: p.transaction_amount,
            refunded: p.transaction_amount_refunded,
            currency: p.currency_id,
            external_reference: p.external_reference,
            payer_email: p
                .payer
                .as_ref()
                .and_then(|v| v.get("email")?.as_str().map(str::to_string)),
            merchant_order,
            last_updated: p.date_last_updated,
        }
    }
}

impl From<MerchantOrder> for domain::MerchantOrder {
    fn from(o: MerchantOrder) -> domain::MerchantOrder {
        domain::MerchantOrder {
            id: o.id,
            total: o.total_amount,
            payments: o
                .payments
                .into_iter()
                .map(|p| domain::OrderPayment {
                    refunded: p.refunded(),
                    id: p.id,
                    amount: p.transaction_amount,
                    status: p.status,
                })
                .collect(),
            shipments: o.shipments.into_iter().map(|s| s.status).collect(),
            external_reference: o.external_reference,
        }
    }
}

impl From<Chargeback> for domain::Chargeback {
    fn from(c: Chargeback) -> domain::Chargeback {
        domain::Chargeback {
            id: c.id,
            payments: c.payments,
            amount: c.amount,
            currency: c.currency,
            reason: c.reason,
            documentation_status: c.documentation_status,
            coverage_applied: c.coverage_applied,
            last_updated: c.date_last_updated,
        }
    }
}

impl From<PaymentIntent> for domain::PaymentIntent {
    fn from(i: PaymentIntent) -> domain::PaymentIntent {
        let info = i.additional_info.clone().unwrap_or_default();
        domain::PaymentIntent {
            state: i.state(),
            payment: i.payment_id(),
            id: i.id,
            state_text: i.state,
            amount_cents: i.amount,
            external_reference: info.external_reference,
            ticket_number: info.ticket_number,
            device_id: i.device_id,
        }
    }
}

impl From<PlatformOrder> for domain::PlatformOrder {
    fn from(o: PlatformOrder) -> domain::PlatformOrder {
        domain::PlatformOrder {
            id: o.id,
            kind: o.kind,
            status: o.status,
            status_detail: o.status_detail,
            external_reference: o.external_reference,
            total: o.total_amount,
            total_paid: o.total_paid_amount,
            last_updated: o.last_updated_date,
            payments: o
                .transactions
                .payments
                .into_iter()
                .map(|t| domain::OrderTransaction {
                    id: t.id,
                    refunded: t.refunded_amount,
                    reference: t.reference_id,
                })
                .collect(),
            refunds: o
                .transactions
                .refunds
                .into_iter()
                .map(|r| domain::OrderRefund {
                    amount: r.amount,
                    status: r.status,
                })
                .collect(),
        }
    }
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
        use pointhook_common::text::printable;
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
        let p: domain::Payment = fixture::<Payment>("payment-approved.json").into();
        assert_eq!(p.status, PaymentStatus::Approved);
        assert_eq!(p.merchant_order.unwrap().as_str(), "4945357007");
        let p: domain::Payment = fixture::<Payment>("payment-pending.json").into();
        assert_eq!(p.status, PaymentStatus::InProcess);
        assert_eq!(p.merchant_order.unwrap().as_str(), "4945357007");
        let o: domain::MerchantOrder =
            fixture::<MerchantOrder>("merchant-order-paid-shipping.json").into();
        assert_eq!(o.total, Money::parse("350.5").unwrap());
        assert_eq!(o.payments.len(), 2);
        assert_eq!(o.shipments[0].as_deref(), Some("ready_to_ship"));
        let o: domain::MerchantOrder =
            fixture::<MerchantOrder>("merchant-order-partly-paid.json").into();
        assert_eq!(o.payments[1].status, PaymentStatus::Rejected);
        let c: domain::Chargeback = fixture::<Chargeback>("chargeback.json").into();
        assert_eq!(c.payments[0].as_str(), "123456789");
        assert_eq!(c.status_key(), "not_supplied/undecided");
        let i: domain::PaymentIntent = fixture::<PaymentIntent>("payment-intent.json").into();
        assert_eq!(i.payment.unwrap().as_str(), "123456789");
        assert_eq!(i.state, Some(IntentState::Finished));
        let e: PlatformError = fixture("error-not-found.json");
        assert_eq!(
            e.to_string(),
            "not_found: Payment not found (Payment not found)"
        );
    }
}
