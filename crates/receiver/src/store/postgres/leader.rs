//! The advisory locks that keep once-per-cluster work (the sweeper, the
//! alerter) to one instance at a time.

use deadpool_postgres::Object;

use crate::store::StoreError;

/// The session lock one sweeper holds for a pass.
pub const SWEEPER_LOCK: i64 = 0x7074_486d;

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
