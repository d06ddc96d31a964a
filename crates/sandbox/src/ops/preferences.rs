//! Checkout Pro preferences (`/checkout/preferences`): created, read,
//! changed and searched with what the platform documents and the SDKs
//! send (items, payer, back_urls, auto_return, notification_url,
//! external_reference, expiration, payment-method exclusions). A
//! preference's `init_point` and `sandbox_init_point` lead to the
//! sandbox's own checkout page (`checkout`); both are the same page here.

use std::str::FromStr;

use http::StatusCode;
use rust_decimal::Decimal;
use serde_json::{Map, Value, json};

use super::catalog::{self, Site};
use super::changes::amount_json;
use super::payments::NOT_LOOPBACK;
use super::sandbox::Sandbox;
use super::shapes;
use crate::error::HttpError;
use crate::model::AccountRow;
use crate::state::resources;
use pointhook_common::clock::rfc3339;
use pointhook_common::query::Query;

/// Fields a create or an update takes as sent (after their checks).
const TAKEN: [&str; 24] = [
    "additional_info",
    "auto_return",
    "back_urls",
    "binary_mode",
    "coupon_code",
    "coupon_labels",
    "date_of_expiration",
    "differential_pricing",
    "expiration_date_from",
    "expiration_date_to",
    "expires",
    "external_reference",
    "marketplace",
    "marketplace_fee",
    "metadata",
    "notification_url",
    "operation_type",
    "payer",
    "payment_methods",
    "processing_modes",
    "purpose",
    "redirect_urls",
    "shipments",
    "statement_descriptor",
];

/// The platform's refusal of a preference.
fn refused(error: &str, message: &str) -> HttpError {
    HttpError::platform(StatusCode::BAD_REQUEST, error, message)
}

pub fn not_found() -> HttpError {
    HttpError::platform(StatusCode::NOT_FOUND, "not_found", "preference not found")
}

/// Where a preference's checkout page is.
pub fn checkout_url(base: &str, id: &str) -> String {
    format!("{base}/checkout/v1/redirect?pref_id={id}")
}

/// A new preference: what was sent, over the platform's defaults.
fn fresh(id: &str, collector: i64, site: &Site, base: &str, now: i64) -> Value {
    json!({
        "id": id, "collector_id": collector, "client_id": collector.to_string(),
        "site_id": site.id, "date_created": rfc3339(now), "last_updated": rfc3339(now),
        "init_point": checkout_url(base, id), "sandbox_init_point": checkout_url(base, id),
        "items": [], "total_amount": 0, "additional_info": "", "auto_return": "",
        "back_urls": {"failure": "", "pending": "", "success": ""},
        "redirect_urls": {"failure": "", "pending": "", "success": ""},
        "binary_mode": false, "coupon_code": null, "coupon_labels": null,
        "date_of_expiration": null, "expiration_date_from": null, "expiration_date_to": null,
        "expires": false, "external_reference": "", "internal_metadata": null,
        "marketplace": "NONE", "marketplace_fee": 0, "metadata": {}, "notification_url": null,
        "operation_type": "regular_payment", "processing_modes": null, "product_id": null,
        "statement_descriptor": null, "shipments": {"mode": "not_specified", "cost": 0, "default_shipping_method": null,
            "receiver_address": {"zip_code": "", "street_name": "", "street_number": null,
            "floor": "", "apartment": "", "city_name": null, "state_name": null, "country_name": null}},
        "payer": {"name": "", "surname": "", "email": "", "date_created": null, "last_purchase": null,
            "phone": {"area_code": "", "number": ""},
            "identification": {"type": "", "number": ""},
            "address": {"zip_code": "", "street_name": "", "street_number": null}},
        "payment_methods": {"default_card_id": null, "default_payment_method_id": null,
            "excluded_payment_methods": [{"id": ""}], "excluded_payment_types": [{"id": ""}],
            "installments": null, "default_installments": null},
    })
}

/// Applies `sent` to `pref` (a create or an update), checked as the
/// platform checks it; the total follows the items.
fn apply(
    sb: &Sandbox,
    pref: &mut Value,
    sent: &Map<String, Value>,
    site: &Site,
) -> Result<(), HttpError> {
    if let Some(items) = sent.get("items") {
        pref["items"] = items_of(items, site)?;
    }
    for field in TAKEN {
        match (pref.get_mut(field), sent.get(field)) {
            // An object sent fills in the fields it names; the others
            // keep their defaults, as the platform answers them.
            (Some(Value::Object(have)), Some(Value::Object(x))) => {
                have.extend(x.iter().map(|(k, v)| (k.clone(), v.clone())))
            }
            (_, Some(x)) => pref[field] = x.clone(),
            (_, None) => {}
        }
    }
    let url = pref["notification_url"].clone();
    if let Some(u) = url.as_str() {
        if !url::Url::parse(u).is_ok_and(|x| matches!(x.scheme(), "http" | "https")) {
            return Err(refused(
                "invalid_notification_url",
                "notification_url must be an http or https URL",
            ));
        }
        if !sb.may_notify(u) {
            return Err(refused("invalid_notification_url", NOT_LOOPBACK));
        }
    } else if !url.is_null() {
        return Err(refused(
            "invalid_notification_url",
            "notification_url must be a string",
        ));
    }
    match pref["auto_return"].as_str() {
        Some("" | "approved" | "all") => {}
        _ => {
            return Err(refused(
                "invalid_auto_return",
                "auto_return must be approved or all",
            ));
        }
    }
    let success = pref["back_urls"]["success"].as_str().unwrap_or_default();
    if pref["auto_return"] != "" && success.is_empty() {
        return Err(refused(
            "invalid_auto_return",
            "auto_return invalid. back_url.success must be defined",
        ));
    }
    for (name, url) in pref["back_urls"].as_object().into_iter().flatten() {
        let ok = url
            .as_str()
            .is_some_and(|u| u.is_empty() || url::Url::parse(u).is_ok());
        if !ok {
            return Err(refused(
                "invalid_back_urls",
                &format!("back_urls.{name} must be a URL"),
            ));
        }
    }
    if !pref["expires"].is_boolean() {
        return Err(refused("invalid_expires", "expires must be true or false"));
    }
    for field in [
        "expiration_date_from",
        "expiration_date_to",
        "date_of_expiration",
    ] {
        let v = &pref[field];
        if !v.is_null() && time_of(v).is_none() {
            return Err(refused(
                &format!("invalid_{field}"),
                &format!(
                    "{field} must be a date and time with its offset (2030-01-31T23:59:59.000-03:00)"
                ),
            ));
        }
    }
    let max = &pref["payment_methods"]["installments"];
    if !max.is_null() && !max.as_u64().is_some_and(|m| (1..=36).contains(&m)) {
        return Err(refused(
            "invalid_installments",
            "payment_methods.installments must be 1 to 36",
        ));
    }
    let total = items_total(&pref["items"])?;
    pref["total_amount"] = amount_json_decimal(total);
    Ok(())
}

/// Unix ms of a date-time the platform writes with its offset.
pub fn time_of(v: &Value) -> Option<i64> {
    jiff::Timestamp::from_str(v.as_str()?)
        .ok()
        .map(|t| t.as_millisecond())
}

// Each check reads "unless the field is right, refuse".
#[allow(clippy::nonminimal_bool)]
/// The items as kept: each with a `unit_price` above zero, a whole
/// `quantity` of at least one and a `title`; the site's currency unless
/// the item names one.
fn items_of(items: &Value, site: &Site) -> Result<Value, HttpError> {
    let Some(list) = items.as_array().filter(|l| !l.is_empty()) else {
        return Err(refused("invalid_items", "items needed"));
    };
    let mut kept = Vec::with_capacity(list.len());
    for item in list {
        let Some(fields) = item.as_object() else {
            return Err(refused("invalid_items", "an item must be an object"));
        };
        let price = fields.get("unit_price").filter(|p| p.is_number());
        if !price
            .and_then(|p| Decimal::from_str(&p.to_string()).ok())
            .is_some_and(|p| p > Decimal::ZERO)
        {
            return Err(refused("invalid_items", "unit_price invalid"));
        }
        if !fields
            .get("quantity")
            .and_then(Value::as_u64)
            .is_some_and(|q| (1..=1_000_000).contains(&q))
        {
            return Err(refused("invalid_items", "quantity invalid"));
        }
        if !fields
            .get("title")
            .and_then(Value::as_str)
            .is_some_and(|t| !t.trim().is_empty())
        {
            return Err(refused("invalid_items", "title invalid"));
        }
        let mut item = json!({"id": "", "category_id": "", "currency_id": site.currency,
            "description": "", "picture_url": ""});
        for (k, v) in fields {
            item[k] = v.clone();
        }
        kept.push(item);
    }
    Ok(Value::Array(kept))
}

/// The sum of the items' `unit_price` times `quantity`, exactly.
pub fn items_total(items: &Value) -> Result<Decimal, HttpError> {
    let mut total = Decimal::ZERO;
    for item in items.as_array().into_iter().flatten() {
        let price = Decimal::from_str(&item["unit_price"].to_string()).unwrap_or(Decimal::ZERO);
        let quantity = Decimal::from(item["quantity"].as_u64().unwrap_or(1));
        total = price
            .checked_mul(quantity)
            .and_then(|line| total.checked_add(line))
            .ok_or_else(|| refused("invalid_items", "the items' total is too large"))?;
    }
    Ok(total)
}

fn amount_json_decimal(d: Decimal) -> Value {
    pointhook_common::money::Money::parse(&d.to_string())
        .map(amount_json)
        .unwrap_or(Value::Null)
}

fn object(body: &[u8]) -> Result<Map<String, Value>, HttpError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => Ok(m),
        _ => Err(refused("bad_request", "the body must be a JSON object")),
    }
}

/// `POST /checkout/preferences`: 201 with the preference.
pub async fn create(sb: &Sandbox, account: &AccountRow, body: &[u8]) -> Result<Value, HttpError> {
    let sent = object(body)?;
    if !sent.contains_key("items") {
        return Err(refused("invalid_items", "items needed"));
    }
    let site = catalog::site(sb, account).await?;
    let collector = account.user_id();
    let id = format!("{collector}-{}", shapes::uuid_like());
    let mut pref = fresh(&id, collector, &site, &sb.base_url, sb.now());
    apply(sb, &mut pref, &sent, &site)?;
    store(sb, account, &pref).await?;
    Ok(pref)
}

/// `GET /checkout/preferences/{id}`.
pub async fn get(sb: &Sandbox, account: &AccountRow, id: &str) -> Result<Value, HttpError> {
    super::changes::owned(sb, account, "preference", id)
        .await?
        .ok_or_else(not_found)
}

/// `PUT /checkout/preferences/{id}`: the fields sent replace the
/// preference's (items as a whole); 200 with the preference.
pub async fn update(
    sb: &Sandbox,
    account: &AccountRow,
    id: &str,
    body: &[u8],
) -> Result<Value, HttpError> {
    let sent = object(body)?;
    let mut pref = get(sb, account, id).await?;
    let site = catalog::site(sb, account).await?;
    apply(sb, &mut pref, &sent, &site)?;
    pref["last_updated"] = json!(rfc3339(sb.now()));
    store(sb, account, &pref).await?;
    Ok(pref)
}

async fn store(sb: &Sandbox, account: &AccountRow, pref: &Value) -> Result<(), HttpError> {
    let (name, stored) = (account.name.clone(), pref.clone());
    let id = shapes::json_id_text(&pref["id"]);
    let url = pref["notification_url"].as_str().map(str::to_string);
    sb.db
        .call(move |tx| resources::put(tx, "preference", &id, &name, &stored, url.as_deref()))
        .await?;
    Ok(())
}

/// `GET /checkout/preferences/search`: `external_reference`, `site_id`,
/// `marketplace`, `sponsor_id` filters; `limit` (at most 100, 30 by
/// default) and `offset`; newest first; each element a summary.
pub async fn search(sb: &Sandbox, account: &AccountRow, query: &str) -> Result<Value, HttpError> {
    let q = Query::parse(query);
    let number = |name: &str, default: usize| -> Result<usize, HttpError> {
        match q.get(name) {
            None | Some("") => Ok(default),
            Some(n) => n
                .parse()
                .map_err(|_| refused("bad_request", &format!("{name} must be a number"))),
        }
    };
    let limit = number("limit", 30)?.clamp(1, 100);
    let offset = number("offset", 0)?;
    let name = account.name.clone();
    let mut all = sb
        .db
        .call(move |tx| resources::of_kind(tx, "preference", &name))
        .await?;
    all.retain(|p| {
        ["external_reference", "site_id", "marketplace", "sponsor_id"]
            .iter()
            .all(|f| {
                q.get(f)
                    .is_none_or(|want| shapes::json_id_text(&p[*f]) == want)
            })
    });
    all.sort_by(|a, b| b["date_created"].as_str().cmp(&a["date_created"].as_str()));
    let total = all.len();
    let elements: Vec<Value> = all.iter().skip(offset).take(limit).map(summary).collect();
    Ok(json!({"elements": elements, "next_offset": offset + elements.len(), "total": total}))
}

/// A preference as a search lists it.
fn summary(p: &Value) -> Value {
    let titles: Vec<Value> = p["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|i| i["title"].clone())
        .collect();
    json!({
        "id": p["id"], "client_id": p["client_id"], "collector_id": p["collector_id"],
        "concept_id": null, "corporation_id": "", "date_created": p["date_created"],
        "expiration_date_from": p["expiration_date_from"], "expiration_date_to": p["expiration_date_to"],
        "expires": p["expires"], "external_reference": p["external_reference"], "integrator_id": "",
        "items": titles, "last_updated": p["last_updated"], "live_mode": false,
        "marketplace": p["marketplace"], "operation_type": p["operation_type"],
        "payer_email": p["payer"]["email"], "payer_id": null, "platform_id": "",
        "processing_modes": p["processing_modes"], "product_id": "", "purpose": p.get("purpose").cloned().unwrap_or(json!("")),
        "site_id": p["site_id"], "sponsor_id": 0, "shipping_mode": p["shipments"]["mode"],
    })
}
