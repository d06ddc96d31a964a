//! Point devices: the list the point-of-sale API gives
//! (`GET /point/integration-api/devices`, paged), a change of operating
//! mode (`PATCH /point/integration-api/devices/{id}`, which is also a
//! device event for the e-mail channel), and, on the control API, the
//! preset that says how a device's terminal ends the intents it takes
//! (`POST`/`DELETE /sandbox/devices/{id}/preset`).

use http::StatusCode;
use serde_json::{Value, json};

use super::intents::final_state_of;
use super::mail;
use super::sandbox::Sandbox;
use crate::error::HttpError;
use crate::model::AccountRow;
use crate::state::{devices, mails};
use pointhook_common::query::Query;

/// The page size when none is asked for (the documented example's), and
/// the largest the sandbox serves.
const PAGE: u64 = 50;

/// The documented answer for a device that is not the account's.
pub fn not_owned(device: &str) -> HttpError {
    HttpError::platform(
        StatusCode::FORBIDDEN,
        "forbidden",
        &format!("Error when check device owner: device {device} is not this account's"),
    )
}

fn bad_parameter(name: &str) -> HttpError {
    HttpError::platform(
        StatusCode::BAD_REQUEST,
        "bad_request",
        &format!("{name} is required or has an incorrect format"),
    )
}

/// Where a device stands: its point of sale and store, made up from its id
/// (stably), the same in both device APIs.
pub struct Placement {
    pub pos_id: u64,
    pub store_id: u64,
    pub external_pos_id: String,
}

pub fn placement(device: &str) -> Placement {
    let h = device
        .bytes()
        .fold(0u64, |h, b| (h * 31 + u64::from(b)) % 90_000_000);
    Placement {
        pos_id: 10_000_000 + h,
        store_id: 20_000_000 + h,
        external_pos_id: format!("SBXPOS{:05}", h % 100_000),
    }
}

/// `GET /point/integration-api/devices?store_id&pos_id&limit&offset`:
/// `{"devices":[{"id","operating_mode",…}],"paging":{"total","limit","offset"}}`,
/// the account's devices in the order they came, each at its `placement`
/// (`store_id` a number here, as this API had it; text on the Orders
/// API's terminal list).
pub async fn list(sb: &Sandbox, account: &AccountRow, query: &str) -> Result<Value, HttpError> {
    let q = Query::parse(query);
    let number = |name: &str, default: u64| match q.get(name) {
        None => Ok(default),
        Some(t) => t.parse::<u64>().map_err(|_| bad_parameter(name)),
    };
    let limit = number("limit", PAGE)?.clamp(1, PAGE);
    let offset = number("offset", 0)?;
    // `pos_id` is documented as a number, `store_id` as text.
    let pos = match q.get("pos_id") {
        None => None,
        Some(v) => Some(v.parse::<u64>().map_err(|_| bad_parameter("pos_id"))?),
    };
    let store = q.get("store_id").map(str::to_string);
    let name = account.name.clone();
    let all = sb.db.call(move |tx| devices::list(tx, &name)).await?;
    let matching: Vec<Value> = all
        .iter()
        .map(|(id, mode)| (id, mode, placement(id)))
        .filter(|(_, _, p)| store.as_deref().is_none_or(|s| s == p.store_id.to_string()))
        .filter(|(_, _, p)| pos.is_none_or(|pos| pos == p.pos_id))
        .map(|(id, mode, p)| {
            json!({"id": id, "operating_mode": mode, "pos_id": p.pos_id, "store_id": p.store_id, "external_pos_id": p.external_pos_id})
        })
        .collect();
    let total = matching.len();
    let listed: Vec<Value> = matching
        .into_iter()
        .skip(usize::try_from(offset).unwrap_or(usize::MAX))
        .take(limit as usize)
        .collect();
    Ok(json!({"devices": listed, "paging": {"total": total, "limit": limit, "offset": offset}}))
}

/// `PATCH /point/integration-api/devices/{id}` `{"operating_mode":"PDV"|"STANDALONE"}`:
/// answers the mode; a change of mode is a device event, mailed once the
/// e-mail channel is on (`mail`).
pub async fn change_mode(
    sb: &Sandbox,
    account: &AccountRow,
    device: &str,
    body: &[u8],
) -> Result<Value, HttpError> {
    let mode = serde_json::from_slice::<Value>(body).ok().and_then(|v| {
        v.get("operating_mode")
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    let Some(mode) = mode.filter(|m| matches!(m.as_str(), "PDV" | "STANDALONE")) else {
        return Err(bad_parameter("operating_mode (PDV or STANDALONE)"));
    };
    let Some(event) = mail::describe("mode_change", Some(&mode)) else {
        return Err(bad_parameter("operating_mode (PDV or STANDALONE)"));
    };
    let (name, id, now, to) = (
        account.name.clone(),
        device.to_string(),
        sb.now(),
        mode.clone(),
    );
    let known = sb
        .db
        .call(move |tx| {
            let Some(was) = devices::mode(tx, &name, &id)? else {
                return Ok::<_, HttpError>(false);
            };
            if was != to {
                devices::set_mode(tx, &name, &id, &to)?;
                mails::add(tx, &name, &id, &event, now)?;
            }
            Ok(true)
        })
        .await?;
    if !known {
        return Err(not_owned(device));
    }
    sb.queued();
    Ok(json!({"operating_mode": mode}))
}

/// `POST /sandbox/devices/{id}/preset` `{"state":…,"payment_status"?}`: every
/// intent the device takes from now on ends in that state (FINISHED with an
/// approved payment when no preset is set). The preset stays until replaced
/// or deleted.
pub async fn set_preset(
    sb: &Sandbox,
    account: &AccountRow,
    device: &str,
    v: &Value,
) -> Result<Value, HttpError> {
    let (state, status) = final_state_of(v)?;
    let (name, id) = (account.name.clone(), device.to_string());
    sb.db
        .call(move |tx| {
            if devices::mode(tx, &name, &id)?.is_none() {
                return Err(no_device());
            }
            devices::set_preset(tx, &name, &id, state, status.as_deref())?;
            Ok(())
        })
        .await?;
    Ok(v.clone())
}

/// `DELETE /sandbox/devices/{id}/preset`: the device's intents finish
/// approved again.
pub async fn clear_preset(
    sb: &Sandbox,
    account: &AccountRow,
    device: &str,
) -> Result<Value, HttpError> {
    let (name, id) = (account.name.clone(), device.to_string());
    sb.db
        .call(move |tx| {
            if devices::mode(tx, &name, &id)?.is_none() {
                return Err(no_device());
            }
            devices::clear_preset(tx, &name, &id)?;
            Ok(())
        })
        .await?;
    Ok(json!({"cleared": true}))
}

fn no_device() -> HttpError {
    HttpError::control(
        StatusCode::NOT_FOUND,
        "no such device for this account (POST /sandbox/devices first)",
    )
}
