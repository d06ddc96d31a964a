//! What the operator console reads on PostgreSQL: the same answers as
//! SQLite's `console_reads.rs` (the inbox, a review's evidence, the
//! search), each by an index; the paged lists are in `console_lists.rs`.

use deadpool_postgres::Client;
use serde_json::Value;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::reads::{DELIVERY_COLUMNS, JOB_COLUMNS, delivery_summary, job_summary};
use super::reviews::{COLUMNS, view};
use crate::domain::{EventState, JobState, PlatformOrderId, Review};
use crate::store::StoreError;
use crate::store::console_views::*;
use crate::store::views::{DeliverySummary, ReviewView};
use pointhook_common::clock::rfc3339;

/// Dead jobs the inbox reads at most (it groups them by cause).
const DEAD_JOBS: i64 = 5000;

pub async fn review_view(c: &Client, id: i64) -> Result<Option<ReviewView>, StoreError> {
    c.query_opt(
        &format!("SELECT {COLUMNS} FROM fraud_reviews WHERE id = $1"),
        &[&id],
    )
    .await?
    .as_ref()
    .map(view)
    .transpose()
}

pub async fn reviews_where(
    c: &Client,
    condition: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<ReviewView>, StoreError> {
    c.query(
        &format!("SELECT {COLUMNS} FROM fraud_reviews WHERE {condition} ORDER BY id"),
        params,
    )
    .await?
    .iter()
    .map(view)
    .collect()
}

pub fn rows<T>(
    rows: Vec<Row>,
    f: impl Fn(&Row) -> Result<T, StoreError>,
) -> Result<Vec<T>, StoreError> {
    rows.iter().map(f).collect()
}

pub async fn inbox(c: &Client, limit: i64) -> Result<Inbox, StoreError> {
    let held = c
        .query(
            &format!(
                "SELECT {COLUMNS} FROM fraud_reviews WHERE state = $1 ORDER BY id DESC LIMIT $2"
            ),
            &[&Review::Held, &limit],
        )
        .await?;
    let mut reviews = Vec::new();
    for r in held {
        reviews.push(detail(c, view(&r)?).await?);
    }
    let after_release = rows(
        c.query(
            "SELECT d.id, d.account, substr(d.subject, 16), d.created_at, e.body
             FROM decisions d LEFT JOIN events e ON e.id = d.event_id
             WHERE d.event_type = 'order.fraud_after_release'
               AND NOT EXISTS (SELECT 1 FROM acknowledgements a WHERE a.item = 'after_release:' || d.id)
             ORDER BY d.id DESC LIMIT $1",
            &[&limit],
        )
        .await?,
        |r| {
            Ok(Flagged {
                item: format!("after_release:{}", r.try_get::<_, i64>(0)?),
                account: r.try_get(1)?,
                order_id: r.try_get(2)?,
                at: rfc3339(r.try_get(3)?),
                data: event_data(r.try_get(4)?),
            })
        },
    )?;
    let at_risk = rows(
        c.query(
            "SELECT o.account, o.order_id, o.at_risk_at,
                    (SELECT e.body FROM events e WHERE e.account = o.account
                       AND e.subject = 'merchant_order:' || o.order_id AND e.type = 'order.at_risk'
                     ORDER BY e.seq DESC LIMIT 1)
             FROM orders o
             WHERE o.at_risk_at IS NOT NULL AND NOT EXISTS (
                 SELECT 1 FROM acknowledgements a
                 WHERE a.item = 'at_risk:' || o.account || ':' || o.order_id)
             ORDER BY o.at_risk_at DESC LIMIT $1",
            &[&limit],
        )
        .await?,
        |r| {
            let (account, order): (String, String) = (r.try_get(0)?, r.try_get(1)?);
            Ok(Flagged {
                item: format!("at_risk:{account}:{order}"),
                account,
                order_id: order,
                at: rfc3339(r.try_get(2)?),
                data: event_data(r.try_get(3)?),
            })
        },
    )?;
    let dead_jobs = rows(
        c.query(
            &format!(
                "SELECT {JOB_COLUMNS} FROM jobs WHERE state = $1
                 ORDER BY run_at DESC, id DESC LIMIT $2"
            ),
            &[&JobState::Dead, &DEAD_JOBS],
        )
        .await?,
        job_summary,
    )?;
    let dead_events =
        super::reads::list_events(c, None, Some(EventState::Dead), limit as usize).await?;
    let found = rows(
        c.query(
            &format!(
                "SELECT {DELIVERY_COLUMNS} FROM deliveries
                 WHERE kind = 4 AND NOT EXISTS (
                     SELECT 1 FROM acknowledgements a WHERE a.item = 'missed:' || deliveries.id)
                 ORDER BY received_at DESC LIMIT $1"
            ),
            &[&limit],
        )
        .await?,
        delivery_summary,
    )?;
    let mut missed = Vec::new();
    for d in found {
        let job_state = match &d.job_key {
            Some(key) => c
                .query_opt(
                    "SELECT state FROM jobs WHERE account = $1 AND job_key = $2",
                    &[&d.account, key],
                )
                .await?
                .map(|r| r.try_get::<_, JobState>(0))
                .transpose()?
                .map(JobState::as_str),
            None => None,
        };
        missed.push(Missed {
            delivery: d,
            job_state,
        });
    }
    Ok(Inbox {
        reviews,
        after_release,
        at_risk,
        dead_jobs,
        dead_events,
        missed,
        // `Store::inbox` adds them, from its destinations' read.
        destinations: Vec::new(),
    })
}

pub async fn detail(c: &Client, review: ReviewView) -> Result<ReviewDetail, StoreError> {
    let notifications = alert_deliveries(c, &review.account, &review.job_key).await?;
    let payment = match &review.payment_id {
        Some(p) => payment_seen(c, &review.account, p, &review.alert).await?,
        None => None,
    };
    let order = match &review.merchant_order_id {
        Some(o) => order_state(c, &review.account, o).await?,
        None => None,
    };
    Ok(ReviewDetail {
        review,
        notifications,
        payment,
        order,
    })
}

pub async fn alert_deliveries(
    c: &Client,
    account: &str,
    job_key: &str,
) -> Result<Vec<DeliverySummary>, StoreError> {
    rows(
        c.query(
            &format!(
                "SELECT {DELIVERY_COLUMNS} FROM deliveries WHERE job_key = $2 AND account = $1
                 ORDER BY id LIMIT 100"
            ),
            &[&account, &job_key],
        )
        .await?,
        delivery_summary,
    )
}

/// The payment as the latest event about it told it, or as the alert's
/// hold read it (`fraud_alert.unverified` keeps its status and amount),
/// whichever is newer.
pub async fn payment_seen(
    c: &Client,
    account: &str,
    payment: &str,
    alert: &str,
) -> Result<Option<PaymentSeen>, StoreError> {
    let row = c
        .query_opt(
            "SELECT body, created_at FROM events
             WHERE account = $1
               AND ((subject = 'payment:' || $2
                     AND type IN ('payment.updated', 'payment.cancelled', 'payment.refunded'))
                    OR (subject = $3 AND type = 'fraud_alert.unverified'))
             ORDER BY seq DESC LIMIT 1",
            &[&account, &payment, &alert],
        )
        .await?;
    let Some(row) = row else {
        return Ok(None);
    };
    let (body, at): (String, i64) = (row.try_get(0)?, row.try_get(1)?);
    Ok((|| {
        let data = event_data(Some(body))?;
        Some(PaymentSeen {
            status: data
                .get("status")
                .or_else(|| data.get("payment_status"))?
                .as_str()?
                .to_string(),
            amount: data
                .get("amount")
                .and_then(Value::as_str)
                .map(str::to_string),
            currency: data
                .get("currency_id")
                .and_then(Value::as_str)
                .map(str::to_string),
            at: rfc3339(at),
        })
    })())
}

pub async fn order_state(
    c: &Client,
    account: &str,
    order: &str,
) -> Result<Option<OrderState>, StoreError> {
    c.query_opt(
        "SELECT total_amount, paid_amount, released_at, blocked_at, at_risk_at FROM orders
         WHERE account = $1 AND order_id = $2",
        &[&account, &order],
    )
    .await?
    .map(|r| {
        Ok(OrderState {
            total_amount: r.try_get(0)?,
            paid_amount: r.try_get(1)?,
            released_at: r.try_get::<_, Option<i64>>(2)?.map(rfc3339),
            blocked_at: r.try_get::<_, Option<i64>>(3)?.map(rfc3339),
            at_risk_at: r.try_get::<_, Option<i64>>(4)?.map(rfc3339),
        })
    })
    .transpose()
}

async fn known_subject(c: &Client, account: &str, subject: &str) -> Result<bool, StoreError> {
    Ok(c.query_one(
        "SELECT EXISTS (SELECT 1 FROM events WHERE account = $1 AND subject = $2)
                 OR EXISTS (SELECT 1 FROM jobs WHERE account = $1 AND job_key = $2)",
        &[&account, &subject],
    )
    .await?
    .try_get(0)?)
}

async fn order_of_payment(
    c: &Client,
    account: &str,
    payment: &str,
) -> Result<Option<String>, StoreError> {
    let bodies = c
        .query(
            "SELECT body FROM events WHERE account = $1 AND subject = 'payment:' || $2
             ORDER BY seq DESC LIMIT 5",
            &[&account, &payment],
        )
        .await?;
    for r in bodies {
        let order = event_data(r.try_get(0)?)
            .and_then(|d| d.get("merchant_order_id")?.as_str().map(str::to_string));
        if order.is_some() {
            return Ok(order);
        }
    }
    Ok(c.query_opt(
        "SELECT merchant_order FROM fraud_reviews WHERE account = $1 AND payment = $2
             AND merchant_order IS NOT NULL LIMIT 1",
        &[&account, &payment],
    )
    .await?
    .map(|r| r.try_get(0))
    .transpose()?)
}

pub async fn search(c: &Client, accounts: &[String], text: &str) -> Result<Vec<Found>, StoreError> {
    let text = text.trim();
    let mut found: Vec<Found> = Vec::new();
    if text.is_empty() || text.len() > 200 {
        return Ok(found);
    }
    let add = |f: Found, found: &mut Vec<Found>| {
        if !found.contains(&f) {
            found.push(f);
        }
    };
    for account in accounts {
        let hit = |kind, matched| Found {
            account: account.clone(),
            kind,
            id: text.to_string(),
            matched,
        };
        if PlatformOrderId::parse(text).is_ok() {
            if known_subject(c, account, &format!("platform_order:{text}")).await? {
                add(hit("platform_order", "Orders API order"), &mut found);
            }
            continue;
        }
        if order_state(c, account, text).await?.is_some()
            || known_subject(c, account, &format!("merchant_order:{text}")).await?
        {
            add(hit("merchant_order", "merchant order"), &mut found);
        }
        if known_subject(c, account, &format!("payment_intent:{text}")).await? {
            add(hit("payment_intent", "payment intent"), &mut found);
        }
        if known_subject(c, account, &format!("payment:{text}")).await? {
            match order_of_payment(c, account, text).await? {
                Some(order) => add(
                    Found {
                        id: order,
                        ..hit("merchant_order", "payment")
                    },
                    &mut found,
                ),
                None => add(hit("payment", "payment"), &mut found),
            }
        }
        // The classic payment behind an order of the Orders API.
        if let Some(row) = c
            .query_opt(
                "SELECT platform_order FROM order_payments WHERE account = $1 AND payment_id = $2",
                &[&account, &text],
            )
            .await?
        {
            add(
                Found {
                    id: row.try_get(0)?,
                    ..hit("platform_order", "payment")
                },
                &mut found,
            );
        }
        let subjects = c
            .query(
                // No DISTINCT: its order would lead the planner to the
                // subject index; `add` keeps each order once.
                "SELECT subject FROM events
                 WHERE ((body::jsonb -> 'data') ->> 'external_reference') = $1
                   AND ((body::jsonb -> 'data') ->> 'external_reference') IS NOT NULL
                   AND account = $2
                 LIMIT 20",
                &[&text, &account],
            )
            .await?;
        for r in subjects {
            let subject: String = r.try_get(0)?;
            let Some((kind, id)) = subject.split_once(':') else {
                continue;
            };
            let hit = match kind {
                "merchant_order" => Some(("merchant_order", id.to_string())),
                "platform_order" => Some(("platform_order", id.to_string())),
                "payment_intent" => Some(("payment_intent", id.to_string())),
                "payment" => Some(match order_of_payment(c, account, id).await? {
                    Some(order) => ("merchant_order", order),
                    None => ("payment", id.to_string()),
                }),
                _ => None,
            };
            if let Some((kind, id)) = hit {
                add(
                    Found {
                        account: account.clone(),
                        kind,
                        id,
                        matched: "external reference",
                    },
                    &mut found,
                );
            }
        }
    }
    Ok(found)
}
