//! Jobs, decisions, the outbox and fraud reviews on PostgreSQL: the same
//! rules as the SQLite backend, with what several instances need on top.
//! Jobs and events are leased with `FOR UPDATE SKIP LOCKED` and fenced by
//! their attempt count; a decision locks the merchant orders its guards and
//! marks name (`FOR UPDATE`), so two instances deciding on one order are
//! serialised and cannot both pass a guard; decisions stay unique by their
//! key.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::LazyLock;

use deadpool_postgres::{GenericClient, Transaction};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Row, Statement};

use crate::clock::rfc3339;
use crate::domain::{
    Decision, Effects, EventState, Guard, HeldAlert, JobState, Mark, MerchantOrderId, Review, Slot,
    Work,
};
use crate::rules::{self, Finality};
use crate::store::StoreError;
use crate::store::model::{
    Attempted, EventOutcome, FetchRow, Finish, JobOutcome, Lease, LeasedEvent, LeasedJob,
    NewDelivery, NewJob, event_id,
};
use crate::store::views::{Answer, ReviewView};

type Params<'a> = Vec<&'a (dyn ToSql + Sync)>;

const PENDING: i16 = JobState::Pending as i16;
const RUNNING: i16 = JobState::Running as i16;
const DONE: i16 = JobState::Done as i16;
const DEAD: i16 = JobState::Dead as i16;

/// How a new job coalesces with the one there is (DESIGN section 3): the
/// same rules as the SQLite backend's.
fn on_conflict() -> String {
    format!(
        "ON CONFLICT (account, job_key) DO UPDATE SET
             rerun = CASE WHEN jobs.state = {RUNNING} THEN true ELSE jobs.rerun END,
             attempts = CASE WHEN jobs.state IN ({DONE}, {DEAD}) THEN 0 ELSE jobs.attempts END,
             run_at = CASE WHEN jobs.state IN ({DONE}, {DEAD}) THEN excluded.run_at ELSE jobs.run_at END,
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
                 duplicate_of, signature, job_key, body_size)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12,
                 (SELECT id FROM dup), $13, $14, $15)
             RETURNING id, duplicate_of
         ), j AS (
             INSERT INTO jobs AS jobs (account, job_key, kind, resource_id, input_delivery_id,
                 work, work_rank, state, run_at, created_at, updated_at)
             SELECT $2, $14, $16, $17, d.id, $18, $19, {PENDING}, $1, $1, $1
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
    fingerprint: Vec<u8>,
    job_key: Option<String>,
    job_kind: Option<i16>,
    job_resource: Option<String>,
    work: Option<String>,
    rank: Option<i64>,
}

impl IngestParams {
    pub fn new(d: NewDelivery) -> IngestParams {
        let job = d.job.clone();
        IngestParams {
            body: (!d.body.is_empty()).then(|| d.body.to_vec()),
            body_size: d.body_size.map(|n| n as i64),
            fingerprint: d.fingerprint.to_vec(),
            job_key: job.as_ref().map(|j| j.key.clone()),
            job_kind: job.as_ref().map(|j| j.kind as i16),
            job_resource: job.as_ref().map(|j| j.resource_id.clone()),
            work: job.as_ref().map(|j| j.work.clone()),
            rank: job.as_ref().map(|j| j.rank),
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
        ]
    }

    pub fn has_job(&self) -> bool {
        self.job_key.is_some()
    }
}

/// Every statement here is prepared once per connection and kept (its
/// text is fixed, so the cache stays small): a call is then one round trip
/// with no parse and no planning, where a bare string costs two round
/// trips, a parse and a plan each time.
pub(super) async fn prepared(tx: &impl GenericClient, sql: &str) -> Result<Statement, StoreError> {
    Ok(tx.prepare_cached(sql).await?)
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
             state, run_at, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, {PENDING}, $7, $7, $7)
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
            ],
        )
        .await?;
    Ok(row.get(0))
}

/// Takes up to `limit` due jobs: pending and due, or running with an
/// expired lease; rows another instance is taking are skipped. With fewer
/// than `limit`, the same statement finds when the next pending job is due,
/// so an idle worker's round is one statement. Its subquery reads the
/// snapshot from before the update, where the jobs just taken are still
/// pending and due: they are left out by id.
pub async fn lease(
    tx: &impl GenericClient,
    now: i64,
    lease_ms: i64,
    limit: usize,
) -> Result<Lease<LeasedJob>, StoreError> {
    let sql = format!(
        "WITH taken AS (
             UPDATE jobs SET state = {RUNNING}, lease_until = $1 + $2, attempts = attempts + 1,
                 rerun = false, updated_at = $1
             WHERE id IN (
                 SELECT id FROM jobs
                 WHERE (state = {PENDING} AND run_at <= $1)
                    OR (state = {RUNNING} AND lease_until < $1)
                 ORDER BY run_at LIMIT $3
                 FOR UPDATE SKIP LOCKED)
             RETURNING id, account, job_key, kind, resource_id, input_delivery_id, attempts, work),
         due AS (
             SELECT CASE WHEN (SELECT count(*) FROM taken) < $3 THEN
                 (SELECT min(run_at) FROM jobs
                  WHERE state = {PENDING} AND id NOT IN (SELECT id FROM taken))
             END AS next_due)
         SELECT due.next_due, taken.* FROM due LEFT JOIN taken ON true"
    );
    let rows = tx
        .query(
            &prepared(tx, &sql).await?,
            &[&now, &lease_ms, &(limit as i64)],
        )
        .await?;
    lease_rows(&rows, leased_job)
}

/// Reads a lease statement's rows: each is the next due time, then a row
/// taken, or NULLs when nothing was (the one row then carries the time);
/// `taken` reads the rest of a row, `None` for those NULLs.
fn lease_rows<T>(
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
    }))
}

const FENCE: &str = "id = $1 AND attempts = $2 AND state = ";

pub async fn renew(
    tx: &impl GenericClient,
    job: &LeasedJob,
    until: i64,
) -> Result<bool, StoreError> {
    Ok(tx
        .execute(
            &prepared(
                tx,
                &format!("UPDATE jobs SET lease_until = $3 WHERE {FENCE}{RUNNING}"),
            )
            .await?,
            &[&job.id, &(job.attempt as i32), &until],
        )
        .await?
        == 1)
}

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
    deliver: bool,
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
        JobOutcome::Retry { run_at, error } => (
            format!(
                "state = {PENDING}, run_at = CASE WHEN rerun THEN $5::bigint ELSE $6::bigint END, last_error = $4"
            ),
            Some(error.as_str()),
            *run_at,
        ),
        // A re-run asked for while it ran starts the job over.
        JobOutcome::Dead { error } => (
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
    let effects = match outcome {
        JobOutcome::Done(effects) => Some(effects),
        _ => None,
    };
    let orders = OrderRows::of(effects);
    // The orders are upserted only once the job's row is updated (the
    // `EXISTS` reads `j`, so it runs first): the job's row is locked before
    // its orders, as when they were two statements, and a run that lost
    // its lease locks no order while its transaction is rolled back.
    let sql = format!(
        "WITH f AS (
             INSERT INTO fetches (job_id, account, endpoint, resource_id, status, elapsed_ms, at, seen)
             SELECT $1, $3, * FROM unnest($7::text[], $8::text[], $9::int[], $10::bigint[], $11::bigint[], $12::text[])
         ), j AS (
             UPDATE jobs SET {set}, rerun = false, lease_until = NULL, updated_at = $5
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
            ],
        )
        .await?;
    let Some(first) = rows.first() else {
        return Ok((Finish::LeaseLost, false));
    };
    let state: JobState = first.try_get(0)?;
    let emitted = match effects {
        Some(effects) => {
            let mut flags = OrderFlags::new();
            for r in &rows {
                if let Some(order) = r.try_get::<_, Option<String>>(1)? {
                    flags.insert(order, (r.try_get(2)?, r.try_get(3)?));
                }
            }
            apply(
                tx,
                &job.account,
                Some(job.id),
                effects,
                now,
                deliver,
                Some(flags),
            )
            .await?
        }
        None => Vec::new(),
    };
    Ok((Finish::Recorded(emitted), state == JobState::Pending))
}

/// Interrupted by shutdown: pending again, the attempt not counted.
pub async fn release(tx: &Transaction<'_>, job: &LeasedJob, now: i64) -> Result<(), StoreError> {
    tx.execute(
        &prepared(
            tx,
            &format!(
                "UPDATE jobs SET state = {PENDING}, attempts = greatest(attempts - 1, 0),
                 lease_until = NULL, run_at = $3, updated_at = $3
             WHERE {FENCE}{RUNNING}"
            ),
        )
        .await?,
        &[&job.id, &(job.attempt as i32), &now],
    )
    .await?;
    Ok(())
}

/// Applies `effects`; returns the ids of the events queued. `locked`: the
/// flags of the orders they name, when the caller has locked them already.
pub async fn apply(
    tx: &Transaction<'_>,
    account: &str,
    job_id: Option<i64>,
    effects: &Effects,
    now: i64,
    deliver: bool,
    locked: Option<OrderFlags>,
) -> Result<Vec<String>, StoreError> {
    let mut orders = match locked {
        Some(flags) => flags,
        None => lock_orders(tx, account, effects, now).await?,
    };
    let mut emitted = Vec::new();
    for d in &effects.decisions {
        if let Some(id) = decide(tx, account, job_id, d, now, deliver, &mut orders).await? {
            emitted.push(id);
        }
    }
    Ok(emitted)
}

/// Whether an order is released and whether it is blocked, as locked.
type OrderFlags = HashMap<String, (bool, bool)>;

/// What `upsert_orders` binds: every order the effects name, in order of
/// id, with the amounts seen (none for an order only a guard or a mark
/// names).
struct OrderRows<'a> {
    ids: Vec<&'a str>,
    totals: Vec<Option<&'a str>>,
    paid: Vec<Option<&'a str>>,
}

impl<'a> OrderRows<'a> {
    fn of(effects: Option<&'a Effects>) -> OrderRows<'a> {
        let mut amounts: BTreeMap<&str, (Option<&str>, Option<&str>)> = BTreeMap::new();
        if let Some(effects) = effects {
            for o in effects.decisions.iter().flat_map(orders_of) {
                amounts.insert(o, (None, None));
            }
            for o in &effects.orders {
                amounts.insert(
                    o.order_id.as_str(),
                    (Some(o.total_amount.as_str()), Some(o.paid_amount.as_str())),
                );
            }
        }
        OrderRows {
            ids: amounts.keys().copied().collect(),
            totals: amounts.values().map(|a| a.0).collect(),
            paid: amounts.values().map(|a| a.1).collect(),
        }
    }
}

/// Records the amounts seen and locks every order named, creating missing
/// rows, in a fixed order (so two instances never wait on each other in a
/// circle); an order with no amounts keeps its own. Returns each order's
/// flags as locked, for the guards. `params` numbers the account, the
/// three arrays of `OrderRows` and the time; `gate` may hold it back.
fn upsert_orders(params: [&str; 5], gate: &str) -> String {
    let [account, ids, totals, paid, now] = params;
    format!(
        "INSERT INTO orders AS o (account, order_id, total_amount, paid_amount, updated_at)
         SELECT {account}, t.order_id, t.total, t.paid, {now}
         FROM unnest({ids}::text[], {totals}::text[], {paid}::text[]) AS t (order_id, total, paid)
         {gate}
         ORDER BY t.order_id
         ON CONFLICT (account, order_id) DO UPDATE SET
             total_amount = coalesce(excluded.total_amount, o.total_amount),
             paid_amount = coalesce(excluded.paid_amount, o.paid_amount),
             updated_at = CASE WHEN excluded.total_amount IS NULL
                               THEN o.updated_at ELSE excluded.updated_at END
         RETURNING order_id, released_at IS NOT NULL AS released, blocked_at IS NOT NULL AS blocked"
    )
}

/// `upsert_orders` on its own, for effects recorded outside a job's finish.
static LOCK_ORDERS: LazyLock<String> =
    LazyLock::new(|| upsert_orders(["$1", "$2", "$3", "$4", "$5"], ""));

async fn lock_orders(
    tx: &Transaction<'_>,
    account: &str,
    effects: &Effects,
    now: i64,
) -> Result<OrderFlags, StoreError> {
    let orders = OrderRows::of(Some(effects));
    if orders.ids.is_empty() {
        return Ok(OrderFlags::new());
    }
    let rows = tx
        .query(
            &prepared(tx, &LOCK_ORDERS).await?,
            &[&account, &orders.ids, &orders.totals, &orders.paid, &now],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| Ok((r.try_get(0)?, (r.try_get(1)?, r.try_get(2)?))))
        .collect::<Result<_, tokio_postgres::Error>>()?)
}

/// The merchant orders a decision's guards and marks name.
fn orders_of(d: &Decision) -> Vec<&str> {
    let mut ids: Vec<&str> = d
        .guards
        .iter()
        .map(|g| match g {
            Guard::OrderReleased(o) | Guard::OrderNotReleased(o) | Guard::OrderNotBlocked(o) => {
                o.as_str()
            }
        })
        .chain(d.marks.iter().filter_map(|m| match m {
            Mark::OrderReleased(o) | Mark::OrderAtRisk(o) => Some(o.as_str()),
            Mark::OrderBlocked { order, .. } => Some(order.as_str()),
            Mark::HoldForReview(_) => None,
        }))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// Records a decision and queues its event (only if the decision is new).
const DECIDE: &str = "WITH dec AS (
                 INSERT INTO decisions (account, subject, key, event_type, event_id, job_id, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)
                 ON CONFLICT (account, subject, key) DO NOTHING
                 RETURNING 1
             )
             , ev AS (
                 INSERT INTO events (id, account, type, subject, body, job_id, created_at, state, next_attempt_at)
                 SELECT $5::text, $1::text, $4::text, $2::text, $8::text, $6::bigint, $7::bigint, $9::int2, $7::bigint
                 WHERE EXISTS (SELECT 1 FROM dec)
                 RETURNING id
             )
             -- The decision's marks on its orders (released, at risk), in
             -- the same statement: only when it was recorded now.
             , marked AS (
                 UPDATE orders SET
                     released_at = CASE WHEN order_id = ANY($10::text[])
                                        THEN coalesce(released_at, $7) ELSE released_at END,
                     at_risk_at = CASE WHEN order_id = ANY($11::text[])
                                       THEN coalesce(at_risk_at, $7) ELSE at_risk_at END,
                     updated_at = $7
                 WHERE account = $1 AND order_id = ANY($10::text[] || $11::text[])
                   AND EXISTS (SELECT 1 FROM ev)
             )
             SELECT id FROM ev";

/// Records one decision and queues its event, unless a guard fails, it was
/// recorded already, or it contradicts its subject's final outcome.
async fn decide(
    tx: &Transaction<'_>,
    account: &str,
    job_id: Option<i64>,
    d: &Decision,
    now: i64,
    deliver: bool,
    orders: &mut OrderFlags,
) -> Result<Option<String>, StoreError> {
    let event_type = d.event.as_str();
    // The orders were locked by `lock_orders`; their flags follow this
    // job's own marks.
    let holds = d.guards.iter().all(|g| {
        let (released, blocked) = match g {
            Guard::OrderReleased(o) | Guard::OrderNotReleased(o) | Guard::OrderNotBlocked(o) => {
                orders.get(o.as_str()).copied().unwrap_or((false, false))
            }
        };
        match g {
            Guard::OrderReleased(_) => released,
            Guard::OrderNotReleased(_) => !released,
            Guard::OrderNotBlocked(_) => !blocked,
        }
    });
    if !holds {
        tracing::debug!(job_id, subject = %d.subject, key = %d.key, "decision skipped: a guard does not hold");
        return Ok(None);
    }
    if d.slot == Slot::Final {
        let recorded = recorded_final(tx, account, &d.subject).await?;
        match rules::finality(recorded.as_deref(), event_type) {
            Finality::New => {}
            Finality::Same => return Ok(None),
            Finality::Conflict => {
                conflict(tx, account, job_id, d, recorded.as_deref(), now).await?;
                return Ok(None);
            }
        }
    }
    let key = match d.slot {
        Slot::Final => "final",
        Slot::Once => d.key.as_str(),
    };
    let id = event_id(account, &d.subject, key);
    let body = serde_json::json!({
        "id": id,
        "type": event_type,
        "created_at": rfc3339(now),
        "account": account,
        "data": d.data,
    })
    .to_string();
    let state = if deliver {
        EventState::Pending
    } else {
        EventState::Stored
    };
    let decided = tx
        .query_opt(
            &prepared(tx, DECIDE).await?,
            &[
                &account,
                &d.subject,
                &key,
                &event_type,
                &id,
                &job_id,
                &now,
                &body,
                &state,
                &marked(d, |m| match m {
                    Mark::OrderReleased(o) => Some(o.as_str()),
                    _ => None,
                }),
                &marked(d, |m| match m {
                    Mark::OrderAtRisk(o) => Some(o.as_str()),
                    _ => None,
                }),
            ],
        )
        .await?;
    if decided.is_none() {
        // Decided already; for a final slot, a concurrent run may have
        // taken it with another outcome: that one is a conflict.
        if d.slot == Slot::Final {
            let recorded = recorded_final(tx, account, &d.subject).await?;
            if rules::finality(recorded.as_deref(), event_type) == Finality::Conflict {
                conflict(tx, account, job_id, d, recorded.as_deref(), now).await?;
            }
        }
        return Ok(None);
    }
    for m in &d.marks {
        mark(tx, account, m, now).await?;
        match m {
            Mark::OrderReleased(o) => orders.entry(o.as_str().to_string()).or_default().0 = true,
            Mark::OrderBlocked { order, .. } => {
                orders.entry(order.as_str().to_string()).or_default().1 = true;
            }
            Mark::OrderAtRisk(_) | Mark::HoldForReview(_) => {}
        }
    }
    tracing::info!(job_id, event_id = %id, event_type, subject = %d.subject, "decided");
    Ok(Some(id))
}

async fn recorded_final(
    tx: &Transaction<'_>,
    account: &str,
    subject: &str,
) -> Result<Option<String>, StoreError> {
    let sql =
        "SELECT event_type FROM decisions WHERE account = $1 AND subject = $2 AND key = 'final'";
    Ok(tx
        .query_opt(&prepared(tx, sql).await?, &[&account, &subject])
        .await?
        .map(|r| r.get(0)))
}

async fn conflict(
    tx: &Transaction<'_>,
    account: &str,
    job_id: Option<i64>,
    d: &Decision,
    recorded: Option<&str>,
    now: i64,
) -> Result<(), StoreError> {
    let event_type = d.event.as_str();
    tracing::warn!(
        job_id, subject = %d.subject, recorded = ?recorded, new = %event_type,
        "conflicting final state: recorded, nothing changed"
    );
    let sql =
        "INSERT INTO decisions (account, subject, key, event_type, event_id, job_id, created_at)
               VALUES ($1, $2, $3, $4, NULL, $5, $6)
               ON CONFLICT (account, subject, key) DO NOTHING";
    tx.execute(
        &prepared(tx, sql).await?,
        &[
            &account,
            &d.subject,
            &format!("conflict:{event_type}"),
            &event_type,
            &job_id,
            &now,
        ],
    )
    .await?;
    Ok(())
}

/// The orders a decision's marks of one kind name (set by `DECIDE`).
fn marked<'a>(d: &'a Decision, pick: impl Fn(&'a Mark) -> Option<&'a str>) -> Vec<&'a str> {
    d.marks.iter().filter_map(pick).collect()
}

/// The marks `DECIDE` does not set itself.
async fn mark(tx: &Transaction<'_>, account: &str, m: &Mark, now: i64) -> Result<(), StoreError> {
    let (order, column) = match m {
        // Set by `DECIDE` itself.
        Mark::OrderReleased(_) | Mark::OrderAtRisk(_) => return Ok(()),
        Mark::OrderBlocked { order, alert } => {
            let sql = "INSERT INTO order_blocks (account, order_id, alert, blocked_at)
                       VALUES ($1, $2, $3, $4)
                       ON CONFLICT (account, order_id, alert) DO UPDATE SET lifted_at = NULL";
            tx.execute(
                &prepared(tx, sql).await?,
                &[&account, &order.as_str(), alert, &now],
            )
            .await?;
            (order, "blocked_at")
        }
        Mark::HoldForReview(h) => return hold(tx, account, h, now).await,
    };
    tx.execute(
        &prepared(
            tx,
            &format!(
                "UPDATE orders SET {column} = coalesce({column}, $3), updated_at = $3
             WHERE account = $1 AND order_id = $2"
            ),
        )
        .await?,
        &[&account, &order.as_str(), &now],
    )
    .await?;
    Ok(())
}

async fn hold(
    tx: &Transaction<'_>,
    account: &str,
    h: &HeldAlert,
    now: i64,
) -> Result<(), StoreError> {
    let sql = "INSERT INTO fraud_reviews (account, job_key, alert, merchant_order, payment, reason,
                                         state, created_at)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
               ON CONFLICT (account, job_key) DO NOTHING";
    tx.execute(
        &prepared(tx, sql).await?,
        &[
            &account,
            &h.job_key,
            &h.alert,
            &h.merchant_order.as_ref().map(|o| o.as_str()),
            &h.payment.as_ref().map(|p| p.as_str()),
            &h.reason,
            &Review::Held,
            &now,
        ],
    )
    .await?;
    Ok(())
}

/// Lifts one alert's block; the order is unblocked when none stands.
async fn lift_block(
    tx: &Transaction<'_>,
    account: &str,
    order: &str,
    alert: &str,
    now: i64,
) -> Result<(), StoreError> {
    tx.execute(
        &prepared(
            tx,
            "UPDATE order_blocks SET lifted_at = $4
         WHERE account = $1 AND order_id = $2 AND alert = $3 AND lifted_at IS NULL",
        )
        .await?,
        &[&account, &order, &alert, &now],
    )
    .await?;
    tx.execute(
        &prepared(
            tx,
            "UPDATE orders SET blocked_at = NULL, updated_at = $3
         WHERE account = $1 AND order_id = $2 AND NOT EXISTS (
             SELECT 1 FROM order_blocks b
             WHERE b.account = $1 AND b.order_id = $2 AND b.lifted_at IS NULL)",
        )
        .await?,
        &[&account, &order, &now],
    )
    .await?;
    Ok(())
}

const REVIEW_COLUMNS: &str =
    "id, account, state, merchant_order, payment, reason, job_key, created_at, decided_at";

fn review(r: &Row) -> Result<ReviewView, StoreError> {
    let state: Review = r.try_get(2)?;
    Ok(ReviewView {
        id: r.try_get(0)?,
        account: r.try_get(1)?,
        state: state.as_str(),
        merchant_order_id: r.try_get(3)?,
        payment_id: r.try_get(4)?,
        reason: r.try_get(5)?,
        job_key: r.try_get(6)?,
        created_at: rfc3339(r.try_get(7)?),
        decided_at: r.try_get::<_, Option<i64>>(8)?.map(rfc3339),
    })
}

pub async fn reviews(
    tx: &Transaction<'_>,
    state: Option<Review>,
    limit: i64,
) -> Result<Vec<ReviewView>, StoreError> {
    let sql = format!(
        "SELECT {REVIEW_COLUMNS} FROM fraud_reviews WHERE ($1::smallint IS NULL OR state = $1)
         ORDER BY id DESC LIMIT $2"
    );
    tx.query(&prepared(tx, &sql).await?, &[&state, &limit])
        .await?
        .iter()
        .map(review)
        .collect()
}

pub async fn review_state(
    tx: &Transaction<'_>,
    account: &str,
    job_key: &str,
) -> Result<Option<Review>, StoreError> {
    Ok(tx
        .query_opt(
            &prepared(
                tx,
                "SELECT state FROM fraud_reviews WHERE account = $1 AND job_key = $2",
            )
            .await?,
            &[&account, &job_key],
        )
        .await?
        .map(|r| r.try_get(0))
        .transpose()?)
}

/// Marks a held review decided (locking it); `Err` holds the answer when it
/// is not held any more.
async fn decide_review(
    tx: &Transaction<'_>,
    id: i64,
    to: Review,
    now: i64,
) -> Result<Result<(ReviewView, String), Answer>, StoreError> {
    let Some(row) = tx
        .query_opt(
            &prepared(
                tx,
                &format!(
                    "SELECT {REVIEW_COLUMNS}, alert FROM fraud_reviews WHERE id = $1 FOR UPDATE"
                ),
            )
            .await?,
            &[&id],
        )
        .await?
    else {
        return Ok(Err(Answer::NotFound));
    };
    let current = review(&row)?;
    let alert: String = row.try_get(9)?;
    if current.state != Review::Held.as_str() {
        return Ok(Err(Answer::AlreadyDecided(current.state)));
    }
    tx.execute(
        &prepared(
            tx,
            "UPDATE fraud_reviews SET state = $2, decided_at = $3 WHERE id = $1",
        )
        .await?,
        &[&id, &to, &now],
    )
    .await?;
    Ok(Ok((
        ReviewView {
            state: to.as_str(),
            decided_at: Some(rfc3339(now)),
            ..current
        },
        alert,
    )))
}

/// A person confirms: the alert's job runs again, now allowed to move money.
pub async fn confirm_review(tx: &Transaction<'_>, id: i64, now: i64) -> Result<Answer, StoreError> {
    let (review, _) = match decide_review(tx, id, Review::Confirmed, now).await? {
        Ok(r) => r,
        Err(answer) => return Ok(answer),
    };
    tx.execute(
        &prepared(
            tx,
            &format!(
                "UPDATE jobs SET
                 rerun = CASE WHEN state = {RUNNING} THEN true ELSE rerun END,
                 attempts = CASE WHEN state = {RUNNING} THEN attempts ELSE 0 END,
                 state = CASE WHEN state = {RUNNING} THEN state ELSE {PENDING} END,
                 run_at = $3, last_error = NULL, updated_at = $3
             WHERE account = $1 AND job_key = $2"
            ),
        )
        .await?,
        &[&review.account, &review.job_key, &now],
    )
    .await?;
    Ok(Answer::Done(Box::new(review)))
}

/// A person dismisses: the alert's block goes, the dismissal is told, and
/// the merchant order is fetched again.
pub async fn dismiss_review(
    tx: &Transaction<'_>,
    id: i64,
    now: i64,
    deliver: bool,
) -> Result<(Answer, Vec<String>), StoreError> {
    let (review, alert) = match decide_review(tx, id, Review::Dismissed, now).await? {
        Ok(r) => r,
        Err(answer) => return Ok((answer, Vec::new())),
    };
    let decision = crate::store::model::dismissal(&review, &alert);
    let emitted = apply(
        tx,
        &review.account,
        None,
        &Effects::one(decision),
        now,
        deliver,
        None,
    )
    .await?;
    if let Some(order) = review
        .merchant_order_id
        .as_deref()
        .and_then(|o| MerchantOrderId::parse(o).ok())
    {
        lift_block(tx, &review.account, order.as_str(), &alert, now).await?;
        let work = Work::MerchantOrder { id: order };
        enqueue(tx, &review.account, &NewJob::for_work(&work), now).await?;
    }
    Ok((Answer::Done(Box::new(review)), emitted))
}

/// Takes up to `limit` due events for `lease_ms`. With fewer, the same
/// statement finds when the next is due: a pending event's next attempt or
/// the end of its lease, whichever is later, the leases taken here
/// included (they run out at `now + lease_ms`); as for jobs, those taken
/// are left out of the snapshot from before the update by id.
pub async fn lease_events(
    tx: &impl GenericClient,
    now: i64,
    lease_ms: i64,
    limit: usize,
) -> Result<Lease<LeasedEvent>, StoreError> {
    let pending = EventState::Pending;
    let rows = tx
        .query(
            &prepared(
                tx,
                "WITH taken AS (
                     UPDATE events SET lease_until = $2 + $3
                     WHERE id IN (
                         SELECT id FROM events
                         WHERE state = $1 AND next_attempt_at <= $2
                           AND (lease_until IS NULL OR lease_until < $2)
                         ORDER BY next_attempt_at LIMIT $4
                         FOR UPDATE SKIP LOCKED)
                     RETURNING id, body, created_at, attempts),
                 due AS (
                     SELECT CASE WHEN (SELECT count(*) FROM taken) < $4 THEN
                         least(
                             (SELECT min(greatest(next_attempt_at, coalesce(lease_until, 0)))
                              FROM events
                              WHERE state = $1 AND id NOT IN (SELECT id FROM taken)),
                             (SELECT $2 + $3 FROM taken LIMIT 1))
                     END AS next_due)
                 SELECT due.next_due, taken.* FROM due LEFT JOIN taken ON true",
            )
            .await?,
            &[&pending, &now, &lease_ms, &(limit as i64)],
        )
        .await?;
    lease_rows(&rows, |r| {
        let Some(id) = r.try_get(1)? else {
            return Ok(None);
        };
        Ok(Some(LeasedEvent {
            id,
            body: r.try_get(2)?,
            created_at: r.try_get(3)?,
            attempts: r.try_get::<_, i32>(4)? as u32,
        }))
    })
}

/// Records the attempts of one lease batch in one statement, each fenced
/// by its attempts; per outcome, whether the fence held.
pub async fn record_event_outcomes(
    tx: &impl GenericClient,
    outcomes: &[EventOutcome],
) -> Result<Vec<bool>, StoreError> {
    let mut ids = Vec::with_capacity(outcomes.len());
    let mut attempts = Vec::with_capacity(outcomes.len());
    let mut states = Vec::with_capacity(outcomes.len());
    let mut delivered_at = Vec::with_capacity(outcomes.len());
    let mut errors = Vec::with_capacity(outcomes.len());
    let mut next = Vec::with_capacity(outcomes.len());
    for o in outcomes {
        ids.push(o.event.id.as_str());
        attempts.push(o.event.attempts as i32);
        let (state, at, error, again) = match &o.attempted {
            Attempted::Delivered { at } => (EventState::Delivered, Some(*at), None, None),
            Attempted::Failed { error, next } => (
                if next.is_some() {
                    EventState::Pending
                } else {
                    EventState::Dead
                },
                None,
                Some(error.as_str()),
                *next,
            ),
        };
        states.push(state);
        delivered_at.push(at);
        errors.push(error);
        next.push(again);
    }
    let recorded: HashSet<String> = tx
        .query(
            &prepared(
                tx,
                "UPDATE events e SET state = u.state, attempts = e.attempts + 1,
                 delivered_at = coalesce(u.delivered_at, e.delivered_at), last_error = u.error,
                 next_attempt_at = coalesce(u.next, e.next_attempt_at), lease_until = NULL
             FROM unnest($1::text[], $2::int[], $3::int2[], $4::bigint[], $5::text[], $6::bigint[])
                 AS u (id, attempts, state, delivered_at, error, next)
             WHERE e.id = u.id AND e.attempts = u.attempts AND e.state = $7
             RETURNING e.id",
            )
            .await?,
            &[
                &ids,
                &attempts,
                &states,
                &delivered_at,
                &errors,
                &next,
                &EventState::Pending,
            ],
        )
        .await?
        .iter()
        .map(|r| r.try_get(0))
        .collect::<Result<_, _>>()?;
    Ok(ids.iter().map(|id| recorded.contains(*id)).collect())
}
