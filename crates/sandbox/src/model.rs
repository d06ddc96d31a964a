//! The sandbox's own vocabulary, below every layer: the states it stores
//! as enums (`#[repr(i16)]`, stored as their number by `state`), an
//! account as a request sees it, a notification ready to queue, and the
//! delivery log as `GET /sandbox/deliveries` shows it.

use serde::Serialize;

/// Where a dispatch is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i16)]
pub enum DispatchState {
    /// Waiting for its next attempt (`next_due_at`).
    Pending = 0,
    /// An attempt is in flight.
    Sending = 1,
    /// Answered 200 or 201.
    Acked = 2,
    /// Every attempt of the schedule failed.
    GivenUp = 3,
    /// Never sent: a `drop_notifications` fault took it.
    Dropped = 4,
}

impl DispatchState {
    pub fn as_str(self) -> &'static str {
        match self {
            DispatchState::Pending => "pending",
            DispatchState::Sending => "sending",
            DispatchState::Acked => "acked",
            DispatchState::GivenUp => "given_up",
            DispatchState::Dropped => "dropped",
        }
    }
}

/// The shape a dispatch was sent in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i16)]
pub enum Form {
    Ipn = 1,
    Webhook = 2,
    IntentWebhook = 3,
}

impl Form {
    pub fn as_str(self) -> &'static str {
        match self {
            Form::Ipn => "ipn",
            Form::Webhook => "webhook",
            Form::IntentWebhook => "intent_webhook",
        }
    }
}

/// Where a device e-mail is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i16)]
pub enum MailState {
    Pending = 0,
    Sent = 1,
    /// Raised before the e-mails started: never sent.
    Skipped = 2,
}

/// The state an emulated terminal moves its intent to next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i16)]
pub enum TerminalStep {
    OnTerminal = 1,
    Processing = 2,
    Final = 3,
}

impl TerminalStep {
    /// The state the intent must be in for this step to happen.
    pub fn requires(self) -> &'static str {
        match self {
            TerminalStep::OnTerminal => "OPEN",
            TerminalStep::Processing => "ON_TERMINAL",
            TerminalStep::Final => "PROCESSING",
        }
    }
}

/// The final states of a payment intent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i16)]
pub enum FinalState {
    Finished = 1,
    ConfirmationRequired = 2,
    Canceled = 3,
    Error = 4,
    Abandoned = 5,
}

impl FinalState {
    pub const NAMES: &'static str = "FINISHED, CONFIRMATION_REQUIRED, CANCELED, ERROR or ABANDONED";

    pub fn parse(s: &str) -> Option<FinalState> {
        Some(match s {
            "FINISHED" => FinalState::Finished,
            "CONFIRMATION_REQUIRED" => FinalState::ConfirmationRequired,
            "CANCELED" => FinalState::Canceled,
            "ERROR" => FinalState::Error,
            "ABANDONED" => FinalState::Abandoned,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            FinalState::Finished => "FINISHED",
            FinalState::ConfirmationRequired => "CONFIRMATION_REQUIRED",
            FinalState::Canceled => "CANCELED",
            FinalState::Error => "ERROR",
            FinalState::Abandoned => "ABANDONED",
        }
    }

    /// Whether the terminal charged a card on the way (a payment exists).
    pub fn with_payment(self) -> bool {
        matches!(
            self,
            FinalState::Finished | FinalState::ConfirmationRequired
        )
    }
}

/// One account of the emulated platform, as a request sees it.
#[derive(Debug, Clone)]
pub struct AccountRow {
    pub name: String,
    pub notification_url: Option<String>,
    pub webhook_url: Option<String>,
    pub webhook_secret: Option<String>,
    pub groups: Vec<String>,
}

impl AccountRow {
    pub fn wants(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }

    /// A stable, platform-like user id for webhook bodies.
    pub fn user_id(&self) -> i64 {
        100_000_000
            + self
                .name
                .bytes()
                .fold(0i64, |h, b| (h * 31 + b as i64) % 900_000_000)
    }
}

/// A notification ready to queue: where, what, and how.
#[derive(Debug, Clone)]
pub struct Outgoing {
    pub url: String,
    pub form: Form,
    pub topic: String,
    pub resource_id: String,
    pub body: OutBody,
    pub headers: Vec<(String, String)>,
}

/// What a notification carries: the JSON the platform writes, or bytes
/// sent exactly as given (a notification replayed from a record).
#[derive(Debug, Clone)]
pub enum OutBody {
    Json(serde_json::Value),
    Raw(String),
}

/// The bytes sent.
impl std::fmt::Display for OutBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OutBody::Json(v) => write!(f, "{v}"),
            OutBody::Raw(s) => f.write_str(s),
        }
    }
}

/// One dispatch of the delivery log, with its attempts.
#[derive(Debug, Clone, Serialize)]
pub struct LogEntry {
    pub id: i64,
    pub account: String,
    pub url: String,
    pub form: &'static str,
    pub topic: String,
    pub resource_id: String,
    pub state: &'static str,
    pub first_at: String,
    pub next_attempt_at: Option<String>,
    pub attempts: Vec<AttemptEntry>,
}

#[derive(Debug, Clone, Serialize)]
pub struct AttemptEntry {
    pub n: u32,
    pub at: String,
    /// `None`: no answer within the window.
    pub status: Option<u16>,
    pub acked: bool,
    pub latency_ms: i64,
    pub error: Option<String>,
}
