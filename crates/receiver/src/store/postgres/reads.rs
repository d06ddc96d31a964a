//! What an operator reads and replays on PostgreSQL, and pruning: the same
//! answers as the SQLite backend's (`sqlite/admin.rs`).

use deadpool_postgres::Client;
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
