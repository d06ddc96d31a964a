//! Point devices (each account's, with its operating mode), the outcome
//! preset on each, and the steps their emulated terminals take.

use rusqlite::{OptionalExtension, params};

use super::{Result, Tx};
use crate::model::{FinalState, TerminalStep};

/// Adds a device in PDV mode; one the account has already stays as it is.
pub fn add(tx: &Tx<'_>, account: &str, device: &str) -> Result<()> {
    tx.0.execute(
        "INSERT OR IGNORE INTO devices (account, device_id, mode) VALUES (?1, ?2, 'PDV')",
        params![account, device],
    )?;
    Ok(())
}

/// The device's operating mode; `None` when it is not the account's.
pub fn mode(tx: &Tx<'_>, account: &str, device: &str) -> Result<Option<String>> {
    Ok(tx
        .0
        .query_row(
            "SELECT mode FROM devices WHERE account = ?1 AND device_id = ?2",
            params![account, device],
            |r| r.get(0),
        )
        .optional()?)
}

pub fn set_mode(tx: &Tx<'_>, account: &str, device: &str, mode: &str) -> Result<()> {
    tx.0.execute(
        "UPDATE devices SET mode = ?3 WHERE account = ?1 AND device_id = ?2",
        params![account, device, mode],
    )?;
    Ok(())
}

/// The account's devices and their modes, in the order they were added.
pub fn list(tx: &Tx<'_>, account: &str) -> Result<Vec<(String, String)>> {
    Ok(tx
        .0
        .prepare("SELECT device_id, mode FROM devices WHERE account = ?1 ORDER BY rowid")?
        .query_map([account], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?)
}

/// How the device's terminal ends the intents it takes from now on.
pub fn set_preset(
    tx: &Tx<'_>,
    account: &str,
    device: &str,
    state: FinalState,
    payment_status: Option<&str>,
) -> Result<()> {
    tx.0.execute(
        "INSERT INTO device_presets (account, device_id, outcome, payment_status)
         VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (account, device_id) DO UPDATE SET outcome = excluded.outcome,
             payment_status = excluded.payment_status",
        params![account, device, state, payment_status],
    )?;
    Ok(())
}

pub fn clear_preset(tx: &Tx<'_>, account: &str, device: &str) -> Result<()> {
    tx.0.execute(
        "DELETE FROM device_presets WHERE account = ?1 AND device_id = ?2",
        params![account, device],
    )?;
    Ok(())
}

pub fn preset(
    tx: &Tx<'_>,
    account: &str,
    device: &str,
) -> Result<Option<(FinalState, Option<String>)>> {
    Ok(tx
        .0
        .query_row(
            "SELECT outcome, payment_status FROM device_presets WHERE account = ?1 AND device_id = ?2",
            params![account, device],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?)
}

/// A terminal step waiting for its time.
pub struct Step {
    pub intent: String,
    pub account: String,
    pub device: String,
    pub next: TerminalStep,
    pub due_at: i64,
    pub outcome: FinalState,
    pub payment_status: Option<String>,
}

/// Whether the device's terminal has an intent queued.
pub fn busy(tx: &Tx<'_>, account: &str, device: &str) -> Result<bool> {
    Ok(tx.0.query_row(
        "SELECT count(*) > 0 FROM terminal_steps WHERE account = ?1 AND device_id = ?2",
        params![account, device],
        |r| r.get(0),
    )?)
}

pub fn add_step(tx: &Tx<'_>, s: &Step) -> Result<()> {
    tx.0.execute(
        "INSERT INTO terminal_steps (intent_id, account, device_id, next, due_at, outcome, payment_status)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            s.intent,
            s.account,
            s.device,
            s.next,
            s.due_at,
            s.outcome,
            s.payment_status
        ],
    )?;
    Ok(())
}

/// The steps due at `now`, in order of due time.
pub fn due_steps(tx: &Tx<'_>, now: i64) -> Result<Vec<Step>> {
    Ok(tx
        .0
        .prepare(
            "SELECT intent_id, account, device_id, next, due_at, outcome, payment_status
             FROM terminal_steps WHERE due_at <= ?1 ORDER BY due_at, intent_id",
        )?
        .query_map([now], |r| {
            Ok(Step {
                intent: r.get(0)?,
                account: r.get(1)?,
                device: r.get(2)?,
                next: r.get(3)?,
                due_at: r.get(4)?,
                outcome: r.get(5)?,
                payment_status: r.get(6)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?)
}

pub fn set_step(tx: &Tx<'_>, intent: &str, next: TerminalStep, due_at: i64) -> Result<()> {
    tx.0.execute(
        "UPDATE terminal_steps SET next = ?2, due_at = ?3 WHERE intent_id = ?1",
        params![intent, next, due_at],
    )?;
    Ok(())
}

pub fn drop_step(tx: &Tx<'_>, intent: &str) -> Result<()> {
    tx.0.execute("DELETE FROM terminal_steps WHERE intent_id = ?1", [intent])?;
    Ok(())
}

/// When the next terminal step falls due (after `after`, when given).
pub fn next_step_at(tx: &Tx<'_>, after: Option<i64>) -> Result<Option<i64>> {
    Ok(tx.0.query_row(
        "SELECT min(due_at) FROM terminal_steps WHERE ?1 IS NULL OR due_at > ?1",
        [after],
        |r| r.get(0),
    )?)
}
