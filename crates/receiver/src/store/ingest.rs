//! Ingest: what an acknowledgement commits, and what follows it.
//!
//! The 200 promises one thing: the notification is durable and will be
//! acted on. So the commit before it is one append to the `inbox` (a table
//! with no index but its id, which is the delivery's id to be). Everything
//! derivable from that row follows in a later commit, oldest first, from
//! the inbox alone (`derive`): the delivery with its indexes and its
//! duplicate mark, and the job its work names, coalesced by key. A
//! derivation moves rows (the inbox row is deleted in the transaction that
//! writes its delivery and job), so a row is derived once whoever derives
//! and whenever; a row a crash left is derived when the store opens.
//!
//! When it runs: at light load in the acknowledgement's own commit (a
//! batch of at most `INLINE_MAX` notifications, so a lone notification is
//! derived before its 200, as it always was); under load in a later batch
//! (`DERIVE_AT` rows waiting or the oldest `DERIVE_AFTER` old, or the
//! writer idle), by the SQLite writer or PostgreSQL's deriver task; on
//! SQLite the worker's lease derives first too, in its own transaction.
//!
//! The derivation is written once for both backends; the append is not:
//! it is each backend's hot path, run by its own batcher (see `append`).

use std::time::Duration;

use super::model::{Ingested, NewDelivery, NewJob};
use super::sql::{Conn, Dialect, Param, Row, Value, sql};
use super::{Backend, Store, StoreError};
use crate::domain::{JobState, Lane};

/// A batch of at most this many notifications derives them in its own
/// commit (light load: no second commit, and a lone notification's job
/// exists when it is acknowledged).
pub(crate) const INLINE_MAX: usize = 4;
/// Rows waiting past which the next batch derives them.
pub(crate) const DERIVE_AT: usize = 1024;
/// Age of the oldest waiting row past which the next batch derives.
pub(crate) const DERIVE_AFTER: Duration = Duration::from_millis(10);
/// The most rows one derivation moves (its commit's size is bounded).
pub(crate) const DERIVE_MAX: i64 = 4096;

impl Store {
    /// Stores a notification durably: `Ok` means it will be acted on. Its
    /// delivery row, duplicate mark and job follow from the inbox (see the
    /// module doc); each backend wakes the worker once a commit holds a job.
    /// The group-commit writer and the batcher are per backend (their
    /// appends differ, see `append_sqlite`), so this chooses one.
    pub async fn ingest(&self, delivery: NewDelivery) -> Result<Ingested, StoreError> {
        match &self.inner.backend {
            Backend::Sqlite(b) => b.ingest(delivery).await,
            Backend::Postgres(b) => b.ingest(delivery).await,
        }
    }
}

/// What one derivation did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Derived {
    /// Inbox rows made deliveries.
    pub deliveries: usize,
    /// Of them, those that created or coalesced into a job.
    pub jobs: usize,
    /// The derivation stopped at `DERIVE_MAX`: rows may be waiting still.
    pub more: bool,
}

/// The append on SQLite, in the writer's group commit: the id is the next
/// after both the inbox's and the deliveries' (the inbox empties as it is
/// derived); read back with `last_insert_rowid`, since `RETURNING` costs an
/// ephemeral table per statement on this path. PostgreSQL takes the id
/// from the deliveries' sequence instead (`append_pg`).
pub(crate) fn append_sqlite(conn: &rusqlite::Connection, d: &NewDelivery) -> rusqlite::Result<i64> {
    let p = AppendParams::of(d);
    conn.prepare_cached(
        "INSERT INTO inbox (id, received_at, account, kind, topic, resource_id, notification_id,
             source_news, query, headers, body, remote_addr, fingerprint, signature,
             signature_key, body_size, body_sha256, job_key, job_kind, job_resource, work,
             work_rank, lane)
         VALUES (1 + max(coalesce((SELECT max(id) FROM inbox), 0),
                         coalesce((SELECT max(id) FROM deliveries), 0)),
             ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,
             ?19, ?20, ?21, ?22)",
    )?
    .execute(rusqlite::params_from_iter(p.values().iter()))?;
    Ok(conn.last_insert_rowid())
}

/// The append on PostgreSQL, pipelined by the batcher.
pub(crate) async fn append_pg(c: &Conn<'_>, d: &NewDelivery) -> Result<i64, StoreError> {
    let p = AppendParams::of(d);
    let values = p.values();
    let params: Vec<&dyn Param> = values.iter().map(|v| v as &dyn Param).collect();
    c.query_one(
        sql!(
            "INSERT INTO inbox (received_at, account, kind, topic, resource_id, notification_id,
                 source_news, query, headers, body, remote_addr, fingerprint, signature,
                 signature_key, body_size, body_sha256, job_key, job_kind, job_resource, work,
                 work_rank, lane)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
                 $18, $19, $20, $21, $22)
             RETURNING id"
        ),
        &params,
        |r| r.get(0),
    )
    .await
}

/// An inbox row's values, in the order both appends bind them.
struct AppendParams<'d> {
    d: &'d NewDelivery,
    body: Option<&'d [u8]>,
    body_size: Option<i64>,
}

impl<'d> AppendParams<'d> {
    fn of(d: &'d NewDelivery) -> AppendParams<'d> {
        AppendParams {
            d,
            body: (!d.body.is_empty()).then_some(&d.body[..]),
            body_size: d.body_size.map(|n| n as i64),
        }
    }

    fn values(&self) -> Vec<Value<'_>> {
        let d = self.d;
        let text = |t: Option<&'d str>| t.map_or(Value::Null, Value::Text);
        let job = d.job.as_ref();
        vec![
            d.received_at.value(),
            d.account.value(),
            d.kind.value(),
            d.topic.value(),
            d.resource_id.value(),
            text(d.notification_id.as_deref()),
            text(d.source_news.as_deref()),
            d.query.value(),
            d.headers.value(),
            self.body.map_or(Value::Null, Value::Bytes),
            d.remote_addr.value(),
            Value::Bytes(&d.fingerprint),
            d.signature.value(),
            text(d.signature_key.as_deref()),
            self.body_size.map_or(Value::Null, Value::Int),
            d.body_sha256
                .as_ref()
                .map_or(Value::Null, |h| Value::Bytes(h)),
            text(job.map(|j| j.key.as_str())),
            job.map_or(Value::Null, |j| j.kind.value()),
            text(job.map(|j| j.resource_id.as_str())),
            text(job.map(|j| j.work.as_str())),
            job.map_or(Value::Null, |j| Value::Int(j.rank)),
            job.map_or(Value::Null, |j| j.lane.value()),
        ]
    }
}

/// A value already made binds as itself.
impl Param for Value<'_> {
    fn value(&self) -> Value<'_> {
        *self
    }
}

/// PostgreSQL's instances derive one at a time (their transaction-scoped
/// advisory lock; any fixed number, this one spells "inbx"), so the
/// inbox's rows of one key are coalesced in order. SQLite has one writer.
const DERIVE_LOCK: i64 = 0x696e_6278;

/// Derives up to `limit` inbox rows, oldest first, in the caller's
/// transaction: each becomes its delivery (marked `duplicate_of` the first
/// delivery with its fingerprint) and, when it names work, creates or
/// coalesces into its job (`upsert_job!`). The rows are deleted as they are
/// read, so a row is derived exactly once.
pub(crate) async fn derive(c: &Conn<'_>, limit: i64) -> Result<Derived, StoreError> {
    if c.dialect() == Dialect::Postgres {
        c.execute(sql!("SELECT pg_advisory_xact_lock($1)"), &[&DERIVE_LOCK])
            .await?;
    }
    let mut rows = c
        .query(
            sql!(
                "DELETE FROM inbox WHERE id IN (SELECT id FROM inbox ORDER BY id LIMIT $1)
                 RETURNING id, received_at, account, kind, topic, resource_id, notification_id,
                     source_news, query, headers, body, remote_addr, fingerprint, signature,
                     signature_key, body_size, body_sha256, job_key, job_kind, job_resource,
                     work, work_rank, lane"
            ),
            &[&limit],
            inbox_row,
        )
        .await?;
    // RETURNING promises no order.
    rows.sort_by_key(|(id, _)| *id);
    let derived = Derived {
        deliveries: rows.len(),
        jobs: rows.iter().filter(|(_, d)| d.job.is_some()).count(),
        more: rows.len() as i64 >= limit,
    };
    // PostgreSQL pipelines each chunk (`join_all` sends them in order and
    // the server runs them in order, each seeing the ones before: a
    // duplicate of a row in the same chunk is found); SQLite runs them one
    // after the other as they are polled.
    for chunk in rows.chunks(PIPELINE / 2) {
        let mut statements = Vec::with_capacity(PIPELINE);
        for (id, d) in chunk {
            statements.push(insert_delivery(c, *id, d));
            if let Some(job) = &d.job {
                statements.push(upsert_job(c, &d.account, job, *id, d.received_at));
            }
        }
        for done in futures_util::future::join_all(statements).await {
            done?;
        }
    }
    Ok(derived)
}

/// Statements pipelined at once: `join_all` polls up to 30 futures in the
/// order given (more go through a queue that promises no order).
const PIPELINE: usize = 30;

type Pending<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<u64, StoreError>> + Send + 'a>>;

fn insert_delivery<'a>(c: &'a Conn<'a>, id: i64, d: &'a NewDelivery) -> Pending<'a> {
    Box::pin(async move {
        let body: Option<&[u8]> = (!d.body.is_empty()).then_some(&d.body[..]);
        let fingerprint = &d.fingerprint[..];
        let body_size = d.body_size.map(|n| n as i64);
        let sha = d.body_sha256.as_ref().map(|h| &h[..]);
        let job_key = d.job.as_ref().map(|j| j.key.as_str());
        c.execute(
            sql!(
                "INSERT INTO deliveries (id, received_at, account, kind, topic, resource_id,
                     notification_id, source_news, query, headers, body, remote_addr,
                     fingerprint, duplicate_of, signature, job_key, body_size, signature_key,
                     body_sha256)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13,
                     (SELECT o.id FROM deliveries o
                      WHERE o.account = $3 AND o.resource_id = $6 AND o.fingerprint = $13
                      ORDER BY o.id LIMIT 1),
                     $14, $15, $16, $17, $18)"
            ),
            &[
                &id,
                &d.received_at,
                &d.account,
                &d.kind,
                &d.topic,
                &d.resource_id,
                &d.notification_id,
                &d.source_news,
                &d.query,
                &d.headers,
                &body,
                &d.remote_addr,
                &fingerprint,
                &d.signature,
                &job_key,
                &body_size,
                &d.signature_key,
                &sha,
            ],
        )
        .await
    })
}

/// How a new job coalesces with the one its key has (one text for both
/// backends; `enqueue` adds `RETURNING id`):
/// - none: created pending;
/// - pending: fresh attempts (what an earlier delivery spent, an attacker's
///   say, is not the new one's), due at once when the new work is live;
/// - running: marked to run again (the resource may have changed after the
///   fetch began); it then starts over with fresh attempts;
/// - done or dead: pending again with fresh attempts.
///
/// The work kept is the one of the higher rank (the newer on a tie), with
/// the delivery it came from; a live one puts the job in the live lane.
macro_rules! upsert_job {
    () => {
        "INSERT INTO jobs (account, job_key, kind, resource_id, input_delivery_id, work,
             work_rank, state, run_at, created_at, updated_at, lane)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $9, $10)
         ON CONFLICT (account, job_key) DO UPDATE SET
             rerun = CASE WHEN jobs.state = $11 THEN true ELSE jobs.rerun END,
             attempts = CASE WHEN jobs.state = $11 THEN jobs.attempts ELSE 0 END,
             run_at = CASE
                 WHEN jobs.state IN ($12, $13) THEN excluded.run_at
                 WHEN jobs.state = $8 AND excluded.lane = $14 AND excluded.run_at < jobs.run_at
                     THEN excluded.run_at
                 ELSE jobs.run_at END,
             lane = CASE WHEN jobs.state IN ($12, $13) OR excluded.lane < jobs.lane
                         THEN excluded.lane ELSE jobs.lane END,
             last_error = CASE WHEN jobs.state IN ($12, $13) THEN NULL ELSE jobs.last_error END,
             work = CASE WHEN excluded.work_rank >= jobs.work_rank
                         THEN excluded.work ELSE jobs.work END,
             input_delivery_id = CASE WHEN excluded.work_rank >= jobs.work_rank
                 THEN coalesce(excluded.input_delivery_id, jobs.input_delivery_id)
                 ELSE jobs.input_delivery_id END,
             work_rank = CASE WHEN excluded.work_rank > jobs.work_rank
                              THEN excluded.work_rank ELSE jobs.work_rank END,
             state = CASE WHEN jobs.state IN ($12, $13) THEN $8 ELSE jobs.state END,
             updated_at = excluded.updated_at"
    };
}

fn upsert_job<'a>(
    c: &'a Conn<'a>,
    account: &'a str,
    job: &'a NewJob,
    delivery_id: i64,
    now: i64,
) -> Pending<'a> {
    Box::pin(async move {
        c.execute(
            sql!(upsert_job!()),
            &job_params(account, job, Some(delivery_id), now).refs(),
        )
        .await
    })
}

/// Creates the job for `job.key` or coalesces into the one there is (see
/// `upsert_job!`), with no delivery behind it (a review's follow-up);
/// the job's id.
pub(crate) async fn enqueue(
    c: &Conn<'_>,
    account: &str,
    job: &NewJob,
    now: i64,
) -> Result<i64, StoreError> {
    c.query_one(
        sql!(concat!(upsert_job!(), " RETURNING id")),
        &job_params(account, job, None, now).refs(),
        |r| r.get(0),
    )
    .await
}

/// The text of `enqueue`, for the callers that hold a bare SQLite
/// connection, with its values.
pub(crate) fn enqueue_sqlite(
    conn: &rusqlite::Connection,
    account: &str,
    job: &NewJob,
    now: i64,
) -> rusqlite::Result<i64> {
    use super::sql::Text;
    static ENQUEUE: super::sql::Sql = super::sql::Sql::new(concat!(upsert_job!(), " RETURNING id"));
    let p = job_params(account, job, None, now);
    let refs = p.refs();
    let values: Vec<Value<'_>> = refs.iter().map(|v| v.value()).collect();
    conn.prepare_cached(&ENQUEUE.sqlite())?
        .query_row(rusqlite::params_from_iter(values.iter()), |r| r.get(0))
}

struct JobParams<'a> {
    account: &'a str,
    job: &'a NewJob,
    delivery_id: Option<i64>,
    now: i64,
}

fn job_params<'a>(
    account: &'a str,
    job: &'a NewJob,
    delivery_id: Option<i64>,
    now: i64,
) -> JobParams<'a> {
    JobParams {
        account,
        job,
        delivery_id,
        now,
    }
}

impl JobParams<'_> {
    fn refs(&self) -> [&dyn Param; 14] {
        [
            &self.account,
            &self.job.key,
            &self.job.kind,
            &self.job.resource_id,
            &self.delivery_id,
            &self.job.work,
            &self.job.rank,
            &JobState::Pending,
            &self.now,
            &self.job.lane,
            &JobState::Running,
            &JobState::Done,
            &JobState::Dead,
            &Lane::Live,
        ]
    }
}

/// An inbox row, as `derive` reads it: its id and the delivery.
fn inbox_row(r: &Row<'_>) -> Result<(i64, NewDelivery), StoreError> {
    let bytes32 = |v: Option<Vec<u8>>, what: &str| -> Result<Option<[u8; 32]>, StoreError> {
        v.map(|b| {
            <[u8; 32]>::try_from(b.as_slice())
                .map_err(|_| StoreError::Database(format!("inbox: {what} is not 32 bytes")))
        })
        .transpose()
    };
    let job_key: Option<String> = r.get(17)?;
    let job = match job_key {
        None => None,
        Some(key) => Some(NewJob {
            key,
            kind: r.get(18)?,
            resource_id: r.get(19)?,
            work: r.get(20)?,
            rank: r.get(21)?,
            lane: r.get(22)?,
        }),
    };
    let fingerprint = bytes32(Some(r.get(12)?), "fingerprint")?.unwrap_or([0; 32]);
    let body: Option<Vec<u8>> = r.get(10)?;
    let body_size: Option<i64> = r.get(15)?;
    Ok((
        r.get(0)?,
        NewDelivery {
            received_at: r.get(1)?,
            account: r.get(2)?,
            kind: r.get(3)?,
            topic: r.get(4)?,
            resource_id: r.get(5)?,
            notification_id: r.get(6)?,
            source_news: r.get(7)?,
            query: r.get(8)?,
            headers: r.get(9)?,
            body: body.map(bytes::Bytes::from).unwrap_or_default(),
            remote_addr: r.get(11)?,
            fingerprint,
            signature: r.get(13)?,
            signature_key: r.get(14)?,
            body_size: body_size.map(|n| n.max(0) as usize),
            body_sha256: bytes32(r.get(16)?, "body_sha256")?,
            job,
        },
    ))
}
