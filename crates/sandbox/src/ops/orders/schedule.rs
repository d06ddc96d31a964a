//! The steps an order waits for on the sandbox's clock, and how one is
//! scheduled or dropped: a terminal takes an order, reaches its outcome,
//! confirms a cancel; an order expires. `steps` runs them when due.

use std::time::Duration;

use serde_json::Value;

use super::Ctx;
use crate::state::orders::{self as stored, StepRow};
use crate::state::{StateError, Tx};

/// A terminal in PDV mode shows a new order after this.
pub(super) const TERMINAL_PICKUP: Duration = Duration::from_secs(5);
/// The buyer pays (or the payment fails, or is cancelled) this long
/// after the order reaches the terminal.
pub(super) const TERMINAL_PAYMENT: Duration = Duration::from_secs(20);
/// With no result, the platform says `action_required` 40 s after
/// processing started (orders-api.md §2.3).
pub(super) const ACTION_REQUIRED_AFTER: Duration = Duration::from_secs(40);
/// A terminal confirms a cancel requested through the API (the 202).
pub(super) const CANCEL_CONFIRM: Duration = Duration::from_secs(5);

/// The steps the sandbox runs at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// The terminal takes the order (`arg.force`: the simulator's, whatever
    /// the terminal's mode and with no outcome of the terminal's own).
    Pickup,
    /// A final status (`arg.status`, and what the simulator named).
    Outcome,
    CancelConfirm,
    Expire,
}

impl Step {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Step::Pickup => "pickup",
            Step::Outcome => "outcome",
            Step::CancelConfirm => "cancel_confirm",
            Step::Expire => "expire",
        }
    }

    pub(super) fn parse(s: &str) -> Option<Step> {
        [
            Step::Pickup,
            Step::Outcome,
            Step::CancelConfirm,
            Step::Expire,
        ]
        .into_iter()
        .find(|x| x.as_str() == s)
    }
}

pub(super) fn schedule(
    tx: &Tx<'_>,
    ctx: &Ctx,
    order_id: &str,
    due_at: i64,
    step: Step,
    arg: &Value,
) -> Result<(), StateError> {
    stored::schedule(
        tx,
        &StepRow {
            order: order_id.to_string(),
            account: ctx.account.name.clone(),
            due_at,
            step: step.as_str().to_string(),
            arg: arg.to_string(),
        },
    )
}

/// Drops what the terminal was going to do with the order (its expiry
/// stays).
pub(super) fn clear_terminal(tx: &Tx<'_>, order_id: &str) -> Result<(), StateError> {
    stored::clear_steps(tx, order_id, Some(Step::Expire.as_str()))
}

pub(super) fn clear(tx: &Tx<'_>, order_id: &str) -> Result<(), StateError> {
    stored::clear_steps(tx, order_id, None)
}
