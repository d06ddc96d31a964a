//! What the audit records of an action a person (or the admin API) took:
//! through what it came, what it was, and how it ended. Stored as
//! `#[repr(i16)]` numbers, named through `strum` like the states (whose
//! `named!` gives them `as_str`, `parse` and `all`).

use strum::{EnumIter, EnumString, IntoStaticStr};

/// Where an action came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, IntoStaticStr, EnumString, EnumIter)]
#[strum(serialize_all = "snake_case")]
#[repr(i16)]
pub enum Via {
    /// A signed-in operator, in the browser.
    Console = 1,
    /// The command line, as an OS user.
    Cli = 2,
    /// The admin API, with the admin token.
    Api = 3,
    /// pointhook itself, telling a person (`[[alerts]]`).
    Alerts = 4,
}

/// What was done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, IntoStaticStr, EnumString, EnumIter)]
#[strum(serialize_all = "snake_case")]
#[repr(i16)]
pub enum Action {
    /// A held fraud review confirmed: its payment is cancelled or refunded.
    Confirm = 1,
    /// A held fraud review dismissed: its block is lifted.
    Dismiss = 2,
    /// A dead job runs again.
    Retry = 3,
    /// An event is sent again, with the same id.
    Redeliver = 4,
    /// An item seen and dealt with (a missed notification, an order at
    /// risk or released before a fraud alert).
    Acknowledge = 5,
    /// A destination enabled again (with `[[destinations]]`).
    Enable = 6,
    /// A destination's failed events sent again since a time.
    Recover = 7,
    /// A message sent to a channel of `[[alerts]]`.
    Alert = 8,
    /// A destination disabled by a person: its events wait, paused.
    Disable = 9,
    /// An order of the Orders API cancelled at the platform.
    CancelOrder = 10,
    /// An order of the Orders API refunded at the platform, in full or in
    /// part.
    RefundOrder = 11,
    /// A hold approved: what waited on it goes ahead.
    Approve = 12,
    /// A hold rejected: what waited on it does not happen.
    Reject = 13,
}

/// How an action ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, IntoStaticStr, EnumString, EnumIter)]
#[strum(serialize_all = "snake_case")]
#[repr(i16)]
pub enum AuditOutcome {
    /// Recorded before it runs; stays so only if the process stopped
    /// in between.
    Started = 0,
    Done = 1,
    /// Not done: the item does not exist or is not in a state to allow it.
    Refused = 2,
    /// Storage failed while doing it (for an alert: the channel did).
    Failed = 3,
    /// Perhaps done: the platform gave no clear answer.
    Unknown = 4,
}

// `as_str`, `parse` and `all` come from `states`' `named!`, as for the states.

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for a in Action::all() {
            assert_eq!(Action::parse(a.as_str()), Some(a));
        }
        assert_eq!(Via::Cli.as_str(), "cli");
        assert_eq!(AuditOutcome::Refused.as_str(), "refused");
    }
}
