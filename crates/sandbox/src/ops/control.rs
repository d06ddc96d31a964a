//! What the control API does to an account's resources the way the
//! platform would, each change announced by the notifications the platform
//! would send (`changes`): merchant orders opened, paid and shipped,
//! payments moved to a status or preset, chargebacks opened and updated,
//! fraud alerts raised.

use http::StatusCode;
use serde_json::{Value, json};

use super::changes::{
    MERCHANT_ORDER_IDS, PAYMENT_IDS, amount_json, announce, announce_payment, owned, payment_body,
    refresh_order, save, save_payment, status_detail, store_payment,
};
use super::payments::NOT_LOOPBACK;
use super::sandbox::Sandbox;
use super::{queue, shapes};
use crate::error::HttpError;
use crate::model::AccountRow;
use crate::state::{StateError, accounts, resources};
use pointhook_common::clock::rfc3339;
use pointhook_common::money::Money;

fn bad(message: &str) -> HttpError {
    HttpError::control(StatusCode::BAD_REQUEST, message)
}

fn missing(message: &str) -> HttpError {
    HttpError::control(StatusCode::NOT_FOUND, message)
}

fn money_field(v: &Value, name: &str) -> Result<Money, HttpError> {
    v.get(name)
        .and_then(|a| Money::parse(&shapes::json_id_text(a)))
        .filter(|m| *m > Money::ZERO)
        .ok_or_else(|| bad(&format!("{name} must be a positive amount")))
}

fn object_url(sb: &Sandbox, v: &Value) -> Result<Option<String>, HttpError> {
    match v.get("notification_url") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(u))
            if url::Url::parse(u).is_ok_and(|x| matches!(x.scheme(), "http" | "https")) =>
        {
            if !sb.may_notify(u) {
                return Err(bad(NOT_LOOPBACK));
            }
            Ok(Some(u.clone()))
        }
        Some(_) => Err(bad("notification_url must be an http or https URL")),
    }
}

/// `POST /sandbox/merchant_orders {"total_amount","notification_url"?,"external_reference"?}`.
pub async fn new_order(sb: &Sandbox, account: &AccountRow, v: &Value) -> Result<Value, HttpError> {
    let total = money_field(v, "total_amount")?;
    let url = object_url(sb, v)?;
    let (name, now) = (account.name.clone(), sb.now());
    let external = v.get("external_reference").cloned().unwrap_or(Value::Null);
    let order = sb
        .db
        .call(move |tx| {
            let id = resources::next_id(tx, "merchant_order", MERCHANT_ORDER_IDS)?;
            let order = json!({
                "id": id, "status": "opened", "order_status": "payment_required",
                "external_reference": external, "total_amount": amount_json(total), "paid_amount": 0,
                "refunded_amount": 0, "cancelled": false, "payments": [], "shipments": [], "items": [],
                "date_created": rfc3339(now), "last_updated": rfc3339(now),
            });
            resources::put(tx, "merchant_order", &id.to_string(), &name, &order, url.as_deref())?;
            Ok::<_, StateError>(order)
        })
        .await?;
    announce(
        sb,
        account,
        "merchant_order",
        &order["id"].to_string(),
        "create",
    )
    .await?;
    Ok(order)
}

/// `POST /sandbox/merchant_orders/{id}/payments {"amount","status"?,"notification_url"?}`.
pub async fn pay_order(
    sb: &Sandbox,
    account: &AccountRow,
    order_id: &str,
    v: &Value,
) -> Result<Value, HttpError> {
    let amount = money_field(v, "amount")?;
    let url = object_url(sb, v)?;
    let mut order = owned(sb, account, "merchant_order", order_id)
        .await?
        .ok_or_else(|| missing(&format!("no merchant order {order_id}")))?;
    let status = v
        .get("status")
        .and_then(Value::as_str)
        .unwrap_or("approved")
        .to_string();
    let (name, now, collector) = (account.name.clone(), sb.now(), account.user_id());
    let oid = order_id.to_string();
    let payment = sb
        .db
        .call(move |tx| {
            let id = resources::next_id(tx, "payment", PAYMENT_IDS)?;
            let p = payment_body(id, &status, amount, None, Some(&order["id"]), collector, now);
            resources::put(tx, "payment", &id.to_string(), &name, &p, url.as_deref())?;
            if let Some(list) = order["payments"].as_array_mut() {
                list.push(json!({
                    "id": id, "transaction_amount": p["transaction_amount"], "total_paid_amount": p["transaction_amount"],
                    "status": status, "status_detail": p["status_detail"], "operation_type": "regular_payment",
                }));
            }
            refresh_order(&mut order);
            order["last_updated"] = json!(rfc3339(now));
            resources::put(tx, "merchant_order", &oid, &name, &order, None)?;
            Ok::<_, StateError>(p)
        })
        .await?;
    announce(
        sb,
        account,
        "payment",
        &payment["id"].to_string(),
        "payment.created",
    )
    .await?;
    announce(sb, account, "merchant_order", order_id, "update").await?;
    Ok(payment)
}

/// `POST /sandbox/merchant_orders/{id}/ship {"status"?}`: one shipment in
/// that status (`ready_to_ship` by default).
pub async fn ship_order(
    sb: &Sandbox,
    account: &AccountRow,
    id: &str,
    v: &Value,
) -> Result<Value, HttpError> {
    let mut order = owned(sb, account, "merchant_order", id)
        .await?
        .ok_or_else(|| missing(&format!("no merchant order {id}")))?;
    let status = v
        .get("status")
        .and_then(Value::as_str)
        .unwrap_or("ready_to_ship");
    order["shipments"] = json!([{"id": 41_000_000_000u64 + id.parse::<u64>().unwrap_or(0), "status": status, "shipping_sub_status": null}]);
    save(sb, account, "merchant_order", id, &order).await?;
    announce(sb, account, "merchant_order", id, "update").await?;
    Ok(order)
}

/// `POST /sandbox/payments/{id}/status {"status"}`.
pub async fn set_payment_status(
    sb: &Sandbox,
    account: &AccountRow,
    id: &str,
    v: &Value,
) -> Result<Value, HttpError> {
    let Some(status) = v.get("status").and_then(Value::as_str) else {
        return Err(bad(
            "status is required (approved, rejected, pending, in_process, …)",
        ));
    };
    let mut payment = owned(sb, account, "payment", id)
        .await?
        .ok_or_else(|| missing(&format!("no payment {id}")))?;
    payment["status"] = json!(status);
    payment["status_detail"] = json!(status_detail(status));
    save_payment(sb, account, &payment).await?;
    Ok(payment)
}

/// The status the account's next `POST /v1/payments` is created in.
pub async fn preset_next_payment_status(
    sb: &Sandbox,
    account: &AccountRow,
    v: &Value,
) -> Result<Value, HttpError> {
    let Some(status) = v.get("status").and_then(Value::as_str).map(str::to_string) else {
        return Err(bad("status is required"));
    };
    let name = account.name.clone();
    sb.db
        .call(move |tx| accounts::set_preset(tx, &name, "next_payment_status", &status))
        .await?;
    Ok(v.clone())
}

/// `POST /sandbox/chargebacks {"payment_id","reason"?}`: the chargeback,
/// and its payment `charged_back`.
pub async fn new_chargeback(
    sb: &Sandbox,
    account: &AccountRow,
    v: &Value,
) -> Result<Value, HttpError> {
    let Some(payment_id) = v.get("payment_id").map(shapes::json_id_text) else {
        return Err(bad("payment_id is required"));
    };
    let payment = owned(sb, account, "payment", &payment_id)
        .await?
        .ok_or_else(|| missing(&format!("no payment {payment_id}")))?;
    let (name, now) = (account.name.clone(), sb.now());
    let reason = v.get("reason").cloned().unwrap_or(json!("fraud"));
    // The payment is charged back from the chargeback on, as the platform
    // shows it (status `charged_back`, `in_process` while disputed).
    let mut charged = payment.clone();
    charged["status"] = json!("charged_back");
    charged["status_detail"] = json!("in_process");
    let stored = charged.clone();
    let (cb, order) = sb
        .db
        .call(move |tx| {
            let id = resources::next_id(tx, "chargeback", 43_589_345_900_001)?;
            let cb = json!({
                "id": id.to_string(), "payments": [payment["id"]], "currency": "ARS",
                "amount": payment["transaction_amount"], "reason": reason, "coverage_applied": null,
                "coverage_elegible": true, "documentation_required": true, "documentation_status": "pending",
                "date_created": rfc3339(now), "date_last_updated": rfc3339(now), "live_mode": false,
            });
            resources::put(tx, "chargeback", &id.to_string(), &name, &cb, None)?;
            let order = store_payment(tx, &name, &stored, now)?;
            Ok::<_, StateError>((cb, order))
        })
        .await?;
    announce(
        sb,
        account,
        "chargebacks",
        cb["id"].as_str().unwrap_or_default(),
        "create",
    )
    .await?;
    announce_payment(sb, account, &charged, order).await?;
    Ok(cb)
}

/// `POST /sandbox/chargebacks/{id} {"documentation_status"?,"coverage_applied"?,"reason"?}`.
pub async fn update_chargeback(
    sb: &Sandbox,
    account: &AccountRow,
    id: &str,
    v: &Value,
) -> Result<Value, HttpError> {
    let mut cb = owned(sb, account, "chargeback", id)
        .await?
        .ok_or_else(|| missing(&format!("no chargeback {id}")))?;
    for field in ["documentation_status", "coverage_applied", "reason"] {
        if let Some(x) = v.get(field) {
            cb[field] = x.clone();
        }
    }
    cb["date_last_updated"] = json!(rfc3339(sb.now()));
    save(sb, account, "chargeback", id, &cb).await?;
    announce(sb, account, "chargebacks", id, "update").await?;
    Ok(cb)
}

/// `POST /sandbox/fraud_alerts {"merchant_order","payment_id","description"?}`:
/// the IPN form to the account's notification URL (retried on the
/// schedule), and the webhook form to its webhook URL (once).
pub async fn fraud_alert(
    sb: &Sandbox,
    account: &AccountRow,
    v: &Value,
) -> Result<Value, HttpError> {
    let (Some(order), Some(payment)) = (v.get("merchant_order"), v.get("payment_id")) else {
        return Err(bad("merchant_order and payment_id are required"));
    };
    let description = v
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("Fraud risk detected: do not deliver");
    let now = sb.now();
    let mut outs = Vec::new();
    if let Some(url) = account
        .notification_url
        .as_deref()
        .filter(|_| account.wants("delivery_cancellation"))
    {
        outs.push(shapes::fraud_alert(url, order, payment, description));
    }
    if let Some(url) = account.webhook_url.as_deref() {
        outs.push(shapes::fraud_alert_webhook(
            url,
            order,
            payment,
            description,
            account.webhook_secret.as_deref(),
            &rfc3339(now),
            (now / 1000).max(0) as u64,
        ));
    }
    let name = account.name.clone();
    sb.db
        .call(move |tx| {
            outs.iter()
                .try_for_each(|out| queue::enqueue(tx, &name, out, now).map(|_| ()))
        })
        .await?;
    sb.queued();
    Ok(v.clone())
}
