//! The states and kinds that are stored or acted on. Every stored one is a
//! `#[repr(i16)]` enum, written as its number; names come from `strum`, so
//! the text a person reads and the text a query accepts never drift apart.

use strum::{EnumIter, EnumString, IntoStaticStr};

/// Implements `as_str` (the snake_case name) and `parse` (its inverse).
macro_rules! named {
    ($($ty:ident),+) => {$(
        impl $ty {
            pub fn as_str(self) -> &'static str {
                self.into()
            }

            pub fn parse(s: &str) -> Option<$ty> {
                s.parse().ok()
            }

            pub fn all() -> impl Iterator<Item = $ty> {
                <$ty as strum::IntoEnumIterator>::iter()
            }
        }
    )+};
}

/// How a notification reached us.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, IntoStaticStr, EnumString, EnumIter)]
#[strum(serialize_all = "snake_case")]
#[repr(i16)]
pub enum Kind {
    /// `?topic=…&id=…` (or a `{"topic","resource"}` body).
    Ipn = 1,
    /// `?type=…&data.id=…` and/or a `{"type","data":{"id"}}` body.
    Webhook = 2,
    /// A payment-intent body: `{"id","state",…}`.
    IntentWebhook = 3,
    /// Not received: found changed on the platform by reconciliation,
    /// with no notification for the change.
    Reconcile = 4,
}

/// What a job does; the worker has one handler per kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, IntoStaticStr, EnumString, EnumIter)]
#[strum(serialize_all = "snake_case")]
#[repr(i16)]
pub enum JobKind {
    /// Fetch a payment, then its merchant order.
    Payment = 1,
    MerchantOrder = 2,
    Chargeback = 3,
    /// Fetch a payment intent (IPN, webhook or intent body alike).
    PaymentIntent = 4,
    /// Verify and act on a fraud alert.
    FraudAlert = 5,
    /// Fetch an order of the Orders API (`ORD…`).
    PlatformOrder = 6,
}

/// The state of a payment intent as the API reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, IntoStaticStr, EnumString, EnumIter)]
#[strum(serialize_all = "SCREAMING_SNAKE_CASE")]
pub enum IntentState {
    Open,
    OnTerminal,
    Processing,
    Processed,
    Finished,
    ConfirmationRequired,
    Canceled,
    Error,
    Abandoned,
}

impl IntentState {
    /// A final state never changes again; the others are still moving.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            IntentState::Finished
                | IntentState::ConfirmationRequired
                | IntentState::Canceled
                | IntentState::Error
                | IntentState::Abandoned
        )
    }
}

/// What the `x-signature` check said about a delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, IntoStaticStr, EnumString, EnumIter)]
#[strum(serialize_all = "snake_case")]
#[repr(i16)]
pub enum SignatureStatus {
    /// The account has no secret, or the request is an IPN (which the
    /// platform cannot sign).
    NotChecked = 0,
    /// Valid, over a manifest that names the resource (`data.id`).
    Valid = 1,
    /// Failed: only ever stored for fraud alerts, which are kept, not refused.
    Invalid = 2,
    /// No signature, accepted because the account does not require one (or
    /// a payment-intent body, which is only a pointer).
    Unsigned = 3,
    /// Valid, but the manifest names no resource: it authenticates nothing.
    /// Written by earlier versions only: a signature with no `data.id` to
    /// bind is now treated as no signature at all.
    ValidUnbound = 4,
}

/// Where a job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, IntoStaticStr, EnumString, EnumIter)]
#[strum(serialize_all = "snake_case")]
#[repr(i16)]
pub enum JobState {
    Pending = 0,
    Running = 1,
    Done = 2,
    Dead = 3,
}

/// Which queue a pending job waits in: a notification
/// that just arrived is worked before the backlog, newest first; the
/// backlog (retries, reconciliation, a run interrupted) keeps a bounded
/// share, oldest first, so nothing starves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, IntoStaticStr, EnumString, EnumIter)]
#[strum(serialize_all = "snake_case")]
#[repr(i16)]
pub enum Lane {
    /// A notification's first attempt (or the first after it came again).
    Live = 0,
    Backlog = 1,
}

/// Where an outbound event is: an event as a whole (`events`), or its
/// queue row at one destination (`outbox`). An event is `pending` while
/// any destination still waits for it, then `delivered`, or `dead` when
/// one gave it up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, IntoStaticStr, EnumString, EnumIter)]
#[strum(serialize_all = "snake_case")]
#[repr(i16)]
pub enum EventState {
    /// Waiting for (another) delivery attempt.
    Pending = 0,
    /// The endpoint answered 2xx (every destination's, for an event).
    Delivered = 1,
    /// Given up after `give_up_after_hours`.
    Dead = 2,
    /// No destination takes it: kept for the CLI and the admin API only.
    Stored = 3,
    /// Its destination is disabled: it waits, unsent, for a person to
    /// recover it (queue rows only).
    Paused = 4,
}

/// Whether a destination is sent its events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, IntoStaticStr, EnumString, EnumIter)]
#[strum(serialize_all = "snake_case")]
#[repr(i16)]
pub enum DestinationState {
    Enabled = 0,
    /// By a person, a `410 Gone`, or failing every attempt for
    /// `disable_after_hours`: its events wait as `paused`.
    Disabled = 1,
}

/// A person's review of a fraud alert that could not be trusted on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, IntoStaticStr, EnumString, EnumIter)]
#[strum(serialize_all = "snake_case")]
#[repr(i16)]
pub enum Review {
    /// The order is blocked; nothing was cancelled or refunded.
    Held = 1,
    /// A person confirmed it: the cancel or refund runs.
    Confirmed = 2,
    /// A person dismissed it: the order is unblocked.
    Dismissed = 3,
    /// The API did not confirm what it names: nothing blocked, nothing
    /// told; kept for a person to see.
    Rejected = 4,
}

impl Review {
    /// Decided: a later alert for the same key opens a new review.
    pub fn is_decided(self) -> bool {
        !matches!(self, Review::Held)
    }
}

/// Where a hold stands: waiting for a person, or decided (approved,
/// rejected), or given up on (expired).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, IntoStaticStr, EnumString, EnumIter)]
#[strum(serialize_all = "snake_case")]
#[repr(i16)]
pub enum HoldState {
    Held = 1,
    Approved = 2,
    Rejected = 3,
    Expired = 4,
}

/// What an account does with a fraud alert that is not authenticated (an
/// IPN, unsigned, or badly signed), once verified against the API.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Hash,
    IntoStaticStr,
    EnumString,
    EnumIter,
    serde::Serialize,
    serde::Deserialize,
)]
#[strum(serialize_all = "snake_case")]
#[serde(rename_all = "snake_case")]
pub enum UnauthenticatedAlerts {
    /// Block the order and undo the payment without a person: an explicit
    /// opt-in, warned about at start-up.
    Act,
    /// Block the order, move no money, and wait for a person.
    #[default]
    Hold,
}

use super::audit::{Action, AuditOutcome, Via};

named!(
    Via,
    Action,
    AuditOutcome,
    UnauthenticatedAlerts,
    Kind,
    JobKind,
    IntentState,
    SignatureStatus,
    JobState,
    Lane,
    EventState,
    DestinationState,
    Review,
    HoldState
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for k in JobState::all() {
            assert_eq!(JobState::parse(k.as_str()), Some(k));
        }
        assert_eq!(Kind::IntentWebhook.as_str(), "intent_webhook");
        assert_eq!(
            IntentState::parse("CONFIRMATION_REQUIRED"),
            Some(IntentState::ConfirmationRequired)
        );
        assert_eq!(IntentState::OnTerminal.as_str(), "ON_TERMINAL");
        assert_eq!(IntentState::parse("finished"), None);
        assert!(IntentState::Abandoned.is_final());
        assert!(!IntentState::Processed.is_final());
    }
}
