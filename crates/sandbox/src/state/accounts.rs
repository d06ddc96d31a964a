//! Accounts (who a token is, where their notifications go), their named
//! presets, and their integrator settings.

use rusqlite::{OptionalExtension, params};

use super::{Result, Tx};
use crate::model::AccountRow;

/// An account as the settings give it, to store.
pub struct NewAccount<'a> {
    pub name: &'a str,
    pub token: &'a str,
    pub notification_url: Option<&'a str>,
    pub webhook_url: Option<&'a str>,
    pub webhook_secret: Option<&'a str>,
    pub email: Option<&'a str>,
    /// JSON list of event groups.
    pub groups: &'a str,
}

const COLUMNS: &str = "name, notification_url, webhook_url, webhook_secret, groups";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<AccountRow> {
    let groups: String = r.get(4)?;
    Ok(AccountRow {
        name: r.get(0)?,
        notification_url: r.get(1)?,
        webhook_url: r.get(2)?,
        webhook_secret: r.get(3)?,
        groups: serde_json::from_str(&groups).unwrap_or_default(),
    })
}

/// Stores `a`, or replaces what a restart with a state file had of it.
pub fn upsert(tx: &Tx<'_>, a: &NewAccount<'_>) -> Result<()> {
    tx.0.execute(
        "INSERT INTO accounts (name, token, notification_url, webhook_url, webhook_secret, email, groups)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT (name) DO UPDATE SET token = excluded.token,
             notification_url = excluded.notification_url, webhook_url = excluded.webhook_url,
             webhook_secret = excluded.webhook_secret, email = excluded.email, groups = excluded.groups",
        params![
            a.name,
            a.token,
            a.notification_url,
            a.webhook_url,
            a.webhook_secret,
            a.email,
            a.groups
        ],
    )?;
    Ok(())
}

/// The account whose token this is.
pub fn by_token(tx: &Tx<'_>, token: &str) -> Result<Option<AccountRow>> {
    Ok(tx
        .0
        .query_row(
            &format!("SELECT {COLUMNS} FROM accounts WHERE token = ?1"),
            [token],
            row,
        )
        .optional()?)
}

/// The account called `name`.
pub fn by_name(tx: &Tx<'_>, name: &str) -> Result<Option<AccountRow>> {
    Ok(tx
        .0
        .query_row(
            &format!("SELECT {COLUMNS} FROM accounts WHERE name = ?1"),
            [name],
            row,
        )
        .optional()?)
}

/// Every account's name, in order.
pub fn names(tx: &Tx<'_>) -> Result<Vec<String>> {
    Ok(tx
        .0
        .prepare("SELECT name FROM accounts ORDER BY name")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?)
}

/// The account's webhook secret (to sign a copy anew).
pub fn secret(tx: &Tx<'_>, name: &str) -> Result<Option<String>> {
    Ok(tx
        .0
        .query_row(
            "SELECT webhook_secret FROM accounts WHERE name = ?1",
            [name],
            |r| r.get(0),
        )
        .optional()?
        .flatten())
}

/// The integrator settings as stored (JSON text; `{}` until first used).
pub fn integrator(tx: &Tx<'_>, name: &str) -> Result<String> {
    Ok(tx.0.query_row(
        "SELECT integrator FROM accounts WHERE name = ?1",
        [name],
        |r| r.get(0),
    )?)
}

pub fn set_integrator(tx: &Tx<'_>, name: &str, json: &str) -> Result<()> {
    tx.0.execute(
        "UPDATE accounts SET integrator = ?2 WHERE name = ?1",
        params![name, json],
    )?;
    Ok(())
}

/// A named preset of the account (the next payment's status, a
/// terminal's outcome …), set or replaced.
pub fn set_preset(tx: &Tx<'_>, account: &str, name: &str, value: &str) -> Result<()> {
    tx.0.execute(
        "INSERT INTO presets (account, name, value) VALUES (?1, ?2, ?3)
         ON CONFLICT (account, name) DO UPDATE SET value = excluded.value",
        params![account, name, value],
    )?;
    Ok(())
}

pub fn preset(tx: &Tx<'_>, account: &str, name: &str) -> Result<Option<String>> {
    Ok(tx
        .0
        .query_row(
            "SELECT value FROM presets WHERE account = ?1 AND name = ?2",
            params![account, name],
            |r| r.get(0),
        )
        .optional()?)
}

/// The preset, used up.
pub fn take_preset(tx: &Tx<'_>, account: &str, name: &str) -> Result<Option<String>> {
    Ok(tx
        .0
        .query_row(
            "DELETE FROM presets WHERE account = ?1 AND name = ?2 RETURNING value",
            params![account, name],
            |r| r.get(0),
        )
        .optional()?)
}
