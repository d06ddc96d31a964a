//! Decisions and their events, written with the job's completion.
//!
//! A decision is unique per (account, subject, key): the first job to reach
//! it records it and queues its event; every later one finds it recorded and
//! does nothing. That is what makes each effect happen once, however many
//! notifications, retries and restarts lead to it. Guards are checked here,
//! inside the writer's transaction, so two jobs racing on one order cannot
//! both pass them.

use rusqlite::{Connection, OptionalExtension, params};
use sha2::{Digest, Sha256};

use super::jobs::LeasedJob;
use crate::domain::EventState;

/// What a job decided.
#[derive(Debug, Clone, Default)]
pub struct Effects {
    pub decisions: Vec<Decision>,
    /// The latest amounts seen for merchant orders.
    pub orders: Vec<OrderSeen>,
}

#[derive(Debug, Clone)]
pub struct Decision {
    /// What it is about: `merchant_order:123`, `payment_intent:…`.
    pub subject: String,
    /// What was decided; includes the state seen when the same subject can
    /// legitimately be decided again (a chargeback's new status).
    pub key: String,
    pub event_type: String,
    /// The event's `data`.
    pub data: serde_json::Value,
    /// Every guard must hold, or the decision is skipped (and can be taken
    /// later, when it does).
    pub guards: Vec<Guard>,
    /// State recorded when the decision is taken.
    pub marks: Vec<Mark>,
    /// A final state: a later, different outcome for the same subject is a
    /// conflict, recorded without an event.
    pub final_outcome: bool,
}

#[derive(Debug, Clone)]
pub enum Guard {
    OrderReleased(String),
    OrderNotReleased(String),
    OrderNotBlocked(String),
}

#[derive(Debug, Clone)]
pub enum Mark {
    OrderReleased(String),
    OrderBlocked(String),
    OrderAtRisk(String),
}

#[derive(Debug, Clone)]
pub struct OrderSeen {
    pub order_id: String,
    pub total_amount: String,
    pub paid_amount: String,
}

/// The stable id of the event for a decision.
pub fn event_id(account: &str, subject: &str, key: &str) -> String {
    let mut h = Sha256::new();
    for part in [account, subject, key] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    format!("evt_{}", hex::encode(&h.finalize()[..16]))
}

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
            o.order_id,
            o.total_amount,
            o.paid_amount,
            now
        ])?;
    }
    let mut emitted = Vec::new();
    for d in &effects.decisions {
        if !guards_hold(conn, account, &d.guards)? {
            tracing::debug!(job_id = job.id, subject = %d.subject, key = %d.key, "decision skipped: a guard does not hold");
            continue;
        }
        if d.final_outcome
            && let Some(recorded) = recorded_final(conn, account, &d.subject)?
            && recorded != d.event_type
        {
            tracing::warn!(
                job_id = job.id, subject = %d.subject, recorded = %recorded, new = %d.event_type,
                "conflicting final state: recorded, nothing changed"
            );
            insert_decision(
                conn,
                account,
                &d.subject,
                &format!("conflict:{}", d.event_type),
                &d.event_type,
                None,
                job.id,
                now,
            )?;
            continue;
        }
        let id = event_id(account, &d.subject, &d.key);
        if !insert_decision(
            conn,
            account,
            &d.subject,
            &d.key,
            &d.event_type,
            Some(&id),
            job.id,
            now,
        )? {
            continue;
        }
        for m in &d.marks {
            mark(conn, account, m, now)?;
        }
        let body = serde_json::json!({
            "id": id,
            "type": d.event_type,
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
        .execute(params![id, account, d.event_type, d.subject, body.to_string(), job.id, now, state])?;
        tracing::info!(job_id = job.id, event_id = %id, event_type = %d.event_type, subject = %d.subject, "decided");
        emitted.push(id);
    }
    Ok(emitted)
}

#[allow(clippy::too_many_arguments)]
fn insert_decision(
    conn: &Connection,
    account: &str,
    subject: &str,
    key: &str,
    event_type: &str,
    event_id: Option<&str>,
    job_id: i64,
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
            .query_row(params![account, order], |r| r.get(0))
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
        Mark::OrderBlocked(o) => (o, "blocked_at"),
        Mark::OrderAtRisk(o) => (o, "at_risk_at"),
    };
    conn.prepare_cached(&format!(
        "INSERT INTO orders (account, order_id, {column}, updated_at) VALUES (?1, ?2, ?3, ?3)
         ON CONFLICT (account, order_id) DO UPDATE SET
             {column} = coalesce({column}, excluded.{column}), updated_at = excluded.updated_at"
    ))?
    .execute(params![account, order, now])?;
    Ok(())
}

/// Unix milliseconds as RFC 3339 UTC (`2026-11-22T14:00:00.000Z`).
pub fn rfc3339(ms: i64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms.max(0) as u64);
    humantime::format_rfc3339_millis(t).to_string()
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
