//! The control API (`/sandbox/…`, JSON): create and change resources the
//! way the platform would, each change announced by the notifications the
//! platform would send (`changes`); read the delivery log; switch the
//! platform's quirks on and off (`quirks`); read and advance a manual clock
//! (`clock`).
//!
//! The account is the Bearer token's, else `?account=NAME`, else the first.

// A refusal here is the response itself, built once and returned by value.
#![allow(clippy::result_large_err)]

use axum::Router;
use axum::extract::{FromRequestParts, State};
use axum::response::IntoResponse;
use axum::routing::{get, post, put};
use http::request::Parts;
use http::{Method, Response, StatusCode, Uri};
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
use super::routes::{Answer, Fail, JsonBody, Sb, Seg};
use super::shapes;
use pointhook_common::clock::rfc3339;
use pointhook_common::money::Money;
use pointhook_common::query::Query;
use pointhook_common::response::Body;

pub(super) fn control_error(status: StatusCode, message: &str) -> Response<Body> {
    pointhook_common::response::error(status, "bad_request", message)
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

/// The control API's route table. Calls about an account's resources
/// extract [`Ctl`]: the Bearer token's account, else `?account=NAME`, else
/// the first.
pub(crate) fn routes(sb: Sb) -> Router {
    Router::new()
        .route("/sandbox/deliveries", get(deliveries))
        .route("/sandbox/clock", get(clock_state))
        .route("/sandbox/clock/advance", post(advance_clock))
        .route(
            "/sandbox/quirks",
            get(quirks_state).post(set_quirks).delete(clear_quirks),
        )
        .route("/sandbox/requests", get(requests))
        .route("/sandbox/faults", post(add_fault).delete(clear_faults))
        .route("/sandbox/merchant_orders", post(create_order))
        .route("/sandbox/merchant_orders/{id}/payments", post(add_payment))
        .route("/sandbox/merchant_orders/{id}/ship", post(ship_order))
        .route("/sandbox/payments/{id}/status", post(set_payment_status))
        .route(
            "/sandbox/presets/next_payment_status",
            post(preset_next_payment_status),
        )
        .route("/sandbox/chargebacks", post(open_chargeback))
        .route("/sandbox/chargebacks/{id}", post(update_chargeback))
        .route("/sandbox/fraud_alerts", post(send_fraud_alert))
        .route("/sandbox/devices", post(add_device_route))
        .route(
            "/sandbox/devices/{device}/preset",
            post(set_device_preset).delete(clear_device_preset),
        )
        .route("/sandbox/devices/{device}/events", post(device_event))
        .route("/sandbox/resources/{kind}/{id}", put(put_resource))
        .route("/sandbox/payment_intents", post(create_intent_route))
        .route(
            "/sandbox/payment_intents/{id}/state",
            post(move_intent_route),
        )
        .route("/sandbox/terminals/{id}", post(set_terminal_outcome))
        .fallback(no_endpoint)
        .method_not_allowed_fallback(no_endpoint)
        .with_state(sb)
}

async fn no_endpoint(method: Method, uri: Uri) -> Response<Body> {
    control_error(
        StatusCode::NOT_FOUND,
        &format!("no control endpoint {method} {}", uri.path()),
    )
}

/// The account a control call acts for; 404 when there is none.
pub(crate) struct Ctl(AccountRow);

impl FromRequestParts<Sb> for Ctl {
    type Rejection = axum::response::Response;

    async fn from_request_parts(parts: &mut Parts, sb: &Sb) -> Result<Self, Self::Rejection> {
        match control_account(sb, &parts.headers, &parts.uri).await {
            Ok(Some(a)) => Ok(Ctl(a)),
            Ok(None) => {
                Err(control_error(StatusCode::NOT_FOUND, "no such account").into_response())
            }
            Err(e) => Err(Fail::from(e).into_response()),
        }
    }
}
/// `GET /sandbox/deliveries?limit=N`: the delivery log, newest first.
async fn deliveries(State(sb): State<Sb>, uri: Uri) -> Answer {
    let limit = Query::parse(uri.query().unwrap_or(""))
        .get("limit")
        .and_then(|l| l.parse().ok())
        .unwrap_or(200);
    Ok(ok_json(
        StatusCode::OK,
        &serde_json::to_value(sb.delivery_log(limit).await?)?,
    ))
}

async fn clock_state(State(sb): State<Sb>) -> Response<Body> {
    ok_json(StatusCode::OK, &sb.clock_state())
}

async fn quirks_state(State(sb): State<Sb>) -> Answer {
    let described = sb.db.call(|c| quirks::describe(c)).await?;
    Ok(ok_json(StatusCode::OK, &described))
}

async fn clear_quirks(State(sb): State<Sb>) -> Answer {
    let described = sb
        .db
        .call(|c| {
            quirks::clear(c)?;
            quirks::describe(c)
        })
        .await?;
    Ok(ok_json(StatusCode::OK, &described))
}

/// `GET /sandbox/requests`: the platform API calls received.
async fn requests(State(sb): State<Sb>) -> Answer {
    Ok(ok_json(
        StatusCode::OK,
        &serde_json::to_value(sb.faults.calls())?,
    ))
}

async fn clear_faults(State(sb): State<Sb>) -> Response<Body> {
    sb.faults.clear();
    ok_json(StatusCode::OK, &json!({"cleared": true}))
}

/// `POST /sandbox/faults`: an API fault (`faults::Fault`), or
/// `{"drop_notifications": N, "topic"?}`.
async fn add_fault(State(sb): State<Sb>, JsonBody(v): JsonBody) -> Answer {
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
    match serde_json::from_value::<super::faults::Fault>(v.clone()) {
        Ok(f) => {
            sb.faults.add(f);
            Ok(ok_json(StatusCode::CREATED, &v))
        }
        Err(e) => Ok(control_error(
            StatusCode::BAD_REQUEST,
            &format!("not a fault: {e}"),
        )),
    }
}

async fn create_order(State(sb): State<Sb>, Ctl(account): Ctl, JsonBody(v): JsonBody) -> Answer {
    Ok(new_order(&sb, &account, &v).await?)
}

async fn add_payment(
    State(sb): State<Sb>,
    Ctl(account): Ctl,
    Seg(id): Seg<String>,
    JsonBody(v): JsonBody,
) -> Answer {
    Ok(pay_order(&sb, &account, &id, &v).await?)
}

/// `POST /sandbox/merchant_orders/{id}/ship {"status"?}`: one shipment in
/// that status (`ready_to_ship` by default).
async fn ship_order(
    State(sb): State<Sb>,
    Ctl(account): Ctl,
    Seg(id): Seg<String>,
    JsonBody(v): JsonBody,
) -> Answer {
    let Some(mut order) = owned(&sb, &account, "merchant_order", &id).await? else {
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
    save(&sb, &account, "merchant_order", &id, &order).await?;
    announce(&sb, &account, "merchant_order", &id, "update").await?;
    Ok(ok_json(StatusCode::OK, &order))
}

async fn set_payment_status(
    State(sb): State<Sb>,
    Ctl(account): Ctl,
    Seg(id): Seg<String>,
    JsonBody(v): JsonBody,
) -> Answer {
    let Some(status) = v.get("status").and_then(Value::as_str) else {
        return Ok(control_error(
            StatusCode::BAD_REQUEST,
            "status is required (approved, rejected, pending, in_process, …)",
        ));
    };
    let Some(mut payment) = owned(&sb, &account, "payment", &id).await? else {
        return Ok(control_error(
            StatusCode::NOT_FOUND,
            &format!("no payment {id}"),
        ));
    };
    payment["status"] = json!(status);
    payment["status_detail"] = json!(status_detail(status));
    save_payment(&sb, &account, &payment).await?;
    Ok(ok_json(StatusCode::OK, &payment))
}

/// The status the account's next `POST /v1/payments` is created in.
async fn preset_next_payment_status(
    State(sb): State<Sb>,
    Ctl(account): Ctl,
    JsonBody(v): JsonBody,
) -> Answer {
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

async fn open_chargeback(State(sb): State<Sb>, Ctl(account): Ctl, JsonBody(v): JsonBody) -> Answer {
    Ok(new_chargeback(&sb, &account, &v).await?)
}

async fn update_chargeback(
    State(sb): State<Sb>,
    Ctl(account): Ctl,
    Seg(id): Seg<String>,
    JsonBody(v): JsonBody,
) -> Answer {
    let Some(mut cb) = owned(&sb, &account, "chargeback", &id).await? else {
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
    save(&sb, &account, "chargeback", &id, &cb).await?;
    announce(&sb, &account, "chargebacks", &id, "update").await?;
    Ok(ok_json(StatusCode::OK, &cb))
}

/// `POST /sandbox/fraud_alerts {"merchant_order","payment_id","description"?}`.
async fn send_fraud_alert(
    State(sb): State<Sb>,
    Ctl(account): Ctl,
    JsonBody(v): JsonBody,
) -> Answer {
    let (Some(order), Some(payment)) = (v.get("merchant_order"), v.get("payment_id")) else {
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

async fn add_device_route(
    State(sb): State<Sb>,
    Ctl(account): Ctl,
    JsonBody(v): JsonBody,
) -> Answer {
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

async fn set_device_preset(
    State(sb): State<Sb>,
    Ctl(account): Ctl,
    Seg(device): Seg<String>,
    JsonBody(v): JsonBody,
) -> Answer {
    Ok(super::devices::set_preset(&sb, &account, &device, &v).await?)
}

async fn clear_device_preset(
    State(sb): State<Sb>,
    Ctl(account): Ctl,
    Seg(device): Seg<String>,
) -> Answer {
    Ok(super::devices::clear_preset(&sb, &account, &device).await?)
}

/// `POST /sandbox/devices/{device}/events {"event","mode"?}`: a device
/// event, told by e-mail.
async fn device_event(
    State(sb): State<Sb>,
    Ctl(account): Ctl,
    Seg(device): Seg<String>,
    JsonBody(v): JsonBody,
) -> Answer {
    let event = v.get("event").and_then(Value::as_str).unwrap_or_default();
    let Some(text) = super::mail::describe(event, v.get("mode").and_then(Value::as_str)) else {
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

/// `PUT /sandbox/resources/{kind}/{id}`: stores any body as that resource,
/// unchecked and unannounced (odd shapes on purpose).
async fn put_resource(
    State(sb): State<Sb>,
    Ctl(account): Ctl,
    Seg((kind, id)): Seg<(String, String)>,
    JsonBody(v): JsonBody,
) -> Answer {
    let kind: &'static str = match kind.as_str() {
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
    save(&sb, &account, kind, &id, &v).await?;
    Ok(ok_json(StatusCode::OK, &v))
}

async fn create_intent_route(
    State(sb): State<Sb>,
    Ctl(account): Ctl,
    JsonBody(v): JsonBody,
) -> Answer {
    Ok(create_intent(&sb, &account, &v).await?)
}

async fn move_intent_route(
    State(sb): State<Sb>,
    Ctl(account): Ctl,
    Seg(id): Seg<String>,
    JsonBody(v): JsonBody,
) -> Answer {
    Ok(move_intent(&sb, &account, &id, &v).await?)
}

async fn set_terminal_outcome(
    State(sb): State<Sb>,
    Ctl(account): Ctl,
    Seg(id): Seg<String>,
    JsonBody(v): JsonBody,
) -> Answer {
    Ok(super::orders::set_terminal_outcome(&sb, &account, &id, &v).await?)
}

fn not_manual() -> Response<Body> {
    pointhook_common::response::error(
        StatusCode::CONFLICT,
        "clock_not_manual",
        "the sandbox runs on the real clock: start it with --clock manual to advance it",
    )
}

/// `POST /sandbox/clock/advance {"seconds": N}`: only on a manual clock,
/// and only forward by a sane amount.
async fn advance_clock(State(sb): State<Sb>, JsonBody(v): JsonBody) -> Answer {
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
async fn set_quirks(State(sb): State<Sb>, JsonBody(mut v): JsonBody) -> Answer {
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

async fn new_order(
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

async fn pay_order(
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

async fn new_chargeback(
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
