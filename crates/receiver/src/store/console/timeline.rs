//! An order's timeline, on either backend: the jobs that touched it (its
//! own, those that fetched it or decided about it, the fraud alerts
//! naming it), then their notifications, API calls, decisions, events with
//! each attempt, reviews and the actions people took, oldest first. Every
//! read seeks an index by account and subject, resource or job.

use std::collections::BTreeSet;

use crate::store::StoreError;
use crate::store::admin_reads::{DELIVERY_COLUMNS, delivery_summary, event_order, fetches_of};
use crate::store::console_views::*;
use crate::store::event_rows::{EVENT_COLUMNS, event_summary};
use crate::store::order_reads::decisions;
use crate::store::sql::{Conn, sql};
use crate::store::views::{DeliverySummary, EventSummary, ReviewView};

use super::audit::{AUDIT_COLUMNS, audit_row};
use super::lists::event_attempts;
use super::reads::{REVIEW_COLUMNS, alert_deliveries, order_state, review_row};

/// A job that touched the order.
struct Related {
    id: i64,
    key: String,
    resource_id: String,
}

/// Entries of one kind kept at most.
const MOST: i64 = 200;

pub(super) async fn timeline(
    c: &Conn<'_>,
    account: &str,
    kind: &'static str,
    id: &str,
) -> Result<Option<Timeline>, StoreError> {
    let subject = format!("{kind}:{id}");
    let jobs = related_jobs(c, account, kind, id, &subject).await?;
    let reviews = reviews_of(c, account, kind, id).await?;
    // Decisions and events are found by subject: the order's own, each
    // related job's (a payment's `payment:…`), each alert's, and whatever
    // a related job decided about (the payment an alert undid).
    let mut subjects: BTreeSet<String> = BTreeSet::from([subject.clone()]);
    for j in &jobs {
        match j.key.strip_prefix("fraud:") {
            Some(rest) => subjects.insert(format!("fraud_alert:{rest}")),
            None => subjects.insert(j.key.clone()),
        };
        let decided: Vec<String> = c
            .query(
                sql!("SELECT DISTINCT subject FROM decisions WHERE job_id = $1 AND account = $2"),
                &[&j.id, &account],
                |r| r.get(0),
            )
            .await?;
        subjects.extend(decided);
    }
    let mut entries: Vec<(i64, Entry)> = Vec::new();
    let mut seen_deliveries = BTreeSet::new();
    let mut add_delivery = |entries: &mut Vec<(i64, Entry)>, d: DeliverySummary, at: i64| {
        if seen_deliveries.insert(d.id) {
            entries.push((at, Entry::Notification(d)));
        }
    };
    for (at, d) in deliveries(c, account, id).await? {
        add_delivery(&mut entries, d, at);
    }
    for j in &jobs {
        let found: Vec<(i64, DeliverySummary)> = if j.key.starts_with("fraud:") {
            alert_deliveries(c, account, &j.key)
                .await?
                .into_iter()
                .map(|d| (stamp(&d.received_at), d))
                .collect()
        } else {
            deliveries(c, account, &j.resource_id)
                .await?
                .into_iter()
                .filter(|(_, d)| d.job_key.as_deref() == Some(j.key.as_str()))
                .collect()
        };
        for (at, d) in found {
            add_delivery(&mut entries, d, at);
        }
        for f in fetches_of(c, "job_id = $1", &[&j.id]).await? {
            entries.push((stamp(&f.at), Entry::ApiCall(f)));
        }
    }
    let mut items: Vec<String> = jobs.iter().map(|j| format!("job:{}", j.id)).collect();
    for s in &subjects {
        for d in decisions(c, account, s).await? {
            entries.push((stamp(&d.created_at), Entry::Decision(d)));
        }
        for (at, event) in events(c, account, s).await? {
            items.push(format!("event:{}", event.id));
            let attempts = event_attempts(c, &event.id).await?;
            entries.push((at, Entry::Event { event, attempts }));
        }
    }
    for r in reviews {
        items.push(format!("fraud_review:{}", r.id));
        entries.push((stamp(&r.created_at), Entry::Review(r)));
    }
    for a in audit_of(c, account, id, &items).await? {
        entries.push((stamp(&a.at), Entry::Action(a)));
    }
    let state = match kind {
        "merchant_order" | "platform_order" => order_state(c, account, id).await?,
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

async fn related_jobs(
    c: &Conn<'_>,
    account: &str,
    kind: &str,
    id: &str,
    subject: &str,
) -> Result<Vec<Related>, StoreError> {
    c.query(
        sql!(
            "SELECT id, job_key, resource_id FROM jobs WHERE id IN (
                 SELECT id FROM jobs WHERE account = $1 AND job_key = $4
                 UNION SELECT job_id FROM fetches
                     WHERE account = $1 AND endpoint = $2 AND resource_id = $3
                 UNION SELECT job_id FROM decisions WHERE account = $1 AND subject = $4
                 UNION SELECT j.id FROM fraud_reviews r JOIN jobs j
                     ON j.account = r.account AND j.job_key = r.job_key
                     WHERE r.account = $1 AND (r.merchant_order = $3 OR r.payment = $3))
             ORDER BY id LIMIT 100"
        ),
        &[&account, &kind, &id, &subject],
        |r| {
            Ok(Related {
                id: r.get(0)?,
                key: r.get(1)?,
                resource_id: r.get(2)?,
            })
        },
    )
    .await
}

async fn reviews_of(
    c: &Conn<'_>,
    account: &str,
    kind: &str,
    id: &str,
) -> Result<Vec<ReviewView>, StoreError> {
    let column = match kind {
        "merchant_order" => "merchant_order",
        "payment" => "payment",
        _ => return Ok(Vec::new()),
    };
    c.query(
        &format!(
            "SELECT {REVIEW_COLUMNS} FROM fraud_reviews WHERE account = $1 AND {column} = $2
             ORDER BY id"
        ),
        &[&account, &id],
        review_row,
    )
    .await
}

/// The notifications about a resource, each with its arrival (ms).
async fn deliveries(
    c: &Conn<'_>,
    account: &str,
    resource: &str,
) -> Result<Vec<(i64, DeliverySummary)>, StoreError> {
    c.query(
        &format!(
            "SELECT {DELIVERY_COLUMNS} FROM deliveries WHERE account = $1 AND resource_id = $2
             ORDER BY id LIMIT {MOST}"
        ),
        &[&account, &resource],
        |r| Ok((r.get(1)?, delivery_summary(r)?)),
    )
    .await
}

async fn events(
    c: &Conn<'_>,
    account: &str,
    subject: &str,
) -> Result<Vec<(i64, EventSummary)>, StoreError> {
    let seq = event_order(c);
    c.query(
        &format!(
            "SELECT {EVENT_COLUMNS} FROM events WHERE account = $1 AND subject = $2
             ORDER BY {seq} LIMIT {MOST}"
        ),
        &[&account, &subject],
        |r| Ok((r.get(6)?, event_summary(r)?)),
    )
    .await
}

/// What people did about the order or any item of it.
async fn audit_of(
    c: &Conn<'_>,
    account: &str,
    order: &str,
    items: &[String],
) -> Result<Vec<AuditView>, StoreError> {
    let mut out: Vec<AuditView> = c
        .query(
            &format!(
                "SELECT {AUDIT_COLUMNS} FROM audit WHERE account = $1 AND order_id = $2
                 ORDER BY id LIMIT {MOST}"
            ),
            &[&account, &order],
            audit_row,
        )
        .await?;
    for item in items {
        let by_item = c
            .query(
                &format!(
                    "SELECT {AUDIT_COLUMNS} FROM audit WHERE item = $1 ORDER BY id LIMIT {MOST}"
                ),
                &[item],
                audit_row,
            )
            .await?;
        for a in by_item {
            if !out.iter().any(|o| o.id == a.id) {
                out.push(a);
            }
        }
    }
    Ok(out)
}
