//! What the outbox holds, read the same on either backend: the entries of
//! one state at each destination (what gave up at `erp` while `shop`
//! still holds the event is listed as given up at once), and an event's
//! queue row at each destination.

use super::StoreError;
use super::event_rows::{EVENT_COLUMNS, event_summary};
use super::sql::{Conn, Param, sql};
use super::views::{EventDelivery, EventSummary};
use crate::domain::EventState;
use pointhook_common::clock::rfc3339;

/// Which queue rows a list shows: of one state, at one destination or at
/// any, of one event type or any.
#[derive(Debug, Clone)]
pub(super) struct AtDestination {
    pub state: EventState,
    pub destination: Option<String>,
    pub event_type: Option<String>,
}

/// The entries of `at.state`, newest due first, before `(due, row)`: each
/// an event with its state at every destination, `listed_at` the one the
/// entry is about. The cursor is the row's due time and its order queued.
pub(super) async fn events_at(
    c: &Conn<'_>,
    at: &AtDestination,
    (due, row): (i64, i64),
    limit: i64,
) -> Result<Vec<((i64, i64), EventSummary)>, StoreError> {
    let seq = c.dialect().pick("rowid", "seq");
    let mut params: Vec<&dyn Param> = vec![&at.state, &due, &row, &limit];
    let mut only = String::new();
    if let Some(d) = &at.destination {
        params.push(d);
        only.push_str(&format!(" AND destination = ${}", params.len()));
    }
    if let Some(t) = &at.event_type {
        params.push(t);
        only.push_str(&format!(
            " AND EXISTS (SELECT 1 FROM events t WHERE t.id = outbox.event_id AND t.type = ${})",
            params.len()
        ));
    }
    c.query(
        &format!(
            "SELECT {EVENT_COLUMNS}, x.destination, x.due, x.k FROM (
                 SELECT event_id, destination, next_attempt_at AS due, {seq} AS k FROM outbox
                 WHERE state = $1 AND next_attempt_at <= $2
                   AND (next_attempt_at < $2 OR (next_attempt_at = $2 AND {seq} < $3)){only}
                 ORDER BY next_attempt_at DESC, {seq} DESC LIMIT $4) x
             JOIN events ON events.id = x.event_id
             ORDER BY x.due DESC, x.k DESC"
        ),
        &params,
        |r| {
            let mut e = event_summary(r)?;
            e.listed_at = Some(r.get(10)?);
            Ok(((r.get(11)?, r.get(12)?), e))
        },
    )
    .await
}

/// Each destination an event goes to, with its own attempts and state.
pub(super) async fn event_deliveries(
    c: &Conn<'_>,
    id: &str,
) -> Result<Vec<EventDelivery>, StoreError> {
    c.query(
        sql!(
            "SELECT destination, state, attempts, next_attempt_at, last_error, delivered_at,
                    failed_at
             FROM outbox WHERE event_id = $1 ORDER BY destination"
        ),
        &[&id],
        |r| {
            let state: EventState = r.get(1)?;
            Ok(EventDelivery {
                destination: r.get(0)?,
                state: state.as_str(),
                attempts: r.get(2)?,
                next_attempt_at: (state == EventState::Pending)
                    .then(|| r.get::<i64>(3).map(rfc3339))
                    .transpose()?,
                last_error: r.get(4)?,
                delivered_at: r.get::<Option<i64>>(5)?.map(rfc3339),
                failed_at: r.get::<Option<i64>>(6)?.map(rfc3339),
            })
        },
    )
    .await
}
