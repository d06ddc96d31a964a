//! An order's timeline on PostgreSQL: the same gathering as SQLite's
//! `console_timeline.rs` (related jobs, then their notifications, API
//! calls, decisions, events with attempts, reviews and actions).

use std::collections::BTreeSet;

use deadpool_postgres::Client;

use super::console_lists::{AUDIT_COLUMNS, audit_row, event_attempts};
use super::console_reads::{alert_deliveries, order_state, reviews_where};
use super::order_reads::decisions;
use super::reads::{DELIVERY_COLUMNS, EVENT_COLUMNS, delivery_summary, event_summary, fetches_of};
use crate::store::StoreError;
use crate::store::console_views::*;
use crate::store::views::{DeliverySummary, EventSummary};

struct Related {
    id: i64,
    key: String,
    resource_id: String,
}

const MOST: i64 = 200;

pub async fn timeline(
    c: &Client,
    account: &str,
    kind: &'static str,
    id: &str,
) -> Result<Option<Timeline>, StoreError> {
    let subject = format!("{kind}:{id}");
    let jobs = c
        .query(
            "SELECT id, job_key, resource_id FROM jobs WHERE id IN (
                 SELECT id FROM jobs WHERE account = $1 AND job_key = $4
                 UNION SELECT job_id FROM fetches
                     WHERE account = $1 AND endpoint = $2 AND resource_id = $3
                 UNION SELECT job_id FROM decisions WHERE account = $1 AND subject = $4
                 UNION SELECT j.id FROM fraud_reviews r JOIN jobs j
                     ON j.account = r.account AND j.job_key = r.job_key
                     WHERE r.account = $1 AND (r.merchant_order = $3 OR r.payment = $3))
             ORDER BY id LIMIT 100",
            &[&account, &kind, &id, &subject],
        )
        .await?
        .iter()
        .map(|r| {
            Ok(Related {
                id: r.try_get(0)?,
                key: r.try_get(1)?,
                resource_id: r.try_get(2)?,
            })
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    let reviews = match kind {
        "merchant_order" => {
            reviews_where(c, "account = $1 AND merchant_order = $2", &[&account, &id]).await?
        }
        "payment" => reviews_where(c, "account = $1 AND payment = $2", &[&account, &id]).await?,
        _ => Vec::new(),
    };
    // By subject, as SQLite's: the order's, each related job's, each
    // alert's, and whatever a related job decided about.
    let mut subjects: BTreeSet<String> = BTreeSet::from([subject.clone()]);
    for j in &jobs {
        match j.key.strip_prefix("fraud:") {
            Some(rest) => subjects.insert(format!("fraud_alert:{rest}")),
            None => subjects.insert(j.key.clone()),
        };
    }
    let ids: Vec<i64> = jobs.iter().map(|j| j.id).collect();
    for r in c
        .query(
            "SELECT DISTINCT subject FROM decisions WHERE job_id = ANY($1) AND account = $2",
            &[&ids, &account],
        )
        .await?
    {
        subjects.insert(r.try_get(0)?);
    }
    let mut entries: Vec<(i64, Entry)> = Vec::new();
    let mut seen = BTreeSet::new();
    let mut add = |entries: &mut Vec<(i64, Entry)>, (at, d): (i64, DeliverySummary)| {
        if seen.insert(d.id) {
            entries.push((at, Entry::Notification(d)));
        }
    };
    for d in deliveries(c, account, id).await? {
        add(&mut entries, d);
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
        for d in found {
            add(&mut entries, d);
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
    entries.sort_by_key(|(at, _)| *at);
    Ok(Some(Timeline {
        account: account.to_string(),
        kind,
        id: id.to_string(),
        state,
        entries,
    }))
}

fn stamp(text: &str) -> i64 {
    text.parse::<jiff::Timestamp>()
        .map(|t| t.as_millisecond())
        .unwrap_or(0)
}

async fn deliveries(
    c: &Client,
    account: &str,
    resource: &str,
) -> Result<Vec<(i64, DeliverySummary)>, StoreError> {
    c.query(
        &format!(
            "SELECT {DELIVERY_COLUMNS} FROM deliveries WHERE account = $1 AND resource_id = $2
             ORDER BY id LIMIT {MOST}"
        ),
        &[&account, &resource],
    )
    .await?
    .iter()
    .map(|r| Ok((r.try_get::<_, i64>(1)?, delivery_summary(r)?)))
    .collect()
}

async fn events(
    c: &Client,
    account: &str,
    subject: &str,
) -> Result<Vec<(i64, EventSummary)>, StoreError> {
    c.query(
        &format!(
            "SELECT {EVENT_COLUMNS} FROM events WHERE account = $1 AND subject = $2
             ORDER BY seq LIMIT {MOST}"
        ),
        &[&account, &subject],
    )
    .await?
    .iter()
    .map(|r| Ok((r.try_get::<_, i64>(6)?, event_summary(r)?)))
    .collect()
}

async fn audit_of(
    c: &Client,
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
        )
        .await?
        .iter()
        .map(audit_row)
        .collect::<Result<_, _>>()?;
    let by_item = c
        .query(
            &format!(
                "SELECT {AUDIT_COLUMNS} FROM audit WHERE item = ANY($1) ORDER BY id LIMIT {MOST}"
            ),
            &[&items],
        )
        .await?;
    for r in &by_item {
        let a = audit_row(r)?;
        if !out.iter().any(|o| o.id == a.id) {
            out.push(a);
        }
    }
    Ok(out)
}
