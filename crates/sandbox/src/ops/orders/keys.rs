//! `X-Idempotency-Key` on the Orders API's mutating calls: the key, per
//! account, remembers the request it came with and the answer it got, for
//! 24 hours of platform time.

use http::StatusCode;
use serde_json::Value;

use super::Reply;
use crate::state::orders::{self as stored, KeyRow};
use crate::state::{Result, Tx};

pub(super) enum Check {
    /// Never seen, or seen longer ago than the window.
    Fresh,
    /// Seen with this very request: its first answer.
    Replay(Reply),
    /// Seen with another request.
    Conflict,
}

pub(super) fn check(
    tx: &Tx<'_>,
    account: &str,
    key: &str,
    request: &Value,
    now: i64,
    window_ms: i64,
) -> Result<Check> {
    let Some(seen) = stored::key(tx, account, key)? else {
        return Ok(Check::Fresh);
    };
    if seen.at.saturating_add(window_ms) <= now {
        stored::forget_key(tx, account, key)?;
        return Ok(Check::Fresh);
    }
    // Compared as JSON: the same body with its keys in another order is
    // the same request.
    if serde_json::from_str::<Value>(&seen.request).ok().as_ref() != Some(request) {
        return Ok(Check::Conflict);
    }
    Ok(Check::Replay(Reply {
        status: StatusCode::from_u16(seen.status).unwrap_or(StatusCode::OK),
        body: serde_json::from_str(&seen.body).ok(),
        queued: false,
    }))
}

pub(super) fn remember(
    tx: &Tx<'_>,
    account: &str,
    key: &str,
    request: &Value,
    reply: &Reply,
    now: i64,
) -> Result<()> {
    stored::remember_key(
        tx,
        account,
        key,
        &KeyRow {
            request: request.to_string(),
            status: reply.status.as_u16(),
            body: reply.body.as_ref().map_or(String::new(), Value::to_string),
            at: now,
        },
    )
}
