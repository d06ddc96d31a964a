//! The store's part for keeping it small and safe: pruning what is old and
//! finished (with an estimate first, for a progress bar), and backups, each
//! able to report its progress.

use std::path::Path;
use std::sync::Arc;

use super::views::{PRUNE_BATCH, Pruned};
use super::{Backend, Store, StoreError};

/// Told the pages copied so far and the pages in all.
pub type BackupProgress = Arc<dyn Fn(u64, u64) + Send + Sync>;

impl Store {
    /// Prunes what finished before `cutoff` (unix ms), a batch per
    /// transaction so that acks never wait long behind it. Pruning never
    /// touches unfinished work, and decisions are never pruned.
    pub async fn prune(&self, cutoff: i64) -> Result<Pruned, StoreError> {
        self.prune_observed(cutoff, &mut |_| {}).await
    }

    /// `prune`, telling `batch` what each batch deleted.
    pub async fn prune_observed(
        &self,
        cutoff: i64,
        batch: &mut (dyn FnMut(&Pruned) + Send),
    ) -> Result<Pruned, StoreError> {
        let mut total = Pruned::default();
        loop {
            let done = on!(self, b => b.prune_batch(cutoff, PRUNE_BATCH).await)?;
            total.add(done);
            batch(&done);
            if done.total() == 0 {
                return Ok(total);
            }
        }
    }

    /// At most what `prune(cutoff)` will delete: the rows old enough, each
    /// counted by the index pruning reads (unfinished work among them is
    /// kept, so the count may be more than what goes).
    pub async fn prune_estimate(&self, cutoff: i64) -> Result<Pruned, StoreError> {
        on!(self, b => b.prune_estimate(cutoff).await)
    }

    /// A consistent copy of the database at `dest`, taken while it is in
    /// use, readable by its owner only.
    pub async fn backup(&self, dest: &Path) -> Result<(), StoreError> {
        self.backup_observed(dest, Arc::new(|_, _| {})).await
    }

    /// `backup`, telling `progress` the pages copied as it goes.
    pub async fn backup_observed(
        &self,
        dest: &Path,
        progress: BackupProgress,
    ) -> Result<(), StoreError> {
        let dest = dest.to_path_buf();
        on!(self, b => b.backup(dest, progress).await)
    }
}
