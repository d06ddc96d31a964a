//! The SQLite side of `copy-store`: the file taken as its one owner (so no
//! server holds it meanwhile), read and written on blocking threads.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::Connection;
use rusqlite::types::{Value, ValueRef};
use tokio::sync::mpsc;

use super::files::{open_connection, take_ownership};
use super::migrations;
use crate::store::StoreError;
use crate::store::tables::{BATCH, Cell, Table, unfit};

pub struct Side {
    conn: Arc<Mutex<Connection>>,
    _owner: Arc<std::fs::File>,
}

impl Side {
    /// An existing database at the current schema version.
    pub async fn source(path: &Path) -> Result<Side, StoreError> {
        if !path.exists() {
            return Err(StoreError::Io {
                context: format!("no database at {}", path.display()),
                source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
            });
        }
        let path = path.to_path_buf();
        blocking(move || {
            let owner = take_ownership(&path)?;
            let conn = open_connection(&path)?;
            let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
            if version > migrations::LATEST {
                return Err(StoreError::TooNew {
                    found: version,
                    known: migrations::LATEST,
                });
            }
            if version < migrations::LATEST {
                return Err(StoreError::Behind {
                    found: version,
                    known: migrations::LATEST,
                });
            }
            Ok(Side::new(conn, owner))
        })
        .await
    }

    /// A database created or migrated for the copy.
    pub async fn target(path: &Path) -> Result<Side, StoreError> {
        let path: PathBuf = path.to_path_buf();
        blocking(move || {
            let owner = take_ownership(&path)?;
            let mut conn = open_connection(&path)?;
            migrations::migrate(&mut conn)?;
            Ok(Side::new(conn, owner))
        })
        .await
    }

    fn new(conn: Connection, owner: std::fs::File) -> Side {
        Side {
            conn: Arc::new(Mutex::new(conn)),
            _owner: Arc::new(owner),
        }
    }

    fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> impl Future<Output = Result<T, StoreError>> {
        let conn = self.conn.clone();
        blocking(move || f(&mut conn.lock().unwrap_or_else(|p| p.into_inner())))
    }

    pub async fn count(&self, table: &'static Table) -> Result<u64, StoreError> {
        self.with(move |c| {
            let n: i64 = c.query_row(&format!("SELECT count(*) FROM {}", table.name), [], |r| {
                r.get(0)
            })?;
            Ok(n as u64)
        })
        .await
    }

    /// Sends every row, in batches, until done or the receiver is gone.
    pub async fn export(
        &self,
        table: &'static Table,
        to: mpsc::Sender<Vec<Vec<Cell>>>,
    ) -> Result<(), StoreError> {
        self.with(move |c| {
            let sql = format!(
                "SELECT {} FROM {} ORDER BY {}",
                table.column_list(),
                table.name,
                table.order_by.unwrap_or("rowid")
            );
            let mut stmt = c.prepare(&sql)?;
            let mut rows = stmt.query([])?;
            let mut batch = Vec::with_capacity(BATCH);
            while let Some(row) = rows.next()? {
                let mut cells = Vec::with_capacity(table.columns.len());
                for (i, (column, _)) in table.columns.iter().enumerate() {
                    cells.push(match row.get_ref(i)? {
                        ValueRef::Null => Cell::Null,
                        ValueRef::Integer(n) => Cell::Int(n),
                        ValueRef::Real(_) => return Err(unfit(table, column, "a real number")),
                        ValueRef::Text(t) => Cell::Text(
                            String::from_utf8(t.to_vec())
                                .map_err(|_| unfit(table, column, "text that is not UTF-8"))?,
                        ),
                        ValueRef::Blob(b) => Cell::Bytes(b.to_vec()),
                    });
                }
                batch.push(cells);
                if batch.len() == BATCH && to.blocking_send(std::mem::take(&mut batch)).is_err() {
                    return Ok(());
                }
            }
            if !batch.is_empty() {
                let _ = to.blocking_send(batch);
            }
            Ok(())
        })
        .await
    }

    /// Writes `rows` in one transaction.
    pub async fn import(
        &self,
        table: &'static Table,
        rows: Vec<Vec<Cell>>,
    ) -> Result<(), StoreError> {
        self.with(move |c| {
            let tx = c.transaction()?;
            {
                let marks = (1..=table.columns.len())
                    .map(|i| format!("?{i}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                let mut stmt = tx.prepare_cached(&format!(
                    "INSERT INTO {} ({}) VALUES ({marks})",
                    table.name,
                    table.column_list()
                ))?;
                for row in rows {
                    let mut values = Vec::with_capacity(row.len());
                    for (cell, (column, col)) in row.into_iter().zip(table.columns) {
                        values.push(
                            match cell.fit(*col).map_err(|why| unfit(table, column, why))? {
                                Cell::Null => Value::Null,
                                Cell::Int(n) => Value::Integer(n),
                                Cell::Text(t) => Value::Text(t),
                                Cell::Bytes(b) => Value::Blob(b),
                            },
                        );
                    }
                    stmt.execute(rusqlite::params_from_iter(values))?;
                }
            }
            tx.commit()?;
            Ok(())
        })
        .await
    }

    /// Nothing to do: an `INTEGER PRIMARY KEY` goes on from the largest id.
    pub async fn finish(&self) -> Result<(), StoreError> {
        Ok(())
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| StoreError::Database(format!("the copy's database thread failed: {e}")))?
}
