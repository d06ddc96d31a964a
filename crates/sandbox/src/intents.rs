// A refusal here is the response itself, built once and returned by value.
#![allow(clippy::result_large_err)]

//! Payment intents on the control API, their final states (what a terminal
//! ends an intent with: shared with `terminals`), and the integrator
//! configuration (`/point/integration-api/integrator`).

use http::{Method, Response, StatusCode};
use rusqlite::params;
use serde_json::{Value, json};

use super::Sandbox;
use super::accounts::AccountRow;
use super::changes::{announce, owned, payment_body};
use super::control::{control_error, save};
use super::db;
use super::dispatch;
use super::resources::{ok_json, platform_error};
use super::shapes;
use super::sql_enum::sql_enum;
use pointhook_common::clock::rfc3339;
use pointhook_common::money::Money;
use pointhook_common::response::Body;

pub(super) async fn create_intent(
    sb: &Sandbox,
    account: &AccountRow,
    v: &Value,
) -> anyhow::Result<Response<Body>> {
    if v.get("notification_url").is_some() {
        return Ok(control_error(
            StatusCode::BAD_REQUEST,
            "notification_url is not supported for payment intents: the point-of-sale API does not take one",
        ));
    }
    let Some(amount) = v.get("amount").and_then(Value::as_i64).filter(|a| *a > 0) else {
        return Ok(control_error(
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
    Ok(ok_json(StatusCode::CREATED, &intent))
}

/// The final states of a payment intent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i16)]
pub(super) enum FinalState {
    Finished = 1,
    ConfirmationRequired = 2,
    Canceled = 3,
    Error = 4,
    Abandoned = 5,
}

sql_enum!(FinalState {
    Finished,
    ConfirmationRequired,
    Canceled,
    Error,
    Abandoned,
});

impl FinalState {
    pub(super) const NAMES: &'static str =
        "FINISHED, CONFIRMATION_REQUIRED, CANCELED, ERROR or ABANDONED";

    pub(super) fn parse(s: &str) -> Option<FinalState> {
        Some(match s {
            "FINISHED" => FinalState::Finished,
            "CONFIRMATION_REQUIRED" => FinalState::ConfirmationRequired,
            "CANCELED" => FinalState::Canceled,
            "ERROR" => FinalState::Error,
            "ABANDONED" => FinalState::Abandoned,
            _ => return None,
        })
    }

    pub(super) fn as_str(self) -> &'static str {
        match self {
            FinalState::Finished => "FINISHED",
            FinalState::ConfirmationRequired => "CONFIRMATION_REQUIRED",
            FinalState::Canceled => "CANCELED",
            FinalState::Error => "ERROR",
            FinalState::Abandoned => "ABANDONED",
        }
    }

    /// Whether the terminal charged a card on the way (a payment exists).
    fn with_payment(self) -> bool {
        matches!(
            self,
            FinalState::Finished | FinalState::ConfirmationRequired
        )
    }
}

/// The payment statuses a terminal's payment can be made with.
pub(super) const PAYMENT_STATUSES: [&str; 4] = ["approved", "rejected", "in_process", "pending"];

/// The final state and payment status a control call asks for
/// (`{"state", "payment_status"?}`), or the refusal naming what is wrong.
pub(super) fn final_state_of(v: &Value) -> Result<(FinalState, Option<String>), Response<Body>> {
    let state = v
        .get("state")
        .and_then(Value::as_str)
        .and_then(FinalState::parse)
        .ok_or_else(|| {
            control_error(
                StatusCode::BAD_REQUEST,
                &format!("state must be {}", FinalState::NAMES),
            )
        })?;
    let status = match v.get("payment_status") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if PAYMENT_STATUSES.contains(&s.as_str()) => Some(s.clone()),
        Some(_) => {
            return Err(control_error(
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
pub(super) async fn move_intent(
    sb: &Sandbox,
    account: &AccountRow,
    id: &str,
    v: &Value,
) -> anyhow::Result<Response<Body>> {
    let (state, status) = match final_state_of(v) {
        Ok(asked) => asked,
        Err(refusal) => return Ok(refusal),
    };
    Ok(match finish(sb, account, id, state, status).await? {
        Some(intent) => ok_json(StatusCode::OK, &intent),
        None => control_error(StatusCode::NOT_FOUND, &format!("no payment intent {id}")),
    })
}

/// Moves an intent to a final state as its terminal would: FINISHED and
/// CONFIRMATION_REQUIRED come with a real payment (approved unless
/// `payment_status` says otherwise); the state is recorded as an intent
/// event, the intent webhook goes to the webhook URL (Point Integrations
/// events, when activated) and the `point_integration_ipn` IPN is
/// announced. `None`: no such intent.
pub(super) async fn finish(
    sb: &Sandbox,
    account: &AccountRow,
    id: &str,
    state: FinalState,
    payment_status: Option<String>,
) -> anyhow::Result<Option<Value>> {
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
        let (name, now) = (account.name.clone(), sb.now());
        let payment = sb
            .db
            .call(move |c| {
                let pid = db::next_id(c, "payment", 1_300_000_001)?;
                let mut p = payment_body(pid, &status, amount, None, None, now);
                p["external_reference"] = reference;
                p["payment_type_id"] = json!(kind);
                db::put_resource(c, "payment", &pid.to_string(), &name, &p, None)?;
                Ok(p)
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
            .call(move |c| dispatch::enqueue(c, &name, &out, now))
            .await?;
    }
    announce(sb, account, "point_integration_ipn", id, "state_changed").await?;
    Ok(Some(intent))
}

/// `PATCH`/`GET /point/integration-api/integrator`.
pub(super) async fn integrator(
    sb: &Sandbox,
    account: &AccountRow,
    method: &Method,
    body: &[u8],
) -> anyhow::Result<Response<Body>> {
    let name = account.name.clone();
    let stored: String = sb
        .db
        .call(move |c| {
            c.query_row(
                "SELECT integrator FROM accounts WHERE name = ?1",
                [name],
                |r| r.get(0),
            )
        })
        .await?;
    let mut config: Value = serde_json::from_str(&stored).unwrap_or(json!({}));
    let now = rfc3339(sb.now());
    if config.get("id").is_none() {
        // Created on first use, and kept: created_at must not move.
        config = json!({"id": account.user_id(), "created_at": now, "updated_at": now, "event_channel_devices": []});
        let (name, text) = (account.name.clone(), config.to_string());
        sb.db
            .call(move |c| {
                c.execute(
                    "UPDATE accounts SET integrator = ?2 WHERE name = ?1",
                    params![name, text],
                )
            })
            .await?;
    }
    match *method {
        Method::GET => {}
        Method::PATCH => {
            let v: Value = match serde_json::from_slice(body) {
                Ok(v) => v,
                Err(e) => {
                    return Ok(platform_error(
                        StatusCode::BAD_REQUEST,
                        "bad_request",
                        &format!("body is not JSON: {e}"),
                        &[],
                    ));
                }
            };
            let Some(channels) = v.get("event_channel_devices").and_then(Value::as_array) else {
                return Ok(platform_error(
                    StatusCode::BAD_REQUEST,
                    "bad_request",
                    "event_channel_devices (a list) is required",
                    &[(1, "event_channel_devices is required")],
                ));
            };
            if let Some(bad) = channels.iter().find(|c| c.as_str() != Some("email")) {
                return Ok(platform_error(
                    StatusCode::BAD_REQUEST,
                    "bad_request",
                    &format!(
                        "event_channel_devices: {bad} is not a channel; only \"email\" is accepted"
                    ),
                    &[(2, "only email is accepted")],
                ));
            }
            let was_on = config["event_channel_devices"]
                .as_array()
                .is_some_and(|a| !a.is_empty());
            config["event_channel_devices"] = json!(channels);
            config["updated_at"] = json!(now);
            if !was_on && !channels.is_empty() {
                config["email_activated_at"] = json!(sb.now());
            }
            let (name, text) = (account.name.clone(), config.to_string());
            sb.db
                .call(move |c| {
                    c.execute(
                        "UPDATE accounts SET integrator = ?2 WHERE name = ?1",
                        params![name, text],
                    )
                })
                .await?;
        }
        _ => {
            return Ok(platform_error(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "use GET or PATCH",
                &[],
            ));
        }
    }
    let mut out = config.clone();
    if let Some(o) = out.as_object_mut() {
        o.remove("email_activated_at");
    }
    out["notification_url_enabled"] = json!(account.webhook_url.is_some());
    Ok(ok_json(StatusCode::OK, &out))
}
