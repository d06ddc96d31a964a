//! An order as the admin API and `orders show` read it: its state, the
//! notifications, API calls, decisions (with their reasons) and events
//! about it.

use rusqlite::{Connection, params};

use crate::store::console_views::event_data;
use crate::store::views::DecisionView;
use pointhook_common::clock::rfc3339;

/// The decisions about `subject`, oldest first, each with its reason.
pub(super) fn decisions(
    c: &Connection,
    account: &str,
    subject: &str,
) -> rusqlite::Result<Vec<DecisionView>> {
    c.prepare_cached("SELECT d.id, d.subject, d.key, d.event_type, d.event_id, d.job_id, d.created_at, e.body, d.reason
         FROM decisions d LEFT JOIN events e ON e.id = d.event_id
         WHERE d.account = ?1 AND d.subject = ?2 ORDER BY d.id LIMIT 200")?
    .query_map(params![account, subject], |r| {
        Ok(DecisionView {
            id: r.get(0)?,
            subject: r.get(1)?,
            key: r.get(2)?,
            event_type: r.get(3)?,
            event_id: r.get(4)?,
            job_id: r.get(5)?,
            created_at: rfc3339(r.get(6)?),
            data: event_data(r.get(7)?),
            reason: r.get(8)?,
        })
    })?
    .collect()
}
