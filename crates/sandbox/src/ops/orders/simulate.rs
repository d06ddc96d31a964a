//! The status simulator, `POST /v1/orders/{id}/events` (test
//! credentials only on the platform): the body checked as the reference
//! checks it, 204, and the outcome left to the sandbox's clock.

use std::time::Duration;

use http::StatusCode;
use serde_json::{Value, json};

use super::lifecycle::{self, Status};
use super::schedule::{self, Step};
use super::{Ctx, Reply, invalid_path_id, not_found, valid_id};
use crate::error::HttpError;
use crate::ops::sandbox::Sandbox;

/// The simulator reaches its status within 10 s, `action_required`
/// within 40 s (the simulate-order reference).
const SIMULATED: Duration = Duration::from_secs(10);
const SIMULATED_ACTION_REQUIRED: Duration = Duration::from_secs(40);

/// `POST /v1/orders/{id}/events`, the status simulator: checks the body,
/// answers 204 and leaves the rest to the clock: a Point order goes to
/// `at_terminal` at once and to the status within 10 s (40 s for
/// `action_required`); `refunded` refunds a processed order directly. The
/// platform documents it for Point; the sandbox also lets it pay, expire
/// or refund a QR order, whose buyer it cannot otherwise emulate.
pub async fn simulate(sb: &Sandbox, ctx: Ctx, id: &str, raw: &[u8]) -> Result<Reply, HttpError> {
    if !valid_id(id) {
        return Err(HttpError::orders(
            StatusCode::BAD_REQUEST,
            "bad_request",
            &invalid_path_id(id),
        ));
    }
    let bad = |m: &str| HttpError::orders(StatusCode::BAD_REQUEST, "bad_request", m);
    let Ok(v) = serde_json::from_slice::<Value>(raw) else {
        return Err(bad("the body must be a JSON object with a status"));
    };
    let Some(fields) = v.as_object() else {
        return Err(bad("the body must be a JSON object with a status"));
    };
    const FIELDS: [&str; 5] = [
        "status",
        "status_detail",
        "payment_method_type",
        "payment_method_id",
        "installments",
    ];
    if let Some(extra) = fields.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(bad(&format!("{extra} is not a field of the simulator")));
    }
    let want = v["status"].as_str().unwrap_or_default().to_string();
    if !matches!(
        want.as_str(),
        "processed" | "canceled" | "expired" | "failed" | "refunded" | "action_required"
    ) {
        return Err(bad(
            "status must be processed, canceled, expired, failed, refunded or action_required",
        ));
    }
    let method = simulated_method(&v);
    if method.is_some() && !matches!(want.as_str(), "processed" | "failed") {
        return Err(bad(
            "payment_method_type, payment_method_id and installments go with processed or failed only",
        ));
    }
    let mut arg = json!({"status": want});
    if let Some(d) = v["status_detail"].as_str() {
        arg["status_detail"] = json!(d);
    }
    if let Some(m) = method {
        arg["payment_method"] = m;
    }
    let id = id.to_string();
    sb.db
        .call(move |tx| {
            let Some(order) = lifecycle::load(tx, &ctx.account.name, &id)? else {
                return Err(not_found(&id));
            };
            let status = lifecycle::status(&order);
            let kind = lifecycle::kind(&order).to_string();
            let invalid = || {
                HttpError::orders(
                    StatusCode::BAD_REQUEST,
                    "bad_request",
                    &format!(
                        "a {kind} order in status {} cannot move to {want}",
                        order["status"]
                    ),
                )
            };
            let delay = if want == "action_required" {
                SIMULATED_ACTION_REQUIRED
            } else {
                SIMULATED
            };
            match (kind.as_str(), want.as_str(), status) {
                ("point" | "qr", "refunded", Some(Status::Processed)) => {}
                ("point", w, Some(Status::Created | Status::AtTerminal)) if w != "refunded" => {
                    schedule::clear_terminal(tx, &id)?;
                    if status == Some(Status::Created) {
                        schedule::schedule(
                            tx,
                            &ctx,
                            &id,
                            ctx.now,
                            Step::Pickup,
                            &json!({"force": true}),
                        )?;
                    }
                }
                ("qr", "processed" | "expired" | "canceled", Some(Status::Created)) => {}
                _ => return Err(invalid()),
            }
            schedule::schedule(
                tx,
                &ctx,
                &id,
                ctx.after(ctx.now, delay),
                Step::Outcome,
                &arg,
            )?;
            Ok(Reply {
                status: StatusCode::NO_CONTENT,
                body: None,
                queued: true,
            })
        })
        .await
}

/// The simulator's payment method: its type, brand and installments over
/// the order's default.
fn simulated_method(v: &Value) -> Option<Value> {
    let kind = v["payment_method_type"].as_str();
    let id = v["payment_method_id"].as_str();
    if kind.is_none() && id.is_none() && v["installments"].is_null() {
        return None;
    }
    let kind = kind.unwrap_or("credit_card");
    let id = id.unwrap_or(match kind {
        "debit_card" => "debvisa",
        "qr" | "account_money" => "account_money",
        _ => "visa",
    });
    Some(json!({
        "id": id,
        "type": kind,
        "installments": v["installments"].as_u64().unwrap_or(1),
    }))
}
