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

/// Whether another delivery carries the same signature (`ts` and `v1`) as
/// `delivery_id`: a signature seen twice was replayed, and authenticates
/// nothing. One seek of the signatures' index.
pub(super) fn signature_seen_elsewhere(
    conn: &Connection,
    delivery_id: i64,
) -> rusqlite::Result<bool> {
    conn.prepare_cached(
        "SELECT EXISTS (SELECT 1 FROM deliveries o, deliveries d
          WHERE d.id = ?1 AND d.signature_key IS NOT NULL
            AND o.signature_key = d.signature_key AND o.id != d.id)",
    )?
    .query_row([delivery_id], |r| r.get(0))
}
