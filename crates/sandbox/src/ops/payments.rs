//! Payments on the resources API: `POST /v1/payments`, validated like the
//! platform validates it and created in its final status (the test card's
//! holder decides it, `card_tokens`); and
//! `PUT /v1/payments/{id}`, the changes a seller may make:
//! `{"status":"cancelled"}` cancels one not yet approved,
//! `{"capture":true}` (with `transaction_amount` for less than what was
//! reserved) captures one created with `"capture": false`.

use http::StatusCode;
use serde_json::{Value, json};

use super::changes::{self, PAYMENT_IDS, amount_json, owned};
use super::sandbox::Sandbox;
use super::{card_tokens, payment_fields};
use crate::error::HttpError;
use crate::model::AccountRow;
use crate::state::{accounts, resources};
use pointhook_common::money::Money;

/// The sandbox's own refusal of a URL it may not notify.
pub const NOT_LOOPBACK: &str = "notification_url must be a loopback address: the sandbox notifies nothing else unless started with --public";

/// The cause the platform gives for an action its state does not allow.
const WRONG_STATE: u32 = 2063;

pub fn not_found() -> HttpError {
    HttpError::not_found("Payment not found")
}

// Each check reads "unless the field is right, name it".
#[allow(clippy::nonminimal_bool)]
/// `POST /v1/payments`: validated like the platform validates it; created
/// in its final status (approved unless the control API preset another).
pub async fn create(sb: &Sandbox, account: &AccountRow, body: &[u8]) -> Result<Value, HttpError> {
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        return Err(HttpError::bad_request(1, "body is not JSON"));
    };
    let mut causes: Vec<(u32, String)> = Vec::new();
    let amount = v
        .get("transaction_amount")
        .and_then(|a| Money::parse(&a.to_string()));
    if !amount.is_some_and(|a| a > Money::ZERO) {
        causes.push((4020, "transaction_amount must be a positive number".into()));
    }
    if !v
        .get("token")
        .and_then(Value::as_str)
        .is_some_and(|t| !t.is_empty())
    {
        causes.push((2006, "token is required (a card token)".into()));
    }
    if v.get("description").is_some_and(|d| !d.is_string()) {
        causes.push((4021, "description must be a string".into()));
    }
    if !v
        .get("installments")
        .and_then(Value::as_u64)
        .is_some_and(|i| i >= 1)
    {
        causes.push((
            3011,
            "installments must be a whole number, 1 or more".into(),
        ));
    }
    if !v
        .get("payment_method_id")
        .and_then(Value::as_str)
        .is_some_and(|p| !p.is_empty())
    {
        causes.push((4037, "payment_method_id is required".into()));
    }
    if v.get("issuer_id")
        .is_some_and(|i| !(i.is_string() || i.is_u64()))
    {
        causes.push((3018, "issuer_id must be a number or a string".into()));
    }
    let notification_url = v
        .get("notification_url")
        .and_then(Value::as_str)
        .map(str::to_string);
    if v.get("notification_url").is_some()
        && !notification_url
            .as_deref()
            .and_then(|u| url::Url::parse(u).ok())
            .is_some_and(|u| matches!(u.scheme(), "http" | "https"))
    {
        causes.push((4034, "notification_url must be an http or https URL".into()));
    } else if let Some(url) = &notification_url
        && !sb.may_notify(url)
    {
        causes.push((4034, NOT_LOOPBACK.into()));
    }
    let email = v.pointer("/payer/email").and_then(Value::as_str);
    if !email.is_some_and(|e| e.contains('@') && !e.starts_with('@') && !e.ends_with('@')) {
        causes.push((4050, "payer.email must be an e-mail address".into()));
    }
    for field in ["type", "number"] {
        let ok = v
            .pointer(&format!("/payer/identification/{field}"))
            .is_some_and(|x| x.as_str().is_some_and(|s| !s.is_empty()) || x.is_u64());
        if !ok {
            causes.push((2067, format!("payer.identification.{field} is required")));
        }
    }
    if !causes.is_empty() {
        let refusal =
            HttpError::platform(StatusCode::BAD_REQUEST, "bad_request", "invalid parameters");
        return Err(causes
            .iter()
            .fold(refusal, |e, (code, d)| e.cause(*code, d)));
    }
    if v.get("capture").is_some_and(|c| !c.is_boolean()) {
        return Err(HttpError::bad_request(1, "capture must be true or false"));
    }
    // `"capture": false` reserves the amount: the payment is authorized
    // until `PUT {"capture":true}` (a preset status still wins).
    let reserve = v.get("capture") == Some(&Value::Bool(false));
    let amount = amount.unwrap_or(Money::ZERO);
    let (name, collector) = (account.name.clone(), account.user_id());
    let now = sb.now();
    let payment = sb
        .db
        .call(move |tx| {
            let token = v.get("token").and_then(Value::as_str).unwrap_or_default();
            let card = card_tokens::issued(tx, &name, token)?;
            let (status, detail) = outcome(
                accounts::take_preset(tx, &name, "next_payment_status")?,
                card.as_ref(),
                reserve,
            );
            let id = resources::next_id(tx, "payment", PAYMENT_IDS)?;
            let mut payment = changes::payment_body(
                id,
                &status,
                amount,
                v.get("description").cloned(),
                None,
                collector,
                now,
            );
            payment["status_detail"] = json!(detail);
            if let Some(card) = &card {
                payment["card"] = json!({
                    "first_six_digits": card["first_six_digits"],
                    "last_four_digits": card["last_four_digits"],
                    "expiration_month": card["expiration_month"],
                    "expiration_year": card["expiration_year"],
                    "cardholder": card["cardholder"],
                });
            }
            // What the payer chose and the seller's reference, as sent.
            for field in [
                "external_reference",
                "payment_method_id",
                "installments",
                "issuer_id",
                "statement_descriptor",
                "notification_url",
            ] {
                if let Some(x) = v.get(field).filter(|x| x.is_string() || x.is_u64()) {
                    payment[field] = x.clone();
                }
            }
            for field in ["metadata", "additional_info"] {
                if let Some(x) = v.get(field).filter(|x| x.is_object()) {
                    payment[field] = x.clone();
                }
            }
            if let Some(b) = v.get("binary_mode").filter(|b| b.is_boolean()) {
                payment["binary_mode"] = b.clone();
            }
            payment["payer"] = payment_fields::payer(v.get("payer"));
            payment_fields::settle(&mut payment, now);
            resources::put(
                tx,
                "payment",
                &id.to_string(),
                &name,
                &payment,
                notification_url.as_deref(),
            )?;
            Ok::<_, HttpError>(payment)
        })
        .await?;
    let id = payment["id"].to_string();
    changes::announce(sb, account, "payment", &id, "payment.created").await?;
    Ok(payment)
}

/// The status and detail a new payment is created in: a preset status
/// wins; else the test name of the card's holder decides (an approval
/// with `"capture": false` is only authorized); else it is approved (or
/// authorized), whatever token it came with.
fn outcome(preset: Option<String>, card: Option<&Value>, reserve: bool) -> (String, String) {
    if let Some(status) = preset {
        let detail = changes::status_detail(&status).to_string();
        return (status, detail);
    }
    let named = card
        .and_then(|c| c.pointer("/cardholder/name"))
        .and_then(Value::as_str)
        .and_then(card_tokens::outcome);
    match named {
        Some(("approved", _)) | None if reserve => ("authorized".into(), "pending_capture".into()),
        Some((status, detail)) => (status.into(), detail.into()),
        None => ("approved".into(), "accredited".into()),
    }
}

/// `PUT /v1/payments/{id}`: a cancel or a capture.
pub async fn update(
    sb: &Sandbox,
    account: &AccountRow,
    id: &str,
    body: &[u8],
) -> Result<Value, HttpError> {
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        return Err(HttpError::bad_request(1, "body is not JSON"));
    };
    if v.get("capture").is_some() {
        capture(sb, account, id, &v).await
    } else if v.get("status").is_some() {
        cancel(sb, account, id, &v).await
    } else {
        Err(HttpError::bad_request(
            1,
            "only {\"status\":\"cancelled\"} or {\"capture\":true} is accepted",
        ))
    }
}

/// Cancels a payment while it is pending, in process or authorized.
async fn cancel(
    sb: &Sandbox,
    account: &AccountRow,
    id: &str,
    v: &Value,
) -> Result<Value, HttpError> {
    if v["status"] != "cancelled" {
        return Err(HttpError::bad_request(
            4,
            "only {\"status\":\"cancelled\"} is accepted",
        ));
    }
    let mut payment = owned(sb, account, "payment", id)
        .await?
        .ok_or_else(not_found)?;
    let status = payment["status"].as_str().unwrap_or_default().to_string();
    if !matches!(status.as_str(), "pending" | "in_process" | "authorized") {
        return Err(HttpError::bad_request(
            WRONG_STATE,
            &format!("a payment in status {status} cannot be cancelled"),
        ));
    }
    payment["status"] = json!("cancelled");
    payment["status_detail"] = json!("by_collector");
    changes::save_payment(sb, account, &payment).await?;
    Ok(payment)
}

/// Captures an authorized payment, whole or for less (`transaction_amount`
/// at most what was reserved); it is approved from then on.
async fn capture(
    sb: &Sandbox,
    account: &AccountRow,
    id: &str,
    v: &Value,
) -> Result<Value, HttpError> {
    if v["capture"] != true {
        return Err(HttpError::bad_request(1, "capture must be true"));
    }
    let mut payment = owned(sb, account, "payment", id)
        .await?
        .ok_or_else(not_found)?;
    let status = payment["status"].as_str().unwrap_or_default().to_string();
    if status != "authorized" {
        return Err(HttpError::bad_request(
            WRONG_STATE,
            &format!("only an authorized payment can be captured; this one is {status}"),
        ));
    }
    let reserved = Money::parse(&payment["transaction_amount"].to_string()).unwrap_or(Money::ZERO);
    let amount = match v.get("transaction_amount") {
        None | Some(Value::Null) => reserved,
        Some(a) => match Money::parse(&a.to_string()) {
            Some(m) if m.is_positive() && m <= reserved => m,
            _ => {
                return Err(HttpError::bad_request(
                    1,
                    &format!(
                        "transaction_amount must be a positive number, at most the {reserved} reserved"
                    ),
                ));
            }
        },
    };
    payment["status"] = json!("approved");
    payment["status_detail"] = json!("accredited");
    payment["captured"] = json!(true);
    payment["transaction_amount"] = amount_json(amount);
    payment["date_approved"] = json!(pointhook_common::clock::rfc3339(sb.now()));
    changes::save_payment(sb, account, &payment).await?;
    Ok(payment)
}
