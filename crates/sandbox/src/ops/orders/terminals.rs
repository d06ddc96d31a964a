//! Point terminals under the Orders API: `GET /terminals/v1/list`,
//! `PATCH /terminals/v1/setup` (the operating mode), and what the emulated
//! terminals do. A terminal is one of the account's devices (the same
//! physical device the legacy Point API lists); `{TYPE}__SBX0000001`, the
//! platform's virtual test terminal, becomes one on first use. Both APIs
//! list the same devices, in the same order, at the same place. Only a
//! terminal in PDV mode takes orders. The outcome it drives orders to is
//! preset per terminal on the control API (`POST /sandbox/terminals/{id}`);
//! by default the buyer pays.

use http::StatusCode;
use serde_json::{Value, json};

use super::schedule::{self, Step};
use super::{Ctx, Reply};
use crate::error::HttpError;
use crate::model::AccountRow;
use crate::ops::devices::placement;
use crate::ops::mail;
use crate::ops::sandbox::Sandbox;
use crate::state::{StateError, Tx, accounts, devices, mails, orders as stored};
use pointhook_common::query::Query;

/// The serial of the platform's virtual terminal (orders-api.md §2.3).
const VIRTUAL_SERIAL: &str = "__SBX0000001";
const MAX_LIMIT: u64 = 50;

/// Makes the virtual terminal one of the account's devices (in PDV mode).
pub(super) fn ensure_virtual(tx: &Tx<'_>, account: &str, terminal: &str) -> Result<(), StateError> {
    if terminal.ends_with(VIRTUAL_SERIAL) && terminal.len() > VIRTUAL_SERIAL.len() {
        devices::add(tx, account, terminal)?;
    }
    Ok(())
}

/// The terminal's operating mode; `None` when it is not the account's.
pub(super) fn terminal_mode(
    tx: &Tx<'_>,
    account: &str,
    terminal: &str,
) -> Result<Option<String>, StateError> {
    devices::mode(tx, account, terminal)
}

fn preset_name(terminal: &str) -> String {
    format!("order_terminal:{terminal}")
}

/// The outcome the terminal drives its orders to (`{"status", …}`).
pub(super) fn preset(tx: &Tx<'_>, account: &str, terminal: &str) -> Result<Value, StateError> {
    Ok(accounts::preset(tx, account, &preset_name(terminal))?
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or_else(|| json!({"status": "processed"})))
}

/// A terminal as the list shows it, where the device list shows it too.
fn describe(id: &str, mode: &str) -> Value {
    let p = placement(id);
    json!({
        "id": id,
        "pos_id": p.pos_id,
        "store_id": p.store_id.to_string(),
        "external_pos_id": p.external_pos_id,
        "operating_mode": mode,
    })
}

/// `GET /terminals/v1/list?limit&offset&store_id&pos_id`.
pub async fn list_terminals(sb: &Sandbox, ctx: &Ctx, query: &str) -> Result<Reply, HttpError> {
    let q = Query::parse(query);
    let number = |name: &str, default: u64| match q.get(name) {
        None => Ok(default),
        Some(t) => t.parse::<u64>().map_err(|_| {
            HttpError::orders(
                StatusCode::BAD_REQUEST,
                "bad_request",
                &format!("{name} must be a whole number"),
            )
        }),
    };
    let limit = number("limit", MAX_LIMIT)?.clamp(1, MAX_LIMIT);
    let offset = number("offset", 0)?;
    let store = q.get("store_id").map(str::to_string);
    let pos = q.get("pos_id").map(str::to_string);
    let name = ctx.account.name.clone();
    let all = sb.db.call(move |tx| devices::list(tx, &name)).await?;
    let matching: Vec<Value> = all
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
pub async fn setup_terminals(sb: &Sandbox, ctx: Ctx, raw: &[u8]) -> Result<Reply, HttpError> {
    let v: Value = serde_json::from_slice(raw).unwrap_or(Value::Null);
    let bad = |code: &str, m: &str| HttpError::orders(StatusCode::BAD_REQUEST, code, m);
    let Some(list) = v["terminals"].as_array() else {
        return Err(bad("required_properties", "terminals (a list) is required"));
    };
    let [entry] = list.as_slice() else {
        return Err(bad("property_value", "terminals takes one terminal a call"));
    };
    let Some(id) = entry["id"].as_str().map(str::to_string) else {
        return Err(bad("required_properties", "terminals[0].id is required"));
    };
    let Some(mode) = entry["operating_mode"]
        .as_str()
        .filter(|m| matches!(*m, "PDV" | "STANDALONE"))
        .map(str::to_string)
    else {
        return Err(bad(
            "property_value",
            "terminals[0].operating_mode must be PDV or STANDALONE",
        ));
    };
    sb.db
        .call(move |tx| {
            let account = ctx.account.name.clone();
            ensure_virtual(tx, &account, &id)?;
            let Some(before) = terminal_mode(tx, &account, &id)? else {
                return Err(HttpError::orders(
                    StatusCode::NOT_FOUND,
                    "not_found",
                    &format!("terminal {id} not found"),
                ));
            };
            devices::set_mode(tx, &account, &id, &mode)?;
            // A change of mode is a device event, mailed like the others.
            if before != mode
                && let Some(event) = mail::describe("mode_change", Some(&mode))
            {
                mails::add(tx, &account, &id, &event, ctx.now)?;
            }
            if mode == "PDV" {
                for order in stored::waiting_on(tx, &account, &id)? {
                    schedule::schedule(
                        tx,
                        &ctx,
                        &order,
                        ctx.after(ctx.now, schedule::TERMINAL_PICKUP),
                        Step::Pickup,
                        &json!({}),
                    )?;
                }
            }
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
pub async fn set_terminal_outcome(
    sb: &Sandbox,
    account: &AccountRow,
    terminal: &str,
    v: &Value,
) -> Result<Value, HttpError> {
    let status = v["status"].as_str().unwrap_or_default();
    if !matches!(
        status,
        "processed" | "failed" | "action_required" | "canceled" | "expired"
    ) {
        return Err(HttpError::control(
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
            return Err(HttpError::control(
                StatusCode::BAD_REQUEST,
                "payment_status (approved, rejected, in_process or pending) goes with action_required only",
            ));
        }
    }
    let (name, id, value) = (account.name.clone(), terminal.to_string(), preset.clone());
    sb.db
        .call(move |tx| {
            ensure_virtual(tx, &name, &id)?;
            if terminal_mode(tx, &name, &id)?.is_none() {
                return Err(HttpError::control(
                    StatusCode::NOT_FOUND,
                    "no such terminal for this account (POST /sandbox/devices first)",
                ));
            }
            accounts::set_preset(tx, &name, &preset_name(&id), &value.to_string())?;
            Ok(())
        })
        .await?;
    preset["terminal"] = json!(terminal);
    Ok(preset)
}
