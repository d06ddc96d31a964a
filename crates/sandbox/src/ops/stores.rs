//! Stores and points of sale, as a point-of-sale integration sets them up
//! before its first sale: `POST /users/{user_id}/stores`, `GET`/`PUT
//! …/stores/{id}`, `GET …/stores/search`; `POST /pos`, `GET`/`PUT`/`DELETE
//! /pos/{id}`, `GET /pos` (the search). A store's `external_id` is unique
//! in the account and a POS names its store by `store_id` or by
//! `external_store_id`; a POS's `external_id` (letters and digits) is what
//! the Orders API's QR orders name as `config.qr.external_pos_id`.
//! Refusals carry the documented codes as `error` and cause.

use http::StatusCode;
use serde_json::{Map, Value, json};

use super::sandbox::Sandbox;
use super::shapes;
use crate::error::HttpError;
use crate::model::AccountRow;
use crate::state::{StateError, resources};
use pointhook_common::clock::rfc3339;
use pointhook_common::query::Query;

const STORE_FIELDS: [&str; 4] = ["name", "business_hours", "external_id", "location"];
const LOCATION_FIELDS: [&str; 7] = [
    "street_number",
    "street_name",
    "city_name",
    "state_name",
    "latitude",
    "longitude",
    "reference",
];
const POS_FIELDS: [&str; 7] = [
    "name",
    "fixed_amount",
    "store_id",
    "external_store_id",
    "external_id",
    "category",
    "url",
];

fn bad(code: &str, message: &str) -> HttpError {
    HttpError::orders(StatusCode::BAD_REQUEST, code, message)
}

fn object(body: &[u8], what: &str) -> Result<Map<String, Value>, HttpError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => Ok(m),
        _ => Err(bad(
            "MISSING_BODY",
            &format!("HTTP body is required to {what}."),
        )),
    }
}

/// The account's user id as the path names it: 400 when it is not a
/// number, 403 when it is another user's.
fn own_user(account: &AccountRow, user_id: &str) -> Result<(), HttpError> {
    let Ok(n) = user_id.parse::<i64>() else {
        return Err(bad("INVALID_USER_ID", "USER_ID must be number."));
    };
    if n != account.user_id() {
        return Err(HttpError::orders(
            StatusCode::FORBIDDEN,
            "forbidden",
            "the user_id is not the access token's user",
        ));
    }
    Ok(())
}

/// Checks a store's fields; `creating` requires the name and location.
fn check_store(v: &Map<String, Value>, creating: bool) -> Result<(), HttpError> {
    if let Some(k) = v.keys().find(|k| !STORE_FIELDS.contains(&k.as_str())) {
        return Err(bad("UNKNOWN_FIELD", &format!("Unknown field: {k}.")));
    }
    match v.get("name") {
        Some(Value::String(n)) if !n.trim().is_empty() => {}
        None if !creating => {}
        _ => return Err(bad("INVALID_NAME", "NAME must be string.")),
    }
    match v.get("business_hours") {
        None | Some(Value::Object(_)) => {}
        _ => {
            return Err(bad(
                "INVALID_BUSINESS_HOURS",
                "BUSINESS_HOURS must be json_object.",
            ));
        }
    }
    match v.get("external_id") {
        None => {}
        Some(Value::String(e)) if e.len() <= 60 && e.chars().all(|c| c.is_ascii_alphanumeric()) => {
        }
        _ => {
            return Err(bad(
                "INVALID_EXTERNAL_ID",
                "EXTERNAL_ID must be alphanumeric, up to 60 characters.",
            ));
        }
    }
    match v.get("location") {
        Some(Value::Object(l)) => {
            for (k, x) in l {
                let ok = match k.as_str() {
                    "latitude" | "longitude" => x.is_number(),
                    k if LOCATION_FIELDS.contains(&k) => x.is_string(),
                    _ => false,
                };
                if !ok {
                    let upper = k.to_ascii_uppercase();
                    return Err(bad(
                        &format!("INVALID_{upper}"),
                        &format!("{upper} is not valid."),
                    ));
                }
            }
            Ok(())
        }
        None if !creating => Ok(()),
        _ => Err(bad("INVALID_LOCATION", "LOCATION must be json_object.")),
    }
}

/// A store's location as the API answers it: an `address_line` made of
/// its parts.
fn location(l: &Value) -> Value {
    let part = |k: &str| l[k].as_str().unwrap_or_default().to_string();
    let line = [
        format!("{} {}", part("street_name"), part("street_number")),
        part("city_name"),
        part("state_name"),
    ]
    .iter()
    .map(|s| s.trim().to_string())
    .filter(|s| !s.is_empty())
    .collect::<Vec<_>>()
    .join(", ");
    let mut out = l.clone();
    out["address_line"] = json!(line);
    out
}

/// `POST /users/{user_id}/stores`.
pub async fn create_store(
    sb: &Sandbox,
    account: &AccountRow,
    user_id: &str,
    body: &[u8],
) -> Result<Value, HttpError> {
    own_user(account, user_id)?;
    let v = object(body, "create a store")?;
    check_store(&v, true)?;
    let (name, now) = (account.name.clone(), sb.now());
    sb.db
        .call(move |tx| {
            let all = resources::of_kind(tx, "store", &name)?;
            if let Some(e) = v.get("external_id")
                && all.iter().any(|s| &s["external_id"] == e)
            {
                return Err(bad("VALIDATION_ERROR", "External_id-already-used-"));
            }
            let id = resources::next_id(tx, "store", 30_163_601)?;
            let store = json!({
                "id": id, "name": v["name"], "date_creation": rfc3339(now),
                "business_hours": v.get("business_hours").cloned().unwrap_or(json!({})),
                "location": location(&v["location"]), "external_id": v.get("external_id").cloned().unwrap_or(json!("")),
            });
            resources::put(tx, "store", &id.to_string(), &name, &store, None)?;
            Ok::<_, HttpError>(store)
        })
        .await
}

fn store_missing() -> HttpError {
    HttpError::orders(StatusCode::NOT_FOUND, "not_found", "Store not found.")
}

/// `GET /users/{user_id}/stores/{id}`.
pub async fn get_store(
    sb: &Sandbox,
    account: &AccountRow,
    user_id: &str,
    id: &str,
) -> Result<Value, HttpError> {
    own_user(account, user_id)?;
    super::changes::owned(sb, account, "store", id)
        .await?
        .ok_or_else(store_missing)
}

/// `PUT /users/{user_id}/stores/{id}`: the fields sent replace the store's.
pub async fn update_store(
    sb: &Sandbox,
    account: &AccountRow,
    user_id: &str,
    id: &str,
    body: &[u8],
) -> Result<Value, HttpError> {
    let mut store = get_store(sb, account, user_id, id).await?;
    let v = object(body, "update a store")?;
    check_store(&v, false)?;
    for (k, x) in &v {
        store[k.as_str()] = if k == "location" {
            location(x)
        } else {
            x.clone()
        };
    }
    let (name, id, stored) = (account.name.clone(), id.to_string(), store.clone());
    sb.db
        .call(move |tx| resources::put(tx, "store", &id, &name, &stored, None))
        .await?;
    Ok(store)
}

/// Paging as both searches take it: `limit` (at most 100, 30 by default)
/// and `offset`.
fn paging(q: &Query) -> Result<(usize, usize), HttpError> {
    let n = |name: &str, default: usize| match q.get(name) {
        None | Some("") => Ok(default),
        Some(t) => t.parse::<usize>().map_err(|_| {
            let upper = name.to_ascii_uppercase();
            bad(
                &format!("INVALID_{upper}"),
                &format!("{upper} must be number."),
            )
        }),
    };
    Ok((n("limit", 30)?.clamp(1, 100), n("offset", 0)?))
}

fn page(found: Vec<Value>, limit: usize, offset: usize) -> Value {
    let total = found.len();
    let results: Vec<Value> = found.into_iter().skip(offset).take(limit).collect();
    json!({"paging": {"total": total, "offset": offset, "limit": limit}, "results": results})
}

/// `GET /users/{user_id}/stores/search?external_id=`.
pub async fn search_stores(
    sb: &Sandbox,
    account: &AccountRow,
    user_id: &str,
    query: &str,
) -> Result<Value, HttpError> {
    own_user(account, user_id)?;
    let q = Query::parse(query);
    let (limit, offset) = paging(&q)?;
    let name = account.name.clone();
    let mut found = sb
        .db
        .call(move |tx| resources::of_kind(tx, "store", &name))
        .await?;
    if let Some(e) = q.get("external_id") {
        found.retain(|s| s["external_id"] == e);
    }
    found.sort_by_key(|s| s["id"].as_i64());
    Ok(page(found, limit, offset))
}

/// Checks a POS's fields and finds its store; `creating` requires the
/// name and a store.
fn check_pos(
    v: &Map<String, Value>,
    stores: &[Value],
    creating: bool,
) -> Result<Option<Value>, HttpError> {
    if let Some(k) = v.keys().find(|k| !POS_FIELDS.contains(&k.as_str())) {
        return Err(bad(
            "UNKNOWN_FIELD_EXCEPTION",
            &format!("The field {k} is not allowed for this operation or is unknown."),
        ));
    }
    match v.get("name") {
        Some(Value::String(n)) if !n.trim().is_empty() && n.chars().count() < 45 => {}
        None if !creating => {}
        _ => {
            return Err(bad(
                "INVALID_NAME",
                "NAME must be a string of less than 45 characters.",
            ));
        }
    }
    if v.get("fixed_amount").is_some_and(|f| !f.is_boolean()) {
        return Err(bad("INVALID_FIXED_AMOUNT", "FIXED_AMOUNT must be boolean."));
    }
    if v.get("category")
        .is_some_and(|c| !c.is_null() && !c.is_u64())
    {
        return Err(bad("INVALID_CATEGORY", "CATEGORY must be numeric."));
    }
    match v.get("external_id") {
        None if !creating => {}
        Some(Value::String(e))
            if !e.is_empty() && e.len() < 40 && e.chars().all(|c| c.is_ascii_alphanumeric()) => {}
        _ => {
            return Err(bad(
                "INVALID_EXTERNAL_ID",
                "The EXTERNAL_ID field must be alphanumeric, only letters and numbers, less than 40 characters.",
            ));
        }
    }
    let by_id = match v.get("store_id") {
        None => None,
        Some(id) => {
            let Some(n) = id
                .as_i64()
                .or_else(|| id.as_str().and_then(|s| s.parse().ok()))
            else {
                return Err(bad("INVALID_STORE_ID", "STORE_ID must be numeric."));
            };
            Some(
                stores
                    .iter()
                    .find(|s| s["id"] == n)
                    .cloned()
                    .ok_or_else(|| {
                        bad("INVALID_STORE_ID", "STORE_ID names no store of the user.")
                    })?,
            )
        }
    };
    let by_external = match v.get("external_store_id") {
        None => None,
        Some(Value::String(e)) => Some(
            stores
                .iter()
                .find(|s| s["external_id"] == e.as_str())
                .cloned()
                .ok_or_else(|| {
                    bad(
                        "INEXISTENT_EXTERNAL_STORE_ID",
                        "The EXTERNAL_STORE_ID does not refer to any existing store.",
                    )
                })?,
        ),
        Some(_) => {
            return Err(bad(
                "INVALID_EXTERNAL_STORE_ID",
                "EXTERNAL_STORE_ID must be string.",
            ));
        }
    };
    match (by_id, by_external) {
        (Some(a), Some(b)) if a["id"] != b["id"] => Err(bad(
            "EXTERNAL_STORE_ID_NOT_MATCH",
            "The EXTERNAL_STORE_ID does not refer to the indicated STORE_ID.",
        )),
        (None, None) if creating => Err(bad(
            "INVALID_STORE_ID",
            "STORE_ID or EXTERNAL_STORE_ID is required.",
        )),
        (a, b) => Ok(a.or(b)),
    }
}

/// `POST /pos`: 201 with the POS and its QR.
pub async fn create_pos(
    sb: &Sandbox,
    account: &AccountRow,
    body: &[u8],
) -> Result<Value, HttpError> {
    let v = object(body, "create pos")?;
    let (name, now, user) = (account.name.clone(), sb.now(), account.user_id());
    sb.db
        .call(move |tx| {
            let stores = resources::of_kind(tx, "store", &name)?;
            let store = check_pos(&v, &stores, true)?.unwrap_or(Value::Null);
            if resources::of_kind(tx, "pos", &name)?.iter().any(|p| p["external_id"] == v["external_id"]) {
                return Err(HttpError::orders(
                    StatusCode::CONFLICT,
                    "point_of_sale_exists",
                    "A point of sale with the same EXTERNAL_ID already exists.",
                ));
            }
            let id = resources::next_id(tx, "pos", 2_711_301)?;
            let qr = shapes::random_hex(32);
            let base = "https://www.mercadopago.com/instore/merchant/qr";
            let pos = json!({
                "id": id, "user_id": user, "name": v["name"],
                "fixed_amount": v.get("fixed_amount").cloned().unwrap_or(json!(false)),
                "category": v.get("category").cloned().unwrap_or(Value::Null),
                "store_id": store["id"], "external_store_id": store["external_id"],
                "external_id": v["external_id"], "url": v.get("url").cloned().unwrap_or(Value::Null),
                "status": "active", "uuid": shapes::random_hex(16),
                "qr": {"image": format!("{base}/{id}/{qr}.png"),
                       "template_document": format!("{base}/{id}/template_{qr}.pdf"),
                       "template_image": format!("{base}/{id}/template_{qr}.png")},
                "date_created": rfc3339(now), "date_last_updated": rfc3339(now),
            });
            resources::put(tx, "pos", &id.to_string(), &name, &pos, None)?;
            Ok::<_, HttpError>(pos)
        })
        .await
}

fn pos_missing() -> HttpError {
    HttpError::orders(
        StatusCode::NOT_FOUND,
        "not_found",
        "The point of sale does not exist.",
    )
}

/// `GET /pos/{id}`.
pub async fn get_pos(sb: &Sandbox, account: &AccountRow, id: &str) -> Result<Value, HttpError> {
    super::changes::owned(sb, account, "pos", id)
        .await?
        .ok_or_else(pos_missing)
}

/// `PUT /pos/{id}`: the fields sent replace the POS's.
pub async fn update_pos(
    sb: &Sandbox,
    account: &AccountRow,
    id: &str,
    body: &[u8],
) -> Result<Value, HttpError> {
    let v = object(body, "modify point of sale")?;
    let (name, id, now) = (account.name.clone(), id.to_string(), sb.now());
    sb.db
        .call(move |tx| {
            let mut pos =
                super::changes::owned_in(tx, &name, "pos", &id)?.ok_or_else(pos_missing)?;
            let stores = resources::of_kind(tx, "store", &name)?;
            if let Some(store) = check_pos(&v, &stores, false)? {
                pos["store_id"] = store["id"].clone();
                pos["external_store_id"] = store["external_id"].clone();
            }
            if let Some(e) = v.get("external_id") {
                let taken = resources::of_kind(tx, "pos", &name)?
                    .iter()
                    .any(|p| &p["external_id"] == e && p["id"] != pos["id"]);
                if taken {
                    return Err(HttpError::orders(
                        StatusCode::CONFLICT,
                        "point_of_sale_exists",
                        "A point of sale with the same EXTERNAL_ID already exists.",
                    ));
                }
            }
            for k in ["name", "fixed_amount", "category", "external_id", "url"] {
                if let Some(x) = v.get(k) {
                    pos[k] = x.clone();
                }
            }
            pos["date_last_updated"] = json!(rfc3339(now));
            resources::put(tx, "pos", &id, &name, &pos, None)?;
            Ok::<_, HttpError>(pos)
        })
        .await
}

/// `DELETE /pos/{id}`.
pub async fn delete_pos(sb: &Sandbox, account: &AccountRow, id: &str) -> Result<(), HttpError> {
    let (name, id) = (account.name.clone(), id.to_string());
    let gone = sb
        .db
        .call(move |tx| {
            if super::changes::owned_in(tx, &name, "pos", &id)?.is_none() {
                return Ok(false);
            }
            resources::delete(tx, "pos", &id)
        })
        .await
        .map_err(|e: StateError| HttpError::from(e))?;
    if gone { Ok(()) } else { Err(pos_missing()) }
}

/// `GET /pos?external_id=&external_store_id=&store_id=&category=`.
pub async fn search_pos(
    sb: &Sandbox,
    account: &AccountRow,
    query: &str,
) -> Result<Value, HttpError> {
    let q = Query::parse(query);
    let (limit, offset) = paging(&q)?;
    let name = account.name.clone();
    let mut found = sb
        .db
        .call(move |tx| resources::of_kind(tx, "pos", &name))
        .await?;
    for field in ["external_id", "external_store_id", "store_id", "category"] {
        if let Some(want) = q.get(field) {
            found.retain(|p| shapes::json_id_text(&p[field]) == want);
        }
    }
    found.sort_by_key(|p| p["id"].as_i64());
    Ok(page(found, limit, offset))
}
