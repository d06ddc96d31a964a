//! Moving a whole store to another, of either kind (`pointhook copy-store`):
//! offline (neither side may be served meanwhile), table by table in
//! batches streamed from one to the other, into a migrated, empty target;
//! then verified by counting every table on both sides.
//!
//! The tables are described once, neutrally, in `store::tables`; each
//! backend reads and writes rows of `Cell`s by that description.

use tokio::sync::mpsc;

use super::tables::{Cell, TABLES, Table};
use super::{Location, StoreError, postgres, sqlite};

/// Where a copy stands, for a progress bar.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub table: &'static str,
    /// Rows copied so far, over every table.
    pub copied: u64,
    /// Rows to copy, over every table.
    pub total: u64,
}

/// What was copied: rows per table, counted again on both sides.
#[derive(Debug, Clone)]
pub struct Copied {
    pub tables: Vec<(&'static str, u64)>,
}

/// One side of a copy, opened for it alone.
pub(super) enum Side {
    Sqlite(sqlite::copy::Side),
    Postgres(postgres::copy::Side),
}

impl Side {
    async fn source(location: &Location) -> Result<Side, StoreError> {
        Ok(match location {
            Location::Sqlite(path) => Side::Sqlite(sqlite::copy::Side::source(path).await?),
            Location::Postgres(url) => Side::Postgres(postgres::copy::Side::source(url).await?),
        })
    }

    async fn target(location: &Location) -> Result<Side, StoreError> {
        Ok(match location {
            Location::Sqlite(path) => Side::Sqlite(sqlite::copy::Side::target(path).await?),
            Location::Postgres(url) => Side::Postgres(postgres::copy::Side::target(url).await?),
        })
    }

    async fn count(&self, table: &'static Table) -> Result<u64, StoreError> {
        match self {
            Side::Sqlite(s) => s.count(table).await,
            Side::Postgres(s) => s.count(table).await,
        }
    }

    async fn export(
        &self,
        table: &'static Table,
        to: mpsc::Sender<Vec<Vec<Cell>>>,
    ) -> Result<(), StoreError> {
        match self {
            Side::Sqlite(s) => s.export(table, to).await,
            Side::Postgres(s) => s.export(table, to).await,
        }
    }

    async fn import(&self, table: &'static Table, rows: Vec<Vec<Cell>>) -> Result<(), StoreError> {
        match self {
            Side::Sqlite(s) => s.import(table, rows).await,
            Side::Postgres(s) => s.import(table, rows).await,
        }
    }

    async fn finish(&self) -> Result<(), StoreError> {
        match self {
            Side::Sqlite(s) => s.finish().await,
            Side::Postgres(s) => s.finish().await,
        }
    }
}

/// Copies every row of `from` into `to` (created and migrated if need be,
/// and empty), telling `progress` after each batch; then counts again.
pub async fn copy(
    from: &Location,
    to: &Location,
    progress: &mut (dyn FnMut(Progress) + Send),
) -> Result<Copied, StoreError> {
    let source = Side::source(from).await?;
    let target = Side::target(to).await?;
    for table in TABLES {
        if target.count(table).await? > 0 {
            return Err(StoreError::NotEmpty {
                target: to.describe(),
                table: table.name,
            });
        }
    }
    let mut totals = Vec::with_capacity(TABLES.len());
    for table in TABLES {
        totals.push(source.count(table).await?);
    }
    let total = totals.iter().sum();
    let mut copied = 0;
    for table in TABLES {
        progress(Progress {
            table: table.name,
            copied,
            total,
        });
        // The source reads ahead while the target writes.
        let (tx, rx) = mpsc::channel(4);
        let reading = source.export(table, tx);
        let writing = async {
            // Dropped with this block: a failed write stops the reading.
            let mut rx = rx;
            while let Some(rows) = rx.recv().await {
                let n = rows.len() as u64;
                target.import(table, rows).await?;
                copied += n;
                progress(Progress {
                    table: table.name,
                    copied,
                    total,
                });
            }
            Ok::<_, StoreError>(())
        };
        let (read, written) = tokio::join!(reading, writing);
        read?;
        written?;
    }
    target.finish().await?;
    let mut tables = Vec::with_capacity(TABLES.len());
    for (table, expected) in TABLES.iter().zip(totals) {
        let (there, here) = (source.count(table).await?, target.count(table).await?);
        if there != expected || here != expected {
            return Err(StoreError::CopyMismatch {
                table: table.name,
                in_source: there,
                in_target: here,
            });
        }
        tables.push((table.name, here));
    }
    Ok(Copied { tables })
}
