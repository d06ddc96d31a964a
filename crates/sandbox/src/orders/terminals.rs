//! Point terminals under the Orders API: `GET /terminals/v1/list`,
//! `PATCH /terminals/v1/setup` (the operating mode), and what the emulated
//! terminals do. A terminal is one of the account's devices (the same
//! physical device the legacy Point API lists); `{TYPE}__SBX0000001`, the
//! platform's virtual test terminal, becomes one on first use. Only a
//! terminal in PDV mode takes orders. The outcome it drives orders to is
//! preset per terminal on the control API (`POST /sandbox/terminals/{id}`);
//! by default the buyer pays.

use http::{Response, StatusCode};
use rusqlite::{Connection, OptionalExtension, Transaction, params};
use serde_json::{Value, json};

use super::steps::{self, Step};
use super::{Ctx, Reply, refuse};
use crate::accounts::{AccountRow, add_device};
use crate::control::control_error;
use crate::resources::ok_json;
use crate::{Sandbox, mail};
use pointhook_common::query::Query;
use pointhook_common::response::Body;

/// The serial of the platform's virtual terminal (orders-api.md §2.3).
const VIRTUAL_SERIAL: &str = "__SBX0000001";
const MAX_LIMIT: u64 = 50;

/// Makes the virtual terminal one of the account's devices (in PDV mode).
pub(super) fn ensure_virtual(
    tx: &Transaction<'_>,
    account: &str,
    terminal: &str,
) -> rusqlite::Result<()> {
    if terminal.ends_with(VIRTUAL_SERIAL) && terminal.len() > VIRTUAL_SERIAL.len() {
        add_device(tx, account, terminal)?;
    }
    Ok(())
}

/// The terminal's operating mode; `None` when it is not the account's.
pub(super) fn terminal_mode(
    conn: &Connection,
    account: &str,
    terminal: &str,
) -> rusqlite::Result<Option<String>> {
    conn.query_row(
        "SELECT mode FROM devices WHERE account = ?1 AND device_id = ?2",
        params![account, terminal],
        |r| r.get(0),
    )
    .optional()
}

fn preset_name(terminal: &str) -> String {
    format!("order_terminal:{terminal}")
}

/// The outcome the terminal drives its orders to (`{"status", …}`).
pub(super) fn preset(conn: &Connection, account: &str, terminal: &str) -> rusqlite::Result<Value> {
    let stored: Option<String> = conn
        .query_row(
            "SELECT value FROM presets WHERE account = ?1 AND name = ?2",
            params![account, preset_name(terminal)],
            |r| r.get(0),
        )
        .optional()?;
    Ok(stored
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or_else(|| json!({"status": "processed"})))
}

/// A terminal as the list shows it; its POS and store are made up, stably.
fn describe(id: &str, mode: &str) -> Value {
    let h = id
        .bytes()
        .fold(0u64, |h, b| (h * 31 + u64::from(b)) % 90_000_000);
    json!({
        "id": id,
        "pos_id": 10_000_000 + h,
        "store_id": (20_000_000 + h).to_string(),
        "external_pos_id": format!("SBXPOS{:05}", h % 100_000),
        "operating_mode": mode,
    })
}

/// `GET /terminals/v1/list?limit&offset&store_id&pos_id`.
pub(super) async fn list(sb: &Sandbox, ctx: &Ctx, query: &str) -> anyhow::Result<Reply> {
    let q = Query::parse(query);
    let number = |name: &str, default: u64| match q.get(name) {
        None => Ok(default),
        Some(t) => t.parse::<u64>().map_err(|_| {
            refuse(
                StatusCode::BAD_REQUEST,
                "bad_request",
                &format!("{name} must be a whole number"),
            )
        }),
    };
    let (limit, offset) = match (number("limit", MAX_LIMIT), number("offset", 0)) {
        (Ok(l), Ok(o)) => (l.clamp(1, MAX_LIMIT), o),
        (Err(r), _) | (_, Err(r)) => return Ok(r),
    };
    let store = q.get("store_id").map(str::to_string);
    let pos = q.get("pos_id").map(str::to_string);
    let name = ctx.account.name.clone();
    let devices: Vec<(String, String)> = sb
        .db
        .call(move |c| {
            c.prepare("SELECT device_id, mode FROM devices WHERE account = ?1 ORDER BY device_id")?
                .query_map([name], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect()
        })
        .await?;
    let matching: Vec<Value> = devices
        .iter()
        .map(|(id, mode)| describe(id, mode))
        .filter(|t| store.as_deref().is_none_or(|s| t["store_id"] == s))
        .filter(|t| {
            pos.as_deref()
                .is_none_or(|p| p.parse::<u64>().ok() == t["pos_id"].as_u64())
        })
        .collect();
    let total = matching.len();
    let page: Vec<Value> = matching
        .into_iter()
        .skip(usize::try_from(offset).unwrap_or(usize::MAX))
        .take(limit as usize)
        .collect();
    Ok(Reply::ok(
        StatusCode::OK,
        json!({
            "data": {"terminals": page},
            "paging": {"total": total, "offset": offset, "limit": limit},
        }),
    ))
}

/// `PATCH /terminals/v1/setup` with `{"terminals":[{"id","operating_mode"}]}`
/// (one terminal a call). A terminal switched to PDV takes the order
/// waiting for it.
pub(super) async fn setup(sb: &Sandbox, ctx: Ctx, raw: &[u8]) -> anyhow::Result<Reply> {
    let v: Value = serde_json::from_slice(raw).unwrap_or(Value::Null);
    let bad = |code: &str, m: &str| refuse(StatusCode::BAD_REQUEST, code, m);
    let Some(list) = v["terminals"].as_array() else {
        return Ok(bad("required_properties", "terminals (a list) is required"));
    };
    let [entry] = list.as_slice() else {
        return Ok(bad("property_value", "terminals takes one terminal a call"));
    };
    let Some(id) = entry["id"].as_str().map(str::to_string) else {
        return Ok(bad("required_properties", "terminals[0].id is required"));
    };
    let Some(mode) = entry["operating_mode"]
        .as_str()
        .filter(|m| matches!(*m, "PDV" | "STANDALONE"))
        .map(str::to_string)
    else {
        return Ok(bad(
            "property_value",
            "terminals[0].operating_mode must be PDV or STANDALONE",
        ));
    };
    sb.db
        .call(move |conn| {
            let tx = conn.transaction()?;
            let account = ctx.account.name.clone();
            ensure_virtual(&tx, &account, &id)?;
            let Some(before) = terminal_mode(&tx, &account, &id)? else {
                return Ok(refuse(
                    StatusCode::NOT_FOUND,
                    "not_found",
                    &format!("terminal {id} not found"),
                ));
            };
            tx.execute(
                "UPDATE devices SET mode = ?3 WHERE account = ?1 AND device_id = ?2",
                params![account, id, mode],
            )?;
            // A change of mode is a device event, mailed like the others.
            if before != mode
                && let Some(event) = mail::describe("mode_change", Some(&mode))
            {
                tx.execute(
                    "INSERT INTO mails (account, device, event, at) VALUES (?1, ?2, ?3, ?4)",
                    params![account, id, event, ctx.now],
                )?;
            }
            if mode == "PDV" {
                let waiting: Vec<String> = tx
                    .prepare(
                        "SELECT id FROM resources WHERE kind = 'order' AND account = ?1
                           AND json_extract(body, '$.config.point.terminal_id') = ?2
                           AND json_extract(body, '$.status') = 'created'",
                    )?
                    .query_map(params![account, id], |r| r.get(0))?
                    .collect::<rusqlite::Result<_>>()?;
                for order in waiting {
                    steps::schedule(
                        &tx,
                        &ctx,
                        &order,
                        ctx.after(ctx.now, steps::TERMINAL_PICKUP),
                        Step::Pickup,
                        &json!({}),
                    )?;
                }
            }
            tx.commit()?;
            Ok(Reply::ok(
                StatusCode::OK,
                json!({"terminals": [{"id": id, "operating_mode": mode}]}),
            ))
        })
        .await
}

/// Control API, `POST /sandbox/terminals/{id}` with `{"status"}` (and
/// `status_detail`, or `payment_status` for `action_required`): the
/// outcome the terminal drives its next orders to, until changed.
pub(crate) async fn set_terminal_outcome(
    sb: &Sandbox,
    account: &AccountRow,
    terminal: &str,
    v: &Value,
) -> anyhow::Result<Response<Body>> {
    let status = v["status"].as_str().unwrap_or_default();
    if !matches!(
        status,
        "processed" | "failed" | "action_required" | "canceled" | "expired"
    ) {
        return Ok(control_error(
            StatusCode::BAD_REQUEST,
            "status must be processed, failed, action_required, canceled or expired",
        ));
    }
    let mut preset = json!({"status": status});
    if let Some(d) = v["status_detail"].as_str() {
        preset["status_detail"] = json!(d);
    }
    match (status, v["payment_status"].as_str()) {
        (_, None) => {}
        ("action_required", Some(p @ ("approved" | "rejected" | "in_process" | "pending"))) => {
            preset["payment_status"] = json!(p);
        }
        _ => {
            return Ok(control_error(
                StatusCode::BAD_REQUEST,
                "payment_status (approved, rejected, in_process or pending) goes with action_required only",
            ));
        }
    }
    let (name, id, value) = (account.name.clone(), terminal.to_string(), preset.clone());
    let known = sb
        .db
        .call(move |conn| {
            let tx = conn.transaction()?;
            ensure_virtual(&tx, &name, &id)?;
            if terminal_mode(&tx, &name, &id)?.is_none() {
                return Ok(false);
            }
            tx.execute(
                "INSERT INTO presets (account, name, value) VALUES (?1, ?2, ?3)
                 ON CONFLICT (account, name) DO UPDATE SET value = excluded.value",
                params![name, preset_name(&id), value.to_string()],
            )?;
            tx.commit()?;
            Ok(true)
        })
        .await?;
    if !known {
        return Ok(control_error(
            StatusCode::NOT_FOUND,
            "no such terminal for this account (POST /sandbox/devices first)",
        ));
    }
    preset["terminal"] = json!(terminal);
    Ok(ok_json(StatusCode::OK, &preset))
}
