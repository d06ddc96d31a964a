//! Paying a Checkout Pro preference, from the checkout page or the
//! control API: the test card's holder name decides the payment (`APRO`
//! approved, `CONT` pending, `OTHE` … rejected, as for card tokens); the
//! preference's merchant order is opened on the first attempt
//! (`preference_id`, its items, `total_amount`) and holds every payment;
//! both are announced as the platform announces them (IPN and webhook to
//! the preference's `notification_url`, the IPN to the account's); the
//! buyer goes back to the matching `back_urls` with the query the
//! platform adds.

use http::StatusCode;
use serde_json::{Value, json};

use super::catalog;
use super::changes::{
    MERCHANT_ORDER_IDS, PAYMENT_IDS, amount_json, announce, payment_body, refresh_order,
};
use super::preferences::{self, items_total, time_of};
use super::sandbox::Sandbox;
use super::{card_tokens, payment_fields, shapes};
use crate::error::HttpError;
use crate::model::AccountRow;
use crate::state::{StateError, Tx, accounts, resources};
use pointhook_common::clock::rfc3339;
use pointhook_common::money::Money;

/// The test card the page and the control call use unless told another
/// (the platform's Mastercard test card).
pub const TEST_CARD: &str = "5031433215406351";

/// What the buyer entered.
#[derive(Debug, Clone)]
pub struct Attempt {
    pub cardholder_name: String,
    pub card_number: String,
    pub email: String,
    pub payment_method_id: String,
    pub installments: u64,
    pub identification_type: String,
    pub identification_number: String,
}

/// A preference as its checkout shows it.
pub struct Checkout {
    pub account: AccountRow,
    pub preference: Value,
    /// The card methods of the site the preference does not exclude.
    pub methods: Vec<Value>,
    /// Why it cannot be paid now, if it cannot.
    pub closed: Option<String>,
}

/// An attempt paid: the payment, its merchant order and where the buyer
/// goes back to (`None` when the preference has no URL for it).
pub struct Paid {
    pub payment: Value,
    pub order: Value,
    pub back_url: Option<String>,
    /// Whether the platform sends the buyer there at once (`auto_return`).
    pub auto_return: bool,
}

/// The preference `id` (whoever's it is: its id is what the buyer holds)
/// with what its checkout offers.
pub async fn open(sb: &Sandbox, id: &str) -> Result<Checkout, HttpError> {
    let id = id.to_string();
    let found = sb
        .db
        .call(move |tx| {
            let Some((owner, pref)) = resources::get(tx, "preference", &id)? else {
                return Ok(None);
            };
            let account = accounts::by_name(tx, &owner)?;
            let site = catalog::site_in(tx, &owner)?;
            Ok::<_, StateError>(account.map(|a| (a, pref, site)))
        })
        .await?;
    let (account, preference, site) = found.ok_or_else(preferences::not_found)?;
    let excluded = |list: &str| -> Vec<Value> {
        preference["payment_methods"][list]
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| m["id"].clone())
            .collect()
    };
    let (methods_out, types_out) = (
        excluded("excluded_payment_methods"),
        excluded("excluded_payment_types"),
    );
    let methods = catalog::methods_of(&site.id)
        .into_iter()
        .filter(|m| {
            m["payment_type_id"]
                .as_str()
                .is_some_and(|t| t.ends_with("_card"))
        })
        .filter(|m| !methods_out.contains(&m["id"]) && !types_out.contains(&m["payment_type_id"]))
        .collect::<Vec<_>>();
    let now = sb.now();
    let closed = if preference["expires"] == true
        && (time_of(&preference["expiration_date_from"]).is_some_and(|from| now < from)
            || time_of(&preference["expiration_date_to"]).is_some_and(|to| now > to))
    {
        Some("This preference is outside its expiration window: it cannot be paid now.".into())
    } else if time_of(&preference["date_of_expiration"]).is_some_and(|at| now > at) {
        Some("This preference expired: it cannot be paid now.".into())
    } else if methods.is_empty() {
        Some("Every card payment method is excluded by this preference.".into())
    } else {
        None
    };
    Ok(Checkout {
        account,
        preference,
        methods,
        closed,
    })
}

/// What is wrong with the attempt, if anything: the checkout is closed,
/// or the attempt is not one it offers. Else the method chosen and the
/// card's digits.
pub fn check(checkout: &Checkout, attempt: &Attempt) -> Result<(Value, String), String> {
    if let Some(why) = &checkout.closed {
        return Err(why.clone());
    }
    let Some(method) = checkout
        .methods
        .iter()
        .find(|m| m["id"] == attempt.payment_method_id.as_str())
        .cloned()
    else {
        return Err("payment_method_id is not one this checkout offers".into());
    };
    let max = checkout.preference["payment_methods"]["installments"]
        .as_u64()
        .unwrap_or(12);
    if !(1..=max).contains(&attempt.installments) {
        return Err(format!("installments must be 1 to {max}"));
    }
    let digits = attempt.card_number.replace([' ', '-'], "");
    if !(13..=19).contains(&digits.len()) || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err("card_number must have 13 to 19 digits".into());
    }
    if !attempt.email.contains('@') {
        return Err("email must be an e-mail address".into());
    }
    if attempt.cardholder_name.trim().is_empty() {
        return Err("the cardholder's name is required".into());
    }
    Ok((method, digits))
}

/// Pays the preference with an attempt `check` passed.
pub async fn pay(
    sb: &Sandbox,
    checkout: Checkout,
    attempt: Attempt,
    (method, digits): (Value, String),
) -> Result<Paid, HttpError> {
    let Checkout {
        account,
        preference: pref,
        ..
    } = checkout;
    let (name, now, collector) = (account.name.clone(), sb.now(), account.user_id());
    let kept = pref.clone();
    let (payment, order, opened) = sb
        .db
        .call(move |tx| record(tx, &name, collector, now, &kept, &attempt, &method, &digits))
        .await?;
    let pid = shapes::json_id_text(&payment["id"]);
    announce(sb, &account, "payment", &pid, "payment.created").await?;
    let oid = shapes::json_id_text(&order["id"]);
    let action = if opened { "create" } else { "update" };
    announce(sb, &account, "merchant_order", &oid, action).await?;
    let (back_url, auto_return) = back(&pref, &payment, &order);
    Ok(Paid {
        payment,
        order,
        back_url,
        auto_return,
    })
}

/// The payment and the order, written in one transaction; whether the
/// order was opened by this attempt.
#[allow(clippy::too_many_arguments)]
fn record(
    tx: &Tx<'_>,
    account: &str,
    collector: i64,
    now: i64,
    pref: &Value,
    attempt: &Attempt,
    method: &Value,
    digits: &str,
) -> Result<(Value, Value, bool), HttpError> {
    let pref_id = shapes::json_id_text(&pref["id"]);
    let url = pref["notification_url"].as_str().map(str::to_string);
    let (mut status, mut detail) = match accounts::take_preset(tx, account, "next_payment_status")?
    {
        Some(s) => {
            let d = super::changes::status_detail(&s).to_string();
            (s, d)
        }
        None => card_tokens::outcome(&attempt.cardholder_name)
            .map(|(s, d)| (s.to_string(), d.to_string()))
            .unwrap_or_else(|| ("approved".into(), "accredited".into())),
    };
    // Binary mode: the payment is approved or rejected at once.
    if pref["binary_mode"] == true && status != "approved" && status != "rejected" {
        (status, detail) = ("rejected".into(), "cc_rejected_other_reason".into());
    }
    let existing = resources::of_kind(tx, "merchant_order", account)?
        .into_iter()
        .find(|o| o["preference_id"] == pref_id.as_str());
    let opened = existing.is_none();
    let mut order = match existing {
        Some(o) => o,
        None => {
            let id = resources::next_id(tx, "merchant_order", MERCHANT_ORDER_IDS)?;
            json!({
                "id": id, "status": "opened", "order_status": "payment_required",
                "preference_id": pref_id, "external_reference": pref["external_reference"],
                "site_id": pref["site_id"], "marketplace": pref["marketplace"],
                "collector": {"id": collector, "email": "", "nickname": null},
                "payer": null, "notification_url": url, "additional_info": pref["additional_info"],
                "items": pref["items"], "total_amount": pref["total_amount"],
                "paid_amount": 0, "refunded_amount": 0, "shipping_cost": 0, "cancelled": false,
                "payments": [], "shipments": [], "payouts": [], "is_test": false,
                "sponsor_id": null, "application_id": null,
                "date_created": rfc3339(now), "last_updated": rfc3339(now),
            })
        }
    };
    let total = Money::parse(&items_total(&pref["items"])?.to_string()).unwrap_or(Money::ZERO);
    let id = resources::next_id(tx, "payment", PAYMENT_IDS)?;
    let title = pref["items"][0]["title"].clone();
    let mut p = payment_body(
        id,
        &status,
        total,
        Some(title),
        Some(&order["id"]),
        collector,
        now,
    );
    p["status_detail"] = json!(detail);
    p["currency_id"] = pref["items"][0]["currency_id"].clone();
    p["payment_method_id"] = method["id"].clone();
    p["payment_type_id"] = method["payment_type_id"].clone();
    p["installments"] = json!(attempt.installments);
    p["external_reference"] = pref["external_reference"].clone();
    p["notification_url"] = json!(url);
    p["metadata"] = pref["metadata"].clone();
    p["binary_mode"] = pref["binary_mode"].clone();
    p["additional_info"] = json!({"items": pref["items"]});
    p["payer"] = payment_fields::payer(Some(&json!({
        "email": attempt.email,
        "identification": {"type": attempt.identification_type, "number": attempt.identification_number},
    })));
    p["card"] = json!({
        "first_six_digits": &digits[..6], "last_four_digits": &digits[digits.len() - 4..],
        "expiration_month": 11, "expiration_year": 2030,
        "cardholder": {"name": attempt.cardholder_name.trim(),
            "identification": {"type": attempt.identification_type, "number": attempt.identification_number}},
    });
    payment_fields::settle(&mut p, now);
    order["payer"] = json!({"id": p["payer"]["id"], "email": attempt.email});
    if let Some(list) = order["payments"].as_array_mut() {
        list.push(json!({
            "id": id, "transaction_amount": p["transaction_amount"], "total_paid_amount": p["transaction_amount"],
            "currency_id": p["currency_id"], "status": status, "status_detail": detail,
            "operation_type": "regular_payment", "date_approved": p["date_approved"],
            "date_created": p["date_created"], "last_modified": p["date_last_updated"], "amount_refunded": 0,
        }));
    }
    refresh_order(&mut order);
    order["last_updated"] = json!(rfc3339(now));
    let oid = shapes::json_id_text(&order["id"]);
    resources::put(tx, "payment", &id.to_string(), account, &p, url.as_deref())?;
    resources::put(tx, "merchant_order", &oid, account, &order, url.as_deref())?;
    Ok((p, order, opened))
}

/// The back URL for the payment's status, with the query the platform
/// adds; whether `auto_return` sends the buyer there at once.
fn back(pref: &Value, payment: &Value, order: &Value) -> (Option<String>, bool) {
    let status = payment["status"].as_str().unwrap_or_default();
    let which = match status {
        "approved" => "success",
        "pending" | "in_process" | "authorized" => "pending",
        _ => "failure",
    };
    let auto = match pref["auto_return"].as_str() {
        Some("all") => true,
        Some("approved") => status == "approved",
        _ => false,
    };
    let base = pref["back_urls"][which].as_str().filter(|u| !u.is_empty());
    let text = |v: &Value| match v {
        Value::Null => "null".to_string(),
        Value::String(s) if s.is_empty() => "null".to_string(),
        other => shapes::json_id_text(other),
    };
    let url = base.map(|b| {
        let pid = text(&payment["id"]);
        shapes::with_query(
            b,
            &[
                ("collection_id", &pid),
                ("collection_status", status),
                ("payment_id", &pid),
                ("status", status),
                ("external_reference", &text(&pref["external_reference"])),
                ("payment_type", &text(&payment["payment_type_id"])),
                ("merchant_order_id", &text(&order["id"])),
                ("preference_id", &text(&pref["id"])),
                ("site_id", &text(&pref["site_id"])),
                ("processing_mode", "aggregator"),
                ("merchant_account_id", "null"),
            ],
        )
    });
    (url, auto)
}

/// `POST /sandbox/preferences/{id}/pay {"cardholder_name"?,"payment_method_id"?,
/// "installments"?,"email"?,"card_number"?}`: pays as a buyer would on the
/// page; answers the payment, the order and the back URL.
pub async fn pay_by_control(
    sb: &Sandbox,
    account: &AccountRow,
    id: &str,
    v: &Value,
) -> Result<Value, HttpError> {
    let checkout = open(sb, id).await?;
    if checkout.account.name != account.name {
        return Err(HttpError::control(
            StatusCode::NOT_FOUND,
            &format!("no preference {id}"),
        ));
    }
    let text = |name: &str, default: &str| v[name].as_str().unwrap_or(default).to_string();
    let first = checkout
        .methods
        .first()
        .map(|m| shapes::json_id_text(&m["id"]))
        .unwrap_or_default();
    let payer_email = checkout.preference["payer"]["email"]
        .as_str()
        .filter(|e| !e.is_empty());
    let attempt = Attempt {
        cardholder_name: text("cardholder_name", "APRO"),
        card_number: text("card_number", TEST_CARD),
        email: text(
            "email",
            payer_email.unwrap_or("test_user_buyer@testuser.com"),
        ),
        payment_method_id: text("payment_method_id", &first),
        installments: v["installments"].as_u64().unwrap_or(1),
        identification_type: text("identification_type", "DNI"),
        identification_number: text("identification_number", "12345678"),
    };
    let checked = check(&checkout, &attempt)
        .map_err(|why| HttpError::control(StatusCode::BAD_REQUEST, &why))?;
    let paid = pay(sb, checkout, attempt, checked).await?;
    Ok(json!({
        "payment": paid.payment, "merchant_order": paid.order,
        "back_url": paid.back_url, "auto_return": paid.auto_return,
        "total_amount": amount_json(Money::parse(&paid.order["total_amount"].to_string()).unwrap_or(Money::ZERO)),
    }))
}
