//! Decisions and their events, written with the job's completion.
//!
//! For each decision the writer reads what the kernel needs (the subject's
//! recorded final outcome, the flags of the orders its guards name), asks
//! the kernel (`DecisionRules::decide`), and writes what it answers. A
//! decision is unique per (account, subject, key): the first job to reach
//! it records it and queues its event; a later one finds the key taken and
//! writes nothing; an event is queued for each destination the kernel
//! names. All of it inside the writer's transaction, so two jobs racing on
//! one order cannot both pass a guard.

use rusqlite::{Connection, OptionalExtension, params};

use crate::domain::verdict::{Context, DecisionRules, Record, Verdict};
use crate::domain::{
    Decision, Effects, EventType, Guard, GuardFacts, Mark, OrderFlags, ReviewMark, Slot,
};
use crate::store::model::LeasedJob;

/// How far back blocks by unauthenticated alerts are counted.
const BLOCK_WINDOW_MS: i64 = 3_600_000;

/// Applies `effects`; returns the ids of the events queued.
pub(super) fn apply(
    conn: &Connection,
    job: &LeasedJob,
    effects: &Effects,
    now: i64,
    rules: &DecisionRules,
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
    for p in &effects.order_payments {
        conn.prepare_cached(
            "INSERT INTO order_payments (account, payment_id, platform_order) VALUES (?1, ?2, ?3)
             ON CONFLICT DO NOTHING",
        )?
        .execute(params![account, p.payment.as_str(), p.order.as_str()])?;
    }
    crate::store::order_refs::keep_sqlite(conn, account, &effects.refs)?;
    let mut emitted = Vec::new();
    for d in &effects.decisions {
        if let Some(id) = decide(conn, account, Some(job.id), d, now, rules)? {
            emitted.push(id);
        }
    }
    Ok(emitted)
}

/// Records one decision as the kernel says; returns its event's id when
/// one was queued.
pub(in crate::store) fn decide(
    conn: &Connection,
    account: &str,
    job_id: Option<i64>,
    d: &Decision,
    now: i64,
    rules: &DecisionRules,
) -> rusqlite::Result<Option<String>> {
    let facts = facts(conn, account, &d.guards, now)?;
    let recorded_final = match d.slot {
        Slot::Final => recorded_final(conn, account, &d.subject)?,
        Slot::Once => None,
    };
    let ctx = Context {
        account,
        now,
        recorded_final,
        facts: &facts,
    };
    match (rules.decide)(d, &ctx, &rules.events) {
        Verdict::Skip => {
            tracing::debug!(job_id, subject = %d.subject, key = %d.key, "decision skipped: a guard does not hold");
            Ok(None)
        }
        Verdict::Same => Ok(None),
        Verdict::Conflict { key, reason } => {
            tracing::warn!(
                job_id, subject = %d.subject, recorded = ?recorded_final, new = %d.event,
                "conflicting final state: recorded, nothing changed"
            );
            insert_decision(
                conn, account, &d.subject, &key, d.event, None, job_id, now, &reason,
            )?;
            Ok(None)
        }
        Verdict::Record(r) => record(conn, account, job_id, &d.subject, r, now),
    }
}

fn record(
    conn: &Connection,
    account: &str,
    job_id: Option<i64>,
    subject: &str,
    r: Record,
    now: i64,
) -> rusqlite::Result<Option<String>> {
    let event_id = r.event.as_ref().map(|e| e.id.as_str());
    let inserted = insert_decision(
        conn,
        account,
        subject,
        &r.key,
        r.event_type,
        event_id,
        job_id,
        now,
        &r.reason,
    )?;
    if !inserted {
        return Ok(None);
    }
    for m in &r.marks {
        mark(conn, account, job_id, m, now)?;
    }
    let Some(event) = r.event else {
        tracing::info!(job_id, event_type = %r.event_type, subject, "decided (not told)");
        return Ok(None);
    };
    conn.prepare_cached(
        "INSERT INTO events (id, account, type, subject, body, job_id, created_at, state,
                             next_attempt_at, unfinished)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?7, ?9)",
    )?
    .execute(params![
        event.id,
        account,
        r.event_type.as_str(),
        subject,
        event.body,
        job_id,
        now,
        event.state,
        event.destinations.len() as i64
    ])?;
    super::events::queue(conn, &event.id, &event.destinations, now)?;
    tracing::info!(job_id, event_id = %event.id, event_type = %r.event_type, subject, "decided");
    Ok(Some(event.id))
}

/// What the guards name, as recorded now.
fn facts(
    conn: &Connection,
    account: &str,
    guards: &[Guard],
    now: i64,
) -> rusqlite::Result<GuardFacts> {
    let mut facts = GuardFacts::default();
    for g in guards {
        if let Some(order) = g.order() {
            let flags = order_flags(conn, account, order.as_str())?;
            facts.orders.insert(order.to_string(), flags);
        }
        if let Some((kind, subject)) = g.hold()
            && let Some(state) =
                crate::store::hold_marks::state_sqlite(conn, account, kind, subject)?
        {
            facts
                .holds
                .insert((kind.to_string(), subject.to_string()), state);
        }
        if matches!(g, Guard::UnauthenticatedBlocksUnder(_)) {
            facts.unauthenticated_blocks_last_hour = conn
                .prepare_cached(
                    "SELECT count(*) FROM order_blocks
                     WHERE account = ?1 AND unauthenticated = 1 AND blocked_at > ?2",
                )?
                .query_row(params![account, now - BLOCK_WINDOW_MS], |r| r.get(0))?;
        }
    }
    Ok(facts)
}

#[allow(clippy::too_many_arguments)]
fn insert_decision(
    conn: &Connection,
    account: &str,
    subject: &str,
    key: &str,
    event_type: EventType,
    event_id: Option<&str>,
    job_id: Option<i64>,
    now: i64,
    reason: &str,
) -> rusqlite::Result<bool> {
    Ok(conn
        .prepare_cached(
            "INSERT INTO decisions (account, subject, key, event_type, event_id, job_id, created_at, reason)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
             ON CONFLICT (account, subject, key) DO NOTHING",
        )?
        .execute(params![
            account,
            subject,
            key,
            event_type.as_str(),
            event_id,
            job_id,
            now,
            reason
        ])?
        == 1)
}

fn recorded_final(
    conn: &Connection,
    account: &str,
    subject: &str,
) -> rusqlite::Result<Option<EventType>> {
    let text: Option<String> = conn
        .prepare_cached(
            "SELECT event_type FROM decisions
             WHERE account = ?1 AND subject = ?2 AND key = 'final'",
        )?
        .query_row(params![account, subject], |r| r.get(0))
        .optional()?;
    Ok(text.as_deref().and_then(EventType::parse))
}

fn mark(
    conn: &Connection,
    account: &str,
    job_id: Option<i64>,
    m: &Mark,
    now: i64,
) -> rusqlite::Result<()> {
    let (order, column) =
        match m {
            Mark::OrderReleased(o) => (o, "released_at"),
            Mark::OrderAtRisk(o) => (o, "at_risk_at"),
            Mark::OrderBlocked {
                order,
                alert,
                unauthenticated,
            } => {
                conn.prepare_cached(
                "INSERT INTO order_blocks (account, order_id, alert, blocked_at, unauthenticated)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (account, order_id, alert) DO UPDATE SET lifted_at = NULL",
            )?
            .execute(params![account, order.as_str(), alert, now, unauthenticated])?;
                (order, "blocked_at")
            }
            Mark::Review(r) => return review(conn, account, r, job_id, now),
            Mark::Hold(h) => {
                return crate::store::hold_marks::place_sqlite(conn, account, h, job_id, now);
            }
        };
    conn.prepare_cached(&format!(
        "INSERT INTO orders (account, order_id, {column}, updated_at) VALUES (?1, ?2, ?3, ?3)
         ON CONFLICT (account, order_id) DO UPDATE SET
             {column} = coalesce({column}, excluded.{column}), updated_at = excluded.updated_at"
    ))?
    .execute(params![account, order.as_str(), now])?;
    Ok(())
}

/// A review of one round of an alert: held (it covers each later delivery
/// while it waits) or rejected; a hold takes over a rejection of its round.
fn review(
    conn: &Connection,
    account: &str,
    r: &ReviewMark,
    job_id: Option<i64>,
    now: i64,
) -> rusqlite::Result<()> {
    if super::review_join::join_held(conn, account, r)? {
        if let Some(order) = &r.merchant_order {
            lift_block(conn, account, order.as_str(), &r.alert, now)?;
        }
        return Ok(());
    }
    crate::store::reviews::place_sqlite(conn, account, r, job_id, now)
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

/// Whether an order is released and whether it is blocked.
pub(super) fn order_flags(
    conn: &Connection,
    account: &str,
    order: &str,
) -> rusqlite::Result<OrderFlags> {
    Ok(conn
        .prepare_cached(
            "SELECT released_at IS NOT NULL, blocked_at IS NOT NULL FROM orders
             WHERE account = ?1 AND order_id = ?2",
        )?
        .query_row(params![account, order], |r| {
            Ok(OrderFlags {
                released: r.get(0)?,
                blocked: r.get(1)?,
            })
        })
        .optional()?
        .unwrap_or_default())
}

/// How an order stands for one alert: released, and whether this alert's
/// block stands.
pub(super) fn block_state(
    conn: &Connection,
    account: &str,
    order: &str,
    alert: &str,
) -> rusqlite::Result<(bool, bool)> {
    let released = order_flags(conn, account, order)?.released;
    let blocked: bool = conn
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM order_blocks
              WHERE account = ?1 AND order_id = ?2 AND alert = ?3 AND lifted_at IS NULL)",
        )?
        .query_row(params![account, order, alert], |r| r.get(0))?;
    Ok((released, blocked))
}
