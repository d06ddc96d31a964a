//! Moving a whole store to another, of either kind (`pointhook copy-store`):
//! offline (neither side may be served meanwhile), table by table in
//! batches streamed from one to the other, into a migrated, empty target;
//! then verified by counting every table on both sides.
//!
//! The tables are described here once, neutrally; each backend reads and
//! writes rows of [`Cell`]s by that description.

use tokio::sync::mpsc;

use super::{Location, StoreError, postgres, sqlite};

/// A column's type, as PostgreSQL keeps it (SQLite keeps every integer the
/// same way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Col {
    I64,
    I32,
    I16,
    Bool,
    Text,
    Bytes,
}

/// A table to copy: its columns in one order on both sides.
#[derive(Debug)]
pub struct Table {
    pub name: &'static str,
    pub columns: &'static [(&'static str, Col)],
    /// How to read it in a stable order: its key, or `None` for the
    /// insertion order (events: the order they are listed and posted in).
    pub order_by: Option<&'static str>,
    /// Its `id` is generated: the target's generator must start past the
    /// copied ids.
    pub generated_id: bool,
}

/// One value; booleans travel as 0 and 1.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Null,
    Int(i64),
    Text(String),
    Bytes(Vec<u8>),
}

impl Cell {
    /// The value as a column of type `col` keeps it, or why it cannot be.
    pub fn fit(self, col: Col) -> Result<Cell, &'static str> {
        match (col, self) {
            (_, Cell::Null) => Ok(Cell::Null),
            (I64 | I32 | I16 | Bool, Cell::Int(i)) => Ok(Cell::Int(i)),
            (Text, Cell::Text(t)) => Ok(Cell::Text(t)),
            (Text, Cell::Bytes(b)) => String::from_utf8(b)
                .map(Cell::Text)
                .map_err(|_| "bytes that are not UTF-8 in a text column"),
            (Bytes, Cell::Bytes(b)) => Ok(Cell::Bytes(b)),
            (Bytes, Cell::Text(t)) => Ok(Cell::Bytes(t.into_bytes())),
            (_, _) => Err("a value of another type"),
        }
    }
}

/// Why a row cannot be written where it goes.
pub(super) fn unfit(table: &Table, column: &str, why: &str) -> StoreError {
    StoreError::Database(format!("{}.{column}: {why}", table.name))
}

/// Rows sent from the source to the target at once.
pub const BATCH: usize = 1000;

use Col::*;

/// Every table that holds data. `health` is left out: a scratch row that
/// `/readyz` rewrites.
pub const TABLES: &[Table] = &[
    Table {
        name: "deliveries",
        columns: &[
            ("id", I64),
            ("received_at", I64),
            ("account", Text),
            ("kind", I16),
            ("topic", Text),
            ("resource_id", Text),
            ("notification_id", Text),
            ("source_news", Text),
            ("query", Text),
            ("headers", Text),
            ("body", Bytes),
            ("body_size", I64),
            ("remote_addr", Text),
            ("fingerprint", Bytes),
            ("duplicate_of", I64),
            ("signature", I16),
            ("job_key", Text),
            ("signature_key", Text),
        ],
        order_by: Some("id"),
        generated_id: true,
    },
    Table {
        name: "jobs",
        columns: &[
            ("id", I64),
            ("account", Text),
            ("job_key", Text),
            ("kind", I16),
            ("resource_id", Text),
            ("input_delivery_id", I64),
            ("work", Text),
            ("work_rank", I64),
            ("state", I16),
            ("rerun", Bool),
            ("attempts", I32),
            ("run_at", I64),
            ("lease_until", I64),
            ("last_error", Text),
            ("created_at", I64),
            ("updated_at", I64),
        ],
        order_by: Some("id"),
        generated_id: true,
    },
    Table {
        name: "decisions",
        columns: &[
            ("id", I64),
            ("account", Text),
            ("subject", Text),
            ("key", Text),
            ("event_type", Text),
            ("event_id", Text),
            ("job_id", I64),
            ("created_at", I64),
            ("reason", Text),
        ],
        order_by: Some("id"),
        generated_id: true,
    },
    Table {
        name: "events",
        columns: &[
            ("id", Text),
            ("account", Text),
            ("type", Text),
            ("subject", Text),
            ("body", Text),
            ("job_id", I64),
            ("created_at", I64),
            ("state", I16),
            ("attempts", I32),
            ("next_attempt_at", I64),
            ("last_error", Text),
            ("delivered_at", I64),
            ("lease_until", I64),
            ("unfinished", I32),
            ("gave_up", I32),
        ],
        order_by: None,
        generated_id: false,
    },
    Table {
        name: "outbox",
        columns: &[
            ("event_id", Text),
            ("destination", Text),
            ("state", I16),
            ("attempts", I32),
            ("next_attempt_at", I64),
            ("lease_until", I64),
            ("last_error", Text),
            ("delivered_at", I64),
            ("created_at", I64),
            ("queued_at", I64),
        ],
        order_by: None,
        generated_id: false,
    },
    Table {
        name: "destinations",
        columns: &[
            ("name", Text),
            ("url", Text),
            ("configured", Bool),
            ("state", I16),
            ("disabled_reason", Text),
            ("disabled_at", I64),
            ("failing_since", I64),
            ("last_success_at", I64),
            ("recovery_since", I64),
            ("recovery_at", I64),
            ("recovery_queued", I64),
            ("updated_at", I64),
        ],
        order_by: Some("name"),
        generated_id: false,
    },
    Table {
        name: "fetches",
        columns: &[
            ("id", I64),
            ("job_id", I64),
            ("account", Text),
            ("endpoint", Text),
            ("resource_id", Text),
            ("status", I32),
            ("elapsed_ms", I64),
            ("at", I64),
            ("seen", Text),
            ("body", Bytes),
        ],
        order_by: Some("id"),
        generated_id: true,
    },
    Table {
        name: "orders",
        columns: &[
            ("account", Text),
            ("order_id", Text),
            ("total_amount", Text),
            ("paid_amount", Text),
            ("released_at", I64),
            ("blocked_at", I64),
            ("at_risk_at", I64),
            ("updated_at", I64),
        ],
        order_by: Some("account, order_id"),
        generated_id: false,
    },
    Table {
        name: "order_blocks",
        columns: &[
            ("account", Text),
            ("order_id", Text),
            ("alert", Text),
            ("blocked_at", I64),
            ("lifted_at", I64),
            ("unauthenticated", Bool),
        ],
        order_by: Some("account, order_id, alert"),
        generated_id: false,
    },
    Table {
        name: "fraud_reviews",
        columns: &[
            ("id", I64),
            ("account", Text),
            ("job_key", Text),
            ("round", I32),
            ("alert", Text),
            ("merchant_order", Text),
            ("payment", Text),
            ("reason", Text),
            ("state", I16),
            ("delivery_id", I64),
            ("created_at", I64),
            ("decided_at", I64),
        ],
        order_by: Some("id"),
        generated_id: true,
    },
];

impl Table {
    pub fn column_list(&self) -> String {
        self.columns
            .iter()
            .map(|(c, _)| *c)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

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
