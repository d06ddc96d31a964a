//! The console's paged lists, on either backend: orders by state, jobs,
//! events and deliveries, each read by an index in order; a filter no
//! index serves scans at most `SCAN_WINDOW` rows per page and says where
//! it stopped. Also each job's deaths, each event's attempts, missed
//! changes per day.

use crate::domain::{EventState, JobState, Kind};
use crate::store::StoreError;
use crate::store::admin_reads::{
    DELIVERY_COLUMNS, JOB_COLUMNS, delivery_summary, event_order, job_summary,
};
use crate::store::console_views::*;
use crate::store::event_rows::{EVENT_COLUMNS, event_summary};
use crate::store::outbox_reads::{AtDestination, events_at};
use crate::store::sql::{Conn, sql};
use crate::store::views::{DeliveryFilter, DeliverySummary, EventSummary, JobSummary, clamp};
use pointhook_common::clock::rfc3339;

/// `time.account.order`: where an order list goes on.
fn order_cursor(text: &str) -> Option<(i64, String, String)> {
    let (time, rest) = text.split_once('.')?;
    let (account, order) = rest.rsplit_once('.')?;
    Some((time.parse().ok()?, account.to_string(), order.to_string()))
}

pub(super) async fn order_list(
    c: &Conn<'_>,
    list: OrderList,
    cursor: Option<&str>,
    limit: usize,
) -> Result<Page<OrderRow>, StoreError> {
    let limit = clamp(limit);
    let row = |r: &crate::store::sql::Row<'_>| -> Result<OrderRow, StoreError> {
        Ok(OrderRow {
            account: r.get(0)?,
            order_id: r.get(1)?,
            at: rfc3339(r.get(2)?),
            total_amount: r.get(3)?,
            paid_amount: r.get(4)?,
        })
    };
    let rows: Vec<(i64, OrderRow)> = match list {
        OrderList::Released | OrderList::Blocked | OrderList::AtRisk | OrderList::Any => {
            let (column, index) = match list {
                OrderList::Released => ("released_at", Some("orders_released")),
                OrderList::Blocked => ("blocked_at", Some("orders_blocked")),
                OrderList::AtRisk => ("at_risk_at", Some("orders_at_risk")),
                // Every order: by when it last changed (no index: a scan).
                _ => ("updated_at", None),
            };
            let index = index.map(|i| c.indexed_by(i)).unwrap_or_default();
            let (t, a, o) =
                cursor
                    .and_then(order_cursor)
                    .unwrap_or((i64::MAX, String::new(), String::new()));
            c.query(
                &format!(
                    "SELECT account, order_id, {column}, total_amount, paid_amount
                     FROM orders {index}
                     WHERE {column} IS NOT NULL
                       AND ({column} < $1 OR ({column} = $1 AND (account, order_id) < ($2, $3)))
                     ORDER BY {column} DESC, account DESC, order_id DESC LIMIT $4"
                ),
                &[&t, &a, &o, &limit],
                |r| Ok((r.get(2)?, row(r)?)),
            )
            .await?
        }
        OrderList::AwaitingShipment | OrderList::FraudAfterRelease => {
            let (event, index, open) = match list {
                OrderList::AwaitingShipment => (
                    "order.awaiting_shipment",
                    "decisions_awaiting",
                    "o.released_at IS NULL AND o.blocked_at IS NULL",
                ),
                _ => (
                    "order.fraud_after_release",
                    "decisions_after_release",
                    "1 = 1",
                ),
            };
            let index = c.indexed_by(index);
            let before = cursor
                .and_then(|c| c.rsplit('.').next()?.parse::<i64>().ok())
                .unwrap_or(i64::MAX);
            c.query(
                &format!(
                    "SELECT d.account, d.subject_id, d.created_at, o.total_amount,
                            o.paid_amount, d.id
                     FROM decisions d {index}
                     LEFT JOIN orders o
                         ON o.account = d.account AND o.order_id = d.subject_id
                     WHERE d.event_type = '{event}' AND d.subject_kind = 'merchant_order'
                       AND d.id < $1 AND {open}
                     ORDER BY d.id DESC LIMIT $2"
                ),
                &[&before, &limit],
                |r| Ok((r.get(5)?, row(r)?)),
            )
            .await?
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

/// A page read in order, in chunks, keeping the rows its filter accepts
/// up to `limit`. It tells where the next page starts: after the last row
/// kept on a full page, after the last row read when the window ran out,
/// or nowhere when the rows did. The chunks start at the page's size (a
/// page with no filter is one read) and double, so a sparse filter reads
/// its window in a few statements and a full page never reads past it.
struct Scan<T> {
    limit: i64,
    kept: Vec<T>,
    scanned: i64,
    last: Option<String>,
    full: bool,
}

impl<T> Scan<T> {
    fn new(limit: i64) -> Scan<T> {
        Scan {
            limit,
            kept: Vec::new(),
            scanned: 0,
            last: None,
            full: false,
        }
    }

    /// How many rows to read next.
    fn chunk(&self) -> i64 {
        self.scanned.max(self.limit).min(SCAN_WINDOW - self.scanned)
    }

    /// Takes the rows of a chunk of `asked`, each with its cursor; `true`
    /// when the page is done.
    fn take(&mut self, rows: Vec<(String, T)>, asked: i64, keep: impl Fn(&T) -> bool) -> bool {
        let ran_out = (rows.len() as i64) < asked;
        for (cursor, item) in rows {
            self.scanned += 1;
            self.last = Some(cursor);
            if keep(&item) {
                self.kept.push(item);
                if self.kept.len() as i64 == self.limit {
                    self.full = true;
                    return true;
                }
            }
        }
        ran_out || self.scanned >= SCAN_WINDOW
    }

    fn page(self) -> Page<T> {
        let goes_on = self.full || self.scanned == SCAN_WINDOW;
        Page {
            rows: self.kept,
            next: self.last.filter(|_| goes_on),
        }
    }
}

pub(super) async fn job_page(c: &Conn<'_>, f: &JobFilter) -> Result<Page<JobSummary>, StoreError> {
    let state = f.state.unwrap_or(JobState::Dead);
    let (mut t, mut id) = f
        .cursor
        .as_deref()
        .and_then(parse_cursor)
        .unwrap_or((i64::MAX, i64::MAX));
    let kind = f.kind.map(|k| k.as_str());
    let keep = |j: &JobSummary| {
        kind.is_none_or(|k| j.kind == k) && f.account.as_ref().is_none_or(|a| &j.account == a)
    };
    let mut scan = Scan::new(clamp(f.limit));
    // `run_at <= $2` is the range either planner seeks the index by; the
    // rest is the cursor's exact place (here and in `event_page`).
    loop {
        let n = scan.chunk();
        let rows = c
            .query(
                &format!(
                    "SELECT {JOB_COLUMNS} FROM jobs
                     WHERE state = $1 AND run_at <= $2
                       AND (run_at < $2 OR (run_at = $2 AND id < $3))
                     ORDER BY run_at DESC, id DESC LIMIT $4"
                ),
                &[&state, &t, &id, &n],
                |r| Ok(((r.get::<i64>(6)?, r.get::<i64>(0)?), job_summary(r)?)),
            )
            .await?;
        if let Some(((last_t, last_id), _)) = rows.last() {
            (t, id) = (*last_t, *last_id);
        }
        let rows = rows
            .into_iter()
            .map(|((t, id), j)| (format!("{t}.{id}"), j));
        if scan.take(rows.collect(), n, keep) {
            return Ok(scan.page());
        }
    }
}

pub(super) async fn event_page(
    c: &Conn<'_>,
    f: &EventFilter,
) -> Result<Page<EventSummary>, StoreError> {
    let keep = |e: &EventSummary| {
        f.event_type.as_ref().is_none_or(|t| &e.event_type == t)
            && f.account.as_ref().is_none_or(|a| &e.account == a)
    };
    let seq = event_order(c);
    let mut scan = Scan::new(clamp(f.limit));
    let (mut t, mut id) = f
        .cursor
        .as_deref()
        .and_then(parse_cursor)
        .unwrap_or((i64::MAX, i64::MAX));
    loop {
        let n = scan.chunk();
        let rows: Vec<((i64, i64), EventSummary)> = match f.state {
            // One entry per destination where the event is in the state.
            Some(state) if state != EventState::Stored => {
                let at = AtDestination {
                    state,
                    destination: f.destination.clone(),
                    event_type: None,
                };
                events_at(c, &at, (t, id), n).await?
            }
            Some(state) => {
                let index = c.indexed_by("events_due");
                c.query(
                    &format!(
                        "SELECT {EVENT_COLUMNS}, {seq}, next_attempt_at FROM events {index}
                         WHERE state = $1 AND next_attempt_at <= $2
                           AND (next_attempt_at < $2 OR (next_attempt_at = $2 AND {seq} < $3))
                         ORDER BY next_attempt_at DESC, {seq} DESC LIMIT $4"
                    ),
                    &[&state, &t, &id, &n],
                    |r| Ok(((r.get(11)?, r.get(10)?), event_summary(r)?)),
                )
                .await?
            }
            None => {
                c.query(
                    &format!(
                        "SELECT {EVENT_COLUMNS}, {seq} FROM events WHERE {seq} < $1
                         ORDER BY {seq} DESC LIMIT $2"
                    ),
                    &[&id, &n],
                    |r| Ok(((0, r.get(10)?), event_summary(r)?)),
                )
                .await?
            }
        };
        if let Some(((last_t, last_id), _)) = rows.last() {
            (t, id) = (*last_t, *last_id);
        }
        let rows = rows
            .into_iter()
            .map(|((t, id), e)| (format!("{t}.{id}"), e));
        if scan.take(rows.collect(), n, keep) {
            return Ok(scan.page());
        }
    }
}

pub(super) async fn delivery_page(
    c: &Conn<'_>,
    f: &DeliveryFilter,
) -> Result<Page<DeliverySummary>, StoreError> {
    let mut before = f.before.unwrap_or(i64::MAX);
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
        let index = c.indexed_by("deliveries_missed");
        format!("deliveries {index} WHERE kind = 4 AND")
    } else {
        "deliveries WHERE".to_string()
    };
    let keep = |d: &DeliverySummary| {
        kind.is_none_or(|k| d.kind == k)
            && f.account.as_ref().is_none_or(|a| &d.account == a)
            && f.topic.as_ref().is_none_or(|t| &d.topic == t)
    };
    let mut scan = Scan::new(clamp(f.limit));
    loop {
        let n = scan.chunk();
        let rows = c
            .query(
                &format!(
                    "SELECT {DELIVERY_COLUMNS} FROM {source} id < $1 AND received_at >= $2
                     ORDER BY id DESC LIMIT $3"
                ),
                &[&before, &since, &n],
                delivery_summary,
            )
            .await?;
        if let Some(last) = rows.last() {
            before = last.id;
        }
        let rows = rows.into_iter().map(|d| (d.id.to_string(), d));
        if scan.take(rows.collect(), n, keep) {
            return Ok(scan.page());
        }
    }
}

/// Dead jobs a group's retry reads at most (as many as the inbox groups).
const DEAD_IN_HOUR: i64 = 5000;

/// The jobs that died in `[from, to)`, newest first, with their failures:
/// what a group of the inbox is found again from when it is retried.
pub(super) async fn dead_between(
    c: &Conn<'_>,
    from: i64,
    to: i64,
) -> Result<Vec<JobSummary>, StoreError> {
    // A dead job's `run_at` is when it died.
    c.query(
        &format!(
            "SELECT {JOB_COLUMNS} FROM jobs WHERE state = $1 AND run_at >= $2 AND run_at < $3
             ORDER BY run_at DESC, id DESC LIMIT $4"
        ),
        &[&JobState::Dead, &from, &to, &DEAD_IN_HOUR],
        job_summary,
    )
    .await
}

/// The times a job died and ran again, oldest first.
pub(super) async fn job_deaths(c: &Conn<'_>, job: i64) -> Result<Vec<DeathView>, StoreError> {
    c.query(
        sql!(
            "SELECT ended_at, attempts, last_error, revived_at FROM job_history
             WHERE job_id = $1 ORDER BY ended_at"
        ),
        &[&job],
        |r| {
            Ok(DeathView {
                died_at: rfc3339(r.get(0)?),
                attempts: r.get(1)?,
                last_error: r.get(2)?,
                revived_at: rfc3339(r.get(3)?),
            })
        },
    )
    .await
}

/// Each delivery attempt of an event, by destination, oldest first.
pub(super) async fn event_attempts(
    c: &Conn<'_>,
    event: &str,
) -> Result<Vec<AttemptView>, StoreError> {
    c.query(
        sql!(
            "SELECT attempt, at, state, error, destination FROM event_attempts
             WHERE event_id = $1 ORDER BY destination, attempt"
        ),
        &[&event],
        |r| {
            Ok(AttemptView {
                destination: r.get(4)?,
                attempt: r.get(0)?,
                at: rfc3339(r.get(1)?),
                state: r.get::<EventState>(2)?.as_str(),
                error: r.get(3)?,
            })
        },
    )
    .await
}

/// Changes missed per UTC day since `since`: `(day's start, count)`.
pub(super) async fn missed_per_day(
    c: &Conn<'_>,
    since: i64,
) -> Result<Vec<(i64, i64)>, StoreError> {
    let index = c.indexed_by("deliveries_missed");
    c.query(
        &format!(
            "SELECT received_at / 86400000 AS day, count(*) FROM deliveries {index}
             WHERE kind = 4 AND received_at >= $1 GROUP BY day ORDER BY day"
        ),
        &[&since],
        |r| Ok((r.get::<i64>(0)? * 86_400_000, r.get(1)?)),
    )
    .await
}
