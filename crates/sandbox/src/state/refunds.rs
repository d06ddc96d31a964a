//! The refunds of payments, each kept as the API serves it, and the
//! idempotency key it was made with.

use rusqlite::{OptionalExtension, params};
use serde_json::Value;

use super::{Result, Tx, json};

/// The refund an earlier request with the same key made (as stored).
pub fn by_key(tx: &Tx<'_>, payment_id: &str, key: &str) -> Result<Option<Value>> {
    Ok(tx
        .0
        .query_row(
            "SELECT body FROM payment_refunds WHERE payment_id = ?1 AND idempotency_key = ?2",
            params![payment_id, key],
            |r| r.get::<_, String>(0),
        )
        .optional()?
        .map(|b| json(&b)))
}

pub fn insert(
    tx: &Tx<'_>,
    id: i64,
    payment_id: &str,
    key: Option<&str>,
    body: &Value,
) -> Result<()> {
    tx.0.execute(
        "INSERT INTO payment_refunds (id, payment_id, idempotency_key, body) VALUES (?1, ?2, ?3, ?4)",
        params![id, payment_id, key, body.to_string()],
    )?;
    Ok(())
}

/// Every refund of the payment, oldest first.
pub fn of_payment(tx: &Tx<'_>, payment_id: &str) -> Result<Vec<Value>> {
    Ok(tx
        .0
        .prepare("SELECT body FROM payment_refunds WHERE payment_id = ?1 ORDER BY id")?
        .query_map([payment_id], |r| r.get::<_, String>(0))?
        .map(|b| b.map(|b| json(&b)))
        .collect::<rusqlite::Result<_>>()?)
}

pub fn get(tx: &Tx<'_>, payment_id: &str, refund_id: i64) -> Result<Option<Value>> {
    Ok(tx
        .0
        .query_row(
            "SELECT body FROM payment_refunds WHERE payment_id = ?1 AND id = ?2",
            params![payment_id, refund_id],
            |r| r.get::<_, String>(0),
        )
        .optional()?
        .map(|b| json(&b)))
}
