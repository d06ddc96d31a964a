//! The PostgreSQL side of `copy-store`: one connection of its own, refused
//! while an instance is connected to the database. Rows go in with binary
//! `COPY`, ids as they were; the id generators then start past them.

use std::str::FromStr;

use futures_util::{StreamExt, pin_mut};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_postgres::binary_copy::BinaryCopyInWriter;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, Row};

use super::migrations;
use crate::store::StoreError;
use crate::store::postgres::redacted;
use crate::store::tables::{BATCH, Cell, Col, TABLES, Table, unfit};

/// The name instances connect with (`PgStore::pool`).
const INSTANCE: &str = "pointhook";

pub struct Side {
    client: Client,
    connection: JoinHandle<()>,
}

impl Drop for Side {
    fn drop(&mut self) {
        self.connection.abort();
    }
}

impl Side {
    /// An existing database at the current schema version.
    pub async fn source(url: &str) -> Result<Side, StoreError> {
        let side = Side::connect(url).await?;
        let version = migrations::version(&side.client).await?;
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
        Ok(side)
    }

    /// A database migrated for the copy.
    pub async fn target(url: &str) -> Result<Side, StoreError> {
        let mut side = Side::connect(url).await?;
        migrations::migrate(&mut side.client).await?;
        Ok(side)
    }

    async fn connect(url: &str) -> Result<Side, StoreError> {
        let mut config = tokio_postgres::Config::from_str(url).map_err(|e| StoreError::Open {
            target: redacted(url),
            message: e.to_string(),
        })?;
        config
            .application_name("pointhook-copy")
            .connect_timeout(std::time::Duration::from_secs(5));
        let (client, connection) = super::tls::connect(&config).await?;
        let side = Side { client, connection };
        let sessions: i64 = side
            .client
            .query_one(
                "SELECT count(*) FROM pg_stat_activity
                 WHERE datname = current_database() AND application_name = $1",
                &[&INSTANCE],
            )
            .await?
            .get(0);
        if sessions > 0 {
            return Err(StoreError::InUse {
                what: redacted(url),
                sessions,
            });
        }
        Ok(side)
    }

    pub async fn count(&self, table: &'static Table) -> Result<u64, StoreError> {
        let n: i64 = self
            .client
            .query_one(&format!("SELECT count(*) FROM {}", table.name), &[])
            .await?
            .get(0);
        Ok(n as u64)
    }

    /// Sends every row, in batches, until done or the receiver is gone.
    pub async fn export(
        &self,
        table: &'static Table,
        to: mpsc::Sender<Vec<Vec<Cell>>>,
    ) -> Result<(), StoreError> {
        let sql = format!(
            "SELECT {} FROM {} ORDER BY {}",
            table.column_list(),
            table.name,
            table.order_by.unwrap_or("seq")
        );
        let rows = self
            .client
            .query_raw(&sql, std::iter::empty::<i64>())
            .await?;
        pin_mut!(rows);
        let mut batch = Vec::with_capacity(BATCH);
        while let Some(row) = rows.next().await {
            batch.push(cells(table, &row?)?);
            if batch.len() == BATCH && to.send(std::mem::take(&mut batch)).await.is_err() {
                return Ok(());
            }
        }
        if !batch.is_empty() {
            let _ = to.send(batch).await;
        }
        Ok(())
    }

    /// Writes `rows` with one binary `COPY`.
    pub async fn import(
        &self,
        table: &'static Table,
        rows: Vec<Vec<Cell>>,
    ) -> Result<(), StoreError> {
        let sink = self
            .client
            .copy_in(&format!(
                "COPY {} ({}) FROM STDIN (FORMAT binary)",
                table.name,
                table.column_list()
            ))
            .await?;
        let types: Vec<Type> = table.columns.iter().map(|(_, c)| pg_type(*c)).collect();
        let writer = BinaryCopyInWriter::new(sink, &types);
        pin_mut!(writer);
        for row in rows {
            let mut values: Vec<Box<dyn ToSql + Sync + Send>> = Vec::with_capacity(row.len());
            for (cell, (column, col)) in row.into_iter().zip(table.columns) {
                let cell = cell.fit(*col).map_err(|why| unfit(table, column, why))?;
                values.push(value(cell, *col).map_err(|why| unfit(table, column, why))?);
            }
            let refs: Vec<&(dyn ToSql + Sync)> = values
                .iter()
                .map(|v| v.as_ref() as &(dyn ToSql + Sync))
                .collect();
            writer.as_mut().write(&refs).await?;
        }
        writer.finish().await?;
        Ok(())
    }

    /// Every generated id starts past the ids copied.
    pub async fn finish(&self) -> Result<(), StoreError> {
        for table in TABLES.iter().filter(|t| t.generated_id) {
            self.client
                .execute(
                    &format!(
                        "SELECT setval(pg_get_serial_sequence('{0}', 'id'), max(id)) FROM {0}
                         HAVING max(id) IS NOT NULL",
                        table.name
                    ),
                    &[],
                )
                .await?;
        }
        Ok(())
    }
}

fn pg_type(col: Col) -> Type {
    match col {
        Col::I64 => Type::INT8,
        Col::I32 => Type::INT4,
        Col::I16 => Type::INT2,
        Col::Bool => Type::BOOL,
        Col::Text => Type::TEXT,
        Col::Bytes => Type::BYTEA,
    }
}

fn cells(table: &Table, row: &Row) -> Result<Vec<Cell>, StoreError> {
    let mut out = Vec::with_capacity(table.columns.len());
    for (i, (_, col)) in table.columns.iter().enumerate() {
        let int = |n: Option<i64>| n.map_or(Cell::Null, Cell::Int);
        out.push(match col {
            Col::I64 => int(row.try_get::<_, Option<i64>>(i)?),
            Col::I32 => int(row.try_get::<_, Option<i32>>(i)?.map(i64::from)),
            Col::I16 => int(row.try_get::<_, Option<i16>>(i)?.map(i64::from)),
            Col::Bool => int(row.try_get::<_, Option<bool>>(i)?.map(i64::from)),
            Col::Text => row
                .try_get::<_, Option<String>>(i)?
                .map_or(Cell::Null, Cell::Text),
            Col::Bytes => row
                .try_get::<_, Option<Vec<u8>>>(i)?
                .map_or(Cell::Null, Cell::Bytes),
        });
    }
    Ok(out)
}

/// `cell` (already fitted to `col`) as the typed value `COPY` takes.
fn value(cell: Cell, col: Col) -> Result<Box<dyn ToSql + Sync + Send>, &'static str> {
    let int = match &cell {
        Cell::Int(n) => Some(*n),
        _ => None,
    };
    const RANGE: &str = "a number out of the column's range";
    Ok(match col {
        Col::I64 => Box::new(int),
        Col::I32 => Box::new(int.map(i32::try_from).transpose().map_err(|_| RANGE)?),
        Col::I16 => Box::new(int.map(i16::try_from).transpose().map_err(|_| RANGE)?),
        Col::Bool => Box::new(int.map(|n| n != 0)),
        Col::Text => Box::new(match cell {
            Cell::Text(t) => Some(t),
            _ => None,
        }),
        Col::Bytes => Box::new(match cell {
            Cell::Bytes(b) => Some(b),
            _ => None,
        }),
    })
}
