//! What reconciliation asks of the database: whether a change found on the
//! platform is already known, and how many were missed lately.

use rusqlite::{Connection, params};

use crate::domain::{JobState, Kind};
use crate::store::model::Sighting;

/// Known: a read of the resource saw this version, or its job is still
/// to run (a notification came and its fetch has not happened yet), or its
/// job died after the change (a notification came; its job failed, and
/// stays dead with its history, in front of a person). A change after the
/// death is new work: the sweeper's, recorded beside the old (the death is
/// kept in `job_history` when the job runs again). A classic payment behind
/// an order of the Orders API is known too: its story is the order's,
/// which its own search covers.
pub(super) fn known(conn: &Connection, account: &str, s: &Sighting) -> rusqlite::Result<bool> {
    conn.prepare_cached(
        "SELECT EXISTS (
             SELECT 1 FROM fetches
             WHERE account = ?1 AND endpoint = ?2 AND resource_id = ?3
               AND seen = ?4 AND status BETWEEN 200 AND 299)
         OR EXISTS (
             SELECT 1 FROM jobs WHERE account = ?1 AND job_key = ?5
               AND (state IN (?6, ?7) OR (state = ?8 AND updated_at >= ?9)))
         OR (?2 = 'payment' AND EXISTS (
             SELECT 1 FROM order_payments WHERE account = ?1 AND payment_id = ?3))",
    )?
    .query_row(
        params![
            account,
            s.endpoint,
            s.resource_id,
            s.version,
            s.job.key,
            JobState::Pending,
            JobState::Running,
            JobState::Dead,
            s.changed_at.unwrap_or(i64::MAX)
        ],
        |r| r.get(0),
    )
}

/// Deliveries of kind `reconcile` received since `since`, by their
/// partial index (the kind is written out so that the index applies).
pub(super) fn missed_since(conn: &Connection, since: i64) -> rusqlite::Result<u64> {
    conn.query_row(
        &format!(
            "SELECT count(*) FROM deliveries INDEXED BY deliveries_missed
             WHERE received_at >= ?1 AND kind = {}",
            Kind::Reconcile as i16
        ),
        params![since],
        |r| r.get::<_, i64>(0).map(|n| n.max(0) as u64),
    )
}
