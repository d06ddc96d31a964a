//! The sandbox's accounts: who a request is (Bearer token, or
//! `?account=NAME` on the control API), and their settings.

use http::{HeaderMap, Uri};
use rusqlite::{Connection, OptionalExtension, params};

use super::Sandbox;
use pointhook_common::query::Query;

#[derive(Debug, Clone)]
pub struct AccountRow {
    pub name: String,
    pub notification_url: Option<String>,
    pub webhook_url: Option<String>,
    pub webhook_secret: Option<String>,
    pub groups: Vec<String>,
}

impl AccountRow {
    pub(super) fn wants(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }

    /// A stable, platform-like user id for webhook bodies.
    pub(super) fn user_id(&self) -> i64 {
        100_000_000
            + self
                .name
                .bytes()
                .fold(0i64, |h, b| (h * 31 + b as i64) % 900_000_000)
    }
}

pub(super) const ACCOUNT_COLUMNS: &str =
    "name, notification_url, webhook_url, webhook_secret, groups";

pub(super) fn account_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<AccountRow> {
    let groups: String = r.get(4)?;
    Ok(AccountRow {
        name: r.get(0)?,
        notification_url: r.get(1)?,
        webhook_url: r.get(2)?,
        webhook_secret: r.get(3)?,
        groups: serde_json::from_str(&groups).unwrap_or_default(),
    })
}

/// The account of the request's Bearer token; `None` without a valid one.
pub(super) async fn authenticate(
    sb: &Sandbox,
    headers: &HeaderMap,
) -> anyhow::Result<Option<AccountRow>> {
    let Some(token) = headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(|t| t.trim().to_string())
    else {
        return Ok(None);
    };
    sb.db
        .call(move |c| {
            c.query_row(
                &format!("SELECT {ACCOUNT_COLUMNS} FROM accounts WHERE token = ?1"),
                [token],
                account_row,
            )
            .optional()
        })
        .await
}

pub(super) async fn control_account(
    sb: &Sandbox,
    headers: &HeaderMap,
    uri: &Uri,
) -> anyhow::Result<Option<AccountRow>> {
    if let Some(a) = authenticate(sb, headers).await? {
        return Ok(Some(a));
    }
    let name = Query::parse(uri.query().unwrap_or(""))
        .get("account")
        .map(str::to_string);
    sb.db
        .call(move |c| {
            c.query_row(
                &format!(
                    "SELECT {ACCOUNT_COLUMNS} FROM accounts WHERE ?1 IS NULL OR name = ?1 ORDER BY rowid LIMIT 1"
                ),
                [name],
                account_row,
            )
            .optional()
        })
        .await
}

pub(super) fn take_preset(
    conn: &Connection,
    account: &str,
    name: &str,
) -> rusqlite::Result<Option<String>> {
    conn.query_row(
        "DELETE FROM presets WHERE account = ?1 AND name = ?2 RETURNING value",
        params![account, name],
        |r| r.get(0),
    )
    .optional()
}

pub(super) fn add_device(conn: &Connection, account: &str, device: &str) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT OR IGNORE INTO devices (account, device_id, mode) VALUES (?1, ?2, 'PDV')",
        params![account, device],
    )?;
    Ok(())
}

/// The account called `name`, for work that runs outside a request (the
/// emulated terminals).
pub(super) fn by_name(conn: &Connection, name: &str) -> rusqlite::Result<Option<AccountRow>> {
    conn.query_row(
        &format!("SELECT {ACCOUNT_COLUMNS} FROM accounts WHERE name = ?1"),
        [name],
        account_row,
    )
    .optional()
}

/// Whether `account` has a device called `device`, and its operating mode.
pub(super) fn device_mode(
    conn: &Connection,
    account: &str,
    device: &str,
) -> rusqlite::Result<Option<String>> {
    conn.query_row(
        "SELECT mode FROM devices WHERE account = ?1 AND device_id = ?2",
        params![account, device],
        |r| r.get(0),
    )
    .optional()
}
