//! An order's timeline on SQLite: the jobs that touched it (its own, those
//! that fetched it or decided about it, the fraud alerts naming it), then
//! their notifications, API calls, decisions, events with each attempt,
//! reviews and the actions people took, oldest first. Every read seeks an
//! index by account and subject, resource or job.

use std::collections::BTreeSet;

use rusqlite::{Connection, params};

use super::admin::{DELIVERY_COLUMNS, EVENT_COLUMNS, delivery_summary, event_summary, fetches_of};
use super::console_lists::{AUDIT_COLUMNS, audit_row, event_attempts};
use super::console_reads::{alert_deliveries, order_state};
use super::order_reads::decisions;
use crate::store::console_views::*;
use crate::store::views::{DeliverySummary, ReviewView};

/// A job that touched the order.
struct Related {
    id: i64,
    key: String,
    resource_id: String,
}

/// Entries of one kind kept at most.
const MOST: i64 = 200;

pub(super) fn timeline(
    c: &Connection,
    account: &str,
    kind: &'static str,
    id: &str,
) -> rusqlite::Result<Option<Timeline>> {
    let subject = format!("{kind}:{id}");
    let jobs = related_jobs(c, account, kind, id, &subject)?;
    let reviews = reviews_of(c, account, kind, id)?;
    // Decisions and events are found by subject: the order's own, each
    // related job's (a payment's `payment:…`), each alert's, and whatever
    // a related job decided about (the payment an alert undid).
    let mut subjects: BTreeSet<String> = BTreeSet::from([subject.clone()]);
    let mut decided = c.prepare_cached(
        "SELECT DISTINCT subject FROM decisions WHERE job_id = ?1 AND account = ?2",
    )?;
    for j in &jobs {
        match j.key.strip_prefix("fraud:") {
            Some(rest) => subjects.insert(format!("fraud_alert:{rest}")),
            None => subjects.insert(j.key.clone()),
        };
        for s in decided.query_map(params![j.id, account], |r| r.get::<_, String>(0))? {
            subjects.insert(s?);
        }
    }
    let mut entries: Vec<(i64, Entry)> = Vec::new();
    let mut seen_deliveries = BTreeSet::new();
    let mut add_delivery = |entries: &mut Vec<(i64, Entry)>, d: DeliverySummary, at: i64| {
        if seen_deliveries.insert(d.id) {
            entries.push((at, Entry::Notification(d)));
        }
    };
    for d in deliveries(c, account, "resource_id = ?2", id)? {
        add_delivery(&mut entries, d.1, d.0);
    }
    for j in &jobs {
        let found: Vec<(i64, DeliverySummary)> = if j.key.starts_with("fraud:") {
            alert_deliveries(c, account, &j.key)?
                .into_iter()
                .map(|d| (stamp(&d.received_at), d))
                .collect()
        } else {
            deliveries(c, account, "resource_id = ?2", &j.resource_id)?
                .into_iter()
                .filter(|(_, d)| d.job_key.as_deref() == Some(j.key.as_str()))
                .collect()
        };
        for (at, d) in found {
            add_delivery(&mut entries, d, at);
        }
        for f in fetches_of(c, "job_id = ?1", params![j.id])? {
            entries.push((stamp(&f.at), Entry::ApiCall(f)));
        }
    }
    let mut items: Vec<String> = jobs.iter().map(|j| format!("job:{}", j.id)).collect();
    for s in &subjects {
        for d in decisions(c, account, s)? {
            entries.push((stamp(&d.created_at), Entry::Decision(d)));
        }
        for (at, event) in events(c, account, s)? {
            items.push(format!("event:{}", event.id));
            let attempts = event_attempts(c, &event.id)?;
            entries.push((at, Entry::Event { event, attempts }));
        }
    }
    for r in reviews {
        items.push(format!("fraud_review:{}", r.id));
        entries.push((stamp(&r.created_at), Entry::Review(r)));
    }
    for a in audit_of(c, account, id, &items)? {
        entries.push((stamp(&a.at), Entry::Action(a)));
    }
    let state = match kind {
        "merchant_order" | "platform_order" => order_state(c, account, id)?,
        _ => None,
    };
    if entries.is_empty() && state.is_none() {
        return Ok(None);
    }
    // Stable: within one millisecond, the order they were gathered in
    // (notification, call, decision, event).
    entries.sort_by_key(|(at, _)| *at);
    Ok(Some(Timeline {
        account: account.to_string(),
        kind,
        id: id.to_string(),
        state,
        entries,
    }))
}

/// Milliseconds back from a stored time's text (only for ordering).
fn stamp(text: &str) -> i64 {
    text.parse::<jiff::Timestamp>()
        .map(|t| t.as_millisecond())
        .unwrap_or(0)
}

fn related_jobs(
    c: &Connection,
    account: &str,
    kind: &str,
    id: &str,
    subject: &str,
) -> rusqlite::Result<Vec<Related>> {
    c.prepare(
        "SELECT id, job_key, resource_id FROM jobs WHERE id IN (
             SELECT id FROM jobs WHERE account = ?1 AND job_key = ?4
             UNION SELECT job_id FROM fetches WHERE account = ?1 AND endpoint = ?2 AND resource_id = ?3
             UNION SELECT job_id FROM decisions WHERE account = ?1 AND subject = ?4
             UNION SELECT j.id FROM fraud_reviews r JOIN jobs j
                 ON j.account = r.account AND j.job_key = r.job_key
                 WHERE r.account = ?1 AND (r.merchant_order = ?3 OR r.payment = ?3))
         ORDER BY id LIMIT 100",
    )?
    .query_map(params![account, kind, id, subject], |r| {
        Ok(Related {
            id: r.get(0)?,
            key: r.get(1)?,
            resource_id: r.get(2)?,
        })
    })?
    .collect()
}

fn reviews_of(
    c: &Connection,
    account: &str,
    kind: &str,
    id: &str,
) -> rusqlite::Result<Vec<ReviewView>> {
    let column = match kind {
        "merchant_order" => "merchant_order",
        "payment" => "payment",
        _ => return Ok(Vec::new()),
    };
    let ids: Vec<i64> = c
        .prepare(&format!(
            "SELECT id FROM fraud_reviews WHERE account = ?1 AND {column} = ?2 ORDER BY id"
        ))?
        .query_map(params![account, id], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let mut out = Vec::new();
    for id in ids {
        out.extend(super::console_reads::review_view(c, id)?);
    }
    Ok(out)
}

fn deliveries(
    c: &Connection,
    account: &str,
    condition: &str,
    value: &str,
) -> rusqlite::Result<Vec<(i64, DeliverySummary)>> {
    c.prepare_cached(&format!(
        "SELECT {DELIVERY_COLUMNS} FROM deliveries WHERE account = ?1 AND {condition}
         ORDER BY id LIMIT {MOST}"
    ))?
    .query_map(params![account, value], |r| {
        Ok((r.get::<_, i64>(1)?, delivery_summary(r)?))
    })?
    .collect()
}

fn events(
    c: &Connection,
    account: &str,
    subject: &str,
) -> rusqlite::Result<Vec<(i64, crate::store::views::EventSummary)>> {
    c.prepare_cached(&format!(
        "SELECT {EVENT_COLUMNS} FROM events WHERE account = ?1 AND subject = ?2
         ORDER BY rowid LIMIT {MOST}"
    ))?
    .query_map(params![account, subject], |r| {
        Ok((r.get::<_, i64>(6)?, event_summary(r)?))
    })?
    .collect()
}

/// What people did about the order or any item of it.
fn audit_of(
    c: &Connection,
    account: &str,
    order: &str,
    items: &[String],
) -> rusqlite::Result<Vec<AuditView>> {
    let mut out: Vec<AuditView> = c
        .prepare_cached(&format!(
            "SELECT {AUDIT_COLUMNS} FROM audit WHERE account = ?1 AND order_id = ?2
             ORDER BY id LIMIT {MOST}"
        ))?
        .query_map(params![account, order], audit_row)?
        .collect::<rusqlite::Result<_>>()?;
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {AUDIT_COLUMNS} FROM audit WHERE item = ?1 ORDER BY id LIMIT {MOST}"
    ))?;
    for item in items {
        for a in stmt.query_map([item], audit_row)? {
            let a = a?;
            if !out.iter().any(|o| o.id == a.id) {
                out.push(a);
            }
        }
    }
    Ok(out)
}
