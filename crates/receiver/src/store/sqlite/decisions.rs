//! Decisions and their events, written with the job's completion.
//!
//! A decision is unique per (account, subject, key): the first job to reach
//! it records it and queues its event; every later one finds it recorded and
//! does nothing. That is what makes each effect happen once, however many
//! notifications, retries and restarts lead to it. Guards are checked here,
//! inside the writer's transaction, so two jobs racing on one order cannot
//! both pass them.

use rusqlite::{Connection, OptionalExtension, params};

use crate::clock::rfc3339;
use crate::domain::{Decision, Effects, EventState, Guard, HeldAlert, Mark, Review, Slot};
use crate::rules::{self, Finality};
use crate::store::model::{LeasedJob, event_id};

/// Applies `effects`; returns the ids of the events queued.
pub(super) fn apply(
    conn: &Connection,
    job: &LeasedJob,
    effects: &Effects,
    now: i64,
    deliver: bool,
) -> rusqlite::Result<Vec<String>> {
    let account = job.account.as_str();
    for o in &effects.orders {
        conn.prepare_cached(
            "INSERT INTO orders (account, order_id, total_amount, paid_amount, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (account, order_id) DO UPDATE SET
                 total_amount = excluded.total_amount, paid_amount = excluded.paid_amount,
                 updated_at = excluded.updated_at",
        )?
        .execute(params![
            account,
            o.order_id.as_str(),
            o.total_amount,
            o.paid_amount,
            now
        ])?;
    }
    let mut emitted = Vec::new();
    for d in &effects.decisions {
        if let Some(id) = decide(conn, account, Some(job.id), d, now, deliver)? {
            emitted.push(id);
        }
    }
    Ok(emitted)
}

/// Records one decision and queues its event, unless a guard fails, it was
/// recorded already, or it contradicts its subject's final outcome.
pub(super) fn decide(
    conn: &Connection,
    account: &str,
    job_id: Option<i64>,
    d: &Decision,
    now: i64,
    deliver: bool,
) -> rusqlite::Result<Option<String>> {
    let event_type = d.event.as_str();
    if !guards_hold(conn, account, &d.guards)? {
        tracing::debug!(job_id, subject = %d.subject, key = %d.key, "decision skipped: a guard does not hold");
        return Ok(None);
    }
    if d.slot == Slot::Final {
        let recorded = recorded_final(conn, account, &d.subject)?;
        match rules::finality(recorded.as_deref(), event_type) {
            Finality::New => {}
            Finality::Same => return Ok(None),
            Finality::Conflict => {
                tracing::warn!(
                    job_id, subject = %d.subject, recorded = ?recorded, new = %event_type,
                    "conflicting final state: recorded, nothing changed"
                );
                insert_decision(
                    conn,
                    account,
                    &d.subject,
                    &format!("conflict:{event_type}"),
                    event_type,
                    None,
                    job_id,
                    now,
                )?;
                return Ok(None);
            }
        }
    }
    let key = match d.slot {
        Slot::Final => "final",
        Slot::Once => d.key.as_str(),
    };
    let id = event_id(account, &d.subject, key);
    if !insert_decision(
        conn,
        account,
        &d.subject,
        key,
        event_type,
        Some(&id),
        job_id,
        now,
    )? {
        return Ok(None);
    }
    for m in &d.marks {
        mark(conn, account, m, now)?;
    }
    let body = serde_json::json!({
        "id": id,
        "type": event_type,
        "created_at": rfc3339(now),
        "account": account,
        "data": d.data,
    });
    let state = if deliver {
        EventState::Pending
    } else {
        EventState::Stored
    };
    conn.prepare_cached(
        "INSERT INTO events (id, account, type, subject, body, job_id, created_at, state, next_attempt_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?7)",
    )?
    .execute(params![id, account, event_type, d.subject, body.to_string(), job_id, now, state])?;
    tracing::info!(job_id, event_id = %id, event_type, subject = %d.subject, "decided");
    Ok(Some(id))
}

#[allow(clippy::too_many_arguments)]
fn insert_decision(
    conn: &Connection,
    account: &str,
    subject: &str,
    key: &str,
    event_type: &str,
    event_id: Option<&str>,
    job_id: Option<i64>,
    now: i64,
) -> rusqlite::Result<bool> {
    Ok(conn
        .prepare_cached(
            "INSERT INTO decisions (account, subject, key, event_type, event_id, job_id, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
             ON CONFLICT (account, subject, key) DO NOTHING",
        )?
        .execute(params![account, subject, key, event_type, event_id, job_id, now])?
        == 1)
}

fn recorded_final(
    conn: &Connection,
    account: &str,
    subject: &str,
) -> rusqlite::Result<Option<String>> {
    conn.prepare_cached(
        "SELECT event_type FROM decisions
         WHERE account = ?1 AND subject = ?2 AND key = 'final'",
    )?
    .query_row(params![account, subject], |r| r.get(0))
    .optional()
}

fn guards_hold(conn: &Connection, account: &str, guards: &[Guard]) -> rusqlite::Result<bool> {
    for g in guards {
        let (order, column, want_set) = match g {
            Guard::OrderReleased(o) => (o, "released_at", true),
            Guard::OrderNotReleased(o) => (o, "released_at", false),
            Guard::OrderNotBlocked(o) => (o, "blocked_at", false),
        };
        let set: bool = conn
            .prepare_cached(&format!(
                "SELECT {column} IS NOT NULL FROM orders WHERE account = ?1 AND order_id = ?2"
            ))?
            .query_row(params![account, order.as_str()], |r| r.get(0))
            .optional()?
            .unwrap_or(false);
        if set != want_set {
            return Ok(false);
        }
    }
    Ok(true)
}

fn mark(conn: &Connection, account: &str, m: &Mark, now: i64) -> rusqlite::Result<()> {
    let (order, column) = match m {
        Mark::OrderReleased(o) => (o, "released_at"),
        Mark::OrderAtRisk(o) => (o, "at_risk_at"),
        Mark::OrderBlocked { order, alert } => {
            conn.prepare_cached(
                "INSERT INTO order_blocks (account, order_id, alert, blocked_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (account, order_id, alert) DO UPDATE SET lifted_at = NULL",
            )?
            .execute(params![account, order.as_str(), alert, now])?;
            (order, "blocked_at")
        }
        Mark::HoldForReview(h) => return hold(conn, account, h, now),
    };
    conn.prepare_cached(&format!(
        "INSERT INTO orders (account, order_id, {column}, updated_at) VALUES (?1, ?2, ?3, ?3)
         ON CONFLICT (account, order_id) DO UPDATE SET
             {column} = coalesce({column}, excluded.{column}), updated_at = excluded.updated_at"
    ))?
    .execute(params![account, order.as_str(), now])?;
    Ok(())
}

fn hold(conn: &Connection, account: &str, h: &HeldAlert, now: i64) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO fraud_reviews (account, job_key, alert, merchant_order, payment, reason, state, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
         ON CONFLICT (account, job_key) DO NOTHING",
    )?
    .execute(params![
        account,
        h.job_key,
        h.alert,
        h.merchant_order.as_ref().map(|o| o.as_str()),
        h.payment.as_ref().map(|p| p.as_str()),
        h.reason,
        Review::Held,
        now
    ])?;
    Ok(())
}

/// Lifts one alert's block; the order is unblocked when none stands.
pub(super) fn lift_block(
    conn: &Connection,
    account: &str,
    order: &str,
    alert: &str,
    now: i64,
) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE order_blocks SET lifted_at = ?4
         WHERE account = ?1 AND order_id = ?2 AND alert = ?3 AND lifted_at IS NULL",
        params![account, order, alert, now],
    )?;
    conn.execute(
        "UPDATE orders SET blocked_at = NULL, updated_at = ?3
         WHERE account = ?1 AND order_id = ?2 AND NOT EXISTS (
             SELECT 1 FROM order_blocks b
             WHERE b.account = ?1 AND b.order_id = ?2 AND b.lifted_at IS NULL)",
        params![account, order, now],
    )?;
    Ok(())
}

/// Whether an order is (released, blocked).
pub(super) fn order_flags(
    conn: &Connection,
    account: &str,
    order: &str,
) -> rusqlite::Result<(bool, bool)> {
    Ok(conn
        .query_row(
            "SELECT released_at IS NOT NULL, blocked_at IS NOT NULL FROM orders
             WHERE account = ?1 AND order_id = ?2",
            params![account, order],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?
        .unwrap_or((false, false)))
}
