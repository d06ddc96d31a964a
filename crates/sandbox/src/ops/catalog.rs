//! What the platform lists per site and the SDKs read before a payment:
//! `GET /v1/payment_methods`, `GET /v1/identification_types`, and the
//! account itself (`GET /users/me`). An account's site is MLA until the
//! control API sets another (`POST /sandbox/site`); it gives preferences
//! their `site_id` and their items their currency. The lists are the
//! sandbox's short catalog (`data/sites.json`), in the shapes of the
//! SDKs' test answers.

use std::sync::LazyLock;

use http::StatusCode;
use serde_json::{Value, json};

use super::sandbox::Sandbox;
use crate::error::HttpError;
use crate::model::AccountRow;
use crate::state::{StateError, Tx, accounts};

/// Every site the sandbox knows, with its currency, identification types
/// and payment methods.
static SITES: LazyLock<Value> = LazyLock::new(|| {
    serde_json::from_str(include_str!("../../data/sites.json")).unwrap_or(Value::Null)
});

/// The site an account starts in.
pub const DEFAULT_SITE: &str = "MLA";

/// A site: its id and its currency.
#[derive(Debug, Clone)]
pub struct Site {
    pub id: String,
    pub currency: String,
}

/// The account's site, inside a transaction.
pub fn site_in(tx: &Tx<'_>, account: &str) -> Result<Site, StateError> {
    let id = accounts::preset(tx, account, "site_id")?.unwrap_or_else(|| DEFAULT_SITE.into());
    let currency = SITES[id.as_str()]["currency"]
        .as_str()
        .unwrap_or("ARS")
        .to_string();
    Ok(Site { id, currency })
}

/// The account's site.
pub async fn site(sb: &Sandbox, account: &AccountRow) -> Result<Site, StateError> {
    let name = account.name.clone();
    sb.db.call(move |tx| site_in(tx, &name)).await
}

/// `POST /sandbox/site {"site_id":"MLB"}`: the account's site from now on.
pub async fn set_site(sb: &Sandbox, account: &AccountRow, v: &Value) -> Result<Value, HttpError> {
    let id = v["site_id"].as_str().unwrap_or_default().to_string();
    if !SITES[id.as_str()].is_object() {
        let known: Vec<&String> = SITES
            .as_object()
            .into_iter()
            .flat_map(|m| m.keys())
            .filter(|k| !k.starts_with('_'))
            .collect();
        return Err(HttpError::control(
            StatusCode::BAD_REQUEST,
            &format!("site_id must be one of {known:?}"),
        ));
    }
    let name = account.name.clone();
    let stored = id.clone();
    sb.db
        .call(move |tx| accounts::set_preset(tx, &name, "site_id", &stored))
        .await?;
    let site = site(sb, account).await?;
    Ok(json!({"site_id": site.id, "currency_id": site.currency}))
}

/// `GET /v1/payment_methods`: the methods of the account's site.
pub async fn payment_methods(sb: &Sandbox, account: &AccountRow) -> Result<Value, HttpError> {
    let site = site(sb, account).await?;
    Ok(Value::Array(methods_of(&site.id)))
}

/// The payment methods of a site, as the API lists them.
pub fn methods_of(site: &str) -> Vec<Value> {
    SITES[site]["methods"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| {
            let (id, name, kind) = (m[0].as_str()?, m[1].as_str()?, m[2].as_str()?);
            let card = kind.ends_with("_card");
            let logo = format!("https://www.mercadopago.com/org-img/MP3/API/logos/{id}.gif");
            Some(json!({
                "id": id, "name": name, "payment_type_id": kind, "status": "active",
                "secure_thumbnail": logo, "thumbnail": logo,
                "deferred_capture": if kind == "credit_card" { "supported" } else { "does_not_apply" },
                "settings": if card { json!([{
                    "card_number": {"validation": "standard", "length": 16},
                    "bin": {"pattern": "^[0-9]", "installments_pattern": null, "exclusion_pattern": null},
                    "security_code": {"length": 3, "card_location": "back", "mode": "mandatory"},
                }]) } else { json!([]) },
                "additional_info_needed": if card { json!(["cardholder_name",
                    "cardholder_identification_type", "cardholder_identification_number"]) } else { json!([]) },
                "min_allowed_amount": 0.5, "max_allowed_amount": 9_999_999,
                "accreditation_time": if card { 0 } else { 2880 },
                "financial_institutions": [], "processing_modes": ["aggregator"],
            }))
        })
        .collect()
}

/// `GET /v1/identification_types`: those of the account's site.
pub async fn identification_types(sb: &Sandbox, account: &AccountRow) -> Result<Value, HttpError> {
    let site = site(sb, account).await?;
    Ok(SITES[site.id.as_str()]["identification_types"].clone())
}

/// `GET /users/me`: the account as the platform describes a user.
pub async fn me(sb: &Sandbox, account: &AccountRow) -> Result<Value, HttpError> {
    let site = site(sb, account).await?;
    let country = SITES[site.id.as_str()]["country"].clone();
    Ok(json!({
        "id": account.user_id(),
        "nickname": format!("TESTSANDBOX{}", account.user_id() % 100_000),
        "first_name": "Test", "last_name": "Sandbox",
        "email": format!("test_user_{}@testuser.com", account.user_id()),
        "site_id": site.id, "country_id": country,
        "user_type": "normal", "tags": ["normal", "test_user"],
        "status": {"site_status": "active"},
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_site_has_a_currency_and_card_methods() {
        for (id, site) in SITES.as_object().unwrap() {
            if id.starts_with('_') {
                continue;
            }
            assert!(site["currency"].is_string(), "{id}");
            let methods = methods_of(id);
            assert!(methods.iter().any(|m| m["id"] == "visa"), "{id}");
            assert!(site["identification_types"].is_array(), "{id}");
        }
    }
}
