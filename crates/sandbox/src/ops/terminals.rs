//! Emulated Point terminals, and the payment-intent calls of the
//! point-of-sale API that reach them: create an intent on a device
//! (`POST /point/integration-api/devices/{device}/payment-intents`), cancel
//! it (`DELETE …/payment-intents/{id}`), and read its last state
//! (`GET /point/integration-api/payment-intents/{id}/events`).
//!
//! The device's terminal takes an intent and moves it as a terminal does,
//! one step every `TERMINAL_STEP` of sandbox time (scaled): OPEN →
//! ON_TERMINAL → PROCESSING → a final state, FINISHED with an approved
//! payment unless the device's preset says otherwise (`devices`). Each
//! state is recorded as an intent event; the final one goes through
//! `intents::finish`, which makes the payment and sends the intent's
//! notifications. Steps wait in the state, so they survive a restart with
//! a state file and run on the sandbox's clock like the dispatcher's
//! attempts (`run_terminals`).

use std::sync::Arc;
use std::time::Duration;

use http::StatusCode;
use serde_json::{Map, Value, json};

use super::changes::owned_in;
use super::devices::not_owned;
use super::intents;
use super::sandbox::Sandbox;
use super::shapes;
use crate::error::HttpError;
use crate::model::{AccountRow, FinalState, TerminalStep};
use crate::state::devices::{self, Step};
use crate::state::{StateError, Tx, accounts, resources};
use pointhook_common::clock::rfc3339;

/// How long a terminal takes for each step (platform time, scaled).
pub const TERMINAL_STEP: Duration = Duration::from_secs(5);

/// `POST /point/integration-api/devices/{device}/payment-intents`: 201 with
/// the intent as the documented answer shows it (no state yet: it is OPEN).
pub async fn create(
    sb: &Sandbox,
    account: &AccountRow,
    device: &str,
    body: &[u8],
) -> Result<Value, HttpError> {
    let v = match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => m,
        _ => return Err(bad("body is not a JSON object")),
    };
    let intent = new_intent(sb, device, &v)?;
    let id = shapes::json_id_text(&intent["id"]);
    let (name, dev, now) = (account.name.clone(), device.to_string(), sb.now());
    let due = now + sb.scaled(TERMINAL_STEP).as_millis() as i64;
    let stored = intent.clone();
    sb.db
        .call(move |tx| queue(tx, &name, &dev, &id, &stored, now, due))
        .await?;
    tracing::info!(
        intent = intent["id"].as_str().unwrap_or_default(),
        device = %pointhook_common::text::printable(device),
        "sandbox terminal: intent queued"
    );
    sb.queued();
    let mut answer = intent;
    if let Some(fields) = answer.as_object_mut() {
        for internal in ["state", "created_at", "caller_id", "client_id"] {
            fields.remove(internal);
        }
    }
    Ok(answer)
}

/// `DELETE /point/integration-api/devices/{device}/payment-intents/{id}`:
/// only while the intent is OPEN (not yet on the terminal); it ends
/// CANCELED, notified like any final state.
pub async fn cancel(
    sb: &Sandbox,
    account: &AccountRow,
    device: &str,
    id: &str,
) -> Result<Value, HttpError> {
    let (name, dev, iid) = (account.name.clone(), device.to_string(), id.to_string());
    let state = sb
        .db
        .call(move |tx| {
            let state = owned_in(tx, &name, "payment_intent", &iid)?
                .filter(|i| i["device_id"] == dev.as_str())
                .map(|i| i["state"].as_str().unwrap_or_default().to_string());
            if state.as_deref() == Some("OPEN") {
                devices::drop_step(tx, &iid)?;
            }
            Ok::<_, StateError>(state)
        })
        .await?;
    match state.as_deref() {
        None => Err(intent_not_found()),
        Some("OPEN") => {
            intents::finish(sb, account, id, FinalState::Canceled, None).await?;
            Ok(json!({"id": id}))
        }
        Some(_) => Err(conflict(&format!(
            "Can't update Payment Intent ID {id} due to a conflict error"
        ))),
    }
}

/// `GET /point/integration-api/payment-intents/{id}/events`: the intent's
/// last state, `{"status","created_on"}`.
pub async fn last_event(sb: &Sandbox, account: &AccountRow, id: &str) -> Result<Value, HttpError> {
    let (name, iid) = (account.name.clone(), id.to_string());
    sb.db
        .call(move |tx| {
            let intent =
                owned_in(tx, &name, "payment_intent", &iid)?.ok_or_else(intent_not_found)?;
            Ok(match resources::last_intent_event(tx, &name, &iid)? {
                Some((status, at)) => json!({"status": status, "created_on": rfc3339(at)}),
                // Set whole through the control API: no event was recorded.
                None => json!({"status": intent["state"], "created_on": intent["created_at"]}),
            })
        })
        .await
}

impl Sandbox {
    /// Moves every intent whose terminal step is due now; returns how many
    /// steps were taken. Steps that fell due together (a clock advanced a
    /// long way) are all taken, in order.
    pub async fn run_terminals(self: &Arc<Self>) -> anyhow::Result<usize> {
        let mut taken = 0;
        loop {
            let (moved, finals) = self.take_due_steps().await?;
            if moved == 0 && finals.is_empty() {
                return Ok(taken);
            }
            taken += moved + finals.len();
            for f in finals {
                let name = f.account.clone();
                let Some(account) = self.db.call(move |tx| accounts::by_name(tx, &name)).await?
                else {
                    continue;
                };
                intents::finish(self, &account, &f.intent, f.outcome, f.payment_status).await?;
                tracing::info!(intent = %f.intent, state = f.outcome.as_str(), "sandbox terminal: intent ended");
            }
        }
    }

    /// When the next terminal step falls due (sandbox clock, ms).
    pub(crate) async fn next_terminal_step(&self) -> anyhow::Result<Option<i64>> {
        Ok(self.db.call(|tx| devices::next_step_at(tx, None)).await?)
    }

    /// One pass: the moves to ON_TERMINAL and PROCESSING are written; the
    /// steps due to end their intents are taken off and returned.
    async fn take_due_steps(&self) -> anyhow::Result<(usize, Vec<Step>)> {
        let now = self.now();
        let step = self.scaled(TERMINAL_STEP).as_millis() as i64;
        Ok(self
            .db
            .call(move |tx| {
                let (mut moved, mut finals) = (0, Vec::new());
                for d in devices::due_steps(tx, now)? {
                    let intent = owned_in(tx, &d.account, "payment_intent", &d.intent)?
                        .filter(|i| i["state"] == d.next.requires());
                    let Some(mut intent) = intent else {
                        // Moved some other way (the control API): the
                        // terminal lets it go.
                        devices::drop_step(tx, &d.intent)?;
                        continue;
                    };
                    let (state, then) = match d.next {
                        TerminalStep::OnTerminal => ("ON_TERMINAL", TerminalStep::Processing),
                        TerminalStep::Processing => ("PROCESSING", TerminalStep::Final),
                        TerminalStep::Final => {
                            devices::drop_step(tx, &d.intent)?;
                            finals.push(d);
                            continue;
                        }
                    };
                    intent["state"] = json!(state);
                    resources::put(tx, "payment_intent", &d.intent, &d.account, &intent, None)?;
                    resources::intent_event(tx, &d.account, &d.intent, state, now)?;
                    devices::set_step(tx, &d.intent, then, d.due_at + step)?;
                    moved += 1;
                }
                Ok::<_, StateError>((moved, finals))
            })
            .await?)
    }
}

/// Stores the intent OPEN and hands it to the device's terminal, unless the
/// device cannot take it.
fn queue(
    tx: &Tx<'_>,
    account: &str,
    device: &str,
    id: &str,
    intent: &Value,
    now: i64,
    due: i64,
) -> Result<(), HttpError> {
    match devices::mode(tx, account, device)?.as_deref() {
        None => return Err(not_owned(device)),
        Some("STANDALONE") => {
            return Err(conflict(&format!(
                "device {device} is in STANDALONE mode: payment intents need PDV mode"
            )));
        }
        Some(_) => {}
    }
    if devices::busy(tx, account, device)? {
        return Err(conflict(
            "There is already a queued payment intent for the device",
        ));
    }
    let (outcome, payment_status) =
        devices::preset(tx, account, device)?.unwrap_or((FinalState::Finished, None));
    resources::put(tx, "payment_intent", id, account, intent, None)?;
    resources::intent_event(tx, account, id, "OPEN", now)?;
    devices::add_step(
        tx,
        &Step {
            intent: id.to_string(),
            account: account.to_string(),
            device: device.to_string(),
            next: TerminalStep::OnTerminal,
            due_at: due,
            outcome,
            payment_status,
        },
    )?;
    Ok(())
}

/// The intent to store, from the request's fields (documented:
/// `amount` in cents, `description`, `payment`, `additional_info`).
fn new_intent(sb: &Sandbox, device: &str, v: &Map<String, Value>) -> Result<Value, HttpError> {
    if v.contains_key("notification_url") {
        return Err(bad(
            "notification_url is not a field of payment intents: their webhooks go to the integrator's URL",
        ));
    }
    let Some(amount) = v.get("amount").and_then(Value::as_i64).filter(|a| *a >= 1) else {
        return Err(bad(
            "amount is required (a whole number of cents, 1 or more)",
        ));
    };
    let object = |name: &str| match v.get(name) {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(m)) => Ok(m.clone()),
        Some(_) => Err(bad(&format!("{name} must be an object"))),
    };
    let mut payment = object("payment")?;
    let info = object("additional_info")?;
    if v.get("description")
        .is_some_and(|d| !d.is_string() && !d.is_null())
    {
        return Err(bad("description must be a string"));
    }
    payment.entry("installments").or_insert(json!(1));
    payment.entry("type").or_insert(json!("credit_card"));
    payment
        .entry("installments_cost")
        .or_insert(json!("seller"));
    Ok(json!({
        "id": shapes::uuid_like(),
        "device_id": device,
        "amount": amount,
        "description": v.get("description").cloned().unwrap_or(Value::Null),
        "payment": payment,
        "additional_info": {
            "external_reference": info.get("external_reference").cloned().unwrap_or(Value::Null),
            "print_on_terminal": info.get("print_on_terminal").cloned().unwrap_or(json!(true)),
            "ticket_number": info.get("ticket_number").cloned().unwrap_or(Value::Null),
        },
        "state": "OPEN",
        "created_at": rfc3339(sb.now()),
        "caller_id": 9876543,
        "client_id": 1234567890,
    }))
}

fn bad(message: &str) -> HttpError {
    HttpError::platform(StatusCode::BAD_REQUEST, "bad_request", message)
}

fn conflict(message: &str) -> HttpError {
    HttpError::platform(StatusCode::CONFLICT, "conflict_error", message)
}

pub fn intent_not_found() -> HttpError {
    HttpError::platform(
        StatusCode::NOT_FOUND,
        "not_found",
        "That payment intent doesn't exist!",
    )
}
