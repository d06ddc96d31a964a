//! Queuing a notification: a dropped one is logged and never sent (the
//! platform's loss, on demand), the others are queued for their first
//! attempt now, with whatever the account's quirks do to them.

use super::quirk_effects;
use crate::model::{DispatchState, Outgoing};
use crate::state::{Result, Tx, dispatches};

/// Queues `out` for its first attempt at `now`; its dispatch id.
pub fn enqueue(tx: &Tx<'_>, account: &str, out: &Outgoing, now: i64) -> Result<i64> {
    let state = if dispatches::take_drop(tx, &out.topic)? {
        DispatchState::Dropped
    } else {
        DispatchState::Pending
    };
    let q = quirk_effects::effective(tx, account)?;
    let mut out = out.clone();
    if state == DispatchState::Pending {
        quirk_effects::before_queue(tx, &q, &mut out, now)?;
    }
    let id = dispatches::insert(tx, account, &out, now, state)?;
    if state == DispatchState::Pending {
        quirk_effects::after_queue(tx, &q, account, id, &out, now)?;
    }
    Ok(id)
}
