//! The alerter's advisory lock: one instance of several tells a person.

use super::PgStore;
use super::leader::{Leader, lead};
use crate::store::StoreError;

/// The session lock the alerter holds for a round ("ptHn").
const ALERTER_LOCK: i64 = 0x7074_486e;

impl PgStore {
    pub async fn lead_alerts(&self) -> Result<Option<Leader>, StoreError> {
        lead(self.client().await?, ALERTER_LOCK).await
    }

    pub fn commits_failing_for(&self) -> Option<std::time::Duration> {
        self.health.failing_for()
    }
}
