//! Merchant orders as the resources API creates and changes them
//! (`POST /merchant_orders`, `PUT /merchant_orders/{id}`); get and search
//! are `resources` and `search`. The sandbox has no preferences, so an
//! order's `total_amount` is the sum of its items (`unit_price` times
//! `quantity`); a created or changed order is announced like any other.

use std::str::FromStr;

use http::StatusCode;
use rust_decimal::Decimal;
use serde_json::{Map, Value, json};

use super::changes::{MERCHANT_ORDER_IDS, amount_json, announce, owned, refresh_order};
use super::payments::NOT_LOOPBACK;
use super::sandbox::Sandbox;
use crate::error::HttpError;
use crate::model::AccountRow;
use crate::state::resources;
use pointhook_common::clock::rfc3339;
use pointhook_common::money::Money;

/// Fields a create or an update takes as they are.
const PLAIN: [&str; 8] = [
    "external_reference",
    "preference_id",
    "additional_info",
    "payer",
    "site_id",
    "marketplace",
    "sponsor_id",
    "application_id",
];

/// `POST /merchant_orders`: 201 with the order.
pub async fn create(sb: &Sandbox, account: &AccountRow, body: &[u8]) -> Result<Value, HttpError> {
    let v = object(body)?;
    let url = notification_url(sb, &v)?;
    let items = match v.get("items") {
        Some(Value::Array(list)) if !list.is_empty() => list.clone(),
        _ => {
            return Err(refusal(
                "invalid_items",
                "items are required (the sandbox has no preferences to take them from)",
            ));
        }
    };
    let total = total_of(&items)?;
    let (name, now, collector) = (account.name.clone(), sb.now(), account.user_id());
    let order = sb
        .db
        .call(move |tx| {
            let id = resources::next_id(tx, "merchant_order", MERCHANT_ORDER_IDS)?;
            let mut order = json!({
                "id": id, "status": "opened", "order_status": "payment_required",
                "external_reference": null, "preference_id": null, "additional_info": null,
                "payer": null, "site_id": "MLA", "marketplace": "NONE", "sponsor_id": null,
                "application_id": null, "collector": {"id": collector, "email": "", "nickname": null},
                "notification_url": url, "items": items, "payments": [], "shipments": [], "payouts": [],
                "total_amount": amount_json(total), "paid_amount": 0, "refunded_amount": 0,
                "shipping_cost": 0, "cancelled": false, "is_test": false,
                "date_created": rfc3339(now), "last_updated": rfc3339(now),
            });
            for field in PLAIN {
                if let Some(x) = v.get(field) {
                    order[field] = x.clone();
                }
            }
            resources::put(tx, "merchant_order", &id.to_string(), &name, &order, url.as_deref())?;
            Ok::<_, HttpError>(order)
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

/// `PUT /merchant_orders/{id}`: changes the fields given; `items` change
/// the quantity of the items they name by `id`, `shipments` change (by
/// `id`) or add shipments.
pub async fn update(
    sb: &Sandbox,
    account: &AccountRow,
    id: &str,
    body: &[u8],
) -> Result<Value, HttpError> {
    let v = object(body)?;
    let url = notification_url(sb, &v)?;
    let mut order = owned(sb, account, "merchant_order", id)
        .await?
        .ok_or_else(|| HttpError::not_found("Merchant order not found"))?;
    for field in PLAIN {
        if let Some(x) = v.get(field) {
            order[field] = x.clone();
        }
    }
    if let Some(u) = &url {
        order["notification_url"] = json!(u);
    }
    if let Some(changes) = v.get("items") {
        change_items(&mut order, changes)?;
    }
    if let Some(changes) = v.get("shipments") {
        change_shipments(&mut order, changes)?;
    }
    refresh_order(&mut order);
    let (name, oid, now) = (account.name.clone(), id.to_string(), sb.now());
    order["last_updated"] = json!(rfc3339(now));
    let stored = order.clone();
    sb.db
        .call(move |tx| resources::put(tx, "merchant_order", &oid, &name, &stored, url.as_deref()))
        .await?;
    announce(sb, account, "merchant_order", id, "update").await?;
    Ok(order)
}

fn refusal(error: &str, message: &str) -> HttpError {
    HttpError::platform(StatusCode::BAD_REQUEST, error, message)
}

fn object(body: &[u8]) -> Result<Map<String, Value>, HttpError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => Ok(m),
        _ => Err(refusal(
            "unmarshal_error",
            "could not unmarshal request body into merchant order struct",
        )),
    }
}

fn notification_url(sb: &Sandbox, v: &Map<String, Value>) -> Result<Option<String>, HttpError> {
    match v.get("notification_url") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(u))
            if url::Url::parse(u).is_ok_and(|x| matches!(x.scheme(), "http" | "https")) =>
        {
            if !sb.may_notify(u) {
                return Err(refusal("invalid_url", NOT_LOOPBACK));
            }
            Ok(Some(u.clone()))
        }
        Some(_) => Err(refusal("invalid_url", "invalid URL. Isn't HTTP or HTTPS.")),
    }
}

/// The sum of `unit_price` times `quantity` (1 when absent), exactly.
fn total_of(items: &[Value]) -> Result<Money, HttpError> {
    let mut total = Decimal::ZERO;
    for item in items {
        let price = item
            .get("unit_price")
            .filter(|p| p.is_number())
            .and_then(|p| Decimal::from_str(&p.to_string()).ok())
            .filter(|p| *p > Decimal::ZERO)
            .ok_or_else(|| refusal("invalid_items", "invalid unit_price."))?;
        let quantity = match item.get("quantity") {
            None | Some(Value::Null) => 1,
            Some(q) => q
                .as_u64()
                .filter(|q| (1..=1_000_000).contains(q))
                .ok_or_else(|| refusal("invalid_items", "invalid quantity."))?,
        };
        total = price
            .checked_mul(Decimal::from(quantity))
            .and_then(|line| total.checked_add(line))
            .ok_or_else(|| refusal("invalid_items", "the items' total is too large."))?;
    }
    Money::parse(&total.to_string()).ok_or_else(|| refusal("invalid_items", "invalid unit_price."))
}

fn change_items(order: &mut Value, changes: &Value) -> Result<(), HttpError> {
    let Some(changes) = changes.as_array() else {
        return Err(refusal("invalid_items", "items must be a list"));
    };
    let mut items = order["items"].as_array().cloned().unwrap_or_default();
    for change in changes {
        let Some(item) = items
            .iter_mut()
            .find(|i| change.get("id").is_some_and(|id| i.get("id") == Some(id)))
        else {
            return Err(refusal(
                "invalid_items",
                "an item to change must name the id of one of the order's items",
            ));
        };
        if let (Some(q), Some(fields)) = (change.get("quantity"), item.as_object_mut()) {
            fields.insert("quantity".into(), q.clone());
        }
    }
    let total = total_of(&items)?;
    order["items"] = Value::Array(items);
    order["total_amount"] = amount_json(total);
    Ok(())
}

fn change_shipments(order: &mut Value, changes: &Value) -> Result<(), HttpError> {
    let Some(changes) = changes.as_array() else {
        return Err(refusal("invalid_shipments", "shipments must be a list"));
    };
    let mut shipments = order["shipments"].as_array().cloned().unwrap_or_default();
    for change in changes {
        let Some(fields) = change.as_object() else {
            return Err(refusal("invalid_shipments", "a shipment must be an object"));
        };
        let existing = shipments
            .iter_mut()
            .filter_map(Value::as_object_mut)
            .find(|s| fields.get("id").is_some_and(|id| s.get("id") == Some(id)));
        match existing {
            Some(s) => s.extend(fields.clone()),
            None => shipments.push(change.clone()),
        }
    }
    order["shipments"] = Value::Array(shipments);
    Ok(())
}
