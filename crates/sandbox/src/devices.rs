// A refusal here is the response itself, built once and returned by value.
#![allow(clippy::result_large_err)]

//! Point devices: the list the point-of-sale API gives
//! (`GET /point/integration-api/devices`, paged), a change of operating
//! mode (`PATCH /point/integration-api/devices/{id}`, which is also a
//! device event for the e-mail channel), and, on the control API, the
//! preset that says how a device's terminal ends the intents it takes
//! (`POST`/`DELETE /sandbox/devices/{id}/preset`).

use http::{Response, StatusCode};
use rusqlite::params;
use serde_json::{Value, json};

use super::Sandbox;
use super::accounts::{AccountRow, device_mode};
use super::control::control_error;
use super::intents::final_state_of;
use super::resources::{ok_json, platform_error};
use pointhook_common::query::Query;
use pointhook_common::response::Body;

/// The page size when none is asked for (the documented example's), and
/// the largest the sandbox serves.
const PAGE: u64 = 50;

/// The documented answer for a device that is not the account's.
pub(super) fn not_owned(device: &str) -> Response<Body> {
    platform_error(
        StatusCode::FORBIDDEN,
        "forbidden",
        &format!("Error when check device owner: device {device} is not this account's"),
        &[],
    )
}

fn bad_parameter(name: &str) -> Response<Body> {
    platform_error(
        StatusCode::BAD_REQUEST,
        "bad_request",
        &format!("{name} is required or has an incorrect format"),
        &[],
    )
}

/// `GET /point/integration-api/devices?store_id&pos_id&limit&offset`:
/// `{"devices":[{"id","operating_mode",…}],"paging":{"total","limit","offset"}}`.
/// Sandbox devices belong to no store or point of sale, so a `store_id` or
/// `pos_id` filter matches none of them.
pub(super) async fn list(
    sb: &Sandbox,
    account: &AccountRow,
    query: &str,
) -> anyhow::Result<Response<Body>> {
    let q = Query::parse(query);
    let number = |name: &str, default: u64| match q.get(name) {
        None => Ok(default),
        Some(t) => t.parse::<u64>().map_err(|_| bad_parameter(name)),
    };
    let (limit, offset) = match (number("limit", PAGE), number("offset", 0)) {
        (Ok(l), Ok(o)) => (l.clamp(1, PAGE), o),
        (Err(r), _) | (_, Err(r)) => return Ok(r),
    };
    // `pos_id` is documented as a number, `store_id` as text.
    if q.get("pos_id").is_some_and(|v| v.parse::<u64>().is_err()) {
        return Ok(bad_parameter("pos_id"));
    }
    let filtered = q.get("store_id").is_some() || q.get("pos_id").is_some();
    let name = account.name.clone();
    let all: Vec<(String, String)> = sb
        .db
        .call(move |c| {
            c.prepare("SELECT device_id, mode FROM devices WHERE account = ?1 ORDER BY rowid")?
                .query_map([name], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect()
        })
        .await?;
    let all: Vec<(String, String)> = if filtered { Vec::new() } else { all };
    let devices: Vec<Value> = all
        .iter()
        .skip(usize::try_from(offset).unwrap_or(usize::MAX))
        .take(limit as usize)
        .map(|(id, mode)| {
            json!({"id": id, "operating_mode": mode, "pos_id": null, "store_id": null, "external_pos_id": null})
        })
        .collect();
    Ok(ok_json(
        StatusCode::OK,
        &json!({"devices": devices, "paging": {"total": all.len(), "limit": limit, "offset": offset}}),
    ))
}

/// `PATCH /point/integration-api/devices/{id}` `{"operating_mode":"PDV"|"STANDALONE"}`:
/// answers the mode; a change of mode is a device event, mailed once the
/// e-mail channel is on (`mail`).
pub(super) async fn change_mode(
    sb: &Sandbox,
    account: &AccountRow,
    device: &str,
    body: &[u8],
) -> anyhow::Result<Response<Body>> {
    let mode = serde_json::from_slice::<Value>(body).ok().and_then(|v| {
        v.get("operating_mode")
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    let Some(mode) = mode.filter(|m| matches!(m.as_str(), "PDV" | "STANDALONE")) else {
        return Ok(bad_parameter("operating_mode (PDV or STANDALONE)"));
    };
    let Some(event) = super::mail::describe("mode_change", Some(&mode)) else {
        return Ok(bad_parameter("operating_mode (PDV or STANDALONE)"));
    };
    let (name, id, now, to) = (
        account.name.clone(),
        device.to_string(),
        sb.now(),
        mode.clone(),
    );
    let known = sb
        .db
        .call(move |c| {
            let tx = c.transaction()?;
            let Some(was) = device_mode(&tx, &name, &id)? else {
                return Ok(false);
            };
            if was != to {
                tx.execute(
                    "UPDATE devices SET mode = ?3 WHERE account = ?1 AND device_id = ?2",
                    params![name, id, to],
                )?;
                tx.execute(
                    "INSERT INTO mails (account, device, event, at) VALUES (?1, ?2, ?3, ?4)",
                    params![name, id, event, now],
                )?;
            }
            tx.commit()?;
            Ok(true)
        })
        .await?;
    if !known {
        return Ok(not_owned(device));
    }
    sb.queued();
    Ok(ok_json(StatusCode::OK, &json!({"operating_mode": mode})))
}

/// `POST /sandbox/devices/{id}/preset` `{"state":…,"payment_status"?}`: every
/// intent the device takes from now on ends in that state (FINISHED with an
/// approved payment when no preset is set). The preset stays until replaced
/// or deleted.
pub(super) async fn set_preset(
    sb: &Sandbox,
    account: &AccountRow,
    device: &str,
    v: &Value,
) -> anyhow::Result<Response<Body>> {
    let (state, status) = match final_state_of(v) {
        Ok(asked) => asked,
        Err(refusal) => return Ok(refusal),
    };
    let (name, id) = (account.name.clone(), device.to_string());
    let known = sb
        .db
        .call(move |c| {
            if device_mode(c, &name, &id)?.is_none() {
                return Ok(false);
            }
            c.execute(
                "INSERT INTO device_presets (account, device_id, outcome, payment_status)
                 VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (account, device_id) DO UPDATE SET outcome = excluded.outcome,
                     payment_status = excluded.payment_status",
                params![name, id, state, status],
            )?;
            Ok(true)
        })
        .await?;
    if !known {
        return Ok(no_device());
    }
    Ok(ok_json(StatusCode::OK, v))
}

/// `DELETE /sandbox/devices/{id}/preset`: the device's intents finish
/// approved again.
pub(super) async fn clear_preset(
    sb: &Sandbox,
    account: &AccountRow,
    device: &str,
) -> anyhow::Result<Response<Body>> {
    let (name, id) = (account.name.clone(), device.to_string());
    let known = sb
        .db
        .call(move |c| {
            if device_mode(c, &name, &id)?.is_none() {
                return Ok(false);
            }
            c.execute(
                "DELETE FROM device_presets WHERE account = ?1 AND device_id = ?2",
                params![name, id],
            )?;
            Ok(true)
        })
        .await?;
    if !known {
        return Ok(no_device());
    }
    Ok(ok_json(StatusCode::OK, &json!({"cleared": true})))
}

fn no_device() -> Response<Body> {
    control_error(
        StatusCode::NOT_FOUND,
        "no such device for this account (POST /sandbox/devices first)",
    )
}
