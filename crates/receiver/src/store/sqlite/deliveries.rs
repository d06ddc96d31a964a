//! Deliveries on SQLite: what this backend still reads and writes of them
//! with its own driver. Ingest and the coalescing of jobs are written once
//! for both backends in `store/ingest.rs`.

use rusqlite::Connection;

use crate::store::model::NewJob;

/// Creates the job for `job.key`, or coalesces into the one there is, for
/// a caller holding this backend's connection (a review's follow-up): the
/// text of `store::ingest::enqueue`. A job made here has no delivery behind
/// it (`delivery_id` is `None`).
pub(super) fn enqueue(
    conn: &Connection,
    account: &str,
    job: &NewJob,
    delivery_id: Option<i64>,
    now: i64,
) -> rusqlite::Result<i64> {
    debug_assert!(
        delivery_id.is_none(),
        "a delivery's job is derived from the inbox"
    );
    crate::store::ingest::enqueue_sqlite(conn, account, job, now)
}
