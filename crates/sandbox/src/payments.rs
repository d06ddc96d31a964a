//! `PUT /v1/payments/{id}`: the changes the API lets a seller make to a
//! payment. `{"status":"cancelled"}` cancels one not yet approved;
//! `{"capture":true}` (with `transaction_amount` for less than what was
//! reserved) captures one created with `"capture": false`.

use http::{Response, StatusCode};
use serde_json::{Value, json};

use super::Sandbox;
use super::accounts::AccountRow;
use super::changes::{self, amount_json, owned};
use super::resources::{ok_json, platform_error};
use pointhook_common::money::Money;
use pointhook_common::response::Body;

/// The cause the platform gives for an action its state does not allow.
const WRONG_STATE: u32 = 2063;

pub(super) async fn update(
    sb: &Sandbox,
    account: &AccountRow,
    id: &str,
    body: &[u8],
) -> anyhow::Result<Response<Body>> {
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        return Ok(bad("body is not JSON", 1));
    };
    if v.get("capture").is_some() {
        capture(sb, account, id, &v).await
    } else if v.get("status").is_some() {
        cancel(sb, account, id, &v).await
    } else {
        Ok(bad(
            "only {\"status\":\"cancelled\"} or {\"capture\":true} is accepted",
            1,
        ))
    }
}

pub(super) fn not_found() -> Response<Body> {
    platform_error(
        StatusCode::NOT_FOUND,
        "not_found",
        "Payment not found",
        &[(2000, "Payment not found")],
    )
}

fn bad(message: &str, code: u32) -> Response<Body> {
    platform_error(
        StatusCode::BAD_REQUEST,
        "bad_request",
        message,
        &[(code, message)],
    )
}

/// Cancels a payment while it is pending, in process or authorized.
async fn cancel(
    sb: &Sandbox,
    account: &AccountRow,
    id: &str,
    v: &Value,
) -> anyhow::Result<Response<Body>> {
    if v["status"] != "cancelled" {
        return Ok(bad("only {\"status\":\"cancelled\"} is accepted", 4));
    }
    let Some(mut payment) = owned(sb, account, "payment", id).await? else {
        return Ok(not_found());
    };
    let status = payment["status"].as_str().unwrap_or_default().to_string();
    if !matches!(status.as_str(), "pending" | "in_process" | "authorized") {
        return Ok(bad(
            &format!("a payment in status {status} cannot be cancelled"),
            WRONG_STATE,
        ));
    }
    payment["status"] = json!("cancelled");
    payment["status_detail"] = json!("by_collector");
    changes::save_payment(sb, account, &payment).await?;
    Ok(ok_json(StatusCode::OK, &payment))
}

/// Captures an authorized payment, whole or for less (`transaction_amount`
/// at most what was reserved); it is approved from then on.
async fn capture(
    sb: &Sandbox,
    account: &AccountRow,
    id: &str,
    v: &Value,
) -> anyhow::Result<Response<Body>> {
    if v["capture"] != true {
        return Ok(bad("capture must be true", 1));
    }
    let Some(mut payment) = owned(sb, account, "payment", id).await? else {
        return Ok(not_found());
    };
    let status = payment["status"].as_str().unwrap_or_default().to_string();
    if status != "authorized" {
        return Ok(bad(
            &format!("only an authorized payment can be captured; this one is {status}"),
            WRONG_STATE,
        ));
    }
    let reserved = Money::parse(&payment["transaction_amount"].to_string()).unwrap_or(Money::ZERO);
    let amount = match v.get("transaction_amount") {
        None | Some(Value::Null) => reserved,
        Some(a) => match Money::parse(&a.to_string()) {
            Some(m) if m.is_positive() && m <= reserved => m,
            _ => {
                return Ok(bad(
                    &format!(
                        "transaction_amount must be a positive number, at most the {reserved} reserved"
                    ),
                    1,
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
    Ok(ok_json(StatusCode::OK, &payment))
}
