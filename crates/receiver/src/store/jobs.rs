//! A leased job's lease, written once for both backends: renewed while it
//! runs, released when the process stops, and the replay check a fraud
//! alert's run asks for. Every write is fenced by the attempt number: it
//! touches the row only while it runs under the same attempt, so a run
//! that lost its lease changes nothing. Leasing itself stays per backend
//! (`sqlite/jobs.rs`, `postgres/work.rs`): SQLite names its index
//! (`INDEXED BY`), PostgreSQL skips rows another instance holds
//! (`FOR UPDATE SKIP LOCKED`) and finds the next due time in the same
//! statement; and so does a run's finish, which writes decisions.

use super::model::LeasedJob;
use super::sql::{Conn, sql};
use super::{Backend, Store, StoreError};
use crate::domain::JobState;

impl Store {
    /// `false`: the lease is no longer this run's.
    pub async fn renew_lease(&self, job: LeasedJob, until: i64) -> Result<bool, StoreError> {
        self.write(move |c| Box::pin(renew(c, job.id, job.attempt, until)))
            .await
    }

    /// Interrupted by shutdown: pending again, the attempt not counted.
    /// On PostgreSQL the other instances are told at once (this one's
    /// listener may not send again), so one takes it now.
    pub async fn release_job(&self, job: LeasedJob, now: i64) -> Result<(), StoreError> {
        self.write(move |c| Box::pin(release(c, job.id, job.attempt, now)))
            .await?;
        if let Backend::Postgres(b) = &self.inner.backend {
            b.wake_jobs_now().await;
        }
        Ok(())
    }

    /// Whether another delivery carries the same signature (`ts` and `v1`)
    /// as this one: a signature seen twice was replayed, and authenticates
    /// nothing. One seek of the signatures' index.
    pub async fn signature_seen_elsewhere(&self, delivery_id: i64) -> Result<bool, StoreError> {
        self.read(move |c| {
            Box::pin(async move {
                c.query_one(
                    sql!(
                        "SELECT EXISTS (SELECT 1 FROM deliveries o, deliveries d
                          WHERE d.id = $1 AND d.signature_key IS NOT NULL
                            AND o.signature_key = d.signature_key AND o.id != d.id)"
                    ),
                    &[&delivery_id],
                    |r| r.get(0),
                )
                .await
            })
        })
        .await
    }
}

async fn renew(c: &Conn<'_>, id: i64, attempt: u32, until: i64) -> Result<bool, StoreError> {
    let changed = c
        .execute(
            sql!("UPDATE jobs SET lease_until = $3 WHERE id = $1 AND attempts = $2 AND state = $4"),
            &[&id, &attempt, &until, &JobState::Running],
        )
        .await?;
    Ok(changed == 1)
}

async fn release(c: &Conn<'_>, id: i64, attempt: u32, now: i64) -> Result<(), StoreError> {
    c.execute(
        sql!(
            "UPDATE jobs SET state = $4,
                 attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END,
                 lease_until = NULL, run_at = $5, updated_at = $5
             WHERE id = $1 AND attempts = $2 AND state = $3"
        ),
        &[&id, &attempt, &JobState::Running, &JobState::Pending, &now],
    )
    .await?;
    Ok(())
}
