//! Payment intents on the control API, how an intent ends (what a terminal
//! ends an intent with: shared with `terminals`), and the integrator
//! configuration (`/point/integration-api/integrator`).

use http::{Method, StatusCode};
use serde_json::{Value, json};

use super::changes::{PAYMENT_IDS, announce, owned, payment_body, save};
use super::sandbox::Sandbox;
use super::{queue, shapes};
use crate::error::HttpError;
use crate::model::{AccountRow, FinalState};
use crate::state::{StateError, accounts, resources};
use pointhook_common::clock::rfc3339;
use pointhook_common::money::Money;

/// `POST /sandbox/payment_intents`: an intent, OPEN, on no terminal.
pub async fn create_intent(
    sb: &Sandbox,
    account: &AccountRow,
    v: &Value,
) -> Result<Value, HttpError> {
    if v.get("notification_url").is_some() {
        return Err(HttpError::control(
            StatusCode::BAD_REQUEST,
            "notification_url is not supported for payment intents: the point-of-sale API does not take one",
        ));
    }
    let Some(amount) = v.get("amount").and_then(Value::as_i64).filter(|a| *a > 0) else {
        return Err(HttpError::control(
            StatusCode::BAD_REQUEST,
            "amount must be a positive whole number of cents",
        ));
    };
    let id = shapes::uuid_like();
    let intent = json!({
        "id": id, "state": "OPEN", "amount": amount,
        "caller_id": 9876543, "client_id": 1234567890,
        "created_at": rfc3339(sb.now()),
        "device_id": v.get("device_id").cloned().unwrap_or(json!("SANDBOX_DEVICE_1")),
        "additional_info": {
            "external_reference": v.get("external_reference").cloned().unwrap_or(Value::Null),
            "ticket_number": v.get("ticket_number").cloned().unwrap_or(Value::Null),
            "print_on_terminal": true,
        },
    });
    save(sb, account, "payment_intent", &id, &intent).await?;
    Ok(intent)
}

/// The payment statuses a terminal's payment can be made with.
pub const PAYMENT_STATUSES: [&str; 4] = ["approved", "rejected", "in_process", "pending"];

/// The final state and payment status a control call asks for
/// (`{"state", "payment_status"?}`), or the refusal naming what is wrong.
pub fn final_state_of(v: &Value) -> Result<(FinalState, Option<String>), HttpError> {
    let state = v
        .get("state")
        .and_then(Value::as_str)
        .and_then(FinalState::parse)
        .ok_or_else(|| {
            HttpError::control(
                StatusCode::BAD_REQUEST,
                &format!("state must be {}", FinalState::NAMES),
            )
        })?;
    let status = match v.get("payment_status") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if PAYMENT_STATUSES.contains(&s.as_str()) => Some(s.clone()),
        Some(_) => {
            return Err(HttpError::control(
                StatusCode::BAD_REQUEST,
                &format!(
                    "payment_status must be one of {}",
                    PAYMENT_STATUSES.join(", ")
                ),
            ));
        }
    };
    Ok((state, status))
}

/// `POST /sandbox/payment_intents/{id}/state`: moves an intent to a final
/// state at once.
pub async fn move_intent(
    sb: &Sandbox,
    account: &AccountRow,
    id: &str,
    v: &Value,
) -> Result<Value, HttpError> {
    let (state, status) = final_state_of(v)?;
    finish(sb, account, id, state, status)
        .await?
        .ok_or_else(|| {
            HttpError::control(StatusCode::NOT_FOUND, &format!("no payment intent {id}"))
        })
}

/// Moves an intent to a final state as its terminal would: FINISHED and
/// CONFIRMATION_REQUIRED come with a real payment (approved unless
/// `payment_status` says otherwise); the state is recorded as an intent
/// event, the intent webhook goes to the webhook URL (Point Integrations
/// events, when activated) and the `point_integration_ipn` IPN is
/// announced. `None`: no such intent.
pub async fn finish(
    sb: &Sandbox,
    account: &AccountRow,
    id: &str,
    state: FinalState,
    payment_status: Option<String>,
) -> Result<Option<Value>, StateError> {
    let Some(mut intent) = owned(sb, account, "payment_intent", id).await? else {
        return Ok(None);
    };
    intent["state"] = json!(state.as_str());
    if state.with_payment() {
        let status = payment_status.unwrap_or_else(|| "approved".into());
        let amount = Money::from_cents(intent["amount"].as_i64().unwrap_or(0));
        let reference = intent
            .pointer("/additional_info/external_reference")
            .cloned()
            .unwrap_or(Value::Null);
        let kind = intent
            .pointer("/payment/type")
            .and_then(Value::as_str)
            .unwrap_or("credit_card")
            .to_string();
        let (name, now, collector) = (account.name.clone(), sb.now(), account.user_id());
        let payment = sb
            .db
            .call(move |tx| {
                let pid = resources::next_id(tx, "payment", PAYMENT_IDS)?;
                let mut p = payment_body(pid, &status, amount, None, None, collector, now);
                p["external_reference"] = reference;
                p["payment_type_id"] = json!(kind);
                resources::put(tx, "payment", &pid.to_string(), &name, &p, None)?;
                Ok::<_, StateError>(p)
            })
            .await?;
        let device_state = if state == FinalState::Finished {
            payment["status"].clone()
        } else {
            json!("")
        };
        let mut attached = match intent.get("payment") {
            Some(Value::Object(m)) => m.clone(),
            _ => serde_json::Map::new(),
        };
        attached.insert("id".into(), payment["id"].clone());
        attached.insert("state".into(), device_state);
        attached
            .entry("type")
            .or_insert_with(|| json!("credit_card"));
        intent["payment"] = Value::Object(attached);
    }
    save(sb, account, "payment_intent", id, &intent).await?;
    if let Some(url) = account.webhook_url.clone() {
        let now = sb.now();
        let out = shapes::intent(
            &url,
            &intent,
            account.webhook_secret.as_deref(),
            (now / 1000).max(0) as u64,
        );
        let name = account.name.clone();
        sb.db
            .call(move |tx| queue::enqueue(tx, &name, &out, now))
            .await?;
    }
    announce(sb, account, "point_integration_ipn", id, "state_changed").await?;
    Ok(Some(intent))
}

/// `PATCH`/`GET /point/integration-api/integrator`.
pub async fn integrator(
    sb: &Sandbox,
    account: &AccountRow,
    method: &Method,
    body: &[u8],
) -> Result<Value, HttpError> {
    let name = account.name.clone();
    let stored = sb
        .db
        .call(move |tx| accounts::integrator(tx, &name))
        .await?;
    let mut config: Value = serde_json::from_str(&stored).unwrap_or(json!({}));
    let now = rfc3339(sb.now());
    if config.get("id").is_none() {
        // Created on first use, and kept: created_at must not move.
        config = json!({"id": account.user_id(), "created_at": now, "updated_at": now, "event_channel_devices": []});
        store_integrator(sb, account, &config).await?;
    }
    match *method {
        Method::GET => {}
        Method::PATCH => {
            let v: Value = serde_json::from_slice(body).map_err(|e| {
                HttpError::platform(
                    StatusCode::BAD_REQUEST,
                    "bad_request",
                    &format!("body is not JSON: {e}"),
                )
            })?;
            let Some(channels) = v.get("event_channel_devices").and_then(Value::as_array) else {
                return Err(HttpError::platform(
                    StatusCode::BAD_REQUEST,
                    "bad_request",
                    "event_channel_devices (a list) is required",
                )
                .cause(1, "event_channel_devices is required"));
            };
            if let Some(bad) = channels.iter().find(|c| c.as_str() != Some("email")) {
                return Err(HttpError::platform(
                    StatusCode::BAD_REQUEST,
                    "bad_request",
                    &format!(
                        "event_channel_devices: {bad} is not a channel; only \"email\" is accepted"
                    ),
                )
                .cause(2, "only email is accepted"));
            }
            let was_on = config["event_channel_devices"]
                .as_array()
                .is_some_and(|a| !a.is_empty());
            config["event_channel_devices"] = json!(channels);
            config["updated_at"] = json!(now);
            if !was_on && !channels.is_empty() {
                config["email_activated_at"] = json!(sb.now());
            }
            store_integrator(sb, account, &config).await?;
        }
        _ => {
            return Err(HttpError::platform(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "use GET or PATCH",
            ));
        }
    }
    let mut out = config.clone();
    if let Some(o) = out.as_object_mut() {
        o.remove("email_activated_at");
    }
    out["notification_url_enabled"] = json!(account.webhook_url.is_some());
    Ok(out)
}

async fn store_integrator(
    sb: &Sandbox,
    account: &AccountRow,
    config: &Value,
) -> Result<(), StateError> {
    let (name, text) = (account.name.clone(), config.to_string());
    sb.db
        .call(move |tx| accounts::set_integrator(tx, &name, &text))
        .await
}
