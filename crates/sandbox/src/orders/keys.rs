//! `X-Idempotency-Key` on the Orders API's mutating calls: the key, per
//! account, remembers the request it came with and the answer it got, for
//! 24 hours of platform time.

use http::StatusCode;
use rusqlite::{OptionalExtension, Transaction, params};
use serde_json::Value;

use super::Reply;

pub(super) enum Check {
    /// Never seen, or seen longer ago than the window.
    Fresh,
    /// Seen with this very request: its first answer.
    Replay(Reply),
    /// Seen with another request.
    Conflict,
}

pub(super) fn check(
    tx: &Transaction<'_>,
    account: &str,
    key: &str,
    request: &Value,
    now: i64,
    window_ms: i64,
) -> rusqlite::Result<Check> {
    let row = tx
        .query_row(
            "SELECT request, status, body, at FROM order_keys WHERE account = ?1 AND key = ?2",
            params![account, key],
            |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, u16>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, i64>(3)?,
                ))
            },
        )
        .optional()?;
    let Some((seen, status, body, at)) = row else {
        return Ok(Check::Fresh);
    };
    if at.saturating_add(window_ms) <= now {
        tx.execute(
            "DELETE FROM order_keys WHERE account = ?1 AND key = ?2",
            params![account, key],
        )?;
        return Ok(Check::Fresh);
    }
    // Compared as JSON: the same body with its keys in another order is
    // the same request.
    if serde_json::from_str::<Value>(&seen).ok().as_ref() != Some(request) {
        return Ok(Check::Conflict);
    }
    Ok(Check::Replay(Reply {
        status: StatusCode::from_u16(status).unwrap_or(StatusCode::OK),
        body: serde_json::from_str(&body).ok(),
        queued: false,
    }))
}

pub(super) fn remember(
    tx: &Transaction<'_>,
    account: &str,
    key: &str,
    request: &Value,
    reply: &Reply,
    now: i64,
) -> rusqlite::Result<()> {
    let body = reply.body.as_ref().map_or(String::new(), Value::to_string);
    tx.execute(
        "INSERT OR REPLACE INTO order_keys (account, key, request, status, body, at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            account,
            key,
            request.to_string(),
            reply.status.as_u16(),
            body,
            now
        ],
    )?;
    Ok(())
}
