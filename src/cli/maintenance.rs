//! `pointhook backup`, `prune` and `copy-store`: keeping the store small
//! and safe, each with its progress (`progress.rs`) and a summary line.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;

use pointhook::store::{self, Location, Store};

use super::progress::Progress;

/// The platform retries for 96 hours: what is younger may still matter.
const SHORTEST_RETENTION: Duration = Duration::from_secs(96 * 3600);

pub async fn backup(store: &Store, path: &Path) -> anyhow::Result<()> {
    if path.exists() {
        anyhow::bail!("{} exists already: choose a new file", path.display());
    }
    let progress = Arc::new(Progress::new("backing up", "pages")?);
    let told = progress.clone();
    store
        .backup_observed(path, Arc::new(move |done, total| told.set(done, total, "")))
        .await
        .with_context(|| format!("cannot back up to {}", path.display()))?;
    progress.finish();
    println!("backed up {} to {}", store.describe(), path.display());
    Ok(())
}

pub async fn prune(store: &Store, older_than: Duration) -> anyhow::Result<()> {
    anyhow::ensure!(
        older_than >= SHORTEST_RETENTION,
        "--older-than must be at least 96h: the platform retries for 96 hours"
    );
    let cutoff = store::unix_ms_now().saturating_sub(older_than.as_millis() as i64);
    let total = store.prune_estimate(cutoff).await?.total() as u64;
    let progress = Progress::new("pruning", "rows")?;
    progress.set(0, total, "");
    let mut done = 0u64;
    let pruned = store
        .prune_observed(cutoff, &mut |batch| {
            done += batch.total() as u64;
            progress.set(done, total, "");
        })
        .await?;
    progress.finish();
    println!(
        "pruned {} deliveries, {} jobs, {} events, {} API call records",
        pruned.deliveries, pruned.jobs, pruned.events, pruned.fetches
    );
    Ok(())
}

pub async fn copy_store(from: &Location, to: &Location) -> anyhow::Result<()> {
    if from == to {
        anyhow::bail!("--from and --to name the same store");
    }
    let progress = Progress::new("copying", "rows")?;
    let copied = store::copy::copy(from, to, &mut |p| progress.set(p.copied, p.total, p.table))
        .await
        .with_context(|| format!("cannot copy {} to {}", from.describe(), to.describe()))?;
    progress.finish();
    for (table, rows) in &copied.tables {
        println!("{table:<14} {rows:>10} rows");
    }
    println!(
        "copied {} to {}: every count verified",
        from.describe(),
        to.describe()
    );
    Ok(())
}
