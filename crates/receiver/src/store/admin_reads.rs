//! What an operator reads and replays, on either backend: deliveries,
//! jobs, events, the health line and the metrics snapshot, for the admin
//! API, the CLI and the console alike (an order's history is in
//! `order_reads`). Also the row mappings the console's reads share.

use serde_json::Value;

use super::StoreError;
use super::event_rows::{EVENT_COLUMNS, event_summary};
use super::sql::{Conn, Param, Row, sql};
use super::views::*;
use crate::domain::{EventState, JobKind, JobState, Kind, SignatureStatus};
use pointhook_common::clock::rfc3339;

pub(super) fn ts(ms: Option<i64>) -> Option<String> {
    ms.map(rfc3339)
}

pub(super) const DELIVERY_COLUMNS: &str =
    "id, received_at, account, kind, topic, resource_id, duplicate_of, signature, job_key";

pub(super) fn delivery_summary(r: &Row<'_>) -> Result<DeliverySummary, StoreError> {
    Ok(DeliverySummary {
        id: r.get(0)?,
        received_at: rfc3339(r.get(1)?),
        account: r.get(2)?,
        kind: r.get::<Kind>(3)?.as_str(),
        topic: r.get(4)?,
        resource_id: r.get(5)?,
        duplicate_of: r.get(6)?,
        signature: r.get::<SignatureStatus>(7)?.as_str(),
        job_key: r.get(8)?,
    })
}

/// A job's columns as `job_summary` reads them; its failure's last
/// (`failures::read`).
pub(super) const JOB_COLUMNS: &str = "id, account, job_key, kind, state, attempts, run_at, \
     last_error, updated_at, failure_class, failure_status, failure_endpoint";

pub(super) fn job_summary(r: &Row<'_>) -> Result<JobSummary, StoreError> {
    let state: JobState = r.get(4)?;
    Ok(JobSummary {
        id: r.get(0)?,
        account: r.get(1)?,
        key: r.get(2)?,
        kind: r.get::<JobKind>(3)?.as_str(),
        state: state.as_str(),
        attempts: r.get(5)?,
        next_run: (state == JobState::Pending)
            .then(|| r.get(6).map(rfc3339))
            .transpose()?,
        failure: match r.get::<Option<String>>(7)? {
            Some(_) => super::failures::read(r, 9)?,
            None => None,
        },
        last_error: r.get(7)?,
        updated_at: rfc3339(r.get(8)?),
    })
}

/// Events in the order recorded: SQLite's rowid, PostgreSQL's `seq`
/// (an identity column; PostgreSQL has no rowid).
pub(super) fn event_order(c: &Conn<'_>) -> &'static str {
    c.dialect().pick("rowid", "seq")
}

/// Newest first. An unknown `kind` matches nothing.
pub(super) async fn list_deliveries(
    c: &Conn<'_>,
    f: &DeliveryFilter,
) -> Result<Vec<DeliverySummary>, StoreError> {
    let kind = match f.kind.as_deref() {
        None => None,
        Some(k) => match Kind::parse(k) {
            Some(k) => Some(k),
            None => return Ok(Vec::new()),
        },
    };
    c.query(
        sql!(
            "SELECT id, received_at, account, kind, topic, resource_id, duplicate_of, signature,
                    job_key
             FROM deliveries
             WHERE (CAST($1 AS TEXT) IS NULL OR account = $1)
               AND (CAST($2 AS SMALLINT) IS NULL OR kind = $2)
               AND (CAST($3 AS TEXT) IS NULL OR topic = $3)
               AND (CAST($4 AS BIGINT) IS NULL OR received_at >= $4)
               AND (CAST($5 AS BIGINT) IS NULL OR id < $5)
             ORDER BY id DESC LIMIT $6"
        ),
        &[
            &f.account,
            &kind,
            &f.topic,
            &f.since,
            &f.before,
            &clamp(f.limit),
        ],
        delivery_summary,
    )
    .await
}

pub(super) async fn get_delivery(
    c: &Conn<'_>,
    id: i64,
) -> Result<Option<DeliveryDetail>, StoreError> {
    type Rest = (
        Option<String>,
        Option<String>,
        String,
        String,
        String,
        Option<Vec<u8>>,
        Option<i64>,
        Option<Vec<u8>>,
    );
    let row = c
        .query_opt(
            &format!(
                "SELECT {DELIVERY_COLUMNS}, notification_id, source_news, remote_addr, query,
                        headers, body, body_size, body_sha256
                 FROM deliveries WHERE id = $1"
            ),
            &[&id],
            |r| {
                let rest: Rest = (
                    r.get(9)?,
                    r.get(10)?,
                    r.get(11)?,
                    r.get(12)?,
                    r.get(13)?,
                    r.get(14)?,
                    r.get(15)?,
                    r.get(16)?,
                );
                Ok((delivery_summary(r)?, rest))
            },
        )
        .await?;
    let Some((summary, rest)) = row else {
        return Ok(None);
    };
    let (notification_id, source_news, remote_addr, query, headers, body, body_size, sha) = rest;
    let job = match &summary.job_key {
        Some(key) => job_by_key(c, &summary.account, key).await?,
        None => None,
    };
    let (body, body_base64) = match body {
        None => (None, None),
        Some(bytes) => match String::from_utf8(bytes) {
            Ok(text) => (Some(text), None),
            Err(e) => {
                use base64::Engine;
                (
                    None,
                    Some(base64::engine::general_purpose::STANDARD.encode(e.as_bytes())),
                )
            }
        },
    };
    Ok(Some(DeliveryDetail {
        summary,
        notification_id,
        source_news,
        remote_addr,
        query,
        headers: serde_json::from_str(&headers).unwrap_or(Value::Null),
        body,
        body_base64,
        body_size,
        body_sha256: sha.map(hex::encode),
        job,
    }))
}

/// The newest `limit` jobs in `state`. A done job's `run_at` is when it
/// finished, so the runnable index gives done jobs in that order, read
/// only as far as the limit.
pub(super) async fn list_jobs_in(
    c: &Conn<'_>,
    state: JobState,
    limit: i64,
) -> Result<Vec<JobSummary>, StoreError> {
    let order = match state {
        JobState::Done => "run_at DESC, id DESC",
        _ => "updated_at DESC, id DESC",
    };
    c.query(
        &format!("SELECT {JOB_COLUMNS} FROM jobs WHERE state = $1 ORDER BY {order} LIMIT $2"),
        &[&state, &limit],
        job_summary,
    )
    .await
}

/// The job with `key` in `account`.
pub(super) async fn job_by_key(
    c: &Conn<'_>,
    account: &str,
    key: &str,
) -> Result<Option<JobSummary>, StoreError> {
    c.query_opt(
        &format!("SELECT {JOB_COLUMNS} FROM jobs WHERE account = $1 AND job_key = $2"),
        &[&account, &key],
        job_summary,
    )
    .await
}

pub(super) async fn get_job(c: &Conn<'_>, id: i64) -> Result<Option<JobDetail>, StoreError> {
    let row = c
        .query_opt(
            &format!(
                "SELECT {JOB_COLUMNS}, created_at, lease_until, rerun, input_delivery_id,
                        resource_id
                 FROM jobs WHERE id = $1"
            ),
            &[&id],
            |r| {
                Ok((
                    job_summary(r)?,
                    r.get::<i64>(12)?,
                    r.get::<Option<i64>>(13)?,
                    r.get::<bool>(14)?,
                    r.get::<Option<i64>>(15)?,
                    r.get::<String>(16)?,
                ))
            },
        )
        .await?;
    let Some((summary, created_at, lease_until, rerun, input, resource)) = row else {
        return Ok(None);
    };
    // By an index: a fraud alert's by the one kept for them; the others'
    // by their resource (a job's notifications name what it fetches).
    let deliveries = if summary.key.starts_with("fraud:") {
        let index = c.indexed_by("deliveries_fraud");
        c.query(
            &format!(
                "SELECT id FROM deliveries {index}
                 WHERE account = $1 AND job_key = $2 AND substr(job_key, 1, 6) = 'fraud:'
                 ORDER BY id DESC LIMIT 100"
            ),
            &[&summary.account, &summary.key],
            |r| r.get(0),
        )
        .await?
    } else {
        c.query(
            sql!(
                "SELECT id FROM deliveries WHERE account = $1 AND resource_id = $3 AND job_key = $2
                 ORDER BY id DESC LIMIT 100"
            ),
            &[&summary.account, &summary.key, &resource],
            |r| r.get(0),
        )
        .await?
    };
    let fetches = fetches_of(c, "job_id = $1", &[&id]).await?;
    Ok(Some(JobDetail {
        summary,
        created_at: rfc3339(created_at),
        lease_until: ts(lease_until),
        rerun_requested: rerun,
        input_delivery_id: input,
        deliveries,
        fetches,
    }))
}

/// The newest 200 API calls matching `condition`.
pub(super) async fn fetches_of(
    c: &Conn<'_>,
    condition: &str,
    params: &[&dyn Param],
) -> Result<Vec<FetchView>, StoreError> {
    c.query(
        &format!(
            "SELECT job_id, endpoint, resource_id, status, elapsed_ms, at, body FROM fetches
             WHERE {condition} ORDER BY id DESC LIMIT 200"
        ),
        params,
        |r| {
            Ok(FetchView {
                job_id: r.get(0)?,
                endpoint: r.get(1)?,
                resource_id: r.get(2)?,
                status: r.get(3)?,
                elapsed_ms: r.get(4)?,
                at: rfc3339(r.get(5)?),
                body: r
                    .get::<Option<Vec<u8>>>(6)?
                    .and_then(|b| serde_json::from_slice(&b).ok()),
            })
        },
    )
    .await
}

/// A dead job runs again, with fresh attempts. `false`: no such dead job.
pub(super) async fn retry_job(c: &Conn<'_>, id: i64, now: i64) -> Result<bool, StoreError> {
    Ok(c.execute(
        sql!(
            "UPDATE jobs SET state = $2, attempts = 0, run_at = $3, last_error = NULL,
                 updated_at = $3
             WHERE id = $1 AND state = $4"
        ),
        &[&id, &JobState::Pending, &now, &JobState::Dead],
    )
    .await?
        == 1)
}

pub(super) async fn retry_dead_jobs(c: &Conn<'_>, now: i64) -> Result<usize, StoreError> {
    Ok(c.execute(
        sql!(
            "UPDATE jobs SET state = $1, attempts = 0, run_at = $2, last_error = NULL,
                 updated_at = $2
             WHERE state = $3"
        ),
        &[&JobState::Pending, &now, &JobState::Dead],
    )
    .await? as usize)
}

/// Newest first, in the order recorded. Without a state, that order read
/// backwards stops at `limit`; with one, an entry per destination where
/// the event is in it, from the queue rows' state index (what gave up at
/// one destination is listed while another still holds the event).
pub(super) async fn list_events(
    c: &Conn<'_>,
    event_type: Option<&str>,
    state: Option<EventState>,
    limit: usize,
) -> Result<Vec<EventSummary>, StoreError> {
    let seq = event_order(c);
    let limit = clamp(limit);
    let kind = "(CAST($1 AS TEXT) IS NULL OR type = $1)";
    match state {
        Some(state) if state != EventState::Stored => {
            let at = super::outbox_reads::AtDestination {
                state,
                destination: None,
                event_type: event_type.map(str::to_string),
            };
            let rows = super::outbox_reads::events_at(c, &at, (i64::MAX, i64::MAX), limit).await?;
            Ok(rows.into_iter().map(|(_, e)| e).collect())
        }
        Some(state) => {
            let index = c.indexed_by("events_due");
            c.query(
                &format!(
                    "SELECT {EVENT_COLUMNS} FROM events {index}
                     WHERE {kind} AND state = $2 ORDER BY {seq} DESC LIMIT $3"
                ),
                &[&event_type, &state, &limit],
                event_summary,
            )
            .await
        }
        None => {
            c.query(
                &format!(
                    "SELECT {EVENT_COLUMNS} FROM events WHERE {kind}
                     ORDER BY {seq} DESC LIMIT $2"
                ),
                &[&event_type, &limit],
                event_summary,
            )
            .await
        }
    }
}

pub(super) async fn get_event(c: &Conn<'_>, id: &str) -> Result<Option<EventDetail>, StoreError> {
    c.query_opt(
        &format!("SELECT {EVENT_COLUMNS}, job_id, next_attempt_at, body FROM events WHERE id = $1"),
        &[&id],
        |r| {
            let summary = event_summary(r)?;
            let pending = summary.state == EventState::Pending.as_str();
            Ok(EventDetail {
                destinations: Vec::new(),
                summary,
                job_id: r.get(10)?,
                next_attempt_at: if pending { ts(r.get(11)?) } else { None },
                body: serde_json::from_str(&r.get::<String>(12)?).unwrap_or(Value::Null),
            })
        },
    )
    .await
}

pub(super) async fn metrics_snapshot(
    c: &Conn<'_>,
    now: i64,
) -> Result<MetricsSnapshot, StoreError> {
    let mut jobs: Vec<(&'static str, i64)> = JobState::all().map(|s| (s.as_str(), 0)).collect();
    let counts = c
        .query(
            sql!("SELECT state, count(*) FROM jobs GROUP BY state"),
            &[],
            |r| Ok((r.get::<JobState>(0)?, r.get::<i64>(1)?)),
        )
        .await?;
    for (state, n) in counts {
        if let Some(slot) = jobs.iter_mut().find(|(s, _)| *s == state.as_str()) {
            slot.1 = n;
        }
    }
    let (backlog, oldest): (i64, Option<i64>) = c
        .query_one(
            sql!("SELECT count(*), min(created_at) FROM events WHERE state = $1"),
            &[&EventState::Pending],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .await?;
    Ok(MetricsSnapshot {
        destinations: Vec::new(),
        jobs,
        outbox_backlog: backlog,
        outbox_oldest_ms: oldest.map_or(0, |t| now.saturating_sub(t).max(0)),
    })
}

pub(super) async fn health(c: &Conn<'_>) -> Result<Health, StoreError> {
    let last_api_call = fetches_of(c, "1 = 1", &[]).await?.into_iter().next();
    // The delivered event attempted last, by the due index (max() over the
    // column read every event: 100 ms at a million on SQLite).
    let index = c.indexed_by("events_due");
    let last_delivered_at = c
        .query_opt(
            &format!(
                "SELECT delivered_at FROM events {index} WHERE state = $1
                 ORDER BY next_attempt_at DESC LIMIT 1"
            ),
            &[&EventState::Delivered],
            |r| r.get::<Option<i64>>(0),
        )
        .await?
        .flatten()
        .map(rfc3339);
    let merchant_failing = c
        .query_opt(
            sql!(
                "SELECT last_error FROM events WHERE state = $1 AND attempts > 0
                 ORDER BY next_attempt_at LIMIT 1"
            ),
            &[&EventState::Pending],
            |r| r.get::<Option<String>>(0),
        )
        .await?
        .flatten();
    Ok(Health {
        last_api_call,
        last_delivered_at,
        merchant_failing,
    })
}

#[cfg(test)]
#[path = "admin_reads_tests.rs"]
mod tests;
