//! What happens to orders on the sandbox's clock: an emulated terminal
//! takes a Point order (`created` → `at_terminal`) and ends it with its
//! preset outcome; the status simulator's outcomes; a deferred cancel
//! confirmed by the terminal; expiry. Each is a row of `order_steps` due at
//! a time; `Sandbox::run_due` runs those due, in time order, each as of
//! its own due time (so a clock moved far ahead replays them in order).

use std::sync::Arc;

use serde_json::Value;

use super::lifecycle::{self, Payment, Status};
use super::schedule::{
    ACTION_REQUIRED_AFTER, Step, TERMINAL_PAYMENT, clear, clear_terminal, schedule,
};
use super::{Ctx, ops, terminals};
use crate::ops::changes::status_detail;
use crate::ops::sandbox::Sandbox;
use crate::state::orders as stored;
use crate::state::{StateError, Tx, accounts};

/// A clock moved far ahead is replayed in one go, up to this many steps.
const MAX_STEPS_PER_RUN: usize = 10_000;

impl Sandbox {
    /// Runs every order step due now; returns how many ran.
    pub(crate) async fn run_order_steps(self: &Arc<Self>) -> anyhow::Result<usize> {
        let (now, scale) = (self.now(), self.time_scale);
        let (ran, queued) = self
            .db
            .call(move |tx| {
                let (mut ran, mut queued) = (0, false);
                while ran < MAX_STEPS_PER_RUN {
                    let Some(row) = stored::take_due_step(tx, now)? else {
                        break;
                    };
                    ran += 1;
                    let account = accounts::by_name(tx, &row.account)?;
                    let (Some(account), Some(step)) = (account, Step::parse(&row.step)) else {
                        continue;
                    };
                    let ctx = Ctx {
                        account,
                        now: row.due_at,
                        sent: now,
                        scale,
                    };
                    let arg: Value = serde_json::from_str(&row.arg).unwrap_or(Value::Null);
                    queued |= apply(tx, &ctx, &row.order, step, &arg)?;
                }
                Ok::<_, StateError>((ran, queued))
            })
            .await?;
        if queued {
            self.queued();
        }
        Ok(ran)
    }
}

/// Runs one step; whether it queued a webhook. A step the order has
/// moved past does nothing.
fn apply(
    tx: &Tx<'_>,
    ctx: &Ctx,
    order_id: &str,
    step: Step,
    arg: &Value,
) -> Result<bool, StateError> {
    let Some(mut order) = lifecycle::load(tx, &ctx.account.name, order_id)? else {
        return Ok(false);
    };
    let status = lifecycle::status(&order);
    match step {
        Step::Pickup => {
            if status != Some(Status::Created) {
                return Ok(false);
            }
            let terminal = order["config"]["point"]["terminal_id"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let force = arg["force"] == true;
            if !force
                && terminals::terminal_mode(tx, &ctx.account.name, &terminal)?.as_deref()
                    != Some("PDV")
            {
                return Ok(false);
            }
            lifecycle::set_payments(&mut order, "at_terminal", "at_terminal");
            lifecycle::transition(tx, ctx, &mut order, Status::AtTerminal, "at_terminal")?;
            if !force {
                let preset = terminals::preset(tx, &ctx.account.name, &terminal)?;
                let after = match preset["status"].as_str() {
                    Some("expired") => return Ok(false),
                    Some("action_required") => ACTION_REQUIRED_AFTER,
                    _ => TERMINAL_PAYMENT,
                };
                schedule(
                    tx,
                    ctx,
                    order_id,
                    ctx.after(ctx.now, after),
                    Step::Outcome,
                    &preset,
                )?;
            }
            Ok(false)
        }
        Step::Outcome => outcome(tx, ctx, &mut order, arg),
        Step::CancelConfirm => {
            if status != Some(Status::AtTerminal) {
                return Ok(false);
            }
            lifecycle::set_payments(&mut order, "canceled", "canceled_by_api");
            lifecycle::transition(tx, ctx, &mut order, Status::Canceled, "canceled")
        }
        Step::Expire => {
            if !matches!(status, Some(Status::Created | Status::AtTerminal)) {
                return Ok(false);
            }
            clear(tx, order_id)?;
            lifecycle::set_payments(&mut order, "expired", "expired");
            lifecycle::transition(tx, ctx, &mut order, Status::Expired, "expired")
        }
    }
}

/// A final status reached on the terminal (or by the simulator): Point
/// orders from `at_terminal`, QR orders from `created`, a refund from
/// `processed`.
fn outcome(tx: &Tx<'_>, ctx: &Ctx, order: &mut Value, arg: &Value) -> Result<bool, StateError> {
    let status = lifecycle::status(order);
    let want = arg["status"].as_str().unwrap_or("processed");
    if want == "refunded" {
        return if status == Some(Status::Processed) {
            ops::refund_all(tx, ctx, order)
        } else {
            Ok(false)
        };
    }
    let from = if lifecycle::kind(order) == "point" {
        Status::AtTerminal
    } else {
        Status::Created
    };
    if status != Some(from) {
        return Ok(false);
    }
    clear_terminal(tx, order["id"].as_str().unwrap_or_default())?;
    let detail = arg["status_detail"].as_str();
    let method = arg.get("payment_method").filter(|m| m.is_object()).cloned();
    match want {
        "failed" => {
            let detail = detail.unwrap_or("bad_filled_card_data");
            lifecycle::pay(
                tx,
                ctx,
                order,
                &Payment {
                    status: "failed",
                    detail,
                    classic: ("rejected", "cc_rejected_other_reason"),
                    method,
                },
            )?;
            lifecycle::transition(tx, ctx, order, Status::Failed, "failed")
        }
        "action_required" => {
            // What the payment behind it says is the answer the merchant
            // has to look for.
            let classic = arg["payment_status"].as_str().unwrap_or("approved");
            lifecycle::pay(
                tx,
                ctx,
                order,
                &Payment {
                    status: "action_required",
                    detail: "check_on_terminal",
                    classic: (classic, status_detail(classic)),
                    method,
                },
            )?;
            lifecycle::transition(tx, ctx, order, Status::ActionRequired, "action_required")
        }
        "canceled" => {
            lifecycle::set_payments(order, "canceled", detail.unwrap_or("canceled_on_terminal"));
            lifecycle::transition(tx, ctx, order, Status::Canceled, "canceled")
        }
        "expired" => {
            lifecycle::set_payments(order, "expired", "expired");
            lifecycle::transition(tx, ctx, order, Status::Expired, "expired")
        }
        _ => {
            lifecycle::pay(
                tx,
                ctx,
                order,
                &Payment {
                    status: "processed",
                    detail: detail.unwrap_or("accredited"),
                    classic: ("approved", "accredited"),
                    method,
                },
            )?;
            let to = lifecycle::processed_detail(order);
            lifecycle::transition(tx, ctx, order, Status::Processed, to)
        }
    }
}
