//! The console's paged lists on PostgreSQL (as SQLite's
//! `console_lists.rs`): orders by state, jobs, events and deliveries, a
//! filter no index serves bounded to `SCAN_WINDOW` rows per page; each
//! event's attempts, missed changes per day.

use crate::domain::{Action, AuditOutcome, Via};
use deadpool_postgres::Client;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::console_reads::rows;
use super::reads::{
    DELIVERY_COLUMNS, EVENT_COLUMNS, JOB_COLUMNS, delivery_summary, event_summary, job_summary,
};
use crate::domain::{EventState, JobKind, JobState, Kind};
use crate::store::StoreError;
use crate::store::console_views::*;
use crate::store::views::{DeliveryFilter, DeliverySummary, EventSummary, JobSummary, clamp};
use pointhook_common::clock::rfc3339;

/// How a row says where the next page starts.
type CursorOf = Box<dyn Fn(&Row) -> Result<String, StoreError>>;

fn order_cursor(text: &str) -> Option<(i64, String, String)> {
    let (time, rest) = text.split_once('.')?;
    let (account, order) = rest.rsplit_once('.')?;
    Some((time.parse().ok()?, account.to_string(), order.to_string()))
}

pub(super) const AUDIT_COLUMNS: &str =
    "id, at, actor, via, action, item, account, order_id, detail, outcome, result";

pub(super) fn audit_row(r: &Row) -> Result<AuditView, StoreError> {
    Ok(AuditView {
        id: r.try_get(0)?,
        at: rfc3339(r.try_get(1)?),
        actor: r.try_get(2)?,
        via: r.try_get::<_, Via>(3)?.as_str(),
        action: r.try_get::<_, Action>(4)?.as_str(),
        item: r.try_get(5)?,
        account: r.try_get(6)?,
        order_id: r.try_get(7)?,
        detail: r.try_get(8)?,
        outcome: r.try_get::<_, AuditOutcome>(9)?.as_str(),
        result: r.try_get(10)?,
    })
}

pub async fn order_list(
    c: &Client,
    list: OrderList,
    cursor: Option<&str>,
    limit: usize,
) -> Result<Page<OrderRow>, StoreError> {
    let limit = clamp(limit);
    let order_row = |r: &Row| -> Result<OrderRow, StoreError> {
        Ok(OrderRow {
            account: r.try_get(0)?,
            order_id: r.try_get(1)?,
            at: rfc3339(r.try_get(2)?),
            total_amount: r.try_get(3)?,
            paid_amount: r.try_get(4)?,
        })
    };
    let (found, next): (Vec<Row>, CursorOf) = match list {
        OrderList::Released | OrderList::Blocked | OrderList::AtRisk | OrderList::Any => {
            let column = match list {
                OrderList::Released => "released_at",
                OrderList::Blocked => "blocked_at",
                OrderList::AtRisk => "at_risk_at",
                _ => "updated_at",
            };
            let (t, a, o) =
                cursor
                    .and_then(order_cursor)
                    .unwrap_or((i64::MAX, String::new(), String::new()));
            let rows = c
                .query(
                    &format!(
                        "SELECT account, order_id, {column}, total_amount, paid_amount FROM orders
                         WHERE {column} IS NOT NULL
                           AND ({column} < $1 OR ({column} = $1 AND (account, order_id) < ($2, $3)))
                         ORDER BY {column} DESC, account DESC, order_id DESC LIMIT $4"
                    ),
                    &[&t, &a, &o, &limit],
                )
                .await?;
            let next = |r: &Row| -> Result<String, StoreError> {
                Ok(format!(
                    "{}.{}.{}",
                    r.try_get::<_, i64>(2)?,
                    r.try_get::<_, String>(0)?,
                    r.try_get::<_, String>(1)?
                ))
            };
            (rows, Box::new(next))
        }
        OrderList::AwaitingShipment | OrderList::FraudAfterRelease => {
            let (event, open) = match list {
                OrderList::AwaitingShipment => (
                    "order.awaiting_shipment",
                    "o.released_at IS NULL AND o.blocked_at IS NULL",
                ),
                _ => ("order.fraud_after_release", "true"),
            };
            let before = cursor
                .and_then(|c| c.rsplit('.').next()?.parse::<i64>().ok())
                .unwrap_or(i64::MAX);
            let rows = c
                .query(
                    &format!(
                        "SELECT d.account, substr(d.subject, 16), d.created_at, o.total_amount,
                                o.paid_amount, d.id
                         FROM decisions d
                         LEFT JOIN orders o ON o.account = d.account
                             AND o.order_id = substr(d.subject, 16)
                         WHERE d.event_type = '{event}' AND d.id < $1 AND {open}
                         ORDER BY d.id DESC LIMIT $2"
                    ),
                    &[&before, &limit],
                )
                .await?;
            let next = |r: &Row| -> Result<String, StoreError> {
                Ok(format!("0.{}", r.try_get::<_, i64>(5)?))
            };
            (rows, Box::new(next))
        }
    };
    let next = match found.last() {
        Some(last) if found.len() as i64 == limit => Some(next(last)?),
        _ => None,
    };
    Ok(Page {
        rows: rows(found, order_row)?,
        next,
    })
}

/// A page of a bounded window: `window` is a query of at most
/// `SCAN_WINDOW` rows in order, each with its cursor as the last column;
/// `filtered` is the same with the page's filters and limit outside. When
/// the page is short, the window's last row (if the window was full) says
/// where to go on.
async fn bounded<T>(
    c: &Client,
    filtered: &str,
    window_end: &str,
    params: &[&(dyn ToSql + Sync)],
    end_params: &[&(dyn ToSql + Sync)],
    limit: i64,
    read: impl Fn(&Row) -> Result<T, StoreError>,
) -> Result<Page<T>, StoreError> {
    let found = c.query(filtered, params).await?;
    let cursor_at = found.first().map_or(0, |r| r.len() - 1);
    let next = if found.len() as i64 == limit {
        match found.last() {
            Some(r) => Some(r.try_get::<_, String>(cursor_at)?),
            None => None,
        }
    } else {
        c.query_opt(window_end, end_params)
            .await?
            .map(|r| r.try_get::<_, String>(0))
            .transpose()?
    };
    Ok(Page {
        rows: rows(found, read)?,
        next,
    })
}

pub async fn job_page(c: &Client, f: &JobFilter) -> Result<Page<JobSummary>, StoreError> {
    let state = f.state.unwrap_or(JobState::Dead);
    let (t, id) = f
        .cursor
        .as_deref()
        .and_then(parse_cursor)
        .unwrap_or((i64::MAX, i64::MAX));
    let window = "FROM jobs WHERE state = $1 AND (run_at, id) < ($2, $3)
                  ORDER BY run_at DESC, id DESC";
    let limit = clamp(f.limit);
    let kind: Option<JobKind> = f.kind;
    bounded(
        c,
        &format!(
            "SELECT * FROM (SELECT {JOB_COLUMNS}, run_at || '.' || id AS cursor {window} LIMIT $4) w
             WHERE ($5::smallint IS NULL OR kind = $5) AND ($6::text IS NULL OR account = $6)
             ORDER BY run_at DESC, id DESC LIMIT $7"
        ),
        &format!("SELECT run_at || '.' || id {window} OFFSET $4::bigint - 1 LIMIT 1"),
        &[&state, &t, &id, &SCAN_WINDOW, &kind, &f.account, &limit],
        &[&state, &t, &id, &SCAN_WINDOW],
        limit,
        job_summary,
    )
    .await
}

pub async fn event_page(c: &Client, f: &EventFilter) -> Result<Page<EventSummary>, StoreError> {
    let limit = clamp(f.limit);
    let (t, id) = f
        .cursor
        .as_deref()
        .and_then(parse_cursor)
        .unwrap_or((i64::MAX, i64::MAX));
    let filters = "($5::text IS NULL OR type = $5) AND ($6::text IS NULL OR account = $6)";
    match f.state {
        Some(state) => {
            let window = "FROM events WHERE state = $1 AND (next_attempt_at, seq) < ($2, $3)
                          ORDER BY next_attempt_at DESC, seq DESC";
            bounded(
                c,
                &format!(
                    "SELECT * FROM (SELECT {EVENT_COLUMNS}, next_attempt_at, seq,
                                           next_attempt_at || '.' || seq AS cursor
                                    {window} LIMIT $4) w
                     WHERE {filters} ORDER BY next_attempt_at DESC, seq DESC LIMIT $7"
                ),
                &format!(
                    "SELECT next_attempt_at || '.' || seq {window} OFFSET $4::bigint - 1 LIMIT 1"
                ),
                &[
                    &state,
                    &t,
                    &id,
                    &SCAN_WINDOW,
                    &f.event_type,
                    &f.account,
                    &limit,
                ],
                &[&state, &t, &id, &SCAN_WINDOW],
                limit,
                event_summary,
            )
            .await
        }
        None => {
            let window = "FROM events WHERE seq < $1 ORDER BY seq DESC";
            bounded(
                c,
                &format!(
                    "SELECT * FROM (SELECT {EVENT_COLUMNS}, seq, '0.' || seq AS cursor
                                    {window} LIMIT $2) w
                     WHERE ($3::text IS NULL OR type = $3) AND ($4::text IS NULL OR account = $4)
                     ORDER BY seq DESC LIMIT $5"
                ),
                &format!("SELECT '0.' || seq {window} OFFSET $2::bigint - 1 LIMIT 1"),
                &[&id, &SCAN_WINDOW, &f.event_type, &f.account, &limit],
                &[&id, &SCAN_WINDOW],
                limit,
                event_summary,
            )
            .await
        }
    }
}

pub async fn delivery_page(
    c: &Client,
    f: &DeliveryFilter,
) -> Result<Page<DeliverySummary>, StoreError> {
    let kind = match f.kind.as_deref() {
        None => None,
        Some(k) => match Kind::parse(k) {
            Some(k) => Some(k),
            None => {
                return Ok(Page {
                    rows: Vec::new(),
                    next: None,
                });
            }
        },
    };
    let (before, since) = (f.before.unwrap_or(i64::MAX), f.since.unwrap_or(i64::MIN));
    let missed = if kind == Some(Kind::Reconcile) {
        "kind = 4 AND"
    } else {
        ""
    };
    let window =
        format!("FROM deliveries WHERE {missed} id < $1 AND received_at >= $2 ORDER BY id DESC");
    let limit = clamp(f.limit);
    bounded(
        c,
        &format!(
            "SELECT * FROM (SELECT {DELIVERY_COLUMNS}, id::text AS cursor {window} LIMIT $3) w
             WHERE ($4::smallint IS NULL OR kind = $4) AND ($5::text IS NULL OR account = $5)
               AND ($6::text IS NULL OR topic = $6)
             ORDER BY id DESC LIMIT $7"
        ),
        &format!("SELECT id::text AS cursor {window} OFFSET $3::bigint - 1 LIMIT 1"),
        &[
            &before,
            &since,
            &SCAN_WINDOW,
            &kind,
            &f.account,
            &f.topic,
            &limit,
        ],
        &[&before, &since, &SCAN_WINDOW],
        limit,
        delivery_summary,
    )
    .await
}

pub async fn event_attempts(c: &Client, event: &str) -> Result<Vec<AttemptView>, StoreError> {
    rows(
        c.query(
            "SELECT attempt, at, state, error FROM event_attempts WHERE event_id = $1
             ORDER BY attempt",
            &[&event],
        )
        .await?,
        |r| {
            Ok(AttemptView {
                attempt: i64::from(r.try_get::<_, i32>(0)?),
                at: rfc3339(r.try_get(1)?),
                state: r.try_get::<_, EventState>(2)?.as_str(),
                error: r.try_get(3)?,
            })
        },
    )
}

pub async fn missed_per_day(c: &Client, since: i64) -> Result<Vec<(i64, i64)>, StoreError> {
    rows(
        c.query(
            "SELECT received_at / 86400000 AS day, count(*) FROM deliveries
             WHERE kind = 4 AND received_at >= $1 GROUP BY day ORDER BY day",
            &[&since],
        )
        .await?,
        |r| Ok((r.try_get::<_, i64>(0)? * 86_400_000, r.try_get(1)?)),
    )
}
