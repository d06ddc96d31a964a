//! The platform's resources as the rules see them: only the fields a rule
//! reads, already typed. `api` reads the wire format and converts into
//! these at its edge, so no rule ever sees how the platform spells a field.

use pointhook_common::money::Money;

use super::ids::{ChargebackId, IntentId, MerchantOrderId, PaymentId, PlatformOrderId};
use super::states::IntentState;

/// A payment's status; one this version does not know is kept as text.
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

impl std::fmt::Display for PaymentStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&pointhook_common::text::printable(self.as_str()))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Payment {
    pub id: PaymentId,
    pub status: PaymentStatus,
    pub status_detail: Option<String>,
    pub amount: Option<Money>,
    pub refunded: Option<Money>,
    pub currency: Option<String>,
    pub external_reference: Option<String>,
    /// The payer's e-mail, as the API gave it.
    pub payer_email: Option<String>,
    /// The merchant order of this platform it belongs to (a payment of a
    /// marketplace order, or of none, has none).
    pub merchant_order: Option<MerchantOrderId>,
    pub last_updated: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MerchantOrder {
    pub id: MerchantOrderId,
    pub total: Money,
    pub payments: Vec<OrderPayment>,
    /// Each shipment's status, in the order listed (`None`: not given).
    pub shipments: Vec<Option<String>>,
    pub external_reference: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderPayment {
    pub id: PaymentId,
    pub amount: Money,
    pub status: PaymentStatus,
    /// What was refunded of it (zero when nothing was).
    pub refunded: Money,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chargeback {
    pub id: ChargebackId,
    pub payments: Vec<PaymentId>,
    pub amount: Option<Money>,
    pub currency: Option<String>,
    pub reason: Option<String>,
    /// Chargebacks have no single status; the documentation status and the
    /// coverage decision are what changes.
    pub documentation_status: Option<String>,
    pub coverage_applied: Option<bool>,
    pub last_updated: Option<String>,
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

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaymentIntent {
    pub id: IntentId,
    /// `None` for a state this version does not know.
    pub state: Option<IntentState>,
    /// The state as the API wrote it (for a person, when unknown).
    pub state_text: String,
    /// The payment it names; an id that is not a payment id is absent.
    pub payment: Option<PaymentId>,
    /// Intents count in cents.
    pub amount_cents: Option<i64>,
    pub external_reference: Option<String>,
    pub ticket_number: Option<String>,
    pub device_id: Option<String>,
}

/// An order of the Orders API (`ORD…`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlatformOrder {
    pub id: PlatformOrderId,
    /// `point`, `qr` or `online`.
    pub kind: Option<String>,
    pub status: String,
    pub status_detail: Option<String>,
    pub external_reference: Option<String>,
    pub total: Option<Money>,
    pub total_paid: Option<Money>,
    pub last_updated: Option<String>,
    pub payments: Vec<OrderTransaction>,
    pub refunds: Vec<OrderRefund>,
}

/// A payment of an order (`PAY…`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderTransaction {
    pub id: Option<String>,
    pub refunded: Option<Money>,
    /// The classic payment behind it, as the order wrote it.
    pub reference: Option<String>,
}

impl OrderTransaction {
    /// The classic payment (`/v1/payments/{id}`) behind this transaction.
    pub fn payment_id(&self) -> Option<PaymentId> {
        PaymentId::parse(self.reference.as_deref()?).ok()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderRefund {
    pub amount: Option<Money>,
    pub status: Option<String>,
}
