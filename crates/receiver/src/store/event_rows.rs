//! An event's row as every list and page reads it: its columns, where it
//! stands at each destination, and the summary made of them.

use pointhook_common::clock::rfc3339;

use super::StoreError;
use super::sql::Row;
use super::views::{EventAt, EventSummary};
use crate::domain::EventState;

/// An event's columns, and where it stands at each destination: `name
/// state attempts` per queue row, by name (a name has no space or comma).
/// Both dialects read `string_agg` with its `ORDER BY`. Ten columns.
pub(super) const EVENT_COLUMNS: &str =
    "id, account, type, subject, state, attempts, created_at, delivered_at, last_error,
     (SELECT string_agg(o.destination || ' ' || o.state || ' ' || o.attempts, ','
                        ORDER BY o.destination)
      FROM outbox o WHERE o.event_id = events.id)";

pub(super) fn event_summary(r: &Row<'_>) -> Result<EventSummary, StoreError> {
    let state: EventState = r.get(4)?;
    let delivered_at: Option<i64> = r.get(7)?;
    Ok(EventSummary {
        id: r.get(0)?,
        account: r.get(1)?,
        event_type: r.get(2)?,
        subject: r.get(3)?,
        state: state.as_str(),
        attempts: r.get(5)?,
        created_at: rfc3339(r.get(6)?),
        delivered_at: delivered_at.map(rfc3339),
        last_error: r.get(8)?,
        destinations: event_at(r.get(9)?),
        listed_at: None,
    })
}

/// Each destination's state and attempts, from `EVENT_COLUMNS`' last.
pub(super) fn event_at(text: Option<String>) -> Vec<EventAt> {
    let Some(text) = text else {
        return Vec::new();
    };
    text.split(',')
        .filter_map(|part| {
            let mut words = part.split(' ');
            let destination = words.next()?.to_string();
            let state: i64 = words.next()?.parse().ok()?;
            let attempts = words.next()?.parse().ok()?;
            let state = EventState::all().find(|s| *s as i64 == state)?;
            Some(EventAt {
                destination,
                state: state.as_str(),
                attempts,
            })
        })
        .collect()
}
