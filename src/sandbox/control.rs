//! The control API (`/sandbox/…`, JSON): create and change resources the
//! way the platform would, each change announced by the notifications the
//! platform would send; and read the delivery log. Also the account lookup
//! and the announcing shared with the resources API.
//!
//! The account is the Bearer token's, else `?account=NAME`, else the first.

// A refusal here is the response itself, built once and returned by value.
#![allow(clippy::result_large_err)]

use std::sync::Arc;

use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::{Value, json};

use super::Sandbox;
use super::db;
use super::dispatch;
use super::resources::{ok_json, platform_error};
use super::shapes;
use crate::http::classify::Query;
use crate::http::response::Body;
use crate::money::Money;
use crate::store::rfc3339;

#[derive(Debug, Clone)]
pub struct AccountRow {
    pub name: String,
    pub notification_url: Option<String>,
    pub webhook_url: Option<String>,
    pub webhook_secret: Option<String>,
    pub groups: Vec<String>,
}

impl AccountRow {
    fn wants(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }

    /// A stable, platform-like user id for webhook bodies.
    fn user_id(&self) -> i64 {
        100_000_000
            + self
                .name
                .bytes()
                .fold(0i64, |h, b| (h * 31 + b as i64) % 900_000_000)
    }
}

const ACCOUNT_COLUMNS: &str = "name, notification_url, webhook_url, webhook_secret, groups";

fn account_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<AccountRow> {
    let groups: String = r.get(4)?;
    Ok(AccountRow {
        name: r.get(0)?,
        notification_url: r.get(1)?,
        webhook_url: r.get(2)?,
        webhook_secret: r.get(3)?,
        groups: serde_json::from_str(&groups).unwrap_or_default(),
    })
}

/// The account of the request's Bearer token; `None` without a valid one.
pub(super) async fn authenticate(
    sb: &Sandbox,
    req: &Request<Incoming>,
) -> anyhow::Result<Option<AccountRow>> {
    let Some(token) = req
        .headers()
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(|t| t.trim().to_string())
    else {
        return Ok(None);
    };
    sb.db
        .call(move |c| {
            c.query_row(
                &format!("SELECT {ACCOUNT_COLUMNS} FROM accounts WHERE token = ?1"),
                [token],
                account_row,
            )
            .optional()
        })
        .await
}

async fn control_account(
    sb: &Sandbox,
    req: &Request<Incoming>,
) -> anyhow::Result<Option<AccountRow>> {
    if let Some(a) = authenticate(sb, req).await? {
        return Ok(Some(a));
    }
    let name = Query::parse(req.uri().query().unwrap_or(""))
        .get("account")
        .map(str::to_string);
    sb.db
        .call(move |c| {
            c.query_row(
                &format!(
                    "SELECT {ACCOUNT_COLUMNS} FROM accounts WHERE ?1 IS NULL OR name = ?1 ORDER BY rowid LIMIT 1"
                ),
                [name],
                account_row,
            )
            .optional()
        })
        .await
}

pub(super) fn take_preset(
    conn: &Connection,
    account: &str,
    name: &str,
) -> rusqlite::Result<Option<String>> {
    conn.query_row(
        "DELETE FROM presets WHERE account = ?1 AND name = ?2 RETURNING value",
        params![account, name],
        |r| r.get(0),
    )
    .optional()
}

pub(super) fn add_device(conn: &Connection, account: &str, device: &str) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT OR IGNORE INTO devices (account, device_id, mode) VALUES (?1, ?2, 'PDV')",
        params![account, device],
    )?;
    Ok(())
}

/// A payment as the API serves it.
pub(super) fn payment_body(
    id: i64,
    status: &str,
    amount: Money,
    description: Option<Value>,
    order: Option<&Value>,
    now: i64,
) -> Value {
    let mut p = json!({
        "id": id,
        "status": status,
        "status_detail": status_detail(status),
        "transaction_amount": amount_json(amount),
        "transaction_amount_refunded": 0,
        "currency_id": "ARS",
        "description": description,
        "date_created": rfc3339(now),
        "date_last_updated": rfc3339(now),
        "live_mode": false,
        "payment_method_id": "visa",
        "payment_type_id": "credit_card",
    });
    if let Some(o) = order {
        p["order"] = json!({"id": o, "type": "mercadopago"});
    }
    p
}

fn status_detail(status: &str) -> &'static str {
    match status {
        "approved" => "accredited",
        "in_process" | "pending" => "pending_review_manual",
        "rejected" => "cc_rejected_other_reason",
        "cancelled" => "by_collector",
        "refunded" => "refunded",
        _ => "",
    }
}

fn amount_json(m: Money) -> Value {
    serde_json::from_str(&m.to_string()).unwrap_or(Value::Null)
}

/// The resource if it exists and belongs to `account`.
pub(super) async fn owned(
    sb: &Sandbox,
    account: &AccountRow,
    kind: &'static str,
    id: &str,
) -> anyhow::Result<Option<Value>> {
    let id = id.to_string();
    let found = sb.db.call(move |c| db::get_resource(c, kind, &id)).await?;
    Ok(found
        .filter(|(owner, _)| *owner == account.name)
        .map(|(_, body)| body))
}

/// Stores a changed payment, mirrors it into its merchant order, and
/// announces both.
pub(super) async fn save_payment(
    sb: &Sandbox,
    account: &AccountRow,
    payment: &Value,
) -> anyhow::Result<()> {
    let (name, p) = (account.name.clone(), payment.clone());
    let now = sb.now();
    let order_id = sb
        .db
        .call(move |conn| {
            let tx = conn.transaction()?;
            let mut p = p;
            p["date_last_updated"] = json!(rfc3339(now));
            let id = shapes::json_id_text(&p["id"]);
            db::put_resource(&tx, "payment", &id, &name, &p, None)?;
            let order_id = p.pointer("/order/id").map(shapes::json_id_text);
            if let Some(oid) = &order_id
                && let Some((_, mut order)) = db::get_resource(&tx, "merchant_order", oid)?
            {
                if let Some(list) = order["payments"].as_array_mut() {
                    for entry in list.iter_mut().filter(|e| e["id"] == p["id"]) {
                        entry["status"] = p["status"].clone();
                        entry["status_detail"] = p["status_detail"].clone();
                    }
                }
                refresh_order(&mut order);
                db::put_resource(&tx, "merchant_order", oid, &name, &order, None)?;
            }
            tx.commit()?;
            Ok(order_id)
        })
        .await?;
    let id = shapes::json_id_text(&payment["id"]);
    announce(sb, account, "payment", &id, "payment.updated").await?;
    if let Some(oid) = order_id {
        announce(sb, account, "merchant_order", &oid, "update").await?;
    }
    Ok(())
}

/// Paid amount and order status from the payments.
fn refresh_order(order: &mut Value) {
    let paid: Money = order["payments"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["status"] == "approved")
        .filter_map(|p| Money::parse(&p["transaction_amount"].to_string()))
        .sum();
    let total = Money::parse(&order["total_amount"].to_string()).unwrap_or(Money::ZERO);
    order["paid_amount"] = amount_json(paid);
    order["order_status"] = json!(if paid >= total {
        "paid"
    } else {
        "payment_required"
    });
    order["status"] = json!(if paid >= total { "closed" } else { "opened" });
}

/// The notifications the platform sends for a change of `topic`/`id`: an
/// IPN to the account URL (when the account selected that event group), and
/// to the object's own `notification_url` the IPN and/or webhook forms by
/// its `source_news`.
pub(super) async fn announce(
    sb: &Sandbox,
    account: &AccountRow,
    topic: &'static str,
    id: &str,
    action: &str,
) -> anyhow::Result<()> {
    let (group, path, kind) = match topic {
        "payment" => ("payment", format!("/v1/payments/{id}"), "payment"),
        "merchant_order" => (
            "merchant_orders",
            format!("/merchant_orders/{id}"),
            "merchant_order",
        ),
        "chargebacks" => ("chargebacks", format!("/v1/chargebacks/{id}"), "chargeback"),
        _ => (
            "point_integration_ipn",
            format!("/point/integration-api/payment-intents/{id}"),
            "payment_intent",
        ),
    };
    let resource_url = format!("{}{path}", sb.base_url);
    let (account, id, action) = (account.clone(), id.to_string(), action.to_string());
    let now = sb.now();
    let now_secs = (now / 1000).max(0) as u64;
    sb.db
        .call(move |conn| {
            let tx = conn.transaction()?;
            if let Some(url) = &account.notification_url
                && account.wants(group)
            {
                dispatch::enqueue(
                    &tx,
                    &account.name,
                    &shapes::ipn(url, topic, &id, &resource_url),
                    now,
                )?;
            }
            if let Some(url) = db::resource_url(&tx, kind, &id)? {
                let source = Query::parse(
                    url::Url::parse(&url)
                        .ok()
                        .and_then(|u| u.query().map(str::to_string))
                        .as_deref()
                        .unwrap_or(""),
                )
                .get("source_news")
                .map(str::to_string);
                if source.as_deref() != Some("webhooks") {
                    dispatch::enqueue(
                        &tx,
                        &account.name,
                        &shapes::ipn(&url, topic, &id, &resource_url),
                        now,
                    )?;
                }
                if source.as_deref() != Some("ipn") {
                    let n = db::next_id(&tx, "notification", 5_000_000_001)?;
                    let w = shapes::webhook(
                        &url,
                        topic,
                        &id,
                        n,
                        account.user_id(),
                        &action,
                        &rfc3339(now),
                        account.webhook_secret.as_deref(),
                        now_secs,
                    );
                    dispatch::enqueue(&tx, &account.name, &w, now)?;
                }
            }
            tx.commit()
        })
        .await?;
    sb.queued();
    Ok(())
}

fn control_error(status: StatusCode, message: &str) -> Response<Body> {
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
            if let Some(url) = account
                .notification_url
                .clone()
                .filter(|_| account.wants("delivery_cancellation"))
            {
                let out = shapes::fraud_alert(&url, order, payment, description);
                let (name, now) = (account.name.clone(), sb.now());
                sb.db
                    .call(move |c| dispatch::enqueue(c, &name, &out, now))
                    .await?;
                sb.queued();
            }
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
        (&Method::POST, ["payment_intents"]) => {
            let v = body_or_refuse!(req);
            create_intent(sb, &account, &v).await
        }
        (&Method::POST, ["payment_intents", id, "state"]) => {
            let v = body_or_refuse!(req);
            move_intent(sb, &account, id, &v).await
        }
        _ => Ok(control_error(
            StatusCode::NOT_FOUND,
            &format!("no control endpoint {method} {path}"),
        )),
    }
}

async fn save(
    sb: &Sandbox,
    account: &AccountRow,
    kind: &'static str,
    id: &str,
    body: &Value,
) -> anyhow::Result<()> {
    let (name, id, body) = (account.name.clone(), id.to_string(), body.clone());
    sb.db
        .call(move |c| db::put_resource(c, kind, &id, &name, &body, None))
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
    let name = account.name.clone();
    let external = v.get("external_reference").cloned().unwrap_or(Value::Null);
    let order = sb
        .db
        .call(move |c| {
            let id = db::next_id(c, "merchant_order", 4_945_400_001)?;
            let order = json!({
                "id": id, "status": "opened", "order_status": "payment_required",
                "external_reference": external, "total_amount": amount_json(total), "paid_amount": 0,
                "refunded_amount": 0, "cancelled": false, "payments": [], "shipments": [], "items": [],
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

async fn create_intent(
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

/// Moves an intent to a final state; FINISHED and CONFIRMATION_REQUIRED
/// come with a payment (approved unless `payment_status` says otherwise).
async fn move_intent(
    sb: &Sandbox,
    account: &AccountRow,
    id: &str,
    v: &Value,
) -> anyhow::Result<Response<Body>> {
    let state = v
        .get("state")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if !matches!(
        state.as_str(),
        "FINISHED" | "CONFIRMATION_REQUIRED" | "CANCELED" | "ERROR"
    ) {
        return Ok(control_error(
            StatusCode::BAD_REQUEST,
            "state must be FINISHED, CONFIRMATION_REQUIRED, CANCELED or ERROR",
        ));
    }
    let Some(mut intent) = owned(sb, account, "payment_intent", id).await? else {
        return Ok(control_error(
            StatusCode::NOT_FOUND,
            &format!("no payment intent {id}"),
        ));
    };
    intent["state"] = json!(state);
    if matches!(state.as_str(), "FINISHED" | "CONFIRMATION_REQUIRED") {
        let status = v
            .get("payment_status")
            .and_then(Value::as_str)
            .unwrap_or("approved")
            .to_string();
        let amount = Money::from_cents(intent["amount"].as_i64().unwrap_or(0));
        let (name, now) = (account.name.clone(), sb.now());
        let payment = sb
            .db
            .call(move |c| {
                let pid = db::next_id(c, "payment", 1_300_000_001)?;
                let p = payment_body(pid, &status, amount, None, None, now);
                db::put_resource(c, "payment", &pid.to_string(), &name, &p, None)?;
                Ok(p)
            })
            .await?;
        let device_state = if state == "FINISHED" {
            payment["status"].clone()
        } else {
            json!("")
        };
        intent["payment"] =
            json!({"id": payment["id"], "state": device_state, "type": "credit_card"});
    }
    save(sb, account, "payment_intent", id, &intent).await?;
    // The intent webhook (Point Integrations events, when activated) and
    // the point_integration_ipn IPN.
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
    Ok(ok_json(StatusCode::OK, &intent))
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
