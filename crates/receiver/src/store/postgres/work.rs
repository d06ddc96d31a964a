//! Ingest and jobs on PostgreSQL: the same rules as the SQLite backend,
//! with what several instances need on top. Jobs are leased with
//! `FOR UPDATE SKIP LOCKED` and fenced by their attempt count (events
//! likewise, in `events.rs`);
//! a job's finish locks the merchant orders its effects name before its
//! decisions are written (`decisions.rs`).

use std::sync::LazyLock;

use deadpool_postgres::{GenericClient, Transaction};
use tokio_postgres::Row;

use super::decisions::{self, Locked, OrderRows, upsert_orders};
use super::prepared::{Params, prepared};
use crate::domain::verdict::DecisionRules;
use crate::domain::{JobState, Kind, Lane, OrderFlags, SignatureStatus};
use crate::store::StoreError;
use crate::store::failures::FailureCells;
use crate::store::model::{
    FetchRow, Finish, JobOutcome, Lease, LeasedJob, NewDelivery, NewJob, Take,
};

const PENDING: i16 = JobState::Pending as i16;
const RUNNING: i16 = JobState::Running as i16;
const DONE: i16 = JobState::Done as i16;
const DEAD: i16 = JobState::Dead as i16;
const LIVE: i16 = Lane::Live as i16;
const BACKLOG: i16 = Lane::Backlog as i16;

/// How a new job coalesces with the one there is: the
/// same rules as the SQLite backend's.
fn on_conflict() -> String {
    format!(
        "ON CONFLICT (account, job_key) DO UPDATE SET
             rerun = CASE WHEN jobs.state = {RUNNING} THEN true ELSE jobs.rerun END,
             attempts = CASE WHEN jobs.state = {RUNNING} THEN jobs.attempts ELSE 0 END,
             run_at = CASE
                 WHEN jobs.state IN ({DONE}, {DEAD}) THEN excluded.run_at
                 WHEN jobs.state = {PENDING} AND excluded.lane = {LIVE}
                     THEN least(jobs.run_at, excluded.run_at)
                 ELSE jobs.run_at END,
             lane = CASE WHEN jobs.state IN ({DONE}, {DEAD}) THEN excluded.lane
                         ELSE least(jobs.lane, excluded.lane) END,
             last_error = CASE WHEN jobs.state IN ({DONE}, {DEAD}) THEN NULL ELSE jobs.last_error END,
             work = CASE WHEN excluded.work_rank >= jobs.work_rank THEN excluded.work ELSE jobs.work END,
             input_delivery_id = CASE WHEN excluded.work_rank >= jobs.work_rank
                 THEN coalesce(excluded.input_delivery_id, jobs.input_delivery_id)
                 ELSE jobs.input_delivery_id END,
             work_rank = greatest(jobs.work_rank, excluded.work_rank),
             state = CASE WHEN jobs.state IN ({DONE}, {DEAD}) THEN {PENDING} ELSE jobs.state END,
             updated_at = excluded.updated_at"
    )
}

/// A delivery and its coalesced job in one statement: the duplicate
/// lookup, the insert, and the job's upsert.
pub static INGEST: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH dup AS (
             SELECT id FROM deliveries
             WHERE account = $2 AND resource_id = $5 AND fingerprint = $12
             ORDER BY id LIMIT 1
         ), d AS (
             INSERT INTO deliveries (received_at, account, kind, topic, resource_id,
                 notification_id, source_news, query, headers, body, remote_addr, fingerprint,
                 duplicate_of, signature, job_key, body_size, signature_key, body_sha256)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12,
                 (SELECT id FROM dup), $13, $14, $15, $20, $21)
             RETURNING id, duplicate_of
         ), j AS (
             INSERT INTO jobs AS jobs (account, job_key, kind, resource_id, input_delivery_id,
                 work, work_rank, state, run_at, created_at, updated_at, lane)
             SELECT $2, $14, $16, $17, d.id, $18, $19, {PENDING}, $1, $1, $1, $22
             FROM d WHERE $14::text IS NOT NULL
             {}
             RETURNING id
         )
         SELECT d.id, d.duplicate_of IS NOT NULL, (SELECT id FROM j) FROM d",
        on_conflict()
    )
});

/// What `INGEST` binds for one delivery, owned so that a batch can be
/// pipelined.
pub struct IngestParams {
    d: NewDelivery,
    body: Option<Vec<u8>>,
    body_size: Option<i64>,
    body_sha256: Option<Vec<u8>>,
    fingerprint: Vec<u8>,
    job_key: Option<String>,
    job_kind: Option<i16>,
    job_resource: Option<String>,
    work: Option<String>,
    rank: Option<i64>,
    lane: Option<Lane>,
}

impl IngestParams {
    pub fn new(d: NewDelivery) -> IngestParams {
        let job = d.job.clone();
        IngestParams {
            body: (!d.body.is_empty()).then(|| d.body.to_vec()),
            body_size: d.body_size.map(|n| n as i64),
            body_sha256: d.body_sha256.map(|h| h.to_vec()),
            fingerprint: d.fingerprint.to_vec(),
            job_key: job.as_ref().map(|j| j.key.clone()),
            job_kind: job.as_ref().map(|j| j.kind as i16),
            job_resource: job.as_ref().map(|j| j.resource_id.clone()),
            work: job.as_ref().map(|j| j.work.clone()),
            rank: job.as_ref().map(|j| j.rank),
            lane: job.as_ref().map(|j| j.lane),
            d,
        }
    }

    pub fn as_params(&self) -> Params<'_> {
        let d = &self.d;
        vec![
            &d.received_at,
            &d.account,
            &d.kind,
            &d.topic,
            &d.resource_id,
            &d.notification_id,
            &d.source_news,
            &d.query,
            &d.headers,
            &self.body,
            &d.remote_addr,
            &self.fingerprint,
            &d.signature,
            &self.job_key,
            &self.body_size,
            &self.job_kind,
            &self.job_resource,
            &self.work,
            &self.rank,
            &d.signature_key,
            &self.body_sha256,
            &self.lane,
        ]
    }

    pub fn has_job(&self) -> bool {
        self.job_key.is_some()
    }
}

/// A job with no delivery behind it.
pub async fn enqueue(
    tx: &Transaction<'_>,
    account: &str,
    job: &NewJob,
    now: i64,
) -> Result<i64, StoreError> {
    let sql = format!(
        "INSERT INTO jobs AS jobs (account, job_key, kind, resource_id, work, work_rank,
             state, run_at, created_at, updated_at, lane)
         VALUES ($1, $2, $3, $4, $5, $6, {PENDING}, $7, $7, $7, $8)
         {}
         RETURNING id",
        on_conflict()
    );
    let row = tx
        .query_one(
            &prepared(tx, &sql).await?,
            &[
                &account,
                &job.key,
                &job.kind,
                &job.resource_id,
                &job.work,
                &job.rank,
                &now,
                &job.lane,
            ],
        )
        .await?;
    Ok(row.get(0))
}

/// Takes up to `take.limit` due jobs (pending and due, or running with an
/// expired lease), as SQLite does: first `take.backlog` of the oldest of
/// them all, then the newest of the live lane (its partial index, read
/// backwards), then the oldest again; rows another instance is taking are
/// skipped, and a job taken leaves the live lane. With fewer than
/// `limit`, the same statement finds when the next pending job is due, so
/// an idle worker's round is one statement. Its subquery reads the
/// snapshot from before the update, where the jobs just taken are still
/// pending and due: they are left out by id.
pub async fn lease(
    tx: &impl GenericClient,
    now: i64,
    lease_ms: i64,
    take: Take,
) -> Result<Lease<LeasedJob>, StoreError> {
    let rows = tx
        .query(
            &prepared(tx, &LEASE).await?,
            &[
                &now,
                &lease_ms,
                &(take.limit as i64),
                &(take.backlog as i64),
            ],
        )
        .await?;
    lease_rows(&rows, leased_job)
}

/// The lease: `$1` now, `$2` the lease's length, `$3` how many, `$4` how
/// many the backlog gets first. A job in both lists is taken once, at its
/// better place; one locked and not taken is free again at the commit.
/// Each list is one index seek in order (`jobs_runnable`, `jobs_live`
/// backwards); the running jobs whose lease ran out are looked for among
/// the running ones, as many as the workers' slots.
static LEASE: LazyLock<String> = LazyLock::new(|| {
    let (reconcile, valid) = (Kind::Reconcile as i16, SignatureStatus::Valid as i16);
    format!(
        "WITH pending AS (
             SELECT id, run_at FROM jobs
             WHERE state = {PENDING} AND run_at <= $1
             ORDER BY run_at LIMIT $3
             FOR UPDATE SKIP LOCKED),
         lost AS (
             SELECT id, run_at FROM jobs
             WHERE state = {RUNNING} AND lease_until < $1
             ORDER BY run_at LIMIT $3
             FOR UPDATE SKIP LOCKED),
         oldest AS (
             SELECT id, run_at FROM (SELECT * FROM pending UNION ALL SELECT * FROM lost) u
             ORDER BY run_at LIMIT $3),
         newest AS (
             SELECT id, run_at FROM jobs
             WHERE state = {PENDING} AND lane = {LIVE} AND run_at <= $1
             ORDER BY run_at DESC LIMIT $3
             FOR UPDATE SKIP LOCKED),
         chosen AS (
             SELECT id FROM (
                 SELECT id, CASE WHEN n <= $4 THEN n ELSE 2 * $3 + n END AS place
                 FROM (SELECT id, row_number() OVER (ORDER BY run_at) AS n FROM oldest) o
                 UNION ALL
                 SELECT id, $3 + row_number() OVER (ORDER BY run_at DESC) FROM newest) c
             GROUP BY id ORDER BY min(place) LIMIT $3),
         taken AS (
             UPDATE jobs SET state = {RUNNING}, lease_until = $1 + $2, attempts = attempts + 1,
                 rerun = false, lane = {BACKLOG}, updated_at = $1
             WHERE id IN (SELECT id FROM chosen)
             RETURNING id, account, job_key, kind, resource_id, input_delivery_id, attempts, work,
                 (SELECT d.kind <> {reconcile} AND d.signature <> {valid}
                  FROM deliveries d WHERE d.id = jobs.input_delivery_id)),
         due AS (
             SELECT CASE WHEN (SELECT count(*) FROM taken) < $3 THEN
                 (SELECT min(run_at) FROM jobs
                  WHERE state = {PENDING} AND id NOT IN (SELECT id FROM taken))
             END AS next_due)
         SELECT due.next_due, taken.* FROM due LEFT JOIN taken ON true"
    )
});

/// Reads a lease statement's rows: each is the next due time, then a row
/// taken, or NULLs when nothing was (the one row then carries the time);
/// `taken` reads the rest of a row, `None` for those NULLs.
pub(super) fn lease_rows<T>(
    rows: &[Row],
    taken: fn(&Row) -> Result<Option<T>, StoreError>,
) -> Result<Lease<T>, StoreError> {
    let mut lease = Lease {
        taken: Vec::with_capacity(rows.len()),
        next_due: None,
    };
    for r in rows {
        lease.next_due = r.try_get(0)?;
        lease.taken.extend(taken(r)?);
    }
    Ok(lease)
}

/// A taken job, from its lease row (after the next due time).
fn leased_job(r: &Row) -> Result<Option<LeasedJob>, StoreError> {
    let Some(id) = r.try_get(1)? else {
        return Ok(None);
    };
    Ok(Some(LeasedJob {
        id,
        account: r.try_get(2)?,
        key: r.try_get(3)?,
        kind: r.try_get(4)?,
        resource_id: r.try_get(5)?,
        input_delivery_id: r.try_get(6)?,
        attempt: r.try_get::<_, i32>(7)? as u32,
        work: LeasedJob::read_work(r.try_get(8)?),
        unauthenticated: r.try_get::<_, Option<bool>>(9)?.unwrap_or(false),
    }))
}

const FENCE: &str = "id = $1 AND attempts = $2 AND state = ";

/// Whether the job still runs under this run's lease (and locks it).
pub async fn holds_lease(tx: &Transaction<'_>, job: &LeasedJob) -> Result<bool, StoreError> {
    Ok(tx
        .query_opt(
            &prepared(
                tx,
                &format!("SELECT 1 FROM jobs WHERE {FENCE}{RUNNING} FOR UPDATE"),
            )
            .await?,
            &[&job.id, &(job.attempt as i32)],
        )
        .await?
        .is_some())
}

/// Records a run's outcome and its API calls, if the run still holds its
/// lease: the job's row, the calls and the orders its effects name (their
/// amounts recorded and their rows locked, see `upsert_orders`) in one
/// statement, then the decisions. Also answers whether the job is pending
/// again (to run again, or to retry).
pub async fn finish(
    tx: &Transaction<'_>,
    job: &LeasedJob,
    outcome: &JobOutcome,
    fetches: &[FetchRow],
    now: i64,
    rules: &DecisionRules,
) -> Result<(Finish, bool), StoreError> {
    let (set, error, run_at): (String, Option<&str>, i64) = match outcome {
        JobOutcome::Done(_) => (
            format!(
                "state = CASE WHEN rerun THEN {PENDING} ELSE {DONE} END,
                 attempts = CASE WHEN rerun THEN 0 ELSE attempts END,
                 run_at = $6, last_error = $4"
            ),
            None,
            now,
        ),
        JobOutcome::Retry { run_at, error, .. } => (
            format!(
                "state = {PENDING}, run_at = CASE WHEN rerun THEN $5::bigint ELSE $6::bigint END,
                 attempts = CASE WHEN rerun THEN 0 ELSE attempts END, last_error = $4"
            ),
            Some(error.as_str()),
            *run_at,
        ),
        // A re-run asked for while it ran starts the job over.
        JobOutcome::Dead { error, .. } => (
            format!(
                "state = CASE WHEN rerun THEN {PENDING} ELSE {DEAD} END,
                 attempts = CASE WHEN rerun THEN 0 ELSE attempts END,
                 run_at = $6, last_error = $4"
            ),
            Some(error.as_str()),
            now,
        ),
    };
    let endpoints: Vec<&str> = fetches.iter().map(|f| f.endpoint).collect();
    let resources: Vec<&str> = fetches.iter().map(|f| f.resource_id.as_str()).collect();
    let statuses: Vec<i32> = fetches.iter().map(|f| i32::from(f.status)).collect();
    let elapsed: Vec<i64> = fetches.iter().map(|f| f.elapsed_ms as i64).collect();
    let at: Vec<i64> = fetches.iter().map(|f| f.at).collect();
    let seen: Vec<Option<&str>> = fetches.iter().map(|f| f.seen.as_deref()).collect();
    let bodies: Vec<Option<&[u8]>> = fetches.iter().map(|f| f.body.as_deref()).collect();
    let effects = match outcome {
        JobOutcome::Done(effects) => Some(effects),
        _ => None,
    };
    let orders = OrderRows::of(effects);
    let failure = FailureCells::of(outcome);
    // The orders are upserted only once the job's row is updated (the
    // `EXISTS` reads `j`, so it runs first): the job's row is locked before
    // its orders, as when they were two statements, and a run that lost
    // its lease locks no order while its transaction is rolled back.
    let sql = format!(
        "WITH f AS (
             INSERT INTO fetches (job_id, account, endpoint, resource_id, status, elapsed_ms, at, seen, body)
             SELECT $1, $3, * FROM unnest($7::text[], $8::text[], $9::int[], $10::bigint[], $11::bigint[], $12::text[], $16::bytea[])
         ), j AS (
             UPDATE jobs SET {set}, rerun = false, lease_until = NULL, updated_at = $5,
                 failure_class = $17, failure_status = $18, failure_endpoint = $19
             WHERE {FENCE}{RUNNING}
             RETURNING state
         ), locked AS (
             {}
         )
         SELECT j.state, locked.order_id, locked.released, locked.blocked
         FROM j LEFT JOIN locked ON true",
        upsert_orders(["$3", "$13", "$14", "$15", "$5"], "WHERE EXISTS (SELECT 1 FROM j)")
    );
    let rows = tx
        .query(
            &prepared(tx, &sql).await?,
            &[
                &job.id,
                &(job.attempt as i32),
                &job.account,
                &error,
                &now,
                &run_at,
                &endpoints,
                &resources,
                &statuses,
                &elapsed,
                &at,
                &seen,
                &orders.ids,
                &orders.totals,
                &orders.paid,
                &bodies,
                &failure.class,
                &failure.status,
                &failure.endpoint,
            ],
        )
        .await?;
    let Some(first) = rows.first() else {
        return Ok((Finish::LeaseLost, false));
    };
    let state: JobState = first.try_get(0)?;
    let emitted = match effects {
        Some(effects) => {
            let mut flags = Locked::new();
            for r in &rows {
                if let Some(order) = r.try_get::<_, Option<String>>(1)? {
                    let locked = OrderFlags {
                        released: r.try_get(2)?,
                        blocked: r.try_get(3)?,
                    };
                    flags.insert(order, locked);
                }
            }
            decisions::apply(
                tx,
                &job.account,
                Some(job.id),
                effects,
                now,
                rules,
                Some(flags),
            )
            .await?
        }
        None => Vec::new(),
    };
    Ok((Finish::Recorded(emitted), state == JobState::Pending))
}
