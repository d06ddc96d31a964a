//! An order's lifecycle: its status, the payments behind it (each paid one
//! names a classic payment, fetchable at `/v1/payments/{id}`), its version,
//! and the `order` webhook the platform sends when the status changes.

use serde_json::{Value, json};

use super::Ctx;
use crate::ops::changes::{self, PAYMENT_IDS};
use crate::ops::{queue, shapes};
use crate::state::{StateError, Tx, orders as stored, resources};
use pointhook_common::clock::rfc3339;
use pointhook_common::money::Money;

/// An order's `status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Status {
    Created,
    AtTerminal,
    Processed,
    ActionRequired,
    Failed,
    Canceled,
    Expired,
    Refunded,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Created => "created",
            Status::AtTerminal => "at_terminal",
            Status::Processed => "processed",
            Status::ActionRequired => "action_required",
            Status::Failed => "failed",
            Status::Canceled => "canceled",
            Status::Expired => "expired",
            Status::Refunded => "refunded",
        }
    }

    pub fn parse(s: &str) -> Option<Status> {
        [
            Status::Created,
            Status::AtTerminal,
            Status::Processed,
            Status::ActionRequired,
            Status::Failed,
            Status::Canceled,
            Status::Expired,
            Status::Refunded,
        ]
        .into_iter()
        .find(|x| x.as_str() == s)
    }

    /// The webhook action the platform sends on reaching this status
    /// (none for `created` and `at_terminal`).
    fn action(self) -> Option<&'static str> {
        match self {
            Status::Created | Status::AtTerminal => None,
            Status::Processed => Some("order.processed"),
            Status::ActionRequired => Some("order.action_required"),
            Status::Failed => Some("order.failed"),
            Status::Canceled => Some("order.canceled"),
            Status::Expired => Some("order.expired"),
            Status::Refunded => Some("order.refunded"),
        }
    }
}

pub(super) fn status(order: &Value) -> Option<Status> {
    order["status"].as_str().and_then(Status::parse)
}

pub(super) fn kind(order: &Value) -> &str {
    order["type"].as_str().unwrap_or_default()
}

/// `status_detail` of a paid order: Point writes `processed` in the GET,
/// QR and online `accredited`.
pub(super) fn processed_detail(order: &Value) -> &'static str {
    if kind(order) == "point" {
        "processed"
    } else {
        "accredited"
    }
}

/// An amount written as the platform writes it (a decimal string).
pub(super) fn money(v: &Value) -> Option<Money> {
    match v {
        Value::String(s) => Money::parse(s),
        Value::Number(n) => Money::parse(&n.to_string()),
        _ => None,
    }
}

pub(super) fn load(conn: &Tx<'_>, account: &str, id: &str) -> Result<Option<Value>, StateError> {
    Ok(resources::get(conn, "order", id)?
        .filter(|(owner, _)| owner == account)
        .map(|(_, body)| body))
}

pub(super) fn save(tx: &Tx<'_>, account: &str, order: &Value) -> Result<(), StateError> {
    let id = order["id"].as_str().unwrap_or_default();
    resources::put(tx, "order", id, account, order, None)
}

/// Stores a new order at version 1.
pub(super) fn insert(tx: &Tx<'_>, ctx: &Ctx, order: &Value) -> Result<(), StateError> {
    stored::start_version(tx, order["id"].as_str().unwrap_or_default())?;
    save(tx, &ctx.account.name, order)
}

/// Moves `order` to `status`/`detail` at `ctx.now` and stores it. A
/// change of either bumps the version; reaching a status the platform
/// notifies queues the `order` webhook. Returns whether it queued one.
pub(super) fn transition(
    tx: &Tx<'_>,
    ctx: &Ctx,
    order: &mut Value,
    to: Status,
    detail: &str,
) -> Result<bool, StateError> {
    let id = order["id"].as_str().unwrap_or_default().to_string();
    let before = status(order);
    let changed = before != Some(to) || order["status_detail"] != detail;
    order["status"] = json!(to.as_str());
    order["status_detail"] = json!(detail);
    order["last_updated_date"] = json!(rfc3339(ctx.now));
    let version = if changed {
        stored::bump_version(tx, &id)?
    } else {
        stored::version(tx, &id)?
    };
    save(tx, &ctx.account.name, order)?;
    let Some(action) = to.action().filter(|_| before != Some(to)) else {
        return Ok(false);
    };
    notify(tx, ctx, order, version, action)
}

/// Stores a change that moves no status (a payment's detail).
pub(super) fn touch(tx: &Tx<'_>, ctx: &Ctx, order: &mut Value) -> Result<(), StateError> {
    order["last_updated_date"] = json!(rfc3339(ctx.now));
    save(tx, &ctx.account.name, order)
}

/// Queues the `order` webhook to the account's webhook URL (orders are
/// notified only there: no per-order URL exists).
fn notify(
    tx: &Tx<'_>,
    ctx: &Ctx,
    order: &Value,
    version: i64,
    action: &str,
) -> Result<bool, StateError> {
    let Some(url) = ctx.account.webhook_url.as_deref() else {
        return Ok(false);
    };
    let id = order["id"].as_str().unwrap_or_default();
    let out = shapes::order_webhook(
        url,
        id,
        summary(order, version),
        action,
        &ctx.user_id(),
        &ctx.application_id(),
        &rfc3339(ctx.now),
        ctx.account.webhook_secret.as_deref(),
        (ctx.sent / 1000).max(0) as u64,
    );
    queue::enqueue(tx, &ctx.account.name, &out, ctx.sent)?;
    Ok(true)
}

/// The order as a webhook's `data` summarizes it (orders-api.md §3.2):
/// `check_on_terminal` and `accredited` where the GET says
/// `action_required` and `processed`; no transactions once refunded or
/// waiting for a check on the terminal.
fn summary(order: &Value, version: i64) -> Value {
    let status = status(order);
    let detail = match (status, order["status_detail"].as_str().unwrap_or_default()) {
        (Some(Status::Processed), "processed") => "accredited",
        (Some(Status::ActionRequired), "action_required") => "check_on_terminal",
        (_, d) => d,
    };
    let mut data = json!({
        "id": order["id"],
        "type": order["type"],
        "status": order["status"],
        "status_detail": detail,
        "version": version,
    });
    for field in ["external_reference", "total_paid_amount"] {
        if !order[field].is_null() {
            data[field] = order[field].clone();
        }
    }
    if kind(order) != "point" {
        data["total_amount"] = order["total_amount"].clone();
    }
    if !matches!(status, Some(Status::Refunded | Status::ActionRequired)) {
        let payments: Vec<Value> = order["transactions"]["payments"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| {
                let mut s = json!({
                    "id": p["id"], "amount": p["amount"],
                    "status": p["status"], "status_detail": p["status_detail"],
                });
                for field in ["paid_amount", "payment_method"] {
                    if !p[field].is_null() {
                        s[field] = p[field].clone();
                    }
                }
                if !p["reference_id"].is_null() {
                    s["reference"] = json!({"id": p["reference_id"]});
                }
                s
            })
            .collect();
        data["transactions"] = json!({"payments": payments});
    }
    data
}

pub(super) fn payments_mut(order: &mut Value) -> impl Iterator<Item = &mut Value> {
    order["transactions"]["payments"]
        .as_array_mut()
        .into_iter()
        .flatten()
}

/// Sets every payment of `order` to `status`/`detail`.
pub(super) fn set_payments(order: &mut Value, status: &str, detail: &str) {
    for p in payments_mut(order) {
        p["status"] = json!(status);
        p["status_detail"] = json!(detail);
    }
}

/// How a payment ends when the order is paid (or its payment refused).
pub(super) struct Payment<'a> {
    pub status: &'a str,
    pub detail: &'a str,
    /// The classic payment's status and detail.
    pub classic: (&'a str, &'a str),
    /// Overrides the payment method (the status simulator names one).
    pub method: Option<Value>,
}

/// Runs every payment of `order` through the payment network: each gets
/// `p.status`, a payment method, and a classic payment behind it
/// (`reference_id`); an accepted one counts as paid.
pub(super) fn pay(
    tx: &Tx<'_>,
    ctx: &Ctx,
    order: &mut Value,
    p: &Payment<'_>,
) -> Result<(), StateError> {
    let default_method = default_method(order);
    let external = order["external_reference"].clone();
    let description = order.get("description").cloned();
    // Only a processed order counts as paid: `action_required` leaves the
    // answer to the payment behind it.
    let paid = p.status == "processed";
    let mut total_paid = Money::ZERO;
    for payment in payments_mut(order) {
        let method = p
            .method
            .clone()
            .or_else(|| Some(payment["payment_method"].clone()).filter(|m| m.is_object()))
            .unwrap_or_else(|| default_method.clone());
        let amount = money(&payment["amount"]).unwrap_or(Money::ZERO);
        let classic_id = resources::next_id(tx, "payment", PAYMENT_IDS)?;
        let mut classic = changes::payment_body(
            classic_id,
            p.classic.0,
            amount,
            description.clone(),
            None,
            ctx.account.user_id(),
            ctx.now,
        );
        classic["status_detail"] = json!(p.classic.1);
        classic["payment_method_id"] = method["id"].clone();
        classic["payment_type_id"] = method["type"].clone();
        classic["external_reference"] = external.clone();
        resources::put(
            tx,
            "payment",
            &classic_id.to_string(),
            &ctx.account.name,
            &classic,
            None,
        )?;
        if matches!(method["type"].as_str(), Some("credit_card" | "debit_card")) {
            payment["card"] = json!({"first_digits": "450995", "last_digits": "3704"});
        }
        payment["payment_method"] = method;
        payment["status"] = json!(p.status);
        payment["status_detail"] = json!(p.detail);
        payment["reference_id"] = json!(classic_id.to_string());
        if paid {
            payment["paid_amount"] = json!(amount.to_string());
            payment["refunded_amount"] = json!(Money::ZERO.to_string());
            total_paid = total_paid.checked_add(amount).unwrap_or(total_paid);
        }
    }
    if paid {
        order["total_paid_amount"] = json!(total_paid.to_string());
    }
    Ok(())
}

/// The method a payment is made with when nothing names one: the order's
/// `config.payment_method.default_type`, else a credit card.
fn default_method(order: &Value) -> Value {
    if kind(order) == "qr" {
        return json!({"id": "account_money", "type": "account_money", "installments": 1});
    }
    match order["config"]["payment_method"]["default_type"].as_str() {
        Some("debit_card") => json!({"id": "debvisa", "type": "debit_card", "installments": 1}),
        Some("qr") => json!({"id": "account_money", "type": "account_money", "installments": 1}),
        _ => json!({"id": "visa", "type": "credit_card", "installments": 1}),
    }
}

/// Changes the classic payment behind an order's payment (a capture, a
/// refund). The platform's own notifications for it are not emulated.
pub(super) fn update_classic(
    tx: &Tx<'_>,
    account: &str,
    reference_id: &Value,
    change: impl FnOnce(&mut Value),
) -> Result<(), StateError> {
    let Some(id) = reference_id.as_str() else {
        return Ok(());
    };
    if let Some((owner, mut payment)) = resources::get(tx, "payment", id)?
        && owner == account
    {
        change(&mut payment);
        resources::put(tx, "payment", id, account, &payment, None)?;
    }
    Ok(())
}
