//! The Orders API as the sandbox emulates it (`/v1/orders…`,
//! `/terminals/v1/…`): the platform's current integration path for Point,
//! QR and online payments. Facts and their sources:
//! `../shared/platform/orders-api.md` and `fixtures/api/orders/README.md`.
//!
//! An order is a resource of kind `order` (served as stored, so
//! `Sandbox::set_resource` can plant odd shapes); its version, the steps
//! due on the sandbox's clock and the idempotency keys live in tables of
//! their own (`SCHEMA`). Every mutation runs in one transaction: the key
//! check, the change, the `order` webhook it queues and the key's answer
//! commit together, so a retried or concurrent call never sees half of it.
//!
//! - `body`: create bodies checked per type (`checks`), and the order as
//!   created;
//! - `state`: statuses, the payments behind an order, versions, webhooks;
//! - `ops`: cancel, refund, process, capture; `simulate`: the status
//!   simulator;
//! - `steps`: terminal steps and expiry, run by `Sandbox::run_due`;
//! - `terminals`: list, operating mode, busy terminals, outcome presets;
//! - `keys`: `X-Idempotency-Key`; `search`: `GET /v1/orders`.

// A refusal here is the reply itself, built once and returned by value.
#![allow(clippy::result_large_err)]

mod body;
mod checks;
mod keys;
mod ops;
mod search;
mod simulate;
mod state;
mod steps;
mod terminals;

use std::time::Duration;

use axum::Router;
use axum::extract::{Extension, State};
use axum::routing::{get, patch, post};
use http::{HeaderMap, Response, StatusCode, Uri};
use rusqlite::Transaction;
use serde_json::{Value, json};

use super::Sandbox;
use super::accounts::AccountRow;
use super::routes::{Answer, Raw, Sb, Seg};
use pointhook_common::response::{self, Body};

pub(super) use terminals::set_terminal_outcome;

/// The tables the emulation adds to the sandbox's state.
pub(super) const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS order_versions (
    order_id TEXT PRIMARY KEY,
    version  INTEGER NOT NULL               -- data.version of the order's webhooks
) STRICT;
CREATE TABLE IF NOT EXISTS order_steps (
    id       INTEGER PRIMARY KEY,
    order_id TEXT    NOT NULL,
    account  TEXT    NOT NULL,
    due_at   INTEGER NOT NULL,              -- sandbox clock, ms
    step     TEXT    NOT NULL,              -- sandbox::orders::steps::Step
    arg      TEXT    NOT NULL DEFAULT '{}'
) STRICT;
CREATE INDEX IF NOT EXISTS order_steps_due ON order_steps (due_at, id);
CREATE TABLE IF NOT EXISTS order_keys (
    account TEXT    NOT NULL,
    key     TEXT    NOT NULL,
    request TEXT    NOT NULL,               -- JSON: method, path, body
    status  INTEGER NOT NULL,
    body    TEXT    NOT NULL,
    at      INTEGER NOT NULL,               -- sandbox clock, ms
    PRIMARY KEY (account, key)
) STRICT;
"#;

/// How long an idempotency key holds (platform time).
const KEY_WINDOW: Duration = Duration::from_secs(24 * 3600);

/// One call's context: who, when, and how fast the sandbox's time runs.
#[derive(Debug, Clone)]
pub(super) struct Ctx {
    pub account: AccountRow,
    /// Sandbox clock, ms: when the change happens.
    pub now: i64,
    /// Sandbox clock, ms: when the call runs, and so when a notification
    /// leaves (a step runs at or after its due time, `now`).
    pub sent: i64,
    pub scale: f64,
}

impl Ctx {
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
pub(super) struct Reply {
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

    fn into_response(self) -> Response<Body> {
        match self.body {
            Some(b) => response::json(self.status, b.to_string()),
            None => {
                let mut r = response::json(self.status, "");
                r.headers_mut().remove(http::header::CONTENT_TYPE);
                r
            }
        }
    }
}

/// A refusal as the platform writes it, with the Orders API's code.
pub(super) fn refuse(status: StatusCode, code: &str, message: &str) -> Reply {
    refuse_all(status, code, message, &[(code, message.to_string())])
}

/// A refusal naming every problem found (the Orders API lists them all).
pub(super) fn refuse_all(
    status: StatusCode,
    error: &str,
    message: &str,
    causes: &[(&str, String)],
) -> Reply {
    let cause: Vec<Value> = causes
        .iter()
        .map(|(code, d)| json!({"code": code, "description": d}))
        .collect();
    Reply::ok(
        status,
        json!({"message": message, "error": error, "status": status.as_u16(), "cause": cause}),
    )
}

fn not_found(id: &str) -> Reply {
    refuse(
        StatusCode::NOT_FOUND,
        "order_not_found",
        &format!("order {id} not found"),
    )
}

/// `ORD` and 26 characters of Crockford base32, as the platform issues
/// them (ULID-like: the first ten carry the creation time).
pub(super) fn valid_id(id: &str) -> bool {
    id.len() == 29
        && id.starts_with("ORD")
        && id[3..]
            .bytes()
            .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase())
}

/// `prefix` and a ULID of `now_ms` (`ORD…`, `PAY…`, `REF…`).
pub(super) fn new_id(prefix: &str, now_ms: i64) -> String {
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

/// The Orders API's routes, merged into the platform's table (which
/// authenticates the account).
pub(crate) fn routes() -> Router<Sb> {
    Router::new()
        .route("/v1/orders", get(search_orders).post(create_order))
        .route("/v1/orders/{id}", get(get_order))
        .route("/v1/orders/{id}/events", post(simulate_event))
        .route("/v1/orders/{id}/cancel", post(cancel_order))
        .route("/v1/orders/{id}/refund", post(refund_order))
        .route("/v1/orders/{id}/process", post(process_order))
        .route("/v1/orders/{id}/capture", post(capture_order))
        .route("/terminals/v1/list", get(list_terminals))
        .route("/terminals/v1/setup", patch(setup_terminals))
}

type Account = Extension<AccountRow>;

impl Ctx {
    fn new(sb: &Sandbox, account: AccountRow) -> Ctx {
        let now = sb.now();
        Ctx {
            account,
            now,
            sent: now,
            scale: sb.time_scale,
        }
    }
}

/// The reply as sent, waking the dispatcher when it queued a webhook.
fn answer(sb: &Sandbox, reply: Reply) -> Answer {
    if reply.queued {
        sb.queued();
    }
    Ok(reply.into_response())
}

async fn search_orders(State(sb): State<Sb>, Extension(a): Account, uri: Uri) -> Answer {
    let reply = search::search(&sb, &Ctx::new(&sb, a), uri.query().unwrap_or("")).await?;
    answer(&sb, reply)
}

async fn get_order(State(sb): State<Sb>, Extension(a): Account, Seg(id): Seg<String>) -> Answer {
    let reply = fetch(&sb, &Ctx::new(&sb, a), &id).await?;
    answer(&sb, reply)
}

async fn simulate_event(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg(id): Seg<String>,
    Raw(body): Raw,
) -> Answer {
    let reply = simulate::simulate(&sb, Ctx::new(&sb, a), &id, &body).await?;
    answer(&sb, reply)
}

/// A mutation: needs `X-Idempotency-Key`, which scopes it to its path.
async fn run_op(
    sb: &Sandbox,
    a: AccountRow,
    op: Op,
    uri: &Uri,
    headers: &HeaderMap,
    body: &[u8],
) -> Answer {
    let key = headers
        .get("x-idempotency-key")
        .map(|v| String::from_utf8_lossy(v.as_bytes()).trim().to_string());
    let reply = mutate(sb, Ctx::new(sb, a), op, key, uri.path(), body).await?;
    answer(sb, reply)
}

async fn create_order(
    State(sb): State<Sb>,
    Extension(a): Account,
    uri: Uri,
    headers: HeaderMap,
    Raw(body): Raw,
) -> Answer {
    run_op(&sb, a, Op::Create, &uri, &headers, &body).await
}

async fn cancel_order(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg(id): Seg<String>,
    uri: Uri,
    headers: HeaderMap,
    Raw(body): Raw,
) -> Answer {
    let at_terminal = headers
        .get("x-allow-cancelable-status")
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"at_terminal"));
    run_op(
        &sb,
        a,
        Op::Cancel { id, at_terminal },
        &uri,
        &headers,
        &body,
    )
    .await
}

async fn refund_order(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg(id): Seg<String>,
    uri: Uri,
    headers: HeaderMap,
    Raw(body): Raw,
) -> Answer {
    run_op(&sb, a, Op::Refund(id), &uri, &headers, &body).await
}

async fn process_order(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg(id): Seg<String>,
    uri: Uri,
    headers: HeaderMap,
    Raw(body): Raw,
) -> Answer {
    run_op(&sb, a, Op::Process(id), &uri, &headers, &body).await
}

async fn capture_order(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg(id): Seg<String>,
    uri: Uri,
    headers: HeaderMap,
    Raw(body): Raw,
) -> Answer {
    run_op(&sb, a, Op::Capture(id), &uri, &headers, &body).await
}

async fn list_terminals(State(sb): State<Sb>, Extension(a): Account, uri: Uri) -> Answer {
    let reply = terminals::list(&sb, &Ctx::new(&sb, a), uri.query().unwrap_or("")).await?;
    answer(&sb, reply)
}

async fn setup_terminals(State(sb): State<Sb>, Extension(a): Account, Raw(body): Raw) -> Answer {
    let reply = terminals::setup(&sb, Ctx::new(&sb, a), &body).await?;
    answer(&sb, reply)
}

async fn fetch(sb: &Sandbox, ctx: &Ctx, id: &str) -> anyhow::Result<Reply> {
    if !valid_id(id) {
        return Ok(invalid_path(id));
    }
    let (name, id, now) = (ctx.account.name.clone(), id.to_string(), sb.now());
    sb.db
        .call(move |c| {
            // The eventual-consistency quirk: not found for a while after
            // its webhook is queued.
            if crate::quirks::hidden(c, "order", &id, now)? {
                return Ok(not_found(&id));
            }
            Ok(match state::load(c, &name, &id)? {
                Some(order) => Reply::ok(StatusCode::OK, order),
                None => not_found(&id),
            })
        })
        .await
}

fn invalid_path(id: &str) -> Reply {
    refuse(
        StatusCode::BAD_REQUEST,
        "invalid_path_param",
        &invalid_path_id(id),
    )
}

fn invalid_path_id(id: &str) -> String {
    format!("{id} is not an order id (ORD and 26 characters)")
}

/// A call that needs `X-Idempotency-Key`.
enum Op {
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

    fn run(&self, tx: &Transaction<'_>, ctx: &Ctx, body: &Value) -> rusqlite::Result<Reply> {
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
/// 409; a key older than the window is forgotten.
async fn mutate(
    sb: &Sandbox,
    ctx: Ctx,
    op: Op,
    key: Option<String>,
    path: &str,
    raw: &[u8],
) -> anyhow::Result<Reply> {
    let Some(key) = key.filter(|k| !k.is_empty()) else {
        return Ok(refuse(
            StatusCode::BAD_REQUEST,
            "empty_required_header",
            "the X-Idempotency-Key header is required",
        ));
    };
    if key.len() > 64 {
        return Ok(refuse(
            StatusCode::BAD_REQUEST,
            "bad_request",
            "X-Idempotency-Key takes 1 to 64 characters",
        ));
    }
    if let Some(id) = op.order_id()
        && !valid_id(id)
    {
        return Ok(invalid_path(id));
    }
    // An empty body and `null` are the same request (a total refund, a
    // cancel): the SDKs send either.
    let body: Value = if raw.iter().all(u8::is_ascii_whitespace) {
        Value::Null
    } else {
        match serde_json::from_slice(raw) {
            Ok(v) => v,
            Err(e) => {
                return Ok(refuse(
                    StatusCode::BAD_REQUEST,
                    "json_syntax_error",
                    &format!("the body is not JSON: {e}"),
                ));
            }
        }
    };
    let request = json!({"method": "POST", "path": path, "body": body});
    let window = ctx.after(0, KEY_WINDOW);
    sb.db
        .call(move |conn| {
            let tx = conn.transaction()?;
            match keys::check(&tx, &ctx.account.name, &key, &request, ctx.now, window)? {
                keys::Check::Replay(reply) => return Ok(reply),
                keys::Check::Conflict => {
                    return Ok(refuse(
                        StatusCode::CONFLICT,
                        "idempotency_key_already_used",
                        "this X-Idempotency-Key was used with another request",
                    ));
                }
                keys::Check::Fresh => {}
            }
            let reply = op.run(&tx, &ctx, &body)?;
            if !reply.status.is_success() {
                // A refusal changes nothing and keeps no key: a corrected
                // request may use it.
                return Ok(reply);
            }
            keys::remember(&tx, &ctx.account.name, &key, &request, &reply, ctx.now)?;
            tx.commit()?;
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
