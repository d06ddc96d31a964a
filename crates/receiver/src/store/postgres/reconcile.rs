//! What reconciliation asks of the database (the same questions as the
//! SQLite backend's), and the advisory lock that keeps one sweeper per
//! cluster.

use deadpool_postgres::{Client, Object};

use crate::domain::{JobState, Kind};
use crate::store::StoreError;
use crate::store::model::Sighting;

/// The session lock one sweeper holds for a pass.
pub const SWEEPER_LOCK: i64 = 0x7074_486d;

pub async fn known(c: &Client, account: &str, s: &Sighting) -> Result<bool, StoreError> {
    Ok(c.query_one(
        "SELECT EXISTS (
             SELECT 1 FROM fetches
             WHERE account = $1 AND endpoint = $2 AND resource_id = $3
               AND seen = $4 AND status BETWEEN 200 AND 299)
         OR EXISTS (
             SELECT 1 FROM jobs WHERE account = $1 AND job_key = $5
               AND (state IN ($6, $7) OR (state = $8 AND updated_at >= $9)))
         OR ($2 = 'payment' AND EXISTS (
             SELECT 1 FROM order_payments WHERE account = $1 AND payment_id = $3))",
        &[
            &account,
            &s.endpoint,
            &s.resource_id,
            &s.version,
            &s.job.key,
            &JobState::Pending,
            &JobState::Running,
            &JobState::Dead,
            &s.changed_at.unwrap_or(i64::MAX),
        ],
    )
    .await?
    .try_get(0)?)
}

pub async fn missed_since(c: &Client, since: i64) -> Result<u64, StoreError> {
    let n: i64 = c
        .query_one(
            &format!(
                "SELECT count(*) FROM deliveries WHERE received_at >= $1 AND kind = {}",
                Kind::Reconcile as i16
            ),
            &[&since],
        )
        .await?
        .try_get(0)?;
    Ok(n.max(0) as u64)
}

/// Holds a once-per-cluster lock (the sweeper's, the alerter's) on a
/// connection of its own until released. Dropped without `release` (a
/// pass that panicked or was cancelled), the connection is closed rather
/// than pooled, and the lock goes with it.
pub struct Leader(Option<Object>, i64);

pub async fn lead(client: Object, lock: i64) -> Result<Option<Leader>, StoreError> {
    let ours: bool = client
        .query_one("SELECT pg_try_advisory_lock($1)", &[&lock])
        .await?
        .try_get(0)?;
    Ok(ours.then(|| Leader(Some(client), lock)))
}

impl Leader {
    pub async fn release(mut self) {
        if let Some(client) = self.0.take()
            && client
                .execute("SELECT pg_advisory_unlock($1)", &[&self.1])
                .await
                .is_err()
        {
            drop(Object::take(client));
        }
    }
}

impl Drop for Leader {
    fn drop(&mut self) {
        if let Some(client) = self.0.take() {
            drop(Object::take(client));
        }
    }
}
