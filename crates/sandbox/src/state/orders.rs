//! What the Orders API keeps beside its orders (which are resources of
//! kind `order`): each order's version, the steps due on the sandbox's
//! clock, and the idempotency keys with the answers they got.

use rusqlite::{OptionalExtension, params};

use super::{Result, Tx};

/// Sets a new order at version 1.
pub fn start_version(tx: &Tx<'_>, order: &str) -> Result<()> {
    tx.0.execute(
        "INSERT OR REPLACE INTO order_versions (order_id, version) VALUES (?1, 1)",
        [order],
    )?;
    Ok(())
}

/// The next version; 1 for an order never seen.
pub fn bump_version(tx: &Tx<'_>, order: &str) -> Result<i64> {
    Ok(tx.0.query_row(
        "INSERT INTO order_versions (order_id, version) VALUES (?1, 1)
         ON CONFLICT (order_id) DO UPDATE SET version = version + 1
         RETURNING version",
        [order],
        |r| r.get(0),
    )?)
}

/// The order's version (1 when none was kept).
pub fn version(tx: &Tx<'_>, order: &str) -> Result<i64> {
    Ok(tx
        .0
        .query_row(
            "SELECT version FROM order_versions WHERE order_id = ?1",
            [order],
            |r| r.get(0),
        )
        .optional()?
        .unwrap_or(1))
}

/// A step of an order due at a time.
pub struct StepRow {
    pub order: String,
    pub account: String,
    pub due_at: i64,
    /// `ops::orders::steps::Step`, as text.
    pub step: String,
    /// JSON text.
    pub arg: String,
}

pub fn schedule(tx: &Tx<'_>, s: &StepRow) -> Result<()> {
    tx.0.execute(
        "INSERT INTO order_steps (order_id, account, due_at, step, arg) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![s.order, s.account, s.due_at, s.step, s.arg],
    )?;
    Ok(())
}

/// Drops the order's steps but those named `keep`.
pub fn clear_steps(tx: &Tx<'_>, order: &str, keep: Option<&str>) -> Result<()> {
    tx.0.execute(
        "DELETE FROM order_steps WHERE order_id = ?1 AND (?2 IS NULL OR step <> ?2)",
        params![order, keep],
    )?;
    Ok(())
}

/// The first step due at `now`, taken off the table.
pub fn take_due_step(tx: &Tx<'_>, now: i64) -> Result<Option<StepRow>> {
    let row =
        tx.0.query_row(
            "SELECT id, order_id, account, due_at, step, arg FROM order_steps
             WHERE due_at <= ?1 ORDER BY due_at, id LIMIT 1",
            [now],
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    StepRow {
                        order: r.get(1)?,
                        account: r.get(2)?,
                        due_at: r.get(3)?,
                        step: r.get(4)?,
                        arg: r.get(5)?,
                    },
                ))
            },
        )
        .optional()?;
    let Some((id, step)) = row else {
        return Ok(None);
    };
    tx.0.execute("DELETE FROM order_steps WHERE id = ?1", [id])?;
    Ok(Some(step))
}

/// When the next step falls due after `now`.
pub fn next_step_after(tx: &Tx<'_>, now: i64) -> Result<Option<i64>> {
    Ok(tx.0.query_row(
        "SELECT min(due_at) FROM order_steps WHERE due_at > ?1",
        [now],
        |r| r.get(0),
    )?)
}

/// What an idempotency key remembers.
pub struct KeyRow {
    /// JSON text: method, path, body.
    pub request: String,
    pub status: u16,
    pub body: String,
    pub at: i64,
}

pub fn key(tx: &Tx<'_>, account: &str, key: &str) -> Result<Option<KeyRow>> {
    Ok(tx
        .0
        .query_row(
            "SELECT request, status, body, at FROM order_keys WHERE account = ?1 AND key = ?2",
            params![account, key],
            |r| {
                Ok(KeyRow {
                    request: r.get(0)?,
                    status: r.get(1)?,
                    body: r.get(2)?,
                    at: r.get(3)?,
                })
            },
        )
        .optional()?)
}

pub fn forget_key(tx: &Tx<'_>, account: &str, key: &str) -> Result<()> {
    tx.0.execute(
        "DELETE FROM order_keys WHERE account = ?1 AND key = ?2",
        params![account, key],
    )?;
    Ok(())
}

pub fn remember_key(tx: &Tx<'_>, account: &str, key: &str, row: &KeyRow) -> Result<()> {
    tx.0.execute(
        "INSERT OR REPLACE INTO order_keys (account, key, request, status, body, at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![account, key, row.request, row.status, row.body, row.at],
    )?;
    Ok(())
}

/// Whether `account` has an order waiting on `terminal` (created, or on
/// the terminal).
pub fn terminal_busy(tx: &Tx<'_>, account: &str, terminal: &str) -> Result<bool> {
    Ok(tx.0.query_row(
        "SELECT count(*) > 0 FROM resources
         WHERE kind = 'order' AND account = ?1
           AND json_extract(body, '$.config.point.terminal_id') = ?2
           AND json_extract(body, '$.status') IN ('created', 'at_terminal')",
        params![account, terminal],
        |r| r.get(0),
    )?)
}

/// The ids of the account's orders created for `terminal` and not taken.
pub fn waiting_on(tx: &Tx<'_>, account: &str, terminal: &str) -> Result<Vec<String>> {
    Ok(tx
        .0
        .prepare(
            "SELECT id FROM resources WHERE kind = 'order' AND account = ?1
               AND json_extract(body, '$.config.point.terminal_id') = ?2
               AND json_extract(body, '$.status') = 'created'",
        )?
        .query_map(params![account, terminal], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?)
}
