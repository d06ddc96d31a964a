//! The sandbox's state in SQLite (in memory, or a file that survives a
//! restart): accounts, resources as the API serves them, the dispatch
//! queue with its schedule, the log of every attempt, and the quirks in
//! force (`quirks`).

use std::path::Path;
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

use super::sql_enum::sql_enum;

const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS accounts (
    name             TEXT PRIMARY KEY,
    token            TEXT NOT NULL UNIQUE,
    notification_url TEXT,
    webhook_url      TEXT,
    webhook_secret   TEXT,
    email            TEXT,
    groups           TEXT NOT NULL,          -- JSON array of event groups
    integrator       TEXT NOT NULL DEFAULT '{}'
) STRICT;
CREATE TABLE IF NOT EXISTS resources (
    kind             TEXT NOT NULL,          -- payment, merchant_order, chargeback, payment_intent
    id               TEXT NOT NULL,
    account          TEXT NOT NULL,
    body             TEXT NOT NULL,          -- JSON, as GET serves it
    notification_url TEXT,
    PRIMARY KEY (kind, id)
) STRICT;
CREATE TABLE IF NOT EXISTS counters (
    name TEXT PRIMARY KEY,
    next INTEGER NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS presets (
    account TEXT NOT NULL,
    name    TEXT NOT NULL,
    value   TEXT NOT NULL,
    PRIMARY KEY (account, name)
) STRICT;
CREATE TABLE IF NOT EXISTS payment_refunds (
    id              INTEGER PRIMARY KEY,     -- the refund's id
    payment_id      TEXT NOT NULL,
    idempotency_key TEXT,                    -- NULL: sent without one
    body            TEXT NOT NULL,           -- JSON, as the API serves it
    UNIQUE (payment_id, idempotency_key)
) STRICT;
CREATE TABLE IF NOT EXISTS device_presets (
    account        TEXT NOT NULL,
    device_id      TEXT NOT NULL,
    outcome        INTEGER NOT NULL,         -- sandbox::terminals::Outcome
    payment_status TEXT,                     -- NULL: approved
    PRIMARY KEY (account, device_id)
) STRICT;
CREATE TABLE IF NOT EXISTS terminal_steps (
    intent_id      TEXT PRIMARY KEY,
    account        TEXT NOT NULL,
    device_id      TEXT NOT NULL,
    next           INTEGER NOT NULL,         -- sandbox::terminals::Step
    due_at         INTEGER NOT NULL,         -- sandbox clock, ms
    outcome        INTEGER NOT NULL,         -- sandbox::terminals::Outcome
    payment_status TEXT
) STRICT;
CREATE INDEX IF NOT EXISTS terminal_steps_due ON terminal_steps (due_at);
CREATE TABLE IF NOT EXISTS dispatches (
    id          INTEGER PRIMARY KEY,
    account     TEXT    NOT NULL,
    url         TEXT    NOT NULL,
    form        INTEGER NOT NULL,            -- sandbox::dispatch::Form
    topic       TEXT    NOT NULL,
    resource_id TEXT    NOT NULL,
    body        TEXT    NOT NULL,
    headers     TEXT    NOT NULL,            -- JSON object
    first_at    INTEGER NOT NULL,            -- sandbox clock, ms
    attempts    INTEGER NOT NULL DEFAULT 0,
    next_due_at INTEGER,
    state       INTEGER NOT NULL             -- sandbox::db::DispatchState
) STRICT;
CREATE INDEX IF NOT EXISTS dispatches_due ON dispatches (state, next_due_at);
CREATE TABLE IF NOT EXISTS attempts (
    dispatch_id INTEGER NOT NULL,
    n           INTEGER NOT NULL,
    at          INTEGER NOT NULL,            -- sandbox clock, ms
    status      INTEGER,                     -- HTTP status; NULL: no answer in the window
    acked       INTEGER NOT NULL,
    latency_ms  INTEGER NOT NULL,
    error       TEXT,
    PRIMARY KEY (dispatch_id, n)
) STRICT;
CREATE TABLE IF NOT EXISTS intent_events (
    account    TEXT    NOT NULL,
    intent_id  TEXT    NOT NULL,
    status     TEXT    NOT NULL,
    at         INTEGER NOT NULL              -- sandbox clock, ms
) STRICT;
CREATE INDEX IF NOT EXISTS intent_events_at ON intent_events (account, at);
CREATE TABLE IF NOT EXISTS drops (
    id         INTEGER PRIMARY KEY,
    topic      TEXT,                         -- NULL: any
    remaining  INTEGER NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS devices (
    account   TEXT NOT NULL,
    device_id TEXT NOT NULL,
    mode      TEXT NOT NULL,                 -- PDV or STANDALONE
    PRIMARY KEY (account, device_id)
) STRICT;
CREATE TABLE IF NOT EXISTS quirks (
    scope    TEXT PRIMARY KEY,              -- an account's name; '': every account
    settings TEXT NOT NULL                  -- JSON, sandbox::quirks::QuirkSet
) STRICT;
CREATE TABLE IF NOT EXISTS unseen (
    kind  TEXT NOT NULL,                    -- as in resources; 'order': the Orders API
    id    TEXT NOT NULL,
    until INTEGER NOT NULL,                 -- sandbox clock, ms: answers 404 before
    PRIMARY KEY (kind, id)
) STRICT;
CREATE TABLE IF NOT EXISTS mails (
    id      INTEGER PRIMARY KEY,
    account TEXT    NOT NULL,
    device  TEXT    NOT NULL,
    event   TEXT    NOT NULL,               -- what happened, in words
    at      INTEGER NOT NULL,               -- sandbox clock, ms
    state   INTEGER NOT NULL DEFAULT 0,     -- sandbox::mail::MailState
    sent_at INTEGER
) STRICT;
"#;

/// Where a dispatch is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i16)]
pub enum DispatchState {
    /// Waiting for its next attempt (`next_due_at`).
    Pending = 0,
    /// An attempt is in flight.
    Sending = 1,
    /// Answered 200 or 201.
    Acked = 2,
    /// Every attempt of the schedule failed.
    GivenUp = 3,
    /// Never sent: a `drop_notifications` fault took it.
    Dropped = 4,
}

sql_enum!(DispatchState {
    Pending,
    Sending,
    Acked,
    GivenUp,
    Dropped,
});

impl DispatchState {
    pub fn as_str(self) -> &'static str {
        match self {
            DispatchState::Pending => "pending",
            DispatchState::Sending => "sending",
            DispatchState::Acked => "acked",
            DispatchState::GivenUp => "given_up",
            DispatchState::Dropped => "dropped",
        }
    }
}

/// One connection, used from blocking threads only.
#[derive(Clone)]
pub struct Db(Arc<Mutex<Connection>>);

impl Db {
    /// `None`: in memory.
    pub fn open(path: Option<&Path>) -> anyhow::Result<Db> {
        let conn = match path {
            Some(p) => Connection::open(p)?,
            None => Connection::open_in_memory()?,
        };
        conn.pragma_update(None, "journal_mode", "wal")?;
        conn.execute_batch(SCHEMA)?;
        conn.execute_batch(super::orders::SCHEMA)?;
        // Attempts cut short by a restart are simply due again.
        conn.execute(
            "UPDATE dispatches SET state = ?1 WHERE state = ?2",
            params![DispatchState::Pending, DispatchState::Sending],
        )?;
        Ok(Db(Arc::new(Mutex::new(conn))))
    }

    /// Runs `f` on the connection off the async runtime.
    pub async fn call<T, F>(&self, f: F) -> anyhow::Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let db = self.0.clone();
        tokio::task::spawn_blocking(move || {
            let mut conn = db.lock().unwrap_or_else(|p| p.into_inner());
            f(&mut conn)
        })
        .await?
        .map_err(Into::into)
    }
}

impl Db {
    /// Runs `f` on the calling thread.
    pub fn call_blocking<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T>,
    ) -> anyhow::Result<T> {
        let mut conn = self.0.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut conn).map_err(Into::into)
    }
}

/// The next id of a sequence (payments, orders …), platform-like numbers.
pub fn next_id(conn: &Connection, name: &str, start: i64) -> rusqlite::Result<i64> {
    conn.query_row(
        "INSERT INTO counters (name, next) VALUES (?1, ?2 + 1)
         ON CONFLICT (name) DO UPDATE SET next = next + 1
         RETURNING next - 1",
        params![name, start],
        |r| r.get(0),
    )
}

pub fn get_resource(
    conn: &Connection,
    kind: &str,
    id: &str,
) -> rusqlite::Result<Option<(String, Value)>> {
    conn.query_row(
        "SELECT account, body FROM resources WHERE kind = ?1 AND id = ?2",
        params![kind, id],
        |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)),
    )
    .optional()
    .map(|o| o.map(|(a, b)| (a, serde_json::from_str(&b).unwrap_or(Value::Null))))
}

pub fn resource_url(conn: &Connection, kind: &str, id: &str) -> rusqlite::Result<Option<String>> {
    conn.query_row(
        "SELECT notification_url FROM resources WHERE kind = ?1 AND id = ?2",
        params![kind, id],
        |r| r.get(0),
    )
    .optional()
    .map(Option::flatten)
}

pub fn put_resource(
    conn: &Connection,
    kind: &str,
    id: &str,
    account: &str,
    body: &Value,
    notification_url: Option<&str>,
) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO resources (kind, id, account, body, notification_url) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (kind, id) DO UPDATE SET body = excluded.body,
             notification_url = coalesce(excluded.notification_url, notification_url)",
        params![kind, id, account, body.to_string(), notification_url],
    )?;
    Ok(())
}

/// Every resource of `kind` that `account` owns, as the API serves them.
pub fn resources_of(conn: &Connection, kind: &str, account: &str) -> rusqlite::Result<Vec<Value>> {
    conn.prepare("SELECT body FROM resources WHERE kind = ?1 AND account = ?2")?
        .query_map(params![kind, account], |r| r.get::<_, String>(0))?
        .map(|b| b.map(|b| serde_json::from_str(&b).unwrap_or(Value::Null)))
        .collect()
}

/// Notes that an intent reached `status` (the intent-events listing).
pub fn intent_event(
    conn: &Connection,
    account: &str,
    intent: &str,
    status: &str,
    at: i64,
) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO intent_events (account, intent_id, status, at) VALUES (?1, ?2, ?3, ?4)",
        params![account, intent, status, at],
    )?;
    Ok(())
}

/// Arms a fault that drops the next `n` notifications (of `topic`, or any).
pub fn add_drop(conn: &Connection, topic: Option<&str>, n: u32) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO drops (topic, remaining) VALUES (?1, ?2)",
        params![topic, n],
    )?;
    Ok(())
}

/// Whether an armed drop takes a notification of `topic` (it is used up).
pub fn take_drop(conn: &Connection, topic: &str) -> rusqlite::Result<bool> {
    let taken = conn.execute(
        "UPDATE drops SET remaining = remaining - 1 WHERE id = (
             SELECT id FROM drops WHERE remaining > 0 AND (topic IS NULL OR topic = ?1)
             ORDER BY id LIMIT 1)",
        params![topic],
    )? == 1;
    conn.execute("DELETE FROM drops WHERE remaining <= 0", [])?;
    Ok(taken)
}
