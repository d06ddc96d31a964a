//! What happens to orders on the sandbox's clock: an emulated terminal
//! takes a Point order (`created` → `at_terminal`) and ends it with its
//! preset outcome; the status simulator's outcomes; a deferred cancel
//! confirmed by the terminal; expiry. Each is a row of `order_steps` due at
//! a time; `Sandbox::run_due` runs those due, in time order, each as of
//! its own due time (so a clock moved far ahead replays them in order).

use std::sync::Arc;
use std::time::Duration;

use rusqlite::{OptionalExtension, Transaction, params};
use serde_json::Value;

use super::state::{self, Payment, Status};
use super::{Ctx, ops, terminals};
use crate::Sandbox;
use crate::accounts::{ACCOUNT_COLUMNS, account_row};
use crate::changes::status_detail;

/// A terminal in PDV mode shows a new order after this.
pub(super) const TERMINAL_PICKUP: Duration = Duration::from_secs(5);
/// The buyer pays (or the payment fails, or is cancelled) this long
/// after the order reaches the terminal.
pub(super) const TERMINAL_PAYMENT: Duration = Duration::from_secs(20);
/// With no result, the platform says `action_required` 40 s after
/// processing started (orders-api.md §2.3).
pub(super) const ACTION_REQUIRED_AFTER: Duration = Duration::from_secs(40);
/// A terminal confirms a cancel requested through the API (the 202).
pub(super) const CANCEL_CONFIRM: Duration = Duration::from_secs(5);

/// The steps the sandbox runs at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// The terminal takes the order (`arg.force`: the simulator's, whatever
    /// the terminal's mode and with no outcome of the terminal's own).
    Pickup,
    /// A final status (`arg.status`, and what the simulator named).
    Outcome,
    CancelConfirm,
    Expire,
}

impl Step {
    fn as_str(self) -> &'static str {
        match self {
            Step::Pickup => "pickup",
            Step::Outcome => "outcome",
            Step::CancelConfirm => "cancel_confirm",
            Step::Expire => "expire",
        }
    }

    fn parse(s: &str) -> Option<Step> {
        [
            Step::Pickup,
            Step::Outcome,
            Step::CancelConfirm,
            Step::Expire,
        ]
        .into_iter()
        .find(|x| x.as_str() == s)
    }
}

pub(super) fn schedule(
    tx: &Transaction<'_>,
    ctx: &Ctx,
    order_id: &str,
    due_at: i64,
    step: Step,
    arg: &Value,
) -> rusqlite::Result<()> {
    tx.execute(
        "INSERT INTO order_steps (order_id, account, due_at, step, arg) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![
            order_id,
            ctx.account.name,
            due_at,
            step.as_str(),
            arg.to_string()
        ],
    )?;
    Ok(())
}

/// Drops what the terminal was going to do with the order (its expiry
/// stays).
pub(super) fn clear_terminal(tx: &Transaction<'_>, order_id: &str) -> rusqlite::Result<()> {
    tx.execute(
        "DELETE FROM order_steps WHERE order_id = ?1 AND step <> ?2",
        params![order_id, Step::Expire.as_str()],
    )?;
    Ok(())
}

pub(super) fn clear(tx: &Transaction<'_>, order_id: &str) -> rusqlite::Result<()> {
    tx.execute("DELETE FROM order_steps WHERE order_id = ?1", [order_id])?;
    Ok(())
}

/// A clock moved far ahead is replayed in one go, up to this many steps.
const MAX_STEPS_PER_RUN: usize = 10_000;

impl Sandbox {
    /// Runs every order step due now; returns how many ran.
    pub(crate) async fn run_order_steps(self: &Arc<Self>) -> anyhow::Result<usize> {
        let (now, scale) = (self.now(), self.time_scale);
        let (ran, queued) = self
            .db
            .call(move |conn| {
                let tx = conn.transaction()?;
                let (mut ran, mut queued) = (0, false);
                while ran < MAX_STEPS_PER_RUN {
                    let Some((id, order, account, due_at, step, arg)) = tx
                        .query_row(
                            "SELECT id, order_id, account, due_at, step, arg FROM order_steps
                             WHERE due_at <= ?1 ORDER BY due_at, id LIMIT 1",
                            [now],
                            |r| {
                                Ok((
                                    r.get::<_, i64>(0)?,
                                    r.get::<_, String>(1)?,
                                    r.get::<_, String>(2)?,
                                    r.get::<_, i64>(3)?,
                                    r.get::<_, String>(4)?,
                                    r.get::<_, String>(5)?,
                                ))
                            },
                        )
                        .optional()?
                    else {
                        break;
                    };
                    tx.execute("DELETE FROM order_steps WHERE id = ?1", [id])?;
                    ran += 1;
                    let row = tx
                        .query_row(
                            &format!("SELECT {ACCOUNT_COLUMNS} FROM accounts WHERE name = ?1"),
                            [&account],
                            account_row,
                        )
                        .optional()?;
                    let (Some(account), Some(step)) = (row, Step::parse(&step)) else {
                        continue;
                    };
                    let ctx = Ctx {
                        account,
                        now: due_at,
                        sent: now,
                        scale,
                    };
                    let arg: Value = serde_json::from_str(&arg).unwrap_or(Value::Null);
                    queued |= apply(&tx, &ctx, &order, step, &arg)?;
                }
                tx.commit()?;
                Ok((ran, queued))
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
    tx: &Transaction<'_>,
    ctx: &Ctx,
    order_id: &str,
    step: Step,
    arg: &Value,
) -> rusqlite::Result<bool> {
    let Some(mut order) = state::load(tx, &ctx.account.name, order_id)? else {
        return Ok(false);
    };
    let status = state::status(&order);
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
            state::set_payments(&mut order, "at_terminal", "at_terminal");
            state::transition(tx, ctx, &mut order, Status::AtTerminal, "at_terminal")?;
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
            state::set_payments(&mut order, "canceled", "canceled_by_api");
            state::transition(tx, ctx, &mut order, Status::Canceled, "canceled")
        }
        Step::Expire => {
            if !matches!(status, Some(Status::Created | Status::AtTerminal)) {
                return Ok(false);
            }
            clear(tx, order_id)?;
            state::set_payments(&mut order, "expired", "expired");
            state::transition(tx, ctx, &mut order, Status::Expired, "expired")
        }
    }
}

/// A final status reached on the terminal (or by the simulator): Point
/// orders from `at_terminal`, QR orders from `created`, a refund from
/// `processed`.
fn outcome(
    tx: &Transaction<'_>,
    ctx: &Ctx,
    order: &mut Value,
    arg: &Value,
) -> rusqlite::Result<bool> {
    let status = state::status(order);
    let want = arg["status"].as_str().unwrap_or("processed");
    if want == "refunded" {
        return if status == Some(Status::Processed) {
            ops::refund_all(tx, ctx, order)
        } else {
            Ok(false)
        };
    }
    let from = if state::kind(order) == "point" {
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
            state::pay(
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
            state::transition(tx, ctx, order, Status::Failed, "failed")
        }
        "action_required" => {
            // What the payment behind it says is the answer the merchant
            // has to look for.
            let classic = arg["payment_status"].as_str().unwrap_or("approved");
            state::pay(
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
            state::transition(tx, ctx, order, Status::ActionRequired, "action_required")
        }
        "canceled" => {
            state::set_payments(order, "canceled", detail.unwrap_or("canceled_on_terminal"));
            state::transition(tx, ctx, order, Status::Canceled, "canceled")
        }
        "expired" => {
            state::set_payments(order, "expired", "expired");
            state::transition(tx, ctx, order, Status::Expired, "expired")
        }
        _ => {
            state::pay(
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
            let to = state::processed_detail(order);
            state::transition(tx, ctx, order, Status::Processed, to)
        }
    }
}
