//! Refunds of a payment (`/v1/payments/{id}/refunds`): create one, total or
//! partial (`{"amount"}`), list them, get one. A refund and the payment it
//! changes are written in one transaction, so two refunds racing never take
//! more than was paid; the same `X-Idempotency-Key` gets the same refund
//! back. A payment refunded in part stays approved with `status_detail`
//! `partially_refunded`; refunded in full it is `refunded`. Either way it
//! carries `transaction_amount_refunded` and its `refunds`.

use http::{Response, StatusCode};
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::{Value, json};

use super::Sandbox;
use super::accounts::AccountRow;
use super::changes::{self, amount_json};
use super::db;
use super::payments::not_found;
use super::resources::{ok_json, platform_error};
use pointhook_common::clock::rfc3339;
use pointhook_common::money::Money;
use pointhook_common::response::{self, Body};

/// What a refund request asked for, once read.
enum Asked {
    Total,
    Part(Money),
}

/// Why a refund is refused, with the platform's cause code.
struct Refusal {
    code: u32,
    message: String,
}

enum Outcome {
    Created(Value, Option<String>),
    /// The refund an earlier request with the same key made.
    Again(String),
    NoPayment,
    Refused(Refusal),
}

/// `POST /v1/payments/{id}/refunds`.
pub(super) async fn create(
    sb: &Sandbox,
    account: &AccountRow,
    payment_id: &str,
    key: Option<String>,
    body: &[u8],
) -> anyhow::Result<Response<Body>> {
    let asked = match read(body) {
        Ok(a) => a,
        Err(r) => return Ok(refused(r)),
    };
    let (who, pid, now) = (account.clone(), payment_id.to_string(), sb.now());
    let outcome = sb
        .db
        .call(move |conn| {
            let tx = conn.transaction()?;
            let out = refund(&tx, &who, &pid, key.as_deref(), asked, now)?;
            tx.commit()?;
            Ok(out)
        })
        .await?;
    Ok(match outcome {
        Outcome::Created(payment, order) => {
            let refund = payment["refunds"]
                .as_array()
                .and_then(|r| r.last())
                .cloned()
                .unwrap_or(Value::Null);
            changes::announce_payment(sb, account, &payment, order).await?;
            ok_json(StatusCode::CREATED, &refund)
        }
        Outcome::Again(body) => response::json(StatusCode::CREATED, body),
        Outcome::NoPayment => not_found(),
        Outcome::Refused(r) => refused(r),
    })
}

/// `GET /v1/payments/{id}/refunds`: every refund of the payment, oldest
/// first, as a bare list (the endpoint has no paging).
pub(super) async fn list(
    sb: &Sandbox,
    account: &AccountRow,
    payment_id: &str,
) -> anyhow::Result<Response<Body>> {
    let (name, pid) = (account.name.clone(), payment_id.to_string());
    let found = sb
        .db
        .call(move |c| {
            if !owns_payment(c, &name, &pid)? {
                return Ok(None);
            }
            refunds_of(c, &pid).map(Some)
        })
        .await?;
    Ok(match found {
        Some(refunds) => ok_json(StatusCode::OK, &Value::Array(refunds)),
        None => not_found(),
    })
}

/// `GET /v1/payments/{id}/refunds/{refund_id}`.
pub(super) async fn get(
    sb: &Sandbox,
    account: &AccountRow,
    payment_id: &str,
    refund_id: &str,
) -> anyhow::Result<Response<Body>> {
    let (name, pid, rid) = (
        account.name.clone(),
        payment_id.to_string(),
        refund_id.to_string(),
    );
    let found = sb
        .db
        .call(move |c| {
            if !owns_payment(c, &name, &pid)? {
                return Ok(None);
            }
            let Ok(rid) = rid.parse::<i64>() else {
                return Ok(Some(None));
            };
            c.query_row(
                "SELECT body FROM payment_refunds WHERE payment_id = ?1 AND id = ?2",
                params![pid, rid],
                |r| r.get::<_, String>(0),
            )
            .optional()
            .map(Some)
        })
        .await?;
    Ok(match found {
        None => not_found(),
        Some(None) => platform_error(
            StatusCode::NOT_FOUND,
            "not_found",
            "Refund not found",
            &[(2032, "Refund not found")],
        ),
        Some(Some(body)) => response::json(StatusCode::OK, body),
    })
}

fn refused(r: Refusal) -> Response<Body> {
    platform_error(
        StatusCode::BAD_REQUEST,
        "bad_request",
        &r.message,
        &[(r.code, &r.message)],
    )
}

/// The body: empty or without `amount` for a total refund.
fn read(body: &[u8]) -> Result<Asked, Refusal> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Asked::Total);
    }
    let v: Value = serde_json::from_slice(body).map_err(|_| Refusal {
        code: 1,
        message: "body is not JSON".into(),
    })?;
    if !(v.is_object() || v.is_null()) {
        return Err(Refusal {
            code: 1,
            message: "body must be a JSON object".into(),
        });
    }
    match v.get("amount") {
        None | Some(Value::Null) => Ok(Asked::Total),
        Some(a @ Value::Number(_)) => match Money::parse(&a.to_string()) {
            Some(m) if m.is_positive() => Ok(Asked::Part(m)),
            _ => Err(Refusal {
                code: 4040,
                message: "amount attribute must be positive".into(),
            }),
        },
        Some(_) => Err(Refusal {
            code: 4041,
            message: "amount attribute must be numeric".into(),
        }),
    }
}

fn owns_payment(c: &Connection, account: &str, payment_id: &str) -> rusqlite::Result<bool> {
    Ok(db::get_resource(c, "payment", payment_id)?.is_some_and(|(owner, _)| owner == account))
}

fn refunds_of(c: &Connection, payment_id: &str) -> rusqlite::Result<Vec<Value>> {
    c.prepare("SELECT body FROM payment_refunds WHERE payment_id = ?1 ORDER BY id")?
        .query_map([payment_id], |r| r.get::<_, String>(0))?
        .map(|b| b.map(|b| serde_json::from_str(&b).unwrap_or(Value::Null)))
        .collect()
}

/// The refund itself, inside one transaction.
fn refund(
    tx: &Connection,
    who: &AccountRow,
    payment_id: &str,
    key: Option<&str>,
    asked: Asked,
    now: i64,
) -> rusqlite::Result<Outcome> {
    let account = who.name.as_str();
    let Some(mut payment) = db::get_resource(tx, "payment", payment_id)?
        .filter(|(owner, _)| owner == account)
        .map(|(_, p)| p)
    else {
        return Ok(Outcome::NoPayment);
    };
    if let Some(key) = key {
        let earlier: Option<String> = tx
            .query_row(
                "SELECT body FROM payment_refunds WHERE payment_id = ?1 AND idempotency_key = ?2",
                params![payment_id, key],
                |r| r.get(0),
            )
            .optional()?;
        if let Some(body) = earlier {
            return Ok(Outcome::Again(body));
        }
    }
    let status = payment["status"].as_str().unwrap_or("?").to_string();
    if status != "approved" {
        return Ok(Outcome::Refused(Refusal {
            code: 2063,
            message: format!("a payment in status {status} cannot be refunded"),
        }));
    }
    let money = |field: &str| Money::parse(&payment[field].to_string()).unwrap_or(Money::ZERO);
    let (paid, refunded) = (
        money("transaction_amount"),
        money("transaction_amount_refunded"),
    );
    let left = paid.checked_sub(refunded).unwrap_or(Money::ZERO);
    let amount = match asked {
        Asked::Total => left,
        Asked::Part(m) if m <= left => m,
        Asked::Part(m) => {
            // Not documented: the sandbox's own cause for asking too much.
            return Ok(Outcome::Refused(Refusal {
                code: 2063,
                message: format!("cannot refund {m}: {left} is left to refund"),
            }));
        }
    };
    let id = db::next_id(tx, "refund", 9_000_001)?;
    let refund = json!({
        "id": id,
        "payment_id": payment["id"],
        "amount": amount_json(amount),
        "metadata": {},
        "source": {"id": who.user_id().to_string(), "name": account, "type": "collector"},
        "date_created": rfc3339(now),
        "unique_sequence_number": null,
        "refund_mode": "standard",
        "adjustment_amount": 0,
        "status": "approved",
        "reason": null,
        "labels": [],
        "partition_details": [],
    });
    tx.execute(
        "INSERT INTO payment_refunds (id, payment_id, idempotency_key, body) VALUES (?1, ?2, ?3, ?4)",
        params![id, payment_id, key, refund.to_string()],
    )?;
    let refunded = refunded.checked_add(amount).unwrap_or(paid);
    let whole = refunded >= paid;
    payment["transaction_amount_refunded"] = amount_json(refunded);
    payment["status"] = json!(if whole { "refunded" } else { "approved" });
    payment["status_detail"] = json!(if whole {
        "refunded"
    } else {
        "partially_refunded"
    });
    payment["refunds"] = Value::Array(refunds_of(tx, payment_id)?);
    let order = changes::store_payment(tx, account, &payment, now)?;
    Ok(Outcome::Created(payment, order))
}
