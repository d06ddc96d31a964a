//! The quirk settings in force: one JSON row per scope (an account's
//! name, or '' for every account), cleared at each start.

use rusqlite::{OptionalExtension, params};

use super::{Result, Tx};

/// The settings stored for `scope` (JSON text).
pub fn get(tx: &Tx<'_>, scope: &str) -> Result<Option<String>> {
    Ok(tx
        .0
        .query_row(
            "SELECT settings FROM quirks WHERE scope = ?1",
            [scope],
            |r| r.get(0),
        )
        .optional()?)
}

pub fn put(tx: &Tx<'_>, scope: &str, settings: &str) -> Result<()> {
    tx.0.execute(
        "INSERT INTO quirks (scope, settings) VALUES (?1, ?2)
         ON CONFLICT (scope) DO UPDATE SET settings = excluded.settings",
        params![scope, settings],
    )?;
    Ok(())
}

/// Every quirk off, everywhere.
pub fn clear(tx: &Tx<'_>) -> Result<()> {
    tx.0.execute("DELETE FROM quirks", [])?;
    Ok(())
}
