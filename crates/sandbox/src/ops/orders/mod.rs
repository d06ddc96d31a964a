//! The Orders API as the sandbox emulates it (`/v1/orders…`,
//! `/terminals/v1/…`): the platform's current integration path for Point,
//! QR and online payments. Facts and their sources:
//! `../shared/platform/orders-api.md` and `fixtures/api/orders/README.md`.
//!
//! An order is a resource of kind `order` (served as stored, so
//! `Sandbox::set_resource` can plant odd shapes); its version, the steps
//! due on the sandbox's clock and the idempotency keys live in the state
//! (`state::orders`). Every mutation runs in one transaction: the key
//! check, the change, the `order` webhook it queues and the key's answer
//! commit together, so a retried or concurrent call never sees half of it;
//! a refusal rolls it all back.
//!
//! - `body`: create bodies checked per type (`checks`), and the order as
//!   created;
//! - `lifecycle`: statuses, the payments behind an order, versions, webhooks;
//! - `ops`: cancel, refund, process, capture; `simulate`: the status
//!   simulator;
//! - `schedule`: the steps an order waits for (terminal steps, expiry);
//!   `steps` runs them when due (`Sandbox::run_due`);
//! - `terminals`: list, operating mode, busy terminals, outcome presets;
//! - `keys`: `X-Idempotency-Key`; `search`: `GET /v1/orders`.

mod body;
mod checks;
mod keys;
mod lifecycle;
mod ops;
mod schedule;
mod search;
mod simulate;
mod steps;
mod terminals;

use std::time::Duration;

use http::StatusCode;
use serde_json::{Value, json};

use super::quirk_effects;
use super::sandbox::Sandbox;
use crate::error::HttpError;
use crate::model::AccountRow;
use crate::state::Tx;

pub use search::search;
pub use simulate::simulate;
pub use terminals::{list_terminals, set_terminal_outcome, setup_terminals};

/// How long an idempotency key holds (platform time).
const KEY_WINDOW: Duration = Duration::from_secs(24 * 3600);

/// One call's context: who, when, and how fast the sandbox's time runs.
#[derive(Debug, Clone)]
pub struct Ctx {
    pub account: AccountRow,
    /// Sandbox clock, ms: when the change happens.
    pub now: i64,
    /// Sandbox clock, ms: when the call runs, and so when a notification
    /// leaves (a step runs at or after its due time, `now`).
    pub sent: i64,
    pub scale: f64,
}

impl Ctx {
    pub fn new(sb: &Sandbox, account: AccountRow) -> Ctx {
        let now = sb.now();
        Ctx {
            account,
            now,
            sent: now,
            scale: sb.time_scale,
        }
    }

    /// `at` plus platform time `d`, scaled (saturating: a duration from a
    /// request never overflows).
    pub fn after(&self, at: i64, d: Duration) -> i64 {
        let scaled =
            Duration::try_from_secs_f64(d.as_secs_f64() * self.scale).unwrap_or(Duration::MAX);
        at.saturating_add(i64::try_from(scaled.as_millis()).unwrap_or(i64::MAX))
    }

    pub fn user_id(&self) -> String {
        self.account.user_id().to_string()
    }

    /// A stable, platform-like application id for the account.
    pub fn application_id(&self) -> String {
        (7_000_000_000_000 + self.account.user_id()).to_string()
    }
}

/// What a call answers; `queued` when it queued a notification.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: StatusCode,
    /// `None`: no content (204).
    pub body: Option<Value>,
    pub queued: bool,
}

impl Reply {
    pub fn ok(status: StatusCode, body: Value) -> Reply {
        Reply {
            status,
            body: Some(body),
            queued: false,
        }
    }

    pub fn queued(mut self, queued: bool) -> Reply {
        self.queued |= queued;
        self
    }
}

fn not_found(id: &str) -> HttpError {
    HttpError::orders(
        StatusCode::NOT_FOUND,
        "order_not_found",
        &format!("order {id} not found"),
    )
}

/// `ORD` and 26 characters of Crockford base32, as the platform issues
/// them (ULID-like: the first ten carry the creation time).
pub fn valid_id(id: &str) -> bool {
    id.len() == 29
        && id.starts_with("ORD")
        && id[3..]
            .bytes()
            .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase())
}

/// `prefix` and a ULID of `now_ms` (`ORD…`, `PAY…`, `REF…`).
pub fn new_id(prefix: &str, now_ms: i64) -> String {
    use rand::RngExt;
    const CROCKFORD: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    let time = (now_ms.max(0) as u128) & ((1 << 48) - 1);
    let random = rand::rng().random::<u128>() & ((1 << 80) - 1);
    let v = (time << 80) | random;
    let ulid: String = (0..26)
        .rev()
        .map(|i| CROCKFORD[((v >> (i * 5)) & 31) as usize] as char)
        .collect();
    format!("{prefix}{ulid}")
}

/// `GET /v1/orders/{id}`.
pub async fn fetch(sb: &Sandbox, ctx: &Ctx, id: &str) -> Result<Reply, HttpError> {
    if !valid_id(id) {
        return Err(invalid_path(id));
    }
    let (name, id, now) = (ctx.account.name.clone(), id.to_string(), sb.now());
    sb.db
        .call(move |tx| {
            // The eventual-consistency quirk: not found for a while after
            // its webhook is queued.
            if quirk_effects::hidden(tx, "order", &id, now)? {
                return Err(not_found(&id));
            }
            let order = lifecycle::load(tx, &name, &id)?.ok_or_else(|| not_found(&id))?;
            Ok(Reply::ok(StatusCode::OK, order))
        })
        .await
}

fn invalid_path(id: &str) -> HttpError {
    HttpError::orders(
        StatusCode::BAD_REQUEST,
        "invalid_path_param",
        &invalid_path_id(id),
    )
}

fn invalid_path_id(id: &str) -> String {
    format!("{id} is not an order id (ORD and 26 characters)")
}

/// A call that needs `X-Idempotency-Key`.
pub enum Op {
    Create,
    Cancel { id: String, at_terminal: bool },
    Refund(String),
    Process(String),
    Capture(String),
}

impl Op {
    fn order_id(&self) -> Option<&str> {
        match self {
            Op::Create => None,
            Op::Cancel { id, .. } | Op::Refund(id) | Op::Process(id) | Op::Capture(id) => Some(id),
        }
    }

    fn run(&self, tx: &Tx<'_>, ctx: &Ctx, body: &Value) -> Result<Reply, HttpError> {
        match self {
            Op::Create => body::create(tx, ctx, body),
            Op::Cancel { id, at_terminal } => ops::cancel(tx, ctx, id, *at_terminal),
            Op::Refund(id) => ops::refund(tx, ctx, id, body),
            Op::Process(id) => ops::process(tx, ctx, id),
            Op::Capture(id) => ops::capture(tx, ctx, id),
        }
    }
}

/// Runs `op` under its idempotency key: the same key and request answer
/// what the first call answered; the same key with another request is a
/// 409; a key older than the window is forgotten. A refusal changes
/// nothing and keeps no key: a corrected request may use it.
pub async fn mutate(
    sb: &Sandbox,
    ctx: Ctx,
    op: Op,
    key: Option<String>,
    path: &str,
    raw: &[u8],
) -> Result<Reply, HttpError> {
    let Some(key) = key.filter(|k| !k.is_empty()) else {
        return Err(HttpError::orders(
            StatusCode::BAD_REQUEST,
            "empty_required_header",
            "the X-Idempotency-Key header is required",
        ));
    };
    if key.len() > 64 {
        return Err(HttpError::orders(
            StatusCode::BAD_REQUEST,
            "bad_request",
            "X-Idempotency-Key takes 1 to 64 characters",
        ));
    }
    if let Some(id) = op.order_id()
        && !valid_id(id)
    {
        return Err(invalid_path(id));
    }
    // An empty body and `null` are the same request (a total refund, a
    // cancel): the SDKs send either.
    let body: Value = if raw.iter().all(u8::is_ascii_whitespace) {
        Value::Null
    } else {
        serde_json::from_slice(raw).map_err(|e| {
            HttpError::orders(
                StatusCode::BAD_REQUEST,
                "json_syntax_error",
                &format!("the body is not JSON: {e}"),
            )
        })?
    };
    let request = json!({"method": "POST", "path": path, "body": body});
    let window = ctx.after(0, KEY_WINDOW);
    sb.db
        .call(move |tx| {
            match keys::check(tx, &ctx.account.name, &key, &request, ctx.now, window)? {
                keys::Check::Replay(reply) => return Ok(reply),
                keys::Check::Conflict => {
                    return Err(HttpError::orders(
                        StatusCode::CONFLICT,
                        "idempotency_key_already_used",
                        "this X-Idempotency-Key was used with another request",
                    ));
                }
                keys::Check::Fresh => {}
            }
            let reply = op.run(tx, &ctx, &body)?;
            keys::remember(tx, &ctx.account.name, &key, &request, &reply, ctx.now)?;
            Ok(reply)
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_ord_and_26_crockford_characters() {
        let id = new_id("ORD", 1_742_505_638_683);
        assert!(valid_id(&id), "{id}");
        assert!(id.starts_with("ORD01JPTPVYRV"), "the time leads: {id}");
        assert!(valid_id("ORD01JQ4S4KY8HWQ6NA5PXB65B3D3"));
        assert!(!valid_id("ord01jq4s4ky8hwq6na5pxb65b3d3"));
        assert!(!valid_id("ORD01JQ4S4KY8HWQ6NA5PXB65B3D"));
        assert!(!valid_id("PAY01JQ4S4KY8HWQ6NA5PXB65B3D3"));
        assert!(new_id("PAY", 0).starts_with("PAY0000000000"));
    }
}
