//! Resources exactly as the API serves them (payments, merchant orders,
//! chargebacks, payment intents, Orders API orders, card tokens), each
//! owned by an account and with its own notification URL when it has one;
//! the sequences their ids come from; the states intents reached; and the
//! resources eventual consistency hides for a while.

use rusqlite::{OptionalExtension, params};
use serde_json::Value;

use super::{Result, Tx, json};

/// The next id of a sequence (payments, orders …), platform-like numbers
/// from `start` on.
pub fn next_id(tx: &Tx<'_>, name: &str, start: i64) -> Result<i64> {
    Ok(tx.0.query_row(
        "INSERT INTO counters (name, next) VALUES (?1, ?2 + 1)
         ON CONFLICT (name) DO UPDATE SET next = next + 1
         RETURNING next - 1",
        params![name, start],
        |r| r.get(0),
    )?)
}

/// The resource and its owner.
pub fn get(tx: &Tx<'_>, kind: &str, id: &str) -> Result<Option<(String, Value)>> {
    Ok(tx
        .0
        .query_row(
            "SELECT account, body FROM resources WHERE kind = ?1 AND id = ?2",
            params![kind, id],
            |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)),
        )
        .optional()?
        .map(|(a, b)| (a, json(&b))))
}

/// The resource's own notification URL, if it was given one.
pub fn url(tx: &Tx<'_>, kind: &str, id: &str) -> Result<Option<String>> {
    Ok(tx
        .0
        .query_row(
            "SELECT notification_url FROM resources WHERE kind = ?1 AND id = ?2",
            params![kind, id],
            |r| r.get(0),
        )
        .optional()?
        .flatten())
}

/// Stores the resource; a `None` URL keeps the one it had.
pub fn put(
    tx: &Tx<'_>,
    kind: &str,
    id: &str,
    account: &str,
    body: &Value,
    notification_url: Option<&str>,
) -> Result<()> {
    tx.0.execute(
        "INSERT INTO resources (kind, id, account, body, notification_url) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (kind, id) DO UPDATE SET body = excluded.body,
             notification_url = coalesce(excluded.notification_url, notification_url)",
        params![kind, id, account, body.to_string(), notification_url],
    )?;
    Ok(())
}

/// Every resource of `kind` that `account` owns, as the API serves them.
pub fn of_kind(tx: &Tx<'_>, kind: &str, account: &str) -> Result<Vec<Value>> {
    Ok(tx
        .0
        .prepare("SELECT body FROM resources WHERE kind = ?1 AND account = ?2")?
        .query_map(params![kind, account], |r| r.get::<_, String>(0))?
        .map(|b| b.map(|b| json(&b)))
        .collect::<rusqlite::Result<_>>()?)
}

/// Notes that an intent reached `status` (the intent-events listing).
pub fn intent_event(tx: &Tx<'_>, account: &str, intent: &str, status: &str, at: i64) -> Result<()> {
    tx.0.execute(
        "INSERT INTO intent_events (account, intent_id, status, at) VALUES (?1, ?2, ?3, ?4)",
        params![account, intent, status, at],
    )?;
    Ok(())
}

/// The last state an intent reached, and when.
pub fn last_intent_event(
    tx: &Tx<'_>,
    account: &str,
    intent: &str,
) -> Result<Option<(String, i64)>> {
    Ok(tx
        .0
        .query_row(
            "SELECT status, at FROM intent_events WHERE account = ?1 AND intent_id = ?2
             ORDER BY at DESC, rowid DESC LIMIT 1",
            params![account, intent],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?)
}

/// Every state the account's intents reached in `[from, to)`: (intent,
/// state, when), in order.
pub fn intent_events_between(
    tx: &Tx<'_>,
    account: &str,
    from: i64,
    to: i64,
) -> Result<Vec<(String, String, i64)>> {
    Ok(tx
        .0
        .prepare(
            "SELECT intent_id, status, at FROM intent_events
             WHERE account = ?1 AND at >= ?2 AND at < ?3 ORDER BY at, rowid",
        )?
        .query_map(params![account, from, to], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?
        .collect::<rusqlite::Result<_>>()?)
}

/// Hides the resource from `GET` until `until` (eventual consistency);
/// a later hide extends it.
pub fn hide(tx: &Tx<'_>, kind: &str, id: &str, until: i64) -> Result<()> {
    tx.0.execute(
        "INSERT INTO unseen (kind, id, until) VALUES (?1, ?2, ?3)
         ON CONFLICT (kind, id) DO UPDATE SET until = max(until, excluded.until)",
        params![kind, id, until],
    )?;
    Ok(())
}

/// Whether eventual consistency hides the resource at `now`.
pub fn hidden(tx: &Tx<'_>, kind: &str, id: &str, now: i64) -> Result<bool> {
    Ok(tx.0.query_row(
        "SELECT count(*) > 0 FROM unseen WHERE kind = ?1 AND id = ?2 AND until > ?3",
        params![kind, id, now],
        |r| r.get(0),
    )?)
}

/// Removes the resource; whether there was one.
pub fn delete(tx: &Tx<'_>, kind: &str, id: &str) -> Result<bool> {
    Ok(tx.0.execute(
        "DELETE FROM resources WHERE kind = ?1 AND id = ?2",
        params![kind, id],
    )? > 0)
}
