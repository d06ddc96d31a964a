// A refusal here is the response itself, built once and returned by value.
#![allow(clippy::result_large_err)]

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
//! notifications. Steps wait in `terminal_steps`, so they survive a
//! restart with a state file and run on the sandbox's clock like the
//! dispatcher's attempts (`run_terminals`).

use std::sync::Arc;
use std::time::Duration;

use http::{Response, StatusCode};
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::{Map, Value, json};

use super::Sandbox;
use super::accounts::{self, AccountRow, device_mode};
use super::db;
use super::devices::not_owned;
use super::intents::{self, FinalState};
use super::resources::{ok_json, platform_error};
use super::shapes;
use super::sql_enum::sql_enum;
use pointhook_common::clock::rfc3339;
use pointhook_common::response::Body;

/// How long a terminal takes for each step (platform time, scaled).
pub const TERMINAL_STEP: Duration = Duration::from_secs(5);

/// The state an intent's terminal moves it to next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i16)]
enum Step {
    OnTerminal = 1,
    Processing = 2,
    Final = 3,
}

sql_enum!(Step {
    OnTerminal,
    Processing,
    Final
});

impl Step {
    /// The state the intent must be in for this step to happen.
    fn requires(self) -> &'static str {
        match self {
            Step::OnTerminal => "OPEN",
            Step::Processing => "ON_TERMINAL",
            Step::Final => "PROCESSING",
        }
    }
}

/// `POST /point/integration-api/devices/{device}/payment-intents`: 201 with
/// the intent as the documented answer shows it (no state yet: it is OPEN).
pub(super) async fn create(
    sb: &Sandbox,
    account: &AccountRow,
    device: &str,
    body: &[u8],
) -> anyhow::Result<Response<Body>> {
    let v = match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => m,
        _ => return Ok(bad("body is not a JSON object")),
    };
    let intent = match new_intent(sb, device, &v) {
        Ok(i) => i,
        Err(r) => return Ok(r),
    };
    let id = shapes::json_id_text(&intent["id"]);
    let (name, dev, now) = (account.name.clone(), device.to_string(), sb.now());
    let due = now + sb.scaled(TERMINAL_STEP).as_millis() as i64;
    let stored = intent.clone();
    let refusal = sb
        .db
        .call(move |c| {
            let tx = c.transaction()?;
            let refusal = queue(&tx, &name, &dev, &id, &stored, now, due)?;
            tx.commit()?;
            Ok(refusal)
        })
        .await?;
    match refusal {
        Some(Refusal::NotOwned) => return Ok(not_owned(device)),
        Some(Refusal::Standalone) => {
            return Ok(conflict(&format!(
                "device {device} is in STANDALONE mode: payment intents need PDV mode"
            )));
        }
        Some(Refusal::Queued) => {
            return Ok(conflict(
                "There is already a queued payment intent for the device",
            ));
        }
        None => {}
    }
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
    Ok(ok_json(StatusCode::CREATED, &answer))
}

/// `DELETE /point/integration-api/devices/{device}/payment-intents/{id}`:
/// only while the intent is OPEN (not yet on the terminal); it ends
/// CANCELED, notified like any final state.
pub(super) async fn cancel(
    sb: &Sandbox,
    account: &AccountRow,
    device: &str,
    id: &str,
) -> anyhow::Result<Response<Body>> {
    let (name, dev, iid) = (account.name.clone(), device.to_string(), id.to_string());
    let state = sb
        .db
        .call(move |c| {
            let tx = c.transaction()?;
            let state = owned_intent(&tx, &name, &iid)?
                .filter(|i| i["device_id"] == dev.as_str())
                .map(|i| i["state"].as_str().unwrap_or_default().to_string());
            if state.as_deref() == Some("OPEN") {
                tx.execute("DELETE FROM terminal_steps WHERE intent_id = ?1", [&iid])?;
            }
            tx.commit()?;
            Ok(state)
        })
        .await?;
    match state.as_deref() {
        None => Ok(intent_not_found()),
        Some("OPEN") => {
            intents::finish(sb, account, id, FinalState::Canceled, None).await?;
            Ok(ok_json(StatusCode::OK, &json!({"id": id})))
        }
        Some(_) => Ok(conflict(&format!(
            "Can't update Payment Intent ID {id} due to a conflict error"
        ))),
    }
}

/// `GET /point/integration-api/payment-intents/{id}/events`: the intent's
/// last state, `{"status","created_on"}`.
pub(super) async fn last_event(
    sb: &Sandbox,
    account: &AccountRow,
    id: &str,
) -> anyhow::Result<Response<Body>> {
    let (name, iid) = (account.name.clone(), id.to_string());
    let found = sb
        .db
        .call(move |c| {
            let Some(intent) = owned_intent(c, &name, &iid)? else {
                return Ok(None);
            };
            let last: Option<(String, i64)> = c
                .query_row(
                    "SELECT status, at FROM intent_events WHERE account = ?1 AND intent_id = ?2
                     ORDER BY at DESC, rowid DESC LIMIT 1",
                    params![name, iid],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?;
            Ok(Some(match last {
                Some((status, at)) => json!({"status": status, "created_on": rfc3339(at)}),
                // Set whole through the control API: no event was recorded.
                None => json!({"status": intent["state"], "created_on": intent["created_at"]}),
            }))
        })
        .await?;
    Ok(match found {
        Some(v) => ok_json(StatusCode::OK, &v),
        None => intent_not_found(),
    })
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
                let Some(account) = self.db.call(move |c| accounts::by_name(c, &name)).await?
                else {
                    continue;
                };
                intents::finish(self, &account, &f.intent, f.outcome, f.payment_status).await?;
                tracing::info!(intent = %f.intent, state = f.outcome.as_str(), "sandbox terminal: intent ended");
            }
        }
    }

    /// When the next terminal step falls due (sandbox clock, ms).
    pub(super) async fn next_terminal_step(&self) -> anyhow::Result<Option<i64>> {
        self.db
            .call(|c| c.query_row("SELECT min(due_at) FROM terminal_steps", [], |r| r.get(0)))
            .await
    }

    /// One pass: the moves to ON_TERMINAL and PROCESSING are written; the
    /// intents due to end are taken off the table and returned.
    async fn take_due_steps(&self) -> anyhow::Result<(usize, Vec<Ending>)> {
        let now = self.now();
        let step = self.scaled(TERMINAL_STEP).as_millis() as i64;
        self.db
            .call(move |c| {
                let tx = c.transaction()?;
                let due: Vec<Due> = tx
                    .prepare(
                        "SELECT intent_id, account, next, due_at, outcome, payment_status
                         FROM terminal_steps WHERE due_at <= ?1 ORDER BY due_at, intent_id",
                    )?
                    .query_map([now], |r| {
                        Ok(Due {
                            intent: r.get(0)?,
                            account: r.get(1)?,
                            next: r.get(2)?,
                            due_at: r.get(3)?,
                            outcome: r.get(4)?,
                            payment_status: r.get(5)?,
                        })
                    })?
                    .collect::<rusqlite::Result<_>>()?;
                let (mut moved, mut finals) = (0, Vec::new());
                for d in due {
                    let intent = owned_intent(&tx, &d.account, &d.intent)?
                        .filter(|i| i["state"] == d.next.requires());
                    let Some(mut intent) = intent else {
                        // Moved some other way (the control API): the
                        // terminal lets it go.
                        tx.execute(
                            "DELETE FROM terminal_steps WHERE intent_id = ?1",
                            [&d.intent],
                        )?;
                        continue;
                    };
                    let (state, then) = match d.next {
                        Step::OnTerminal => ("ON_TERMINAL", Step::Processing),
                        Step::Processing => ("PROCESSING", Step::Final),
                        Step::Final => {
                            tx.execute(
                                "DELETE FROM terminal_steps WHERE intent_id = ?1",
                                [&d.intent],
                            )?;
                            finals.push(Ending {
                                account: d.account,
                                intent: d.intent,
                                outcome: d.outcome,
                                payment_status: d.payment_status,
                            });
                            continue;
                        }
                    };
                    intent["state"] = json!(state);
                    db::put_resource(&tx, "payment_intent", &d.intent, &d.account, &intent, None)?;
                    db::intent_event(&tx, &d.account, &d.intent, state, now)?;
                    tx.execute(
                        "UPDATE terminal_steps SET next = ?2, due_at = ?3 WHERE intent_id = ?1",
                        params![d.intent, then, d.due_at + step],
                    )?;
                    moved += 1;
                }
                tx.commit()?;
                Ok((moved, finals))
            })
            .await
    }
}

struct Due {
    intent: String,
    account: String,
    next: Step,
    due_at: i64,
    outcome: FinalState,
    payment_status: Option<String>,
}

struct Ending {
    account: String,
    intent: String,
    outcome: FinalState,
    payment_status: Option<String>,
}

enum Refusal {
    NotOwned,
    Standalone,
    Queued,
}

/// Stores the intent OPEN and hands it to the device's terminal, unless the
/// device cannot take it.
fn queue(
    tx: &Connection,
    account: &str,
    device: &str,
    id: &str,
    intent: &Value,
    now: i64,
    due: i64,
) -> rusqlite::Result<Option<Refusal>> {
    match device_mode(tx, account, device)?.as_deref() {
        None => return Ok(Some(Refusal::NotOwned)),
        Some("STANDALONE") => return Ok(Some(Refusal::Standalone)),
        Some(_) => {}
    }
    let busy: bool = tx.query_row(
        "SELECT count(*) > 0 FROM terminal_steps WHERE account = ?1 AND device_id = ?2",
        params![account, device],
        |r| r.get(0),
    )?;
    if busy {
        return Ok(Some(Refusal::Queued));
    }
    let preset: Option<(FinalState, Option<String>)> = tx
        .query_row(
            "SELECT outcome, payment_status FROM device_presets WHERE account = ?1 AND device_id = ?2",
            params![account, device],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let (outcome, status) = preset.unwrap_or((FinalState::Finished, None));
    db::put_resource(tx, "payment_intent", id, account, intent, None)?;
    db::intent_event(tx, account, id, "OPEN", now)?;
    tx.execute(
        "INSERT INTO terminal_steps (intent_id, account, device_id, next, due_at, outcome, payment_status)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![id, account, device, Step::OnTerminal, due, outcome, status],
    )?;
    Ok(None)
}

/// The intent to store, from the request's fields (documented:
/// `amount` in cents, `description`, `payment`, `additional_info`).
fn new_intent(sb: &Sandbox, device: &str, v: &Map<String, Value>) -> Result<Value, Response<Body>> {
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

fn owned_intent(c: &Connection, account: &str, id: &str) -> rusqlite::Result<Option<Value>> {
    Ok(db::get_resource(c, "payment_intent", id)?
        .filter(|(owner, body)| owner == account && body.is_object())
        .map(|(_, body)| body))
}

fn bad(message: &str) -> Response<Body> {
    platform_error(StatusCode::BAD_REQUEST, "bad_request", message, &[])
}

fn conflict(message: &str) -> Response<Body> {
    platform_error(StatusCode::CONFLICT, "conflict_error", message, &[])
}

pub(super) fn intent_not_found() -> Response<Body> {
    platform_error(
        StatusCode::NOT_FOUND,
        "not_found",
        "That payment intent doesn't exist!",
        &[],
    )
}
