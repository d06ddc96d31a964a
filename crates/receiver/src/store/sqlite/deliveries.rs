//! Deliveries and the coalesced jobs they feed.
//!
//! A delivery is every accepted request, kept byte for byte. Its fingerprint
//! only marks it `duplicate_of` an earlier one: it never suppresses work,
//! because a byte-identical IPN is also how the platform says "this resource
//! was updated". The job for its key is then:
//! - created pending, when there is none;
//! - given fresh attempts, when it is pending (what an earlier delivery
//!   spent, an attacker's say, is not the new one's), and due at once when
//!   the new delivery is live;
//! - marked to run again, when it is running (the resource may have changed
//!   after our fetch began); it then starts over with fresh attempts;
//! - made pending again with fresh attempts, when it is done or dead.
//!
//! A live delivery puts its job in the live lane, whatever lane it was in.

use rusqlite::{Connection, OptionalExtension, params};

use crate::domain::{JobState, Lane};
use crate::store::model::{Ingested, NewDelivery, NewJob};

pub(super) fn ingest(conn: &Connection, d: &NewDelivery) -> rusqlite::Result<Ingested> {
    let duplicate_of: Option<i64> = conn
        .prepare_cached(
            "SELECT id FROM deliveries
             WHERE account = ?1 AND resource_id = ?2 AND fingerprint = ?3
             ORDER BY id LIMIT 1",
        )?
        .query_row(params![d.account, d.resource_id, &d.fingerprint[..]], |r| {
            r.get(0)
        })
        .optional()?;

    let body: Option<&[u8]> = (!d.body.is_empty()).then_some(&d.body[..]);
    conn.prepare_cached(
        "INSERT INTO deliveries (received_at, account, kind, topic, resource_id,
                 notification_id, source_news, query, headers, body, remote_addr,
                 fingerprint, duplicate_of, signature, job_key, body_size, signature_key,
                 body_sha256)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
                 ?18)",
    )?
    .execute(params![
        d.received_at,
        d.account,
        d.kind,
        d.topic,
        d.resource_id,
        d.notification_id,
        d.source_news,
        d.query,
        d.headers,
        body,
        d.remote_addr,
        &d.fingerprint[..],
        duplicate_of,
        d.signature,
        d.job.as_ref().map(|j| &j.key),
        d.body_size.map(|n| n as i64),
        d.signature_key,
        d.body_sha256.as_ref().map(|h| &h[..]),
    ])?;
    // RETURNING would cost an ephemeral table per statement on this hot path.
    let delivery_id = conn.last_insert_rowid();

    let job_id = match &d.job {
        None => None,
        Some(job) => Some(enqueue(
            conn,
            &d.account,
            job,
            Some(delivery_id),
            d.received_at,
        )?),
    };
    Ok(Ingested {
        delivery_id,
        duplicate: duplicate_of.is_some(),
        job_id,
    })
}

/// Creates the job for `job.key`, or coalesces into the one there is (see
/// the module doc). The work kept is the one of the higher rank, the newer
/// on a tie, and the job links to the delivery it came from.
pub(super) fn enqueue(
    conn: &Connection,
    account: &str,
    job: &NewJob,
    delivery_id: Option<i64>,
    now: i64,
) -> rusqlite::Result<i64> {
    // Job ids start at 1, so after the upsert this still reads 0 exactly
    // when the job was updated rather than inserted, and only then is it
    // looked up (the delivery's id cannot tell: on a store where every
    // delivery makes a job, both tables hand out the same numbers).
    // SAFETY: the handle is this open connection's, used on its own thread.
    unsafe { rusqlite::ffi::sqlite3_set_last_insert_rowid(conn.handle(), 0) };
    // In DO UPDATE every column names the row as it was before the update.
    conn.prepare_cached(
        "INSERT INTO jobs (account, job_key, kind, resource_id, input_delivery_id, work, work_rank,
                           state, run_at, created_at, updated_at, lane)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9, ?9, ?13)
         ON CONFLICT (account, job_key) DO UPDATE SET
             rerun = CASE WHEN state = ?10 THEN 1 ELSE rerun END,
             attempts = CASE WHEN state = ?10 THEN attempts ELSE 0 END,
             run_at = CASE
                 WHEN state IN (?11, ?12) THEN excluded.run_at
                 WHEN state = ?8 AND excluded.lane = ?14 THEN min(run_at, excluded.run_at)
                 ELSE run_at END,
             lane = CASE WHEN state IN (?11, ?12) THEN excluded.lane
                         ELSE min(lane, excluded.lane) END,
             last_error = CASE WHEN state IN (?11, ?12) THEN NULL ELSE last_error END,
             work = CASE WHEN excluded.work_rank >= work_rank THEN excluded.work ELSE work END,
             input_delivery_id = CASE
                 WHEN excluded.work_rank >= work_rank
                     THEN coalesce(excluded.input_delivery_id, input_delivery_id)
                 ELSE input_delivery_id END,
             work_rank = max(work_rank, excluded.work_rank),
             state = CASE WHEN state IN (?11, ?12) THEN ?8 ELSE state END,
             updated_at = excluded.updated_at",
    )?
    .execute(params![
        account,
        job.key,
        job.kind,
        job.resource_id,
        delivery_id,
        job.work,
        job.rank,
        JobState::Pending,
        now,
        JobState::Running,
        JobState::Done,
        JobState::Dead,
        job.lane,
        Lane::Live,
    ])?;
    let inserted = conn.last_insert_rowid();
    if inserted != 0 {
        return Ok(inserted);
    }
    conn.prepare_cached("SELECT id FROM jobs WHERE account = ?1 AND job_key = ?2")?
        .query_row(params![account, job.key], |r| r.get(0))
}
