//! The control API (`/sandbox/…`, JSON): create and change resources the
//! way the platform would, each change announced by the notifications the
//! platform would send (`changes`); read the delivery log; switch the
//! platform's quirks on and off (`quirks`); read and advance a manual clock
//! (`clock`).
//!
//! The account is the Bearer token's, else `?account=NAME`, else the first.

// A refusal here is the response itself, built once and returned by value.
#![allow(clippy::result_large_err)]

use std::sync::Arc;

use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use rusqlite::params;
use serde_json::{Value, json};

use super::Sandbox;
use super::accounts::{AccountRow, add_device, control_account};
use super::changes::{
    amount_json, announce, owned, payment_body, refresh_order, save_payment, status_detail,
};
use super::db;
use super::dispatch;
use super::intents::{create_intent, move_intent};
use super::quirks;
use super::resources::ok_json;
use super::shapes;
use crate::clock::rfc3339;
use crate::http::classify::Query;
use crate::http::response::Body;
use crate::money::Money;

pub(super) fn control_error(status: StatusCode, message: &str) -> Response<Body> {
    crate::http::response::error(status, "bad_request", message)
}

async fn json_body(req: Request<Incoming>) -> anyhow::Result<Result<Value, Response<Body>>> {
    let bytes = req.into_body().collect().await?.to_bytes();
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Ok(json!({})));
    }
    Ok(serde_json::from_slice(&bytes)
        .map_err(|e| control_error(StatusCode::BAD_REQUEST, &format!("body is not JSON: {e}"))))
}

macro_rules! body_or_refuse {
    ($req:expr) => {
        match json_body($req).await? {
            Ok(v) => v,
            Err(refusal) => return Ok(refusal),
        }
    };
}

fn money_field(v: &Value, name: &str) -> Result<Money, Response<Body>> {
    v.get(name)
        .and_then(|a| Money::parse(&shapes::json_id_text(a)))
        .filter(|m| *m > Money::ZERO)
        .ok_or_else(|| {
            control_error(
                StatusCode::BAD_REQUEST,
                &format!("{name} must be a positive amount"),
            )
        })
}

pub(super) async fn handle(
    sb: &Arc<Sandbox>,
    req: Request<Incoming>,
) -> anyhow::Result<Response<Body>> {
    let path = req.uri().path().to_string();
    let parts: Vec<&str> = path.trim_matches('/').split('/').skip(1).collect();
    let method = req.method().clone();
    if method == Method::GET && parts.as_slice() == ["deliveries"] {
        let limit = Query::parse(req.uri().query().unwrap_or(""))
            .get("limit")
            .and_then(|l| l.parse().ok())
            .unwrap_or(200);
        return Ok(ok_json(
            StatusCode::OK,
            &serde_json::to_value(sb.delivery_log(limit).await?)?,
        ));
    }
    match (&method, parts.as_slice()) {
        (&Method::GET, ["clock"]) => return Ok(ok_json(StatusCode::OK, &sb.clock_state())),
        (&Method::POST, ["clock", "advance"]) => {
            let v = body_or_refuse!(req);
            return advance_clock(sb, &v).await;
        }
        (&Method::GET, ["quirks"]) => {
            let described = sb.db.call(|c| quirks::describe(c)).await?;
            return Ok(ok_json(StatusCode::OK, &described));
        }
        (&Method::POST, ["quirks"]) => {
            let v = body_or_refuse!(req);
            return set_quirks(sb, v).await;
        }
        (&Method::DELETE, ["quirks"]) => {
            let described = sb
                .db
                .call(|c| {
                    quirks::clear(c)?;
                    quirks::describe(c)
                })
                .await?;
            return Ok(ok_json(StatusCode::OK, &described));
        }
        (&Method::GET, ["requests"]) => {
            return Ok(ok_json(
                StatusCode::OK,
                &serde_json::to_value(sb.faults.calls())?,
            ));
        }
        (&Method::DELETE, ["faults"]) => {
            sb.faults.clear();
            return Ok(ok_json(StatusCode::OK, &json!({"cleared": true})));
        }
        (&Method::POST, ["faults"]) => {
            let v = body_or_refuse!(req);
            if let Some(n) = v.get("drop_notifications") {
                let Some(n) = n.as_u64().and_then(|n| u32::try_from(n).ok()) else {
                    return Ok(control_error(
                        StatusCode::BAD_REQUEST,
                        "drop_notifications must be a whole number",
                    ));
                };
                let topic = match v.get("topic") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(t)) => Some(t.clone()),
                    Some(_) => {
                        return Ok(control_error(
                            StatusCode::BAD_REQUEST,
                            "topic must be a string (payment, merchant_order, chargebacks, point_integration_ipn, payment_intent …)",
                        ));
                    }
                };
                sb.db
                    .call(move |c| db::add_drop(c, topic.as_deref(), n))
                    .await?;
                return Ok(ok_json(StatusCode::CREATED, &v));
            }
            return match serde_json::from_value::<super::faults::Fault>(v.clone()) {
                Ok(f) => {
                    sb.faults.add(f);
                    Ok(ok_json(StatusCode::CREATED, &v))
                }
                Err(e) => Ok(control_error(
                    StatusCode::BAD_REQUEST,
                    &format!("not a fault: {e}"),
                )),
            };
        }
        _ => {}
    }
    let Some(account) = control_account(sb, &req).await? else {
        return Ok(control_error(StatusCode::NOT_FOUND, "no such account"));
    };
    match (&method, parts.as_slice()) {
        (&Method::POST, ["merchant_orders"]) => {
            let v = body_or_refuse!(req);
            create_order(sb, &account, &v).await
        }
        (&Method::POST, ["merchant_orders", id, "payments"]) => {
            let v = body_or_refuse!(req);
            add_payment(sb, &account, id, &v).await
        }
        (&Method::POST, ["merchant_orders", id, "ship"]) => {
            let v = body_or_refuse!(req);
            let Some(mut order) = owned(sb, &account, "merchant_order", id).await? else {
                return Ok(control_error(
                    StatusCode::NOT_FOUND,
                    &format!("no merchant order {id}"),
                ));
            };
            let status = v
                .get("status")
                .and_then(Value::as_str)
                .unwrap_or("ready_to_ship");
            order["shipments"] = json!([{"id": 41_000_000_000u64 + id.parse::<u64>().unwrap_or(0), "status": status, "shipping_sub_status": null}]);
            save(sb, &account, "merchant_order", id, &order).await?;
            announce(sb, &account, "merchant_order", id, "update").await?;
            Ok(ok_json(StatusCode::OK, &order))
        }
        (&Method::POST, ["payments", id, "status"]) => {
            let v = body_or_refuse!(req);
            let Some(status) = v.get("status").and_then(Value::as_str) else {
                return Ok(control_error(
                    StatusCode::BAD_REQUEST,
                    "status is required (approved, rejected, pending, in_process, …)",
                ));
            };
            let Some(mut payment) = owned(sb, &account, "payment", id).await? else {
                return Ok(control_error(
                    StatusCode::NOT_FOUND,
                    &format!("no payment {id}"),
                ));
            };
            payment["status"] = json!(status);
            payment["status_detail"] = json!(status_detail(status));
            save_payment(sb, &account, &payment).await?;
            Ok(ok_json(StatusCode::OK, &payment))
        }
        (&Method::POST, ["presets", "next_payment_status"]) => {
            let v = body_or_refuse!(req);
            let Some(status) = v.get("status").and_then(Value::as_str).map(str::to_string) else {
                return Ok(control_error(StatusCode::BAD_REQUEST, "status is required"));
            };
            let name = account.name.clone();
            sb.db
                .call(move |c| {
                    c.execute(
                        "INSERT INTO presets (account, name, value) VALUES (?1, 'next_payment_status', ?2)
                         ON CONFLICT (account, name) DO UPDATE SET value = excluded.value",
                        params![name, status],
                    )
                })
                .await?;
            Ok(ok_json(StatusCode::OK, &v))
        }
        (&Method::POST, ["chargebacks"]) => {
            let v = body_or_refuse!(req);
            open_chargeback(sb, &account, &v).await
        }
        (&Method::POST, ["chargebacks", id]) => {
            let v = body_or_refuse!(req);
            let Some(mut cb) = owned(sb, &account, "chargeback", id).await? else {
                return Ok(control_error(
                    StatusCode::NOT_FOUND,
                    &format!("no chargeback {id}"),
                ));
            };
            for field in ["documentation_status", "coverage_applied", "reason"] {
                if let Some(x) = v.get(field) {
                    cb[field] = x.clone();
                }
            }
            cb["date_last_updated"] = json!(rfc3339(sb.now()));
            save(sb, &account, "chargeback", id, &cb).await?;
            announce(sb, &account, "chargebacks", id, "update").await?;
            Ok(ok_json(StatusCode::OK, &cb))
        }
        (&Method::POST, ["fraud_alerts"]) => {
            let v = body_or_refuse!(req);
            let (Some(order), Some(payment)) = (v.get("merchant_order"), v.get("payment_id"))
            else {
                return Ok(control_error(
                    StatusCode::BAD_REQUEST,
                    "merchant_order and payment_id are required",
                ));
            };
            let description = v
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("Fraud risk detected: do not deliver");
            // The IPN form to the account's notification URL (retried on
            // the schedule), and the webhook form to its webhook URL (once).
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
                .call(move |c| {
                    outs.iter()
                        .try_for_each(|out| dispatch::enqueue(c, &name, out, now).map(|_| ()))
                })
                .await?;
            sb.queued();
            Ok(ok_json(StatusCode::ACCEPTED, &v))
        }
        (&Method::POST, ["devices"]) => {
            let v = body_or_refuse!(req);
            let Some(device) = v.get("id").and_then(Value::as_str).map(str::to_string) else {
                return Ok(control_error(
                    StatusCode::BAD_REQUEST,
                    "id (the device id) is required",
                ));
            };
            let name = account.name.clone();
            sb.db.call(move |c| add_device(c, &name, &device)).await?;
            Ok(ok_json(StatusCode::CREATED, &v))
        }
        (&Method::POST, ["devices", device, "preset"]) => {
            let v = body_or_refuse!(req);
            super::devices::set_preset(sb, &account, device, &v).await
        }
        (&Method::DELETE, ["devices", device, "preset"]) => {
            super::devices::clear_preset(sb, &account, device).await
        }
        (&Method::POST, ["devices", device, "events"]) => {
            let v = body_or_refuse!(req);
            let event = v.get("event").and_then(Value::as_str).unwrap_or_default();
            let Some(text) = super::mail::describe(event, v.get("mode").and_then(Value::as_str))
            else {
                return Ok(control_error(
                    StatusCode::BAD_REQUEST,
                    "event must be restart, logout, or mode_change with mode PDV or STANDALONE",
                ));
            };
            let (name, device, now) = (account.name.clone(), device.to_string(), sb.now());
            let known = sb
                .db
                .call(move |c| {
                    let known: bool = c.query_row(
                        "SELECT count(*) > 0 FROM devices WHERE account = ?1 AND device_id = ?2",
                        params![name, device],
                        |r| r.get(0),
                    )?;
                    if known {
                        c.execute(
                            "INSERT INTO mails (account, device, event, at) VALUES (?1, ?2, ?3, ?4)",
                            params![name, device, text, now],
                        )?;
                    }
                    Ok(known)
                })
                .await?;
            if !known {
                return Ok(control_error(
                    StatusCode::NOT_FOUND,
                    "no such device for this account (POST /sandbox/devices first)",
                ));
            }
            sb.queued();
            Ok(ok_json(StatusCode::ACCEPTED, &v))
        }
        (&Method::PUT, ["resources", kind, id]) => {
            let kind: &'static str = match *kind {
                "payment" => "payment",
                "merchant_order" => "merchant_order",
                "chargeback" => "chargeback",
                "payment_intent" => "payment_intent",
                other => {
                    return Ok(control_error(
                        StatusCode::BAD_REQUEST,
                        &format!(
                            "{other} is not a kind: payment, merchant_order, chargeback or payment_intent"
                        ),
                    ));
                }
            };
            let v = body_or_refuse!(req);
            save(sb, &account, kind, id, &v).await?;
            Ok(ok_json(StatusCode::OK, &v))
        }
        (&Method::POST, ["payment_intents"]) => {
            let v = body_or_refuse!(req);
            create_intent(sb, &account, &v).await
        }
        (&Method::POST, ["payment_intents", id, "state"]) => {
            let v = body_or_refuse!(req);
            move_intent(sb, &account, id, &v).await
        }
        (&Method::POST, ["terminals", id]) => {
            let v = body_or_refuse!(req);
            super::orders::set_terminal_outcome(sb, &account, id, &v).await
        }
        _ => Ok(control_error(
            StatusCode::NOT_FOUND,
            &format!("no control endpoint {method} {path}"),
        )),
    }
}

fn not_manual() -> Response<Body> {
    crate::http::response::error(
        StatusCode::CONFLICT,
        "clock_not_manual",
        "the sandbox runs on the real clock: start it with --clock manual to advance it",
    )
}

/// `POST /sandbox/clock/advance {"seconds": N}`: only on a manual clock,
/// and only forward by a sane amount.
async fn advance_clock(sb: &Arc<Sandbox>, v: &Value) -> anyhow::Result<Response<Body>> {
    if sb.clock.manual().is_none() {
        return Ok(not_manual());
    }
    let max = super::clock::MAX_ADVANCE.as_secs();
    let by = v
        .get("seconds")
        .and_then(Value::as_f64)
        .filter(|s| s.is_finite() && *s > 0.0 && *s <= max as f64)
        .and_then(|s| std::time::Duration::try_from_secs_f64(s).ok());
    let Some(by) = by else {
        return Ok(control_error(
            StatusCode::BAD_REQUEST,
            &format!("seconds must be a positive number of seconds, at most {max} (30 days)"),
        ));
    };
    match sb.advance(by).await? {
        Ok(advanced) => Ok(ok_json(StatusCode::OK, &serde_json::to_value(advanced)?)),
        Err(super::clock::Refused::NotManual) => Ok(not_manual()),
    }
}

/// `POST /sandbox/quirks {"account"?: NAME, …}`: sets the quirks given,
/// for that account or (without one) for every account.
async fn set_quirks(sb: &Sandbox, mut v: Value) -> anyhow::Result<Response<Body>> {
    let Some(fields) = v.as_object_mut() else {
        return Ok(control_error(
            StatusCode::BAD_REQUEST,
            "the body must be a JSON object",
        ));
    };
    let account = match fields.remove("account") {
        None | Some(Value::Null) => None,
        Some(Value::String(name)) => Some(name),
        Some(_) => {
            return Ok(control_error(
                StatusCode::BAD_REQUEST,
                "account must be an account's name",
            ));
        }
    };
    let patch = match serde_json::from_value::<quirks::QuirkSet>(v) {
        Ok(p) => p,
        Err(e) => {
            return Ok(control_error(
                StatusCode::BAD_REQUEST,
                &format!(
                    "not a quirk setting ({e}): eventual_consistency_ms (milliseconds), twins, out_of_order, duplicates, unsigned (true or false)"
                ),
            ));
        }
    };
    if let Err(message) = patch.check() {
        return Ok(control_error(StatusCode::BAD_REQUEST, &message));
    }
    if let Some(name) = account.clone() {
        let known = sb
            .db
            .call(move |c| super::accounts::by_name(c, &name))
            .await?
            .is_some();
        if !known {
            return Ok(control_error(
                StatusCode::NOT_FOUND,
                &format!("no account {:?}", account.as_deref().unwrap_or_default()),
            ));
        }
    }
    let described = sb
        .db
        .call(move |c| {
            quirks::set(c, account.as_deref(), patch)?;
            quirks::describe(c)
        })
        .await?;
    Ok(ok_json(StatusCode::OK, &described))
}

pub(super) async fn save(
    sb: &Sandbox,
    account: &AccountRow,
    kind: &'static str,
    id: &str,
    body: &Value,
) -> anyhow::Result<()> {
    let (name, id, mut body) = (account.name.clone(), id.to_string(), body.clone());
    let now = sb.now();
    if kind == "merchant_order" {
        body["last_updated"] = json!(rfc3339(now));
    }
    sb.db
        .call(move |c| {
            let tx = c.transaction()?;
            db::put_resource(&tx, kind, &id, &name, &body, None)?;
            if kind == "payment_intent"
                && let Some(state) = body["state"].as_str()
            {
                db::intent_event(&tx, &name, &id, state, now)?;
            }
            tx.commit()
        })
        .await
}

fn object_url(v: &Value) -> Result<Option<String>, Response<Body>> {
    match v.get("notification_url") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(u))
            if url::Url::parse(u).is_ok_and(|x| matches!(x.scheme(), "http" | "https")) =>
        {
            Ok(Some(u.clone()))
        }
        Some(_) => Err(control_error(
            StatusCode::BAD_REQUEST,
            "notification_url must be an http or https URL",
        )),
    }
}

async fn create_order(
    sb: &Sandbox,
    account: &AccountRow,
    v: &Value,
) -> anyhow::Result<Response<Body>> {
    let total = match money_field(v, "total_amount") {
        Ok(t) => t,
        Err(r) => return Ok(r),
    };
    let url = match object_url(v) {
        Ok(u) => u,
        Err(r) => return Ok(r),
    };
    let (name, now) = (account.name.clone(), sb.now());
    let external = v.get("external_reference").cloned().unwrap_or(Value::Null);
    let order = sb
        .db
        .call(move |c| {
            let id = db::next_id(c, "merchant_order", 4_945_400_001)?;
            let order = json!({
                "id": id, "status": "opened", "order_status": "payment_required",
                "external_reference": external, "total_amount": amount_json(total), "paid_amount": 0,
                "refunded_amount": 0, "cancelled": false, "payments": [], "shipments": [], "items": [],
                "date_created": rfc3339(now), "last_updated": rfc3339(now),
            });
            db::put_resource(c, "merchant_order", &id.to_string(), &name, &order, url.as_deref())?;
            Ok(order)
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
    Ok(ok_json(StatusCode::CREATED, &order))
}

async fn add_payment(
    sb: &Sandbox,
    account: &AccountRow,
    order_id: &str,
    v: &Value,
) -> anyhow::Result<Response<Body>> {
    let amount = match money_field(v, "amount") {
        Ok(a) => a,
        Err(r) => return Ok(r),
    };
    let url = match object_url(v) {
        Ok(u) => u,
        Err(r) => return Ok(r),
    };
    let Some(mut order) = owned(sb, account, "merchant_order", order_id).await? else {
        return Ok(control_error(
            StatusCode::NOT_FOUND,
            &format!("no merchant order {order_id}"),
        ));
    };
    let status = v
        .get("status")
        .and_then(Value::as_str)
        .unwrap_or("approved")
        .to_string();
    let (name, now) = (account.name.clone(), sb.now());
    let oid = order_id.to_string();
    let payment = sb
        .db
        .call(move |c| {
            let tx = c.transaction()?;
            let id = db::next_id(&tx, "payment", 1_300_000_001)?;
            let p = payment_body(id, &status, amount, None, Some(&order["id"]), now);
            db::put_resource(&tx, "payment", &id.to_string(), &name, &p, url.as_deref())?;
            if let Some(list) = order["payments"].as_array_mut() {
                list.push(json!({
                    "id": id, "transaction_amount": p["transaction_amount"], "total_paid_amount": p["transaction_amount"],
                    "status": status, "status_detail": p["status_detail"], "operation_type": "regular_payment",
                }));
            }
            refresh_order(&mut order);
            order["last_updated"] = json!(rfc3339(now));
            db::put_resource(&tx, "merchant_order", &oid, &name, &order, None)?;
            tx.commit()?;
            Ok(p)
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
    Ok(ok_json(StatusCode::CREATED, &payment))
}

async fn open_chargeback(
    sb: &Sandbox,
    account: &AccountRow,
    v: &Value,
) -> anyhow::Result<Response<Body>> {
    let Some(payment_id) = v.get("payment_id").map(shapes::json_id_text) else {
        return Ok(control_error(
            StatusCode::BAD_REQUEST,
            "payment_id is required",
        ));
    };
    let Some(payment) = owned(sb, account, "payment", &payment_id).await? else {
        return Ok(control_error(
            StatusCode::NOT_FOUND,
            &format!("no payment {payment_id}"),
        ));
    };
    let (name, now) = (account.name.clone(), sb.now());
    let reason = v.get("reason").cloned().unwrap_or(json!("fraud"));
    let cb = sb
        .db
        .call(move |c| {
            let id = db::next_id(c, "chargeback", 43_589_345_900_001)?;
            let cb = json!({
                "id": id.to_string(), "payments": [payment["id"]], "currency": "ARS",
                "amount": payment["transaction_amount"], "reason": reason, "coverage_applied": null,
                "coverage_elegible": true, "documentation_required": true, "documentation_status": "pending",
                "date_created": rfc3339(now), "date_last_updated": rfc3339(now), "live_mode": false,
            });
            db::put_resource(c, "chargeback", &id.to_string(), &name, &cb, None)?;
            Ok(cb)
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
    Ok(ok_json(StatusCode::CREATED, &cb))
}
