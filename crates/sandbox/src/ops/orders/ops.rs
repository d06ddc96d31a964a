//! What is done to an existing order: cancel (200 while `created`; 202
//! while `at_terminal` with `x-allow-cancelable-status`, confirmed later
//! by the terminal), refund (total, or partial by payment), process and
//! capture of online orders.

use std::collections::BTreeMap;

use http::StatusCode;
use serde_json::{Value, json};

use super::lifecycle::{self, Payment, Status};
use super::schedule::{self, Step};
use super::{Ctx, Reply, checks, new_id, not_found};
use crate::error::HttpError;
use crate::ops::changes::amount_json;
use crate::state::{StateError, Tx, resources};
use pointhook_common::money::Money;

pub(super) fn cancel(
    tx: &Tx<'_>,
    ctx: &Ctx,
    id: &str,
    at_terminal_allowed: bool,
) -> Result<Reply, HttpError> {
    let Some(mut order) = lifecycle::load(tx, &ctx.account.name, id)? else {
        return Err(not_found(id));
    };
    let detail = order["status_detail"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    match lifecycle::status(&order) {
        Some(Status::Created) => {
            schedule::clear(tx, id)?;
            lifecycle::set_payments(&mut order, "canceled", "canceled_by_api");
            let queued = lifecycle::transition(tx, ctx, &mut order, Status::Canceled, "canceled")?;
            Ok(Reply::ok(StatusCode::OK, order).queued(queued))
        }
        // An online payment authorized and not captured is released.
        Some(Status::ActionRequired) if detail == "waiting_capture" => {
            let name = ctx.account.name.clone();
            for p in lifecycle::payments_mut(&mut order) {
                lifecycle::update_classic(tx, &name, &p["reference_id"], |c| {
                    c["status"] = json!("cancelled");
                    c["status_detail"] = json!("by_collector");
                })?;
            }
            schedule::clear(tx, id)?;
            lifecycle::set_payments(&mut order, "canceled", "canceled_by_api");
            let queued = lifecycle::transition(tx, ctx, &mut order, Status::Canceled, "canceled")?;
            Ok(Reply::ok(StatusCode::OK, order).queued(queued))
        }
        // The order stays on the terminal until the terminal confirms;
        // the `order.canceled` webhook says when.
        Some(Status::AtTerminal) if at_terminal_allowed => {
            let requested = order["transactions"]["payments"]
                .as_array()
                .is_some_and(|ps| {
                    ps.iter()
                        .any(|p| p["status_detail"] == "cancellation_requested")
                });
            if !requested {
                schedule::clear_terminal(tx, id)?;
                schedule::schedule(
                    tx,
                    ctx,
                    id,
                    ctx.after(ctx.now, schedule::CANCEL_CONFIRM),
                    Step::CancelConfirm,
                    &json!({}),
                )?;
                lifecycle::set_payments(&mut order, "at_terminal", "cancellation_requested");
                lifecycle::touch(tx, ctx, &mut order)?;
            }
            Ok(Reply::ok(StatusCode::ACCEPTED, order))
        }
        Some(Status::AtTerminal) => Err(HttpError::orders(
            StatusCode::CONFLICT,
            "cannot_cancel_order",
            "the order is on the terminal: cancel it there, or send x-allow-cancelable-status: at_terminal",
        )),
        Some(Status::Canceled) => Err(HttpError::orders(
            StatusCode::CONFLICT,
            "order_already_canceled",
            "the order is already canceled",
        )),
        _ => Err(HttpError::orders(
            StatusCode::CONFLICT,
            "cannot_cancel_order",
            &format!("an order in status {} cannot be canceled", order["status"]),
        )),
    }
}

/// Refunds: no body (or `null`, `{}`) refunds what is left of every
/// payment; `{"transactions":[{"id","amount"}]}` refunds those amounts.
pub(super) fn refund(tx: &Tx<'_>, ctx: &Ctx, id: &str, body: &Value) -> Result<Reply, HttpError> {
    let Some(mut order) = lifecycle::load(tx, &ctx.account.name, id)? else {
        return Err(not_found(id));
    };
    match lifecycle::status(&order) {
        Some(Status::Processed) => {}
        Some(Status::Refunded) => {
            return Err(HttpError::orders(
                StatusCode::CONFLICT,
                "order_already_refunded",
                "the order is already refunded",
            ));
        }
        _ => {
            return Err(HttpError::orders(
                StatusCode::CONFLICT,
                "cannot_refund_order",
                &format!(
                    "only processed orders can be refunded; this one is {}",
                    order["status"]
                ),
            ));
        }
    }
    let left = remaining(&order);
    let wanted = match &body["transactions"] {
        Value::Null if body.is_null() || body.is_object() => left.clone(),
        Value::Array(list) if !list.is_empty() => {
            let mut wanted: BTreeMap<usize, Money> = BTreeMap::new();
            for t in list {
                let pid = t["id"].as_str().unwrap_or_default();
                let Some(i) = order["transactions"]["payments"]
                    .as_array()
                    .and_then(|ps| ps.iter().position(|p| p["id"] == pid))
                else {
                    return Err(HttpError::orders(
                        StatusCode::NOT_FOUND,
                        "transaction_not_found",
                        &format!("the order has no payment {pid:?}"),
                    ));
                };
                let Some(amount) = t["amount"].as_str().and_then(checks::decimal) else {
                    return Err(HttpError::orders(
                        StatusCode::BAD_REQUEST,
                        "property_value",
                        "transactions[].amount must be a decimal string above zero with at most two decimals",
                    ));
                };
                let sum = wanted.entry(i).or_insert(Money::ZERO);
                *sum = sum.checked_add(amount).unwrap_or(*sum);
            }
            let mut out = Vec::new();
            for (i, amount) in wanted {
                let left = left
                    .iter()
                    .find(|(j, _)| *j == i)
                    .map_or(Money::ZERO, |l| l.1);
                if amount > left {
                    return Err(HttpError::orders(
                        StatusCode::BAD_REQUEST,
                        "refund_amount_exceeds",
                        &format!("{amount} is more than the {left} left to refund"),
                    ));
                }
                out.push((i, amount));
            }
            out
        }
        _ => {
            return Err(HttpError::orders(
                StatusCode::BAD_REQUEST,
                "bad_request",
                "send no body for a total refund, or {\"transactions\":[{\"id\",\"amount\"}]}",
            ));
        }
    };
    if wanted.is_empty() {
        return Err(HttpError::orders(
            StatusCode::CONFLICT,
            "cannot_refund_order",
            "nothing is left to refund",
        ));
    }
    let queued = apply_refunds(tx, ctx, &mut order, &wanted)?;
    Ok(Reply::ok(StatusCode::CREATED, order).queued(queued))
}

/// Refunds whatever is left (the simulator's `refunded`).
pub(super) fn refund_all(tx: &Tx<'_>, ctx: &Ctx, order: &mut Value) -> Result<bool, StateError> {
    let left = remaining(order);
    apply_refunds(tx, ctx, order, &left)
}

/// Each paid payment with what is left of it to refund.
fn remaining(order: &Value) -> Vec<(usize, Money)> {
    order["transactions"]["payments"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, p)| {
            let paid = lifecycle::money(&p["paid_amount"])?;
            let refunded = lifecycle::money(&p["refunded_amount"]).unwrap_or(Money::ZERO);
            let left = paid.checked_sub(refunded).ok()?;
            left.is_positive().then_some((i, left))
        })
        .collect()
}

/// Records each refund (`transactions.refunds[]`, the classic payment's
/// refunded amount); the order is `refunded` once nothing is left, else
/// `processed`/`partially_refunded`.
fn apply_refunds(
    tx: &Tx<'_>,
    ctx: &Ctx,
    order: &mut Value,
    wanted: &[(usize, Money)],
) -> Result<bool, StateError> {
    let name = ctx.account.name.clone();
    let mut refunds = Vec::new();
    for (i, amount) in wanted {
        let Some(p) = order["transactions"]["payments"].get_mut(*i) else {
            continue;
        };
        let refunded = lifecycle::money(&p["refunded_amount"])
            .unwrap_or(Money::ZERO)
            .checked_add(*amount)
            .unwrap_or(*amount);
        let paid = lifecycle::money(&p["paid_amount"]).unwrap_or(Money::ZERO);
        let whole = refunded >= paid;
        p["refunded_amount"] = json!(refunded.to_string());
        p["status"] = json!(if whole { "refunded" } else { "processed" });
        p["status_detail"] = json!(if whole {
            "refunded"
        } else {
            "partially_refunded"
        });
        lifecycle::update_classic(tx, &name, &p["reference_id"], |c| {
            c["transaction_amount_refunded"] = amount_json(refunded);
            if whole {
                c["status"] = json!("refunded");
                c["status_detail"] = json!("refunded");
            }
        })?;
        let classic_refund = resources::next_id(tx, "refund", 9_000_001)?;
        refunds.push(json!({
            "id": new_id("REF", ctx.now),
            "transaction_id": p["id"],
            "reference_id": classic_refund.to_string(),
            "amount": amount.to_string(),
            "status": "processed",
        }));
    }
    let list = &mut order["transactions"]["refunds"];
    if !list.is_array() {
        *list = json!([]);
    }
    if let Some(list) = list.as_array_mut() {
        list.extend(refunds);
    }
    if remaining(order).is_empty() {
        lifecycle::transition(tx, ctx, order, Status::Refunded, "refunded")
    } else {
        // No webhook: none is documented for a partial refund.
        lifecycle::transition(tx, ctx, order, Status::Processed, "partially_refunded")
    }
}

/// Processes an online order's payments: `processed`, or with manual
/// capture `action_required`/`waiting_capture` (authorized, not captured).
pub(super) fn process_online(
    tx: &Tx<'_>,
    ctx: &Ctx,
    order: &mut Value,
) -> Result<bool, StateError> {
    if order["capture_mode"] == "manual" {
        lifecycle::pay(
            tx,
            ctx,
            order,
            &Payment {
                status: "action_required",
                detail: "waiting_capture",
                classic: ("authorized", "pending_capture"),
                method: None,
            },
        )?;
        lifecycle::transition(tx, ctx, order, Status::ActionRequired, "waiting_capture")
    } else {
        lifecycle::pay(
            tx,
            ctx,
            order,
            &Payment {
                status: "processed",
                detail: "accredited",
                classic: ("approved", "accredited"),
                method: None,
            },
        )?;
        lifecycle::transition(tx, ctx, order, Status::Processed, "accredited")
    }
}

/// `POST /v1/orders/{id}/process`: an online order in manual mode.
pub(super) fn process(tx: &Tx<'_>, ctx: &Ctx, id: &str) -> Result<Reply, HttpError> {
    let Some(mut order) = lifecycle::load(tx, &ctx.account.name, id)? else {
        return Err(not_found(id));
    };
    if lifecycle::kind(&order) != "online"
        || order["processing_mode"] != "manual"
        || lifecycle::status(&order) != Some(Status::Created)
    {
        return Err(HttpError::orders(
            StatusCode::CONFLICT,
            "cannot_process_order",
            "only an online order in manual mode, still created, is processed by this call",
        ));
    }
    if order["transactions"]["payments"]
        .as_array()
        .is_none_or(Vec::is_empty)
    {
        return Err(HttpError::orders(
            StatusCode::BAD_REQUEST,
            "required_properties",
            "the order has no payment to process",
        ));
    }
    schedule::clear(tx, id)?;
    let queued = process_online(tx, ctx, &mut order)?;
    Ok(Reply::ok(StatusCode::OK, order).queued(queued))
}

/// `POST /v1/orders/{id}/capture`: an authorized online order.
pub(super) fn capture(tx: &Tx<'_>, ctx: &Ctx, id: &str) -> Result<Reply, HttpError> {
    let Some(mut order) = lifecycle::load(tx, &ctx.account.name, id)? else {
        return Err(not_found(id));
    };
    if lifecycle::status(&order) != Some(Status::ActionRequired)
        || order["status_detail"] != "waiting_capture"
    {
        return Err(HttpError::orders(
            StatusCode::CONFLICT,
            "cannot_capture_order",
            "only an online order waiting for its capture can be captured",
        ));
    }
    let name = ctx.account.name.clone();
    let mut total = Money::ZERO;
    for p in lifecycle::payments_mut(&mut order) {
        lifecycle::update_classic(tx, &name, &p["reference_id"], |c| {
            c["status"] = json!("approved");
            c["status_detail"] = json!("accredited");
        })?;
        let amount = lifecycle::money(&p["amount"]).unwrap_or(Money::ZERO);
        total = total.checked_add(amount).unwrap_or(total);
        p["status"] = json!("processed");
        p["status_detail"] = json!("accredited");
        p["paid_amount"] = json!(amount.to_string());
        p["refunded_amount"] = json!(Money::ZERO.to_string());
    }
    order["total_paid_amount"] = json!(total.to_string());
    let queued = lifecycle::transition(tx, ctx, &mut order, Status::Processed, "accredited")?;
    Ok(Reply::ok(StatusCode::OK, order).queued(queued))
}
