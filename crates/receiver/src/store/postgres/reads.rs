//! What an operator reads and replays on PostgreSQL, and pruning: the same
//! answers as the SQLite backend's (`sqlite/admin.rs`).

use deadpool_postgres::Client;
use serde_json::Value;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use crate::domain::{EventState, JobKind, JobState, Kind, SignatureStatus};
use crate::store::StoreError;
use crate::store::views::*;
use pointhook_common::clock::rfc3339;

pub(super) fn ts(ms: Option<i64>) -> Option<String> {
    ms.map(rfc3339)
}

pub(super) const DELIVERY_COLUMNS: &str =
    "id, received_at, account, kind, topic, resource_id, duplicate_of, signature, job_key";

pub(super) fn delivery_summary(r: &Row) -> Result<DeliverySummary, StoreError> {
    Ok(DeliverySummary {
        id: r.try_get(0)?,
        received_at: rfc3339(r.try_get(1)?),
        account: r.try_get(2)?,
        kind: r.try_get::<_, Kind>(3)?.as_str(),
        topic: r.try_get(4)?,
        resource_id: r.try_get(5)?,
        duplicate_of: r.try_get(6)?,
        signature: r.try_get::<_, SignatureStatus>(7)?.as_str(),
        job_key: r.try_get(8)?,
    })
}

pub async fn list_deliveries(
    c: &Client,
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
        &format!(
            "SELECT {DELIVERY_COLUMNS} FROM deliveries
             WHERE ($1::text IS NULL OR account = $1) AND ($2::smallint IS NULL OR kind = $2)
               AND ($3::text IS NULL OR topic = $3) AND ($4::bigint IS NULL OR received_at >= $4)
               AND ($5::bigint IS NULL OR id < $5)
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
    )
    .await?
    .iter()
    .map(delivery_summary)
    .collect()
}

pub async fn get_delivery(c: &Client, id: i64) -> Result<Option<DeliveryDetail>, StoreError> {
    let Some(r) = c
        .query_opt(
            &format!(
                "SELECT {DELIVERY_COLUMNS}, notification_id, source_news, remote_addr, query,
                        headers, body, body_size, body_sha256
                 FROM deliveries WHERE id = $1"
            ),
            &[&id],
        )
        .await?
    else {
        return Ok(None);
    };
    let summary = delivery_summary(&r)?;
    let job = match &summary.job_key {
        Some(key) => job_by_key(c, &summary.account, key).await?,
        None => None,
    };
    let headers: String = r.try_get(13)?;
    let (body, body_base64) = match r.try_get::<_, Option<Vec<u8>>>(14)? {
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
        notification_id: r.try_get(9)?,
        source_news: r.try_get(10)?,
        remote_addr: r.try_get(11)?,
        query: r.try_get(12)?,
        headers: serde_json::from_str(&headers).unwrap_or(Value::Null),
        body,
        body_base64,
        body_size: r.try_get(15)?,
        body_sha256: r.try_get::<_, Option<Vec<u8>>>(16)?.map(hex::encode),
        summary,
        job,
    }))
}

pub(super) const JOB_COLUMNS: &str =
    "id, account, job_key, kind, state, attempts, run_at, last_error, updated_at";

pub(super) fn job_summary(r: &Row) -> Result<JobSummary, StoreError> {
    let state: JobState = r.try_get(4)?;
    let kind: JobKind = r.try_get(3)?;
    Ok(JobSummary {
        id: r.try_get(0)?,
        account: r.try_get(1)?,
        key: r.try_get(2)?,
        kind: kind.as_str(),
        state: state.as_str(),
        attempts: i64::from(r.try_get::<_, i32>(5)?),
        next_run: (state == JobState::Pending)
            .then(|| r.try_get(6).map(rfc3339))
            .transpose()?,
        last_error: r.try_get(7)?,
        updated_at: rfc3339(r.try_get(8)?),
    })
}

/// The newest `limit` jobs in `state`; done ones by the runnable index, as
/// on SQLite.
pub async fn list_jobs_in(
    c: &Client,
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
    )
    .await?
    .iter()
    .map(job_summary)
    .collect()
}

pub async fn job_by_key(
    c: &Client,
    account: &str,
    key: &str,
) -> Result<Option<JobSummary>, StoreError> {
    c.query_opt(
        &format!("SELECT {JOB_COLUMNS} FROM jobs WHERE account = $1 AND job_key = $2"),
        &[&account, &key],
    )
    .await?
    .as_ref()
    .map(job_summary)
    .transpose()
}

pub async fn get_job(c: &Client, id: i64) -> Result<Option<JobDetail>, StoreError> {
    let Some(r) = c
        .query_opt(
            &format!(
                "SELECT {JOB_COLUMNS}, created_at, lease_until, rerun, input_delivery_id
                 FROM jobs WHERE id = $1"
            ),
            &[&id],
        )
        .await?
    else {
        return Ok(None);
    };
    let summary = job_summary(&r)?;
    let deliveries = c
        .query(
            "SELECT id FROM deliveries WHERE account = $1 AND job_key = $2 ORDER BY id DESC LIMIT 100",
            &[&summary.account, &summary.key],
        )
        .await?
        .iter()
        .map(|r| r.try_get(0))
        .collect::<Result<Vec<i64>, _>>()?;
    let fetches = fetches_of(c, "job_id = $1", &[&id]).await?;
    Ok(Some(JobDetail {
        created_at: rfc3339(r.try_get(9)?),
        lease_until: ts(r.try_get(10)?),
        rerun_requested: r.try_get(11)?,
        input_delivery_id: r.try_get(12)?,
        summary,
        deliveries,
        fetches,
    }))
}

pub(super) async fn fetches_of(
    c: &Client,
    condition: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<FetchView>, StoreError> {
    c.query(
        &format!(
            "SELECT job_id, endpoint, resource_id, status, elapsed_ms, at, body FROM fetches
             WHERE {condition} ORDER BY id DESC LIMIT 200"
        ),
        params,
    )
    .await?
    .iter()
    .map(|r| {
        Ok(FetchView {
            job_id: r.try_get(0)?,
            endpoint: r.try_get(1)?,
            resource_id: r.try_get(2)?,
            status: i64::from(r.try_get::<_, i32>(3)?),
            elapsed_ms: r.try_get(4)?,
            at: rfc3339(r.try_get(5)?),
            body: r
                .try_get::<_, Option<Vec<u8>>>(6)?
                .and_then(|b| serde_json::from_slice(&b).ok()),
        })
    })
    .collect()
}

pub async fn retry_job(c: &Client, id: i64, now: i64) -> Result<bool, StoreError> {
    Ok(c.execute(
        "UPDATE jobs SET state = $2, attempts = 0, run_at = $3, last_error = NULL, updated_at = $3
         WHERE id = $1 AND state = $4",
        &[&id, &JobState::Pending, &now, &JobState::Dead],
    )
    .await?
        == 1)
}

pub async fn retry_dead_jobs(c: &Client, now: i64) -> Result<usize, StoreError> {
    Ok(c.execute(
        "UPDATE jobs SET state = $1, attempts = 0, run_at = $2, last_error = NULL, updated_at = $2
         WHERE state = $3",
        &[&JobState::Pending, &now, &JobState::Dead],
    )
    .await? as usize)
}

pub(super) const EVENT_COLUMNS: &str =
    "id, account, type, subject, state, attempts, created_at, delivered_at, last_error";

pub(super) fn event_summary(r: &Row) -> Result<EventSummary, StoreError> {
    let state: EventState = r.try_get(4)?;
    Ok(EventSummary {
        id: r.try_get(0)?,
        account: r.try_get(1)?,
        event_type: r.try_get(2)?,
        subject: r.try_get(3)?,
        state: state.as_str(),
        attempts: i64::from(r.try_get::<_, i32>(5)?),
        created_at: rfc3339(r.try_get(6)?),
        delivered_at: ts(r.try_get(7)?),
        last_error: r.try_get(8)?,
    })
}

/// Newest first, in the order recorded (`seq`, indexed).
pub async fn list_events(
    c: &Client,
    event_type: Option<&str>,
    state: Option<EventState>,
    limit: usize,
) -> Result<Vec<EventSummary>, StoreError> {
    c.query(
        &format!(
            "SELECT {EVENT_COLUMNS} FROM events
             WHERE ($1::text IS NULL OR type = $1) AND ($2::smallint IS NULL OR state = $2)
             ORDER BY seq DESC LIMIT $3"
        ),
        &[&event_type, &state, &clamp(limit)],
    )
    .await?
    .iter()
    .map(event_summary)
    .collect()
}

pub async fn get_event(c: &Client, id: &str) -> Result<Option<EventDetail>, StoreError> {
    let Some(r) = c
        .query_opt(
            &format!(
                "SELECT {EVENT_COLUMNS}, job_id, next_attempt_at, body FROM events WHERE id = $1"
            ),
            &[&id],
        )
        .await?
    else {
        return Ok(None);
    };
    let summary = event_summary(&r)?;
    let pending = summary.state == EventState::Pending.as_str();
    let body: String = r.try_get(11)?;
    Ok(Some(EventDetail {
        destinations: Vec::new(),
        job_id: r.try_get(9)?,
        next_attempt_at: if pending { ts(r.try_get(10)?) } else { None },
        body: serde_json::from_str(&body).unwrap_or(Value::Null),
        summary,
    }))
}

pub async fn metrics_snapshot(c: &Client, now: i64) -> Result<MetricsSnapshot, StoreError> {
    let mut jobs: Vec<(&'static str, i64)> = JobState::all().map(|s| (s.as_str(), 0)).collect();
    for r in c
        .query("SELECT state, count(*) FROM jobs GROUP BY state", &[])
        .await?
    {
        let state: JobState = r.try_get(0)?;
        if let Some(slot) = jobs.iter_mut().find(|(s, _)| *s == state.as_str()) {
            slot.1 = r.try_get(1)?;
        }
    }
    let r = c
        .query_one(
            "SELECT count(*), min(created_at) FROM events WHERE state = $1",
            &[&EventState::Pending],
        )
        .await?;
    let oldest: Option<i64> = r.try_get(1)?;
    Ok(MetricsSnapshot {
        destinations: Vec::new(),
        jobs,
        outbox_backlog: r.try_get(0)?,
        outbox_oldest_ms: oldest.map_or(0, |t| now.saturating_sub(t).max(0)),
    })
}

pub async fn health(c: &Client) -> Result<Health, StoreError> {
    let last_api_call = fetches_of(c, "true", &[]).await?.into_iter().next();
    // The delivered event attempted last, by the due index.
    let last_delivered_at = c
        .query_opt(
            "SELECT delivered_at FROM events WHERE state = $1
             ORDER BY next_attempt_at DESC LIMIT 1",
            &[&EventState::Delivered],
        )
        .await?
        .map(|r| r.try_get::<_, Option<i64>>(0))
        .transpose()?
        .flatten()
        .map(rfc3339);
    let merchant_failing = c
        .query_opt(
            "SELECT last_error FROM events WHERE state = $1 AND attempts > 0
             ORDER BY next_attempt_at LIMIT 1",
            &[&EventState::Pending],
        )
        .await?
        .map(|r| r.try_get::<_, Option<String>>(0))
        .transpose()?
        .flatten();
    Ok(Health {
        last_api_call,
        last_delivered_at,
        merchant_failing,
    })
}
