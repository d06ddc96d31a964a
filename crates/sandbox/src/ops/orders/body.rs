//! `POST /v1/orders`: the body checked as the platform checks it for each
//! type (every problem listed, as the Orders API lists them), and the order
//! as created. Point orders queue on a terminal; online orders in automatic
//! mode are processed by the same call.

use std::time::Duration;

use http::StatusCode;
use serde_json::{Value, json};

use super::checks::{
    Causes, amount, check_description, expiration, external_reference, one_of, single_payment,
};
use super::lifecycle::{self, Status};
use super::schedule::{self, Step};
use super::{Ctx, Reply, new_id, ops, terminals};
use crate::error::HttpError;
use crate::state::{Tx, orders as stored};
use pointhook_common::clock::rfc3339;
use pointhook_common::money::Money;

/// What a valid body makes.
struct Draft {
    order: Value,
    /// Point: the terminal the order queues on.
    terminal: Option<String>,
    expires_after: Option<Duration>,
    /// Online, automatic mode: processed by the create call.
    process_now: bool,
}

pub(super) fn create(tx: &Tx<'_>, ctx: &Ctx, v: &Value) -> Result<Reply, HttpError> {
    let draft = match v["type"].as_str() {
        Some("point") => point(ctx, v),
        Some("qr") => qr(ctx, v),
        Some("online") => online(ctx, v),
        Some(_) => Err(vec![(
            "property_value",
            "type must be point, qr or online".to_string(),
        )]),
        None => Err(vec![(
            "required_properties",
            "type is required".to_string(),
        )]),
    };
    let draft = match draft {
        Ok(d) => d,
        Err(causes) => {
            return Err(HttpError::orders_all(
                StatusCode::BAD_REQUEST,
                causes.first().map_or("bad_request", |c| c.0),
                "the order has invalid properties",
                &causes,
            ));
        }
    };
    let account = &ctx.account.name;
    let mut pdv = false;
    if let Some(t) = &draft.terminal {
        terminals::ensure_virtual(tx, account, t)?;
        let Some(mode) = terminals::terminal_mode(tx, account, t)? else {
            return Err(HttpError::orders(
                StatusCode::FORBIDDEN,
                "forbidden_checking_terminal_owner",
                &format!("terminal {t} is not one of this account's terminals"),
            ));
        };
        if stored::terminal_busy(tx, account, t)? {
            return Err(HttpError::orders(
                StatusCode::CONFLICT,
                "already_queued_order_for_terminal",
                &format!("terminal {t} already has an order waiting"),
            ));
        }
        pdv = mode == "PDV";
    }
    let mut order = draft.order;
    let id = order["id"].as_str().unwrap_or_default().to_string();
    lifecycle::insert(tx, ctx, &order)?;
    if let Some(d) = draft.expires_after {
        schedule::schedule(
            tx,
            ctx,
            &id,
            ctx.after(ctx.now, d),
            Step::Expire,
            &json!({}),
        )?;
    }
    // Only a terminal in PDV mode takes orders from the API; one in
    // STANDALONE takes it once switched (`terminals::setup`).
    if pdv {
        schedule::schedule(
            tx,
            ctx,
            &id,
            ctx.after(ctx.now, schedule::TERMINAL_PICKUP),
            Step::Pickup,
            &json!({}),
        )?;
    }
    let queued = if draft.process_now {
        ops::process_online(tx, ctx, &mut order)?
    } else {
        false
    };
    Ok(Reply::ok(StatusCode::CREATED, order).queued(queued))
}

fn point(ctx: &Ctx, v: &Value) -> Result<Draft, Causes> {
    let mut causes = Causes::new();
    let external = external_reference(v, true, 64, &mut causes);
    let amount = single_payment(v, true, &mut causes);
    let terminal = match &v["config"]["point"]["terminal_id"] {
        Value::String(t) if t.contains("__") => Some(t.clone()),
        Value::Null => {
            causes.push((
                "required_properties",
                "config.point.terminal_id is required".into(),
            ));
            None
        }
        _ => {
            causes.push((
                "property_value",
                "config.point.terminal_id must be a terminal id ({TYPE}__{SERIAL})".into(),
            ));
            None
        }
    };
    let print = one_of(
        &v["config"]["point"]["print_on_terminal"],
        "config.point.print_on_terminal",
        &["seller_ticket", "no_ticket"],
        &mut causes,
    )
    .unwrap_or("seller_ticket");
    one_of(
        &v["config"]["payment_method"]["default_type"],
        "config.payment_method.default_type",
        &["credit_card", "debit_card", "qr"],
        &mut causes,
    );
    let expiry = expiration(
        v,
        (Duration::from_secs(30), Duration::from_secs(3 * 3600)),
        &mut causes,
    );
    if let (Some(a), Some(t)) = (amount, v.get("total_amount"))
        && lifecycle::money(t) != Some(a)
    {
        causes.push((
            "invalid_total_amount",
            "total_amount must equal the payment's amount".into(),
        ));
    }
    check_description(v, &mut causes);
    let (Some(amount), Some(terminal), true) = (amount, terminal, causes.is_empty()) else {
        return Err(causes);
    };
    let mut order = base(ctx, v, "point", amount, external, Some(&expiry.0));
    order["processing_mode"] = json!("automatic");
    let mut point = json!({"terminal_id": terminal, "print_on_terminal": print});
    if let Some(t) = v["config"]["point"]["ticket_number"].as_str() {
        point["ticket_number"] = json!(t);
    }
    order["config"] = json!({"point": point});
    if v["config"]["payment_method"].is_object() {
        order["config"]["payment_method"] = v["config"]["payment_method"].clone();
    }
    order["transactions"] = json!({"payments": [{
        "id": new_id("PAY", ctx.now), "amount": amount.to_string(),
        "status": "created", "status_detail": "created",
    }]});
    Ok(Draft {
        order,
        terminal: Some(terminal),
        expires_after: Some(expiry.1),
        process_now: false,
    })
}

fn qr(ctx: &Ctx, v: &Value) -> Result<Draft, Causes> {
    let mut causes = Causes::new();
    let external = external_reference(v, false, 64, &mut causes);
    let total = amount(&v["total_amount"], "total_amount", &mut causes);
    let paid = single_payment(v, false, &mut causes);
    if let (Some(t), Some(p)) = (total, paid)
        && t != p
    {
        causes.push((
            "invalid_total_amount",
            "total_amount must equal the payment's amount".into(),
        ));
    }
    let pos = v["config"]["qr"]["external_pos_id"].as_str();
    if pos.is_none_or(str::is_empty) {
        causes.push((
            "required_properties",
            "config.qr.external_pos_id is required".into(),
        ));
    }
    let mode = one_of(
        &v["config"]["qr"]["mode"],
        "config.qr.mode",
        &["static", "dynamic", "hybrid"],
        &mut causes,
    )
    .unwrap_or("static");
    let expiry = expiration(
        v,
        (Duration::from_secs(30), Duration::from_secs(30 * 86_400)),
        &mut causes,
    );
    check_description(v, &mut causes);
    let (Some(total), Some(pos), true) = (total, pos, causes.is_empty()) else {
        return Err(causes);
    };
    let mut order = base(ctx, v, "qr", total, external, Some(&expiry.0));
    order["processing_mode"] = json!("automatic");
    order["config"] = json!({"qr": {"external_pos_id": pos, "mode": mode}});
    for field in ["items", "discounts"] {
        if !v[field].is_null() {
            order[field] = v[field].clone();
        }
    }
    order["transactions"] = json!({"payments": [{
        "id": new_id("PAY", ctx.now), "amount": total.to_string(),
        "status": "created", "status_detail": "ready_to_process",
    }]});
    if mode != "static" {
        // An EMVCo-shaped payload; only its presence matters here.
        let id = order["id"].as_str().unwrap_or_default().to_string();
        order["type_response"] = json!({"qr_data": format!(
            "00020101021226{:02}{id}5204000053030325802AR5909SANDBOXQR6009SANDBOX 6304ABCD",
            id.len()
        )});
    }
    Ok(Draft {
        order,
        terminal: None,
        expires_after: Some(expiry.1),
        process_now: false,
    })
}

fn online(ctx: &Ctx, v: &Value) -> Result<Draft, Causes> {
    let mut causes = Causes::new();
    let external = external_reference(v, false, 150, &mut causes);
    let total = amount(&v["total_amount"], "total_amount", &mut causes);
    let processing = one_of(
        &v["processing_mode"],
        "processing_mode",
        &["automatic", "manual"],
        &mut causes,
    )
    .unwrap_or("automatic");
    let capture = one_of(
        &v["capture_mode"],
        "capture_mode",
        &["automatic", "automatic_async", "manual"],
        &mut causes,
    )
    .unwrap_or("automatic_async");
    let email = v["payer"]["email"].as_str();
    if !email.is_some_and(|e| e.contains('@') && !e.starts_with('@') && !e.ends_with('@')) {
        causes.push((
            "required_properties",
            "payer.email must be an e-mail address".into(),
        ));
    }
    let mut payments = Vec::new();
    let mut sum = Some(Money::ZERO);
    match v["transactions"]["payments"].as_array() {
        Some(list) if !list.is_empty() => {
            for (i, p) in list.iter().enumerate() {
                let a = amount(
                    &p["amount"],
                    &format!("transactions.payments[{i}].amount"),
                    &mut causes,
                );
                sum = sum.zip(a).and_then(|(s, a)| s.checked_add(a).ok());
                let method = &p["payment_method"];
                for field in ["id", "type"] {
                    if method[field].as_str().is_none_or(str::is_empty) {
                        causes.push((
                            "required_properties",
                            format!(
                                "transactions.payments[{i}].payment_method.{field} is required"
                            ),
                        ));
                    }
                }
                let card = matches!(method["type"].as_str(), Some("credit_card" | "debit_card"));
                if card && method["token"].as_str().is_none_or(str::is_empty) {
                    causes.push((
                        "required_properties",
                        format!(
                            "transactions.payments[{i}].payment_method.token is required for cards"
                        ),
                    ));
                }
                payments.push(json!({
                    "id": new_id("PAY", ctx.now),
                    "amount": a.map(|a| a.to_string()),
                    "status": "created", "status_detail": "ready_to_process",
                    "payment_method": {
                        "id": method["id"], "type": method["type"],
                        "installments": method["installments"].as_u64().unwrap_or(1),
                    },
                }));
            }
            if let (Some(s), Some(t)) = (sum, total)
                && s != t
            {
                causes.push((
                    "invalid_total_amount",
                    "total_amount must equal the sum of transactions.payments[].amount".into(),
                ));
            }
        }
        _ if processing == "automatic" => causes.push((
            "required_properties",
            "transactions.payments is required in automatic mode".into(),
        )),
        _ => {}
    }
    let expiry = if v["expiration_time"].is_null() {
        None
    } else {
        Some(expiration(
            v,
            (Duration::from_secs(30), Duration::from_secs(365 * 86_400)),
            &mut causes,
        ))
    };
    check_description(v, &mut causes);
    let (Some(total), true) = (total, causes.is_empty()) else {
        return Err(causes);
    };
    let mut order = base(
        ctx,
        v,
        "online",
        total,
        external,
        expiry.as_ref().map(|e| e.0.as_str()),
    );
    order["processing_mode"] = json!(processing);
    order["capture_mode"] = json!(capture);
    for field in ["payer", "items", "marketplace", "marketplace_fee"] {
        if !v[field].is_null() {
            order[field] = v[field].clone();
        }
    }
    order["transactions"] = json!({"payments": payments});
    Ok(Draft {
        order,
        terminal: None,
        expires_after: expiry.map(|e| e.1),
        process_now: processing == "automatic",
    })
}

/// What every order carries, whatever its type.
fn base(
    ctx: &Ctx,
    v: &Value,
    kind: &str,
    total: Money,
    external: Option<String>,
    expiration_time: Option<&str>,
) -> Value {
    let mut integration = v["integration_data"].clone();
    if !integration.is_object() {
        integration = json!({});
    }
    integration["application_id"] = json!(ctx.application_id());
    let now = rfc3339(ctx.now);
    let mut order = json!({
        "id": new_id("ORD", ctx.now),
        "type": kind,
        "user_id": ctx.user_id(),
        "country_code": "ARG",
        "currency": "ARS",
        "status": Status::Created.as_str(),
        "status_detail": "created",
        "total_amount": total.to_string(),
        "integration_data": integration,
        "created_date": now,
        "last_updated_date": now,
    });
    if let Some(e) = external {
        order["external_reference"] = json!(e);
    }
    if let Some(e) = expiration_time {
        order["expiration_time"] = json!(e);
    }
    if let Some(d) = v["description"].as_str() {
        order["description"] = json!(d);
    }
    order
}
