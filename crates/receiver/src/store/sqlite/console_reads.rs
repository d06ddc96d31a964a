//! What the operator console reads on SQLite: the inbox, a review's
//! evidence and the search, each by an index and as far as it shows (the
//! paged lists are in `console_lists.rs`).

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

use super::admin::{DELIVERY_COLUMNS, JOB_COLUMNS, delivery_summary, job_summary};
use super::reviews;
use crate::domain::{EventState, JobState, PlatformOrderId, Review};
use crate::store::console_views::*;
use crate::store::views::{DeliverySummary, ReviewView};
use pointhook_common::clock::rfc3339;

/// Dead jobs the inbox reads at most (it groups them by cause).
const DEAD_JOBS: i64 = 5000;

pub(super) fn inbox(c: &Connection, limit: i64) -> rusqlite::Result<Inbox> {
    let reviews = reviews::list(c, Some(Review::Held), i64::MAX, limit)?
        .into_iter()
        .map(|r| detail(c, r))
        .collect::<rusqlite::Result<_>>()?;
    let after_release = c
        .prepare_cached(
            "SELECT d.id, d.account, substr(d.subject, 16), d.created_at, e.body
             FROM decisions d INDEXED BY decisions_after_release
             LEFT JOIN events e ON e.id = d.event_id
             WHERE d.event_type = 'order.fraud_after_release'
               AND NOT EXISTS (SELECT 1 FROM acknowledgements a WHERE a.item = 'after_release:' || d.id)
             ORDER BY d.id DESC LIMIT ?1",
        )?
        .query_map([limit], |r| {
            Ok(Flagged {
                item: format!("after_release:{}", r.get::<_, i64>(0)?),
                account: r.get(1)?,
                order_id: r.get(2)?,
                at: rfc3339(r.get(3)?),
                data: event_data(r.get(4)?),
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    let at_risk = c
        .prepare_cached(
            "SELECT o.account, o.order_id, o.at_risk_at,
                    (SELECT e.body FROM events e WHERE e.account = o.account
                       AND e.subject = 'merchant_order:' || o.order_id AND e.type = 'order.at_risk'
                     ORDER BY e.rowid DESC LIMIT 1)
             FROM orders o INDEXED BY orders_at_risk
             WHERE o.at_risk_at IS NOT NULL AND NOT EXISTS (
                 SELECT 1 FROM acknowledgements a
                 WHERE a.item = 'at_risk:' || o.account || ':' || o.order_id)
             ORDER BY o.at_risk_at DESC LIMIT ?1",
        )?
        .query_map([limit], |r| {
            let (account, order): (String, String) = (r.get(0)?, r.get(1)?);
            Ok(Flagged {
                item: format!("at_risk:{account}:{order}"),
                account,
                order_id: order,
                at: rfc3339(r.get(2)?),
                data: event_data(r.get(3)?),
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    let dead_jobs = c
        .prepare_cached(&format!(
            "SELECT {JOB_COLUMNS} FROM jobs WHERE state = ?1 ORDER BY run_at DESC, id DESC LIMIT ?2"
        ))?
        .query_map(params![JobState::Dead, DEAD_JOBS], job_summary)?
        .collect::<rusqlite::Result<_>>()?;
    let dead_events = super::admin::list_events(c, None, Some(EventState::Dead), limit as usize)?;
    let missed = c
        .prepare_cached(&format!(
            "SELECT {DELIVERY_COLUMNS} FROM deliveries INDEXED BY deliveries_missed
             WHERE kind = 4 AND NOT EXISTS (
                 SELECT 1 FROM acknowledgements a WHERE a.item = 'missed:' || deliveries.id)
             ORDER BY received_at DESC LIMIT ?1"
        ))?
        .query_map([limit], delivery_summary)?
        .collect::<rusqlite::Result<Vec<_>>>()?
        .into_iter()
        .map(|d| {
            let job_state = job_state(c, &d)?;
            Ok(Missed {
                delivery: d,
                job_state,
            })
        })
        .collect::<rusqlite::Result<_>>()?;
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

fn job_state(c: &Connection, d: &DeliverySummary) -> rusqlite::Result<Option<&'static str>> {
    let Some(key) = &d.job_key else {
        return Ok(None);
    };
    Ok(
        c.prepare_cached("SELECT state FROM jobs WHERE account = ?1 AND job_key = ?2")?
            .query_row(params![d.account, key], |r| r.get::<_, JobState>(0))
            .optional()?
            .map(JobState::as_str),
    )
}

pub(super) fn review_view(c: &Connection, id: i64) -> rusqlite::Result<Option<ReviewView>> {
    reviews::get(c, id)
}

pub(super) fn review(c: &Connection, id: i64) -> rusqlite::Result<Option<ReviewDetail>> {
    reviews::get(c, id)?.map(|r| detail(c, r)).transpose()
}

fn detail(c: &Connection, review: ReviewView) -> rusqlite::Result<ReviewDetail> {
    let notifications = alert_deliveries(c, &review.account, &review.job_key)?;
    let payment = match &review.payment_id {
        Some(p) => payment_seen(c, &review.account, p, &review.alert)?,
        None => None,
    };
    let order = match &review.merchant_order_id {
        Some(o) => order_state(c, &review.account, o)?,
        None => None,
    };
    Ok(ReviewDetail {
        review,
        notifications,
        payment,
        order,
    })
}

/// A fraud alert's notifications, by the index kept for them.
pub(super) fn alert_deliveries(
    c: &Connection,
    account: &str,
    job_key: &str,
) -> rusqlite::Result<Vec<DeliverySummary>> {
    c.prepare_cached(&format!(
        "SELECT {DELIVERY_COLUMNS} FROM deliveries INDEXED BY deliveries_fraud
         WHERE account = ?1 AND job_key = ?2 AND substr(job_key, 1, 6) = 'fraud:'
         ORDER BY id LIMIT 100"
    ))?
    .query_map(params![account, job_key], delivery_summary)?
    .collect()
}

/// The payment as the latest event about it told it, or as the alert's
/// hold read it (`fraud_alert.unverified` keeps its status and amount),
/// whichever is newer.
pub(super) fn payment_seen(
    c: &Connection,
    account: &str,
    payment: &str,
    alert: &str,
) -> rusqlite::Result<Option<PaymentSeen>> {
    let row: Option<(String, i64)> = c
        .prepare_cached(
            "SELECT body, created_at FROM events
             WHERE account = ?1
               AND ((subject = 'payment:' || ?2
                     AND type IN ('payment.updated', 'payment.cancelled', 'payment.refunded'))
                    OR (subject = ?3 AND type = 'fraud_alert.unverified'))
             ORDER BY rowid DESC LIMIT 1",
        )?
        .query_row(params![account, payment, alert], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .optional()?;
    Ok(row.and_then(|(body, at)| {
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
    }))
}

pub(super) fn order_state(
    c: &Connection,
    account: &str,
    order: &str,
) -> rusqlite::Result<Option<OrderState>> {
    c.prepare_cached(
        "SELECT total_amount, paid_amount, released_at, blocked_at, at_risk_at FROM orders
         WHERE account = ?1 AND order_id = ?2",
    )?
    .query_row(params![account, order], |r| {
        Ok(OrderState {
            total_amount: r.get(0)?,
            paid_amount: r.get(1)?,
            released_at: r.get::<_, Option<i64>>(2)?.map(rfc3339),
            blocked_at: r.get::<_, Option<i64>>(3)?.map(rfc3339),
            at_risk_at: r.get::<_, Option<i64>>(4)?.map(rfc3339),
        })
    })
    .optional()
}

/// Whether anything is recorded under `subject` (an event, or a job of
/// that key).
fn known_subject(c: &Connection, account: &str, subject: &str) -> rusqlite::Result<bool> {
    c.prepare_cached(
        "SELECT EXISTS (SELECT 1 FROM events WHERE account = ?1 AND subject = ?2)
             OR EXISTS (SELECT 1 FROM jobs WHERE account = ?1 AND job_key = ?2)",
    )?
    .query_row(params![account, subject], |r| r.get(0))
}

/// The merchant order a payment belongs to, as events about it said.
fn order_of_payment(
    c: &Connection,
    account: &str,
    payment: &str,
) -> rusqlite::Result<Option<String>> {
    let bodies: Vec<String> = c
        .prepare_cached(
            "SELECT body FROM events WHERE account = ?1 AND subject = 'payment:' || ?2
             ORDER BY rowid DESC LIMIT 5",
        )?
        .query_map(params![account, payment], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let from_events = bodies.into_iter().find_map(|b| {
        event_data(Some(b))?
            .get("merchant_order_id")?
            .as_str()
            .map(str::to_string)
    });
    if from_events.is_some() {
        return Ok(from_events);
    }
    c.prepare_cached(
        "SELECT merchant_order FROM fraud_reviews WHERE account = ?1 AND payment = ?2
         AND merchant_order IS NOT NULL LIMIT 1",
    )?
    .query_row(params![account, payment], |r| r.get(0))
    .optional()
}

/// Every order (or intent, or lone payment) `text` names, in any account.
pub(super) fn search(
    c: &Connection,
    accounts: &[String],
    text: &str,
) -> rusqlite::Result<Vec<Found>> {
    let text = text.trim();
    let mut found = Vec::new();
    if text.is_empty() || text.len() > 200 {
        return Ok(found);
    }
    let mut add = |f: Found| {
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
            if known_subject(c, account, &format!("platform_order:{text}"))? {
                add(hit("platform_order", "Orders API order"));
            }
            continue;
        }
        if order_state(c, account, text)?.is_some()
            || known_subject(c, account, &format!("merchant_order:{text}"))?
        {
            add(hit("merchant_order", "merchant order"));
        }
        if known_subject(c, account, &format!("payment_intent:{text}"))? {
            add(hit("payment_intent", "payment intent"));
        }
        if known_subject(c, account, &format!("payment:{text}"))? {
            match order_of_payment(c, account, text)? {
                Some(order) => add(Found {
                    id: order,
                    ..hit("merchant_order", "payment")
                }),
                None => add(hit("payment", "payment")),
            }
        }
        // The classic payment behind an order of the Orders API.
        let behind: Option<String> = c
            .prepare_cached(
                "SELECT platform_order FROM order_payments WHERE account = ?1 AND payment_id = ?2",
            )?
            .query_row(params![account, text], |r| r.get(0))
            .optional()?;
        if let Some(order) = behind {
            add(Found {
                id: order,
                ..hit("platform_order", "payment")
            });
        }
        let subjects: Vec<String> = c
            .prepare_cached(
                "SELECT subject FROM events INDEXED BY events_reference
                 WHERE json_extract(body, '$.data.external_reference') = ?1
                   AND json_extract(body, '$.data.external_reference') IS NOT NULL
                   AND account = ?2
                 LIMIT 20",
            )?
            .query_map(params![text, account], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        for subject in subjects {
            let Some((kind, id)) = subject.split_once(':') else {
                continue;
            };
            let found = match kind {
                "merchant_order" => Some(("merchant_order", id.to_string())),
                "platform_order" => Some(("platform_order", id.to_string())),
                "payment_intent" => Some(("payment_intent", id.to_string())),
                "payment" => Some(match order_of_payment(c, account, id)? {
                    Some(order) => ("merchant_order", order),
                    None => ("payment", id.to_string()),
                }),
                _ => None,
            };
            if let Some((kind, id)) = found {
                add(Found {
                    account: account.clone(),
                    kind,
                    id,
                    matched: "external reference",
                });
            }
        }
    }
    Ok(found)
}
