//! Domain types shared by every part: typed ids, the kinds of notification,
//! the work a notification asks for, and the states stored for them.
//!
//! Every state that is stored is a `#[repr(i16)]` enum, written to SQLite as
//! its number (see `store::sql_enum`).

use std::fmt;

/// An id the platform gave a resource (payment, merchant order, intent …).
///
/// Opaque at ingest: 1 to 128 printable ASCII characters, no spaces.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResourceId(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    #[error("is empty")]
    Empty,
    #[error("is longer than 128 characters")]
    TooLong,
    #[error("has a character that is not printable ASCII (or is a space)")]
    BadCharacter,
}

impl ResourceId {
    pub const MAX_LEN: usize = 128;

    pub fn parse(s: &str) -> Result<ResourceId, IdError> {
        if s.is_empty() {
            return Err(IdError::Empty);
        }
        if s.len() > Self::MAX_LEN {
            return Err(IdError::TooLong);
        }
        if !s.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(IdError::BadCharacter);
        }
        Ok(ResourceId(s.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ResourceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// How a notification was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i16)]
pub enum Kind {
    /// `?topic=…&id=…`
    Ipn = 1,
    /// `?type=…&data.id=…` and/or a `{"type","data":{"id"}}` body.
    Webhook = 2,
    /// A payment-intent body: `{"id","state",…}`.
    IntentWebhook = 3,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Ipn => "ipn",
            Kind::Webhook => "webhook",
            Kind::IntentWebhook => "intent_webhook",
        }
    }
}

/// What a job does; the worker has one handler per kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i16)]
pub enum JobKind {
    /// Fetch a payment, then its merchant order.
    Payment = 1,
    MerchantOrder = 2,
    Chargeback = 3,
    /// Fetch a payment intent (`point_integration_*`).
    PaymentIntent = 4,
    /// A fraud alert: its input is the delivery's body.
    FraudAlert = 5,
    /// A payment-intent webhook body: its input is the delivery's body.
    IntentBody = 6,
}

impl JobKind {
    pub fn as_str(self) -> &'static str {
        match self {
            JobKind::Payment => "payment",
            JobKind::MerchantOrder => "merchant_order",
            JobKind::Chargeback => "chargeback",
            JobKind::PaymentIntent => "payment_intent",
            JobKind::FraudAlert => "fraud_alert",
            JobKind::IntentBody => "intent_body",
        }
    }
}

/// The state of a payment intent as the platform reports it. Only the final
/// states are work for us; the others are recorded and ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i16)]
pub enum IntentState {
    Finished = 1,
    ConfirmationRequired = 2,
    Canceled = 3,
    Error = 4,
}

impl IntentState {
    pub fn parse(s: &str) -> Option<IntentState> {
        match s {
            "FINISHED" => Some(IntentState::Finished),
            "CONFIRMATION_REQUIRED" => Some(IntentState::ConfirmationRequired),
            "CANCELED" => Some(IntentState::Canceled),
            "ERROR" => Some(IntentState::Error),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            IntentState::Finished => "FINISHED",
            IntentState::ConfirmationRequired => "CONFIRMATION_REQUIRED",
            IntentState::Canceled => "CANCELED",
            IntentState::Error => "ERROR",
        }
    }
}

/// What the `x-signature` check said about a delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i16)]
pub enum SignatureStatus {
    /// The account has no `webhook_secret`, or the request is an IPN (which
    /// the platform does not sign).
    NotChecked = 0,
    Valid = 1,
    /// Failed: only ever stored for fraud alerts, which are kept, not refused.
    Invalid = 2,
}

/// Where a job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i16)]
pub enum JobState {
    Pending = 0,
    Running = 1,
    Done = 2,
    Dead = 3,
}

impl JobState {
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Pending => "pending",
            JobState::Running => "running",
            JobState::Done => "done",
            JobState::Dead => "dead",
        }
    }
}

/// Where an outbound event is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i16)]
pub enum EventState {
    /// Waiting for (another) delivery attempt.
    Pending = 0,
    /// The merchant's endpoint answered 2xx.
    Delivered = 1,
    /// Given up after `fulfillment.give_up_after_hours`.
    Dead = 2,
    /// No `[fulfillment] url`: kept for the CLI and the admin API only.
    Stored = 3,
}

impl EventState {
    pub fn as_str(self) -> &'static str {
        match self {
            EventState::Pending => "pending",
            EventState::Delivered => "delivered",
            EventState::Dead => "dead",
            EventState::Stored => "stored",
        }
    }
}

/// The work a notification asks for, which is also what makes its job key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Work {
    /// Fetch the named resource and decide from what the API says.
    Fetch { kind: JobKind, id: ResourceId },
    /// Verify and act on a fraud alert. The merchant order can be missing from
    /// a malformed alert; the job then records it as rejected.
    FraudAlert {
        merchant_order: Option<ResourceId>,
        payment: ResourceId,
    },
    /// Decide from a payment-intent webhook body.
    IntentBody {
        intent: ResourceId,
        state: IntentState,
    },
}

impl Work {
    pub fn job_kind(&self) -> JobKind {
        match self {
            Work::Fetch { kind, .. } => *kind,
            Work::FraudAlert { .. } => JobKind::FraudAlert,
            Work::IntentBody { .. } => JobKind::IntentBody,
        }
    }

    /// The coalescing key within an account (DESIGN section 3).
    pub fn job_key(&self) -> String {
        match self {
            Work::Fetch { kind, id } => format!("{}:{id}", kind.as_str()),
            Work::FraudAlert {
                merchant_order,
                payment,
            } => {
                let order = merchant_order.as_ref().map_or("-", |o| o.as_str());
                format!("fraud:{order}:{payment}")
            }
            Work::IntentBody { intent, state } => format!("intent:{intent}:{}", state.as_str()),
        }
    }

    /// The resource the job is about (the payment for a fraud alert).
    pub fn resource_id(&self) -> &ResourceId {
        match self {
            Work::Fetch { id, .. } => id,
            Work::FraudAlert { payment, .. } => payment,
            Work::IntentBody { intent, .. } => intent,
        }
    }

    /// Whether the job reads its input from the delivery body.
    pub fn uses_body(&self) -> bool {
        !matches!(self, Work::Fetch { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_ids_are_opaque_printable_ascii() {
        assert!(ResourceId::parse("123").is_ok());
        assert!(ResourceId::parse("ORD01JQ4S4KY8HWQ6NA5PXB65B3D3").is_ok());
        assert!(ResourceId::parse("7f25f9aa-eea6-4f9c-bf16-a341f71ba2f1").is_ok());
        assert_eq!(ResourceId::parse(""), Err(IdError::Empty));
        assert_eq!(ResourceId::parse("a b"), Err(IdError::BadCharacter));
        assert_eq!(ResourceId::parse("a\nb"), Err(IdError::BadCharacter));
        assert_eq!(ResourceId::parse("é"), Err(IdError::BadCharacter));
        assert!(ResourceId::parse(&"x".repeat(128)).is_ok());
        assert_eq!(ResourceId::parse(&"x".repeat(129)), Err(IdError::TooLong));
    }

    #[test]
    fn job_keys_follow_the_design() {
        let id = |s| ResourceId::parse(s).unwrap();
        let w = Work::Fetch {
            kind: JobKind::MerchantOrder,
            id: id("9"),
        };
        assert_eq!(w.job_key(), "merchant_order:9");
        let w = Work::FraudAlert {
            merchant_order: Some(id("1")),
            payment: id("2"),
        };
        assert_eq!(w.job_key(), "fraud:1:2");
        let w = Work::IntentBody {
            intent: id("i"),
            state: IntentState::Canceled,
        };
        assert_eq!(w.job_key(), "intent:i:CANCELED");
    }
}
