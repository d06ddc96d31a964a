//! Customers and their saved cards, where the SDKs call them:
//! `POST`/`GET`/`PUT`/`DELETE /v1/customers[/{id}]`, `GET
//! /v1/customers/search?email=`, and `POST`/`GET`/`PUT`/`DELETE
//! /v1/customers/{id}/cards[/{card}]`. A card is saved from a card token
//! of the account (`{"token"}`) and keeps its digits and holder; its
//! payment method follows the number's first digit (a sandbox choice).

use http::StatusCode;
use serde_json::{Map, Value, json};

use super::sandbox::Sandbox;
use super::{card_tokens, shapes};
use crate::error::HttpError;
use crate::model::AccountRow;
use crate::state::resources;
use pointhook_common::clock::rfc3339;
use pointhook_common::query::Query;

const CUSTOMER_FIELDS: [&str; 9] = [
    "email",
    "first_name",
    "last_name",
    "phone",
    "identification",
    "default_address",
    "address",
    "date_registered",
    "description",
];

fn object(body: &[u8]) -> Result<Map<String, Value>, HttpError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => Ok(m),
        _ => Err(HttpError::bad_request(1, "the body must be a JSON object")),
    }
}

fn customer_missing() -> HttpError {
    HttpError::platform(StatusCode::NOT_FOUND, "not_found", "Customer not found")
        .cause(2000, "Customer not found")
}

fn card_missing() -> HttpError {
    HttpError::platform(StatusCode::NOT_FOUND, "not_found", "Card not found")
        .cause(2000, "Card not found")
}

fn email_ok(v: &Value) -> bool {
    v.as_str()
        .is_some_and(|e| e.contains('@') && !e.starts_with('@') && !e.ends_with('@'))
}

/// `POST /v1/customers`: 201; the e-mail is required and one customer's.
pub async fn create(sb: &Sandbox, account: &AccountRow, body: &[u8]) -> Result<Value, HttpError> {
    let v = object(body)?;
    if !v.get("email").is_some_and(email_ok) {
        return Err(HttpError::bad_request(
            214,
            "email is required and must be an e-mail address",
        ));
    }
    let (name, now, user) = (account.name.clone(), sb.now(), account.user_id());
    sb.db
        .call(move |tx| {
            let taken = resources::of_kind(tx, "customer", &name)?
                .iter()
                .any(|c| c["email"].as_str().map(str::to_ascii_lowercase) == v["email"].as_str().map(str::to_ascii_lowercase));
            if taken {
                return Err(HttpError::bad_request(101, "the customer already exist"));
            }
            let id = format!("{user}-{}", &shapes::random_hex(7));
            let mut c = json!({
                "id": id, "email": null, "first_name": null, "last_name": null,
                "phone": {"area_code": null, "number": null}, "identification": {"type": null, "number": null},
                "address": {"id": null, "zip_code": null, "street_name": null, "street_number": null},
                "default_address": null, "default_card": null, "description": null,
                "date_registered": null, "date_created": rfc3339(now), "date_last_updated": rfc3339(now),
                "metadata": v.get("metadata").cloned().unwrap_or(json!({})),
                "cards": [], "addresses": [], "live_mode": false, "user_id": user,
            });
            for f in CUSTOMER_FIELDS {
                if let Some(x) = v.get(f) {
                    c[f] = x.clone();
                }
            }
            resources::put(tx, "customer", &id, &name, &c, None)?;
            Ok::<_, HttpError>(c)
        })
        .await
}

/// `GET /v1/customers/{id}`.
pub async fn get(sb: &Sandbox, account: &AccountRow, id: &str) -> Result<Value, HttpError> {
    super::changes::owned(sb, account, "customer", id)
        .await?
        .ok_or_else(customer_missing)
}

/// `PUT /v1/customers/{id}`: the fields sent replace the customer's.
pub async fn update(
    sb: &Sandbox,
    account: &AccountRow,
    id: &str,
    body: &[u8],
) -> Result<Value, HttpError> {
    let v = object(body)?;
    let mut c = get(sb, account, id).await?;
    if v.get("email").is_some_and(|e| !email_ok(e)) {
        return Err(HttpError::bad_request(
            214,
            "email must be an e-mail address",
        ));
    }
    for f in CUSTOMER_FIELDS.iter().chain(&["metadata", "default_card"]) {
        if let Some(x) = v.get(*f) {
            c[*f] = x.clone();
        }
    }
    c["date_last_updated"] = json!(rfc3339(sb.now()));
    save(sb, account, "customer", id, &c).await?;
    Ok(c)
}

/// `DELETE /v1/customers/{id}`: 200 with the customer as it was.
pub async fn delete(sb: &Sandbox, account: &AccountRow, id: &str) -> Result<Value, HttpError> {
    let c = get(sb, account, id).await?;
    let id = id.to_string();
    sb.db
        .call(move |tx| resources::delete(tx, "customer", &id))
        .await?;
    Ok(c)
}

/// `GET /v1/customers/search?email=&limit=&offset=`.
pub async fn search(sb: &Sandbox, account: &AccountRow, query: &str) -> Result<Value, HttpError> {
    let q = Query::parse(query);
    let limit = q
        .get("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .unwrap_or(10)
        .clamp(1, 100);
    let offset = q
        .get("offset")
        .and_then(|o| o.parse::<usize>().ok())
        .unwrap_or(0);
    let name = account.name.clone();
    let mut all = sb
        .db
        .call(move |tx| resources::of_kind(tx, "customer", &name))
        .await?;
    if let Some(email) = q.get("email") {
        all.retain(|c| {
            c["email"]
                .as_str()
                .is_some_and(|e| e.eq_ignore_ascii_case(email))
        });
    }
    all.sort_by(|a, b| a["date_created"].as_str().cmp(&b["date_created"].as_str()));
    let total = all.len();
    let results: Vec<Value> = all.into_iter().skip(offset).take(limit).collect();
    Ok(json!({"paging": {"limit": limit, "offset": offset, "total": total}, "results": results}))
}

async fn save(
    sb: &Sandbox,
    account: &AccountRow,
    kind: &'static str,
    id: &str,
    body: &Value,
) -> Result<(), HttpError> {
    let (name, id, body) = (account.name.clone(), id.to_string(), body.clone());
    sb.db
        .call(move |tx| resources::put(tx, kind, &id, &name, &body, None))
        .await?;
    Ok(())
}

/// The method of a test card, from its first digit.
fn method_of(first_six: &str) -> Value {
    let (id, name) = match first_six.as_bytes().first() {
        Some(b'4') => ("visa", "Visa"),
        Some(b'3') => ("amex", "American Express"),
        _ => ("master", "Mastercard"),
    };
    let logo = format!("https://www.mercadopago.com/org-img/MP3/API/logos/{id}.gif");
    json!({"id": id, "name": name, "payment_type_id": "credit_card", "thumbnail": logo, "secure_thumbnail": logo})
}

/// `POST /v1/customers/{id}/cards {"token"}`: 201 with the card saved.
pub async fn add_card(
    sb: &Sandbox,
    account: &AccountRow,
    customer: &str,
    body: &[u8],
) -> Result<Value, HttpError> {
    let v = object(body)?;
    let mut c = get(sb, account, customer).await?;
    let token = v
        .get("token")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let name = account.name.clone();
    let now = sb.now();
    let (issued, n) = sb
        .db
        .call(move |tx| {
            let t = card_tokens::issued(tx, &name, &token)?;
            let n = resources::next_id(tx, "card", 1_562_188_766_001)?;
            Ok::<_, crate::state::StateError>((t, n))
        })
        .await?;
    let Some(t) = issued else {
        return Err(HttpError::bad_request(
            2006,
            "token must be a card token of this account",
        ));
    };
    let first_six = t["first_six_digits"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let method = method_of(&first_six);
    let id = n.to_string();
    let card = json!({
        "id": id, "customer_id": customer, "user_id": account.user_id(),
        "first_six_digits": first_six, "last_four_digits": t["last_four_digits"],
        "expiration_month": t["expiration_month"], "expiration_year": t["expiration_year"],
        "cardholder": t["cardholder"], "payment_method": method,
        "issuer": {"id": 24, "name": method["name"]},
        "security_code": {"length": t["security_code_length"], "card_location": "back"},
        "date_created": rfc3339(now), "date_last_updated": rfc3339(now), "live_mode": false,
    });
    if let Some(list) = c["cards"].as_array_mut() {
        list.push(card.clone());
    }
    if c["default_card"].is_null() {
        c["default_card"] = json!(id);
    }
    save(sb, account, "customer", customer, &c).await?;
    Ok(card)
}

/// `GET /v1/customers/{id}/cards`.
pub async fn cards(sb: &Sandbox, account: &AccountRow, customer: &str) -> Result<Value, HttpError> {
    Ok(get(sb, account, customer).await?["cards"].clone())
}

/// `GET /v1/customers/{id}/cards/{card}`.
pub async fn card(
    sb: &Sandbox,
    account: &AccountRow,
    customer: &str,
    card: &str,
) -> Result<Value, HttpError> {
    cards(sb, account, customer)
        .await?
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["id"] == card)
        .cloned()
        .ok_or_else(card_missing)
}

/// `PUT /v1/customers/{id}/cards/{card}`: `expiration_month`,
/// `expiration_year`, `cardholder` change.
pub async fn update_card(
    sb: &Sandbox,
    account: &AccountRow,
    customer: &str,
    card: &str,
    body: &[u8],
) -> Result<Value, HttpError> {
    let v = object(body)?;
    let mut c = get(sb, account, customer).await?;
    let now = rfc3339(sb.now());
    let Some(saved) = c["cards"]
        .as_array_mut()
        .into_iter()
        .flatten()
        .find(|x| x["id"] == card)
    else {
        return Err(card_missing());
    };
    for f in ["expiration_month", "expiration_year", "cardholder"] {
        if let Some(x) = v.get(f) {
            saved[f] = x.clone();
        }
    }
    saved["date_last_updated"] = json!(now);
    let out = saved.clone();
    save(sb, account, "customer", customer, &c).await?;
    Ok(out)
}

/// `DELETE /v1/customers/{id}/cards/{card}`: 200 with the card removed.
pub async fn delete_card(
    sb: &Sandbox,
    account: &AccountRow,
    customer: &str,
    card: &str,
) -> Result<Value, HttpError> {
    let gone = self::card(sb, account, customer, card).await?;
    let mut c = get(sb, account, customer).await?;
    if let Some(list) = c["cards"].as_array_mut() {
        list.retain(|x| x["id"] != card);
    }
    if c["default_card"] == card {
        c["default_card"] = c["cards"][0]["id"].clone();
    }
    save(sb, account, "customer", customer, &c).await?;
    Ok(gone)
}
