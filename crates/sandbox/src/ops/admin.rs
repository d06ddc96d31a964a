//! What the control API sets about the sandbox itself rather than about a
//! payment or an order: faults (API answers and dropped notifications),
//! quirks, devices and their events, resources stored whole, and the
//! manual clock.

use std::time::Duration;

use http::StatusCode;
use serde_json::Value;

use super::changes::save;
use super::clock::{MAX_ADVANCE, Refused};
use super::mail;
use super::quirk_effects;
use super::sandbox::Sandbox;
use crate::error::HttpError;
use crate::faults::Fault;
use crate::model::AccountRow;
use crate::quirks::QuirkSet;
use crate::state::{accounts, devices, dispatches, mails};

fn bad(message: &str) -> HttpError {
    HttpError::control(StatusCode::BAD_REQUEST, message)
}

/// `POST /sandbox/faults`: an API fault (`faults::Fault`), or
/// `{"drop_notifications": N, "topic"?}`.
pub async fn add_fault(sb: &Sandbox, v: &Value) -> Result<Value, HttpError> {
    if let Some(n) = v.get("drop_notifications") {
        let Some(n) = n.as_u64().and_then(|n| u32::try_from(n).ok()) else {
            return Err(bad("drop_notifications must be a whole number"));
        };
        let topic = match v.get("topic") {
            None | Some(Value::Null) => None,
            Some(Value::String(t)) => Some(t.clone()),
            Some(_) => {
                return Err(bad(
                    "topic must be a string (payment, merchant_order, chargebacks, point_integration_ipn, payment_intent …)",
                ));
            }
        };
        sb.db
            .call(move |tx| dispatches::add_drop(tx, topic.as_deref(), n))
            .await?;
        return Ok(v.clone());
    }
    let fault = serde_json::from_value::<Fault>(v.clone())
        .map_err(|e| bad(&format!("not a fault: {e}")))?;
    sb.faults.add(fault);
    Ok(v.clone())
}

/// `DELETE /sandbox/faults`: every armed fault cleared, the API's and the
/// dropped notifications' alike.
pub async fn clear_faults(sb: &Sandbox) -> Result<Value, HttpError> {
    sb.faults.clear();
    sb.db.call(dispatches::clear_drops).await?;
    Ok(serde_json::json!({"cleared": true}))
}

/// `GET /sandbox/quirks`.
pub async fn quirks(sb: &Sandbox) -> Result<Value, HttpError> {
    Ok(sb.db.call(quirk_effects::describe).await?)
}

/// `DELETE /sandbox/quirks`.
pub async fn clear_quirks(sb: &Sandbox) -> Result<Value, HttpError> {
    Ok(sb
        .db
        .call(|tx| {
            crate::state::quirks::clear(tx)?;
            quirk_effects::describe(tx)
        })
        .await?)
}

/// `POST /sandbox/quirks {"account"?: NAME, …}`: sets the quirks given,
/// for that account or (without one) for every account.
pub async fn set_quirks(sb: &Sandbox, mut v: Value) -> Result<Value, HttpError> {
    let Some(fields) = v.as_object_mut() else {
        return Err(bad("the body must be a JSON object"));
    };
    let account = match fields.remove("account") {
        None | Some(Value::Null) => None,
        Some(Value::String(name)) => Some(name),
        Some(_) => return Err(bad("account must be an account's name")),
    };
    let patch = serde_json::from_value::<QuirkSet>(v).map_err(|e| {
        bad(&format!(
            "not a quirk setting ({e}): eventual_consistency_ms (milliseconds), twins, out_of_order, duplicates, unsigned (true or false)"
        ))
    })?;
    patch.check().map_err(|m| bad(&m))?;
    sb.db
        .call(move |tx| {
            if let Some(name) = &account
                && accounts::by_name(tx, name)?.is_none()
            {
                return Err(HttpError::control(
                    StatusCode::NOT_FOUND,
                    &format!("no account {name:?}"),
                ));
            }
            quirk_effects::set(tx, account.as_deref(), patch)?;
            Ok(quirk_effects::describe(tx)?)
        })
        .await
}

/// `POST /sandbox/devices {"id"}`.
pub async fn add_device(sb: &Sandbox, account: &AccountRow, v: &Value) -> Result<Value, HttpError> {
    let Some(device) = v.get("id").and_then(Value::as_str).map(str::to_string) else {
        return Err(bad("id (the device id) is required"));
    };
    let name = account.name.clone();
    sb.db
        .call(move |tx| devices::add(tx, &name, &device))
        .await?;
    Ok(v.clone())
}

/// `POST /sandbox/devices/{device}/events {"event","mode"?}`: a device
/// event, told by e-mail.
pub async fn device_event(
    sb: &Sandbox,
    account: &AccountRow,
    device: &str,
    v: &Value,
) -> Result<Value, HttpError> {
    let event = v.get("event").and_then(Value::as_str).unwrap_or_default();
    let Some(text) = mail::describe(event, v.get("mode").and_then(Value::as_str)) else {
        return Err(bad(
            "event must be restart, logout, or mode_change with mode PDV or STANDALONE",
        ));
    };
    let (name, device, now) = (account.name.clone(), device.to_string(), sb.now());
    sb.db
        .call(move |tx| {
            if devices::mode(tx, &name, &device)?.is_none() {
                return Err(HttpError::control(
                    StatusCode::NOT_FOUND,
                    "no such device for this account (POST /sandbox/devices first)",
                ));
            }
            mails::add(tx, &name, &device, &text, now)?;
            Ok(())
        })
        .await?;
    sb.queued();
    Ok(v.clone())
}

/// `PUT /sandbox/resources/{kind}/{id}`: stores any body as that resource,
/// unchecked and unannounced (odd shapes on purpose).
pub async fn put_resource(
    sb: &Sandbox,
    account: &AccountRow,
    kind: &str,
    id: &str,
    v: &Value,
) -> Result<Value, HttpError> {
    let kind: &'static str = match kind {
        "payment" => "payment",
        "merchant_order" => "merchant_order",
        "chargeback" => "chargeback",
        "payment_intent" => "payment_intent",
        "order" => "order",
        other => {
            return Err(bad(&format!(
                "{other} is not a kind: payment, merchant_order, chargeback, payment_intent or order"
            )));
        }
    };
    save(sb, account, kind, id, v).await?;
    Ok(v.clone())
}

fn not_manual() -> HttpError {
    HttpError::control_code(
        StatusCode::CONFLICT,
        "clock_not_manual",
        "the sandbox runs on the real clock: start it with --clock manual to advance it",
    )
}

/// `POST /sandbox/clock/advance {"seconds": N}`: only on a manual clock,
/// and only forward by a sane amount.
pub async fn advance_clock(sb: &std::sync::Arc<Sandbox>, v: &Value) -> Result<Value, HttpError> {
    if sb.clock.manual().is_none() {
        return Err(not_manual());
    }
    let max = MAX_ADVANCE.as_secs();
    let by = v
        .get("seconds")
        .and_then(Value::as_f64)
        .filter(|s| s.is_finite() && *s > 0.0 && *s <= max as f64)
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .ok_or_else(|| {
            bad(&format!(
                "seconds must be a positive number of seconds, at most {max} (30 days)"
            ))
        })?;
    match sb.advance(by).await? {
        Ok(advanced) => Ok(serde_json::to_value(advanced)?),
        Err(Refused::NotManual) => Err(not_manual()),
    }
}
