//! The console's paged lists on SQLite: orders by state, jobs, events and
//! deliveries, each read by an index in order; a filter no index serves
//! scans at most `SCAN_WINDOW` rows per page and says where it stopped.
//! Also each job's deaths, each event's attempts, missed changes per day.

use crate::domain::{Action, AuditOutcome, Via};
use rusqlite::{Connection, params};

use super::admin::{
    DELIVERY_COLUMNS, EVENT_COLUMNS, JOB_COLUMNS, delivery_summary, event_summary, job_summary,
};
use crate::domain::{EventState, JobState, Kind};
use crate::store::console_views::*;
use crate::store::views::{DeliveryFilter, DeliverySummary, EventSummary, JobSummary, clamp};
use pointhook_common::clock::rfc3339;

/// `time.account.order`: where an order list goes on.
fn order_cursor(text: &str) -> Option<(i64, String, String)> {
    let (time, rest) = text.split_once('.')?;
    let (account, order) = rest.rsplit_once('.')?;
    Some((time.parse().ok()?, account.to_string(), order.to_string()))
}

pub(super) const AUDIT_COLUMNS: &str =
    "id, at, actor, via, action, item, account, order_id, detail, outcome, result";

pub(super) fn audit_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<AuditView> {
    Ok(AuditView {
        id: r.get(0)?,
        at: rfc3339(r.get(1)?),
        actor: r.get(2)?,
        via: r.get::<_, Via>(3)?.as_str(),
        action: r.get::<_, Action>(4)?.as_str(),
        item: r.get(5)?,
        account: r.get(6)?,
        order_id: r.get(7)?,
        detail: r.get(8)?,
        outcome: r.get::<_, AuditOutcome>(9)?.as_str(),
        result: r.get(10)?,
    })
}

pub(super) fn order_list(
    c: &Connection,
    list: OrderList,
    cursor: Option<&str>,
    limit: usize,
) -> rusqlite::Result<Page<OrderRow>> {
    let limit = clamp(limit);
    let row = |r: &rusqlite::Row<'_>| -> rusqlite::Result<(i64, OrderRow)> {
        let at: i64 = r.get(2)?;
        Ok((
            at,
            OrderRow {
                account: r.get(0)?,
                order_id: r.get(1)?,
                at: rfc3339(at),
                total_amount: r.get(3)?,
                paid_amount: r.get(4)?,
            },
        ))
    };
    let rows: Vec<(i64, OrderRow)> = match list {
        OrderList::Released | OrderList::Blocked | OrderList::AtRisk | OrderList::Any => {
            // Every order: by when it last changed (no index: a scan).
            let (column, index) = match list {
                OrderList::Released => ("released_at", "INDEXED BY orders_released"),
                OrderList::Blocked => ("blocked_at", "INDEXED BY orders_blocked"),
                OrderList::AtRisk => ("at_risk_at", "INDEXED BY orders_at_risk"),
                _ => ("updated_at", ""),
            };
            let (t, a, o) =
                cursor
                    .and_then(order_cursor)
                    .unwrap_or((i64::MAX, String::new(), String::new()));
            c.prepare_cached(&format!(
                "SELECT account, order_id, {column}, total_amount, paid_amount
                 FROM orders {index}
                 WHERE {column} IS NOT NULL
                   AND ({column} < ?1 OR ({column} = ?1 AND (account, order_id) < (?2, ?3)))
                 ORDER BY {column} DESC, account DESC, order_id DESC LIMIT ?4"
            ))?
            .query_map(params![t, a, o, limit], row)?
            .collect::<rusqlite::Result<_>>()?
        }
        OrderList::AwaitingShipment | OrderList::FraudAfterRelease => {
            let (event, index, open) = match list {
                OrderList::AwaitingShipment => (
                    "order.awaiting_shipment",
                    "decisions_awaiting",
                    "o.released_at IS NULL AND o.blocked_at IS NULL",
                ),
                _ => ("order.fraud_after_release", "decisions_after_release", "1"),
            };
            let before = cursor
                .and_then(|c| c.rsplit('.').next()?.parse::<i64>().ok())
                .unwrap_or(i64::MAX);
            c.prepare_cached(&format!(
                "SELECT d.account, substr(d.subject, 16), d.created_at, o.total_amount,
                        o.paid_amount, d.id
                 FROM decisions d INDEXED BY {index}
                 LEFT JOIN orders o ON o.account = d.account AND o.order_id = substr(d.subject, 16)
                 WHERE d.event_type = '{event}' AND d.id < ?1 AND {open}
                 ORDER BY d.id DESC LIMIT ?2"
            ))?
            .query_map(params![before, limit], |r| {
                let (_, order) = row(r)?;
                Ok((r.get(5)?, order))
            })?
            .collect::<rusqlite::Result<_>>()?
        }
    };
    let next = (rows.len() as i64 == limit)
        .then(|| rows.last())
        .flatten()
        .map(|(key, o)| match list {
            OrderList::AwaitingShipment | OrderList::FraudAfterRelease => format!("0.{key}"),
            _ => format!("{key}.{}.{}", o.account, o.order_id),
        });
    Ok(Page {
        rows: rows.into_iter().map(|(_, o)| o).collect(),
        next,
    })
}

/// Reads rows of `stmt` in order, keeps those `keep` accepts up to
/// `limit`, and tells where the next page starts: after the last row kept
/// on a full page, after the last row read when the window ran out, or
/// nowhere when the rows did.
fn bounded<T>(
    mut rows: rusqlite::Rows<'_>,
    limit: i64,
    read: impl Fn(&rusqlite::Row<'_>) -> rusqlite::Result<(String, T)>,
    keep: impl Fn(&T) -> bool,
) -> rusqlite::Result<Page<T>> {
    let (mut kept, mut scanned, mut last) = (Vec::new(), 0i64, None);
    while let Some(r) = rows.next()? {
        scanned += 1;
        let (cursor, item) = read(r)?;
        last = Some(cursor);
        if keep(&item) {
            kept.push(item);
            if kept.len() as i64 == limit {
                return Ok(Page {
                    rows: kept,
                    next: last,
                });
            }
        }
    }
    Ok(Page {
        rows: kept,
        next: last.filter(|_| scanned == SCAN_WINDOW),
    })
}

pub(super) fn job_page(c: &Connection, f: &JobFilter) -> rusqlite::Result<Page<JobSummary>> {
    let state = f.state.unwrap_or(JobState::Dead);
    let (t, id) = f
        .cursor
        .as_deref()
        .and_then(parse_cursor)
        .unwrap_or((i64::MAX, i64::MAX));
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {JOB_COLUMNS} FROM jobs
         WHERE state = ?1 AND (run_at < ?2 OR (run_at = ?2 AND id < ?3))
         ORDER BY run_at DESC, id DESC LIMIT ?4"
    ))?;
    let rows = stmt.query(params![state, t, id, SCAN_WINDOW])?;
    let kind = f.kind.map(|k| k.as_str());
    bounded(
        rows,
        clamp(f.limit),
        |r| {
            let cursor = format!("{}.{}", r.get::<_, i64>(6)?, r.get::<_, i64>(0)?);
            Ok((cursor, job_summary(r)?))
        },
        |j| kind.is_none_or(|k| j.kind == k) && f.account.as_ref().is_none_or(|a| &j.account == a),
    )
}

pub(super) fn event_page(c: &Connection, f: &EventFilter) -> rusqlite::Result<Page<EventSummary>> {
    let keep = |e: &EventSummary| {
        f.event_type.as_ref().is_none_or(|t| &e.event_type == t)
            && f.account.as_ref().is_none_or(|a| &e.account == a)
    };
    let limit = clamp(f.limit);
    match f.state {
        Some(state) => {
            let (t, id) = f
                .cursor
                .as_deref()
                .and_then(parse_cursor)
                .unwrap_or((i64::MAX, i64::MAX));
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {EVENT_COLUMNS}, rowid, next_attempt_at FROM events INDEXED BY events_due
                 WHERE state = ?1 AND (next_attempt_at < ?2 OR (next_attempt_at = ?2 AND rowid < ?3))
                 ORDER BY next_attempt_at DESC, rowid DESC LIMIT ?4"
            ))?;
            let rows = stmt.query(params![state, t, id, SCAN_WINDOW])?;
            bounded(
                rows,
                limit,
                |r| {
                    let cursor = format!("{}.{}", r.get::<_, i64>(10)?, r.get::<_, i64>(9)?);
                    Ok((cursor, event_summary(r)?))
                },
                keep,
            )
        }
        None => {
            let before = f
                .cursor
                .as_deref()
                .and_then(parse_cursor)
                .map_or(i64::MAX, |(_, id)| id);
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {EVENT_COLUMNS}, rowid FROM events WHERE rowid < ?1
                 ORDER BY rowid DESC LIMIT ?2"
            ))?;
            let rows = stmt.query(params![before, SCAN_WINDOW])?;
            bounded(
                rows,
                limit,
                |r| Ok((format!("0.{}", r.get::<_, i64>(9)?), event_summary(r)?)),
                keep,
            )
        }
    }
}

pub(super) fn delivery_page(
    c: &Connection,
    f: &DeliveryFilter,
) -> rusqlite::Result<Page<DeliverySummary>> {
    let before = f.before.unwrap_or(i64::MAX);
    let kind = match f.kind.as_deref() {
        None => None,
        Some(k) => match Kind::parse(k) {
            Some(k) => Some(k.as_str()),
            None => {
                return Ok(Page {
                    rows: Vec::new(),
                    next: None,
                });
            }
        },
    };
    let since = f.since.unwrap_or(i64::MIN);
    let source = if kind == Some(Kind::Reconcile.as_str()) {
        "deliveries INDEXED BY deliveries_missed WHERE kind = 4 AND"
    } else {
        "deliveries WHERE"
    };
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {DELIVERY_COLUMNS} FROM {source} id < ?1 AND received_at >= ?2
         ORDER BY id DESC LIMIT ?3"
    ))?;
    let rows = stmt.query(params![before, since, SCAN_WINDOW])?;
    bounded(
        rows,
        clamp(f.limit),
        |r| Ok((r.get::<_, i64>(0)?.to_string(), delivery_summary(r)?)),
        |d| {
            kind.is_none_or(|k| d.kind == k)
                && f.account.as_ref().is_none_or(|a| &d.account == a)
                && f.topic.as_ref().is_none_or(|t| &d.topic == t)
        },
    )
}

pub(super) fn job_deaths(c: &Connection, job: i64) -> rusqlite::Result<Vec<DeathView>> {
    c.prepare_cached(
        "SELECT ended_at, attempts, last_error, revived_at FROM job_history
         WHERE job_id = ?1 ORDER BY ended_at",
    )?
    .query_map([job], |r| {
        Ok(DeathView {
            died_at: rfc3339(r.get(0)?),
            attempts: r.get(1)?,
            last_error: r.get(2)?,
            revived_at: rfc3339(r.get(3)?),
        })
    })?
    .collect()
}

pub(super) fn event_attempts(c: &Connection, event: &str) -> rusqlite::Result<Vec<AttemptView>> {
    c.prepare_cached(
        "SELECT attempt, at, state, error FROM event_attempts WHERE event_id = ?1 ORDER BY attempt",
    )?
    .query_map([event], |r| {
        Ok(AttemptView {
            attempt: r.get(0)?,
            at: rfc3339(r.get(1)?),
            state: r.get::<_, EventState>(2)?.as_str(),
            error: r.get(3)?,
        })
    })?
    .collect()
}

/// Changes missed per UTC day since `since`: `(day's start, count)`.
pub(super) fn missed_per_day(c: &Connection, since: i64) -> rusqlite::Result<Vec<(i64, i64)>> {
    c.prepare_cached(
        "SELECT received_at / 86400000, count(*) FROM deliveries INDEXED BY deliveries_missed
         WHERE kind = 4 AND received_at >= ?1 GROUP BY 1 ORDER BY 1",
    )?
    .query_map([since], |r| {
        Ok((r.get::<_, i64>(0)? * 86_400_000, r.get(1)?))
    })?
    .collect()
}
