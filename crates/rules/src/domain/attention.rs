//! What needs a person, as facts read from the store and the process,
//! and the incidents that tell of them: `rules::alerts`
//! turns the one into the other; the alerter sends and records what it says.

use strum::{EnumIter, EnumString, IntoStaticStr};

/// Each kind of alert a person can be told of; stored as its number.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, IntoStaticStr, EnumString, EnumIter,
)]
#[strum(serialize_all = "snake_case")]
#[repr(i16)]
pub enum AlertKind {
    FraudReviewHeld = 1,
    ReleasedBeforeFraudAlert = 2,
    OrderAtRisk = 3,
    DeadJobs = 4,
    DestinationFailing = 5,
    EventsWaiting = 6,
    MissedNotifications = 7,
    PlatformSilent = 8,
    StorageNotReady = 9,
    /// A hold of any kind waits for a person (`rules::holds`); its text
    /// names the kind.
    Held = 10,
}

impl AlertKind {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    pub fn parse(s: &str) -> Option<AlertKind> {
        s.parse().ok()
    }

    pub fn all() -> impl Iterator<Item = AlertKind> {
        <AlertKind as strum::IntoEnumIterator>::iter()
    }

    /// Money or goods are at stake now.
    pub fn severity(self) -> Severity {
        match self {
            AlertKind::FraudReviewHeld
            | AlertKind::ReleasedBeforeFraudAlert
            | AlertKind::OrderAtRisk
            | AlertKind::StorageNotReady
            | AlertKind::Held => Severity::Critical,
            _ => Severity::Warning,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum Severity {
    Critical,
    Warning,
    /// A resolution.
    Info,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// One thing that needs a person, as it stands now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attention {
    pub kind: AlertKind,
    /// Stable while the thing stands (`review:12`, `job:7`, `destination:erp`).
    pub key: String,
    /// One line for a person, with the evidence ("refund 480.00 of payment
    /// 123 if confirmed").
    pub text: String,
    /// The console path that shows it (`/fraud-reviews/12`).
    pub path: String,
}

/// An incident told of (open) and not yet told resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incident {
    pub kind: AlertKind,
    pub key: String,
    pub text: String,
    pub path: String,
    /// Unix ms.
    pub opened_at: i64,
    /// When its opening was sent (`None`: waiting in a digest).
    pub notified_at: Option<i64>,
}

/// A message for every channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub kind: AlertKind,
    pub severity: Severity,
    pub text: String,
    /// The console path of the message's items (a list when several).
    pub path: String,
    pub items: Vec<String>,
    /// The incidents it opens (to mark notified) or resolves.
    pub keys: Vec<String>,
    pub resolved: bool,
}
