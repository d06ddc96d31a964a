//! What reconciliation asks of the database: whether a change found on the
//! platform is already known, and how many were missed lately.

use super::model::Sighting;
use super::sql::{Conn, sql};
use super::{Store, StoreError};
use crate::domain::{JobState, Kind};

impl Store {
    /// Whether what a platform search listed is known already: a read saw
    /// that version, or the resource's job is still to run.
    pub async fn known(&self, account: String, sighting: Sighting) -> Result<bool, StoreError> {
        self.read(move |c| Box::pin(async move { known(c, &account, &sighting).await }))
            .await
    }

    /// How many changes reconciliation found missed since `since`.
    pub async fn missed_since(&self, since: i64) -> Result<u64, StoreError> {
        self.read(move |c| Box::pin(missed_since(c, since))).await
    }
}

/// Known: a read of the resource saw this version, or its job is still
/// to run (a notification came and its fetch has not happened yet), or its
/// job died after the change (a notification came; its job failed, and
/// stays dead with its history, in front of a person). A change after the
/// death is new work: the sweeper's, recorded beside the old (the death is
/// kept in `job_history` when the job runs again). A classic payment behind
/// an order of the Orders API is known too: its story is the order's,
/// which its own search covers.
async fn known(c: &Conn<'_>, account: &str, s: &Sighting) -> Result<bool, StoreError> {
    c.query_one(
        sql!(
            "SELECT EXISTS (
                 SELECT 1 FROM fetches
                 WHERE account = $1 AND endpoint = $2 AND resource_id = $3
                   AND seen = $4 AND status BETWEEN 200 AND 299)
             OR EXISTS (
                 SELECT 1 FROM jobs WHERE account = $1 AND job_key = $5
                   AND (state IN ($6, $7) OR (state = $8 AND updated_at >= $9)))
             OR ($2 = 'payment' AND EXISTS (
                 SELECT 1 FROM order_payments WHERE account = $1 AND payment_id = $3))"
        ),
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
        |r| r.get(0),
    )
    .await
}

/// Deliveries of kind `reconcile` received since `since`, by their
/// partial index: the kind is written out so that the index applies, and
/// SQLite is told the index by name (its planner would take another).
async fn missed_since(c: &Conn<'_>, since: i64) -> Result<u64, StoreError> {
    let index = c.dialect().pick("INDEXED BY deliveries_missed", "");
    let n: i64 = c
        .query_one(
            &format!(
                "SELECT count(*) FROM deliveries {index}
                 WHERE received_at >= $1 AND kind = {}",
                Kind::Reconcile as i16
            ),
            &[&since],
            |r| r.get(0),
        )
        .await?;
    Ok(n.max(0) as u64)
}
