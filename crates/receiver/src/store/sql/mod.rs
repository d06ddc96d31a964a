//! Each query written once, for both backends. A query is one SQL text
//! (`$N` placeholders, the SQL both dialects read) and one row mapping; a
//! `Conn` runs it on SQLite or on PostgreSQL. Where the dialects truly
//! differ, the function that needs it holds both forms side by side,
//! choosing by `Conn::dialect`.
//!
//! Query functions are `async fn`s over `&Conn`. On PostgreSQL they await
//! the server; on SQLite they never wait (the driver is synchronous), so a
//! backend runs them to completion in place (`run_sqlite`), on the thread
//! that holds the connection: the writer's, or a reader's off the runtime.

mod text;
mod value;

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

use deadpool_postgres::GenericClient;
use futures_util::FutureExt;
use tokio_postgres::types::ToSql;

use super::StoreError;
pub(crate) use text::sql;
pub use text::{Sql, Text};
pub use value::{Col, Param, Value};

/// Which SQL a connection speaks, for the few places they differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    /// `sqlite` on SQLite, `postgres` on PostgreSQL.
    pub fn pick<T>(self, sqlite: T, postgres: T) -> T {
        match self {
            Dialect::Sqlite => sqlite,
            Dialect::Postgres => postgres,
        }
    }
}

/// A connection, or a transaction, of either backend. SQLite's sits in a
/// mutex so that a query function's future is `Send` whatever backend runs
/// it; the lock is taken per statement and never contended.
pub enum Conn<'a> {
    Sqlite(&'a Mutex<rusqlite::Connection>),
    Pg(&'a deadpool_postgres::Client),
    PgTx(&'a deadpool_postgres::Transaction<'a>),
}

/// A query function's future, as the backends run it.
pub type Run<'c, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'c>>;

/// One row, read by column number.
pub enum Row<'r> {
    Sqlite(&'r rusqlite::Row<'r>),
    Pg(&'r tokio_postgres::Row),
}

impl Row<'_> {
    pub fn get<T: Col>(&self, index: usize) -> Result<T, StoreError> {
        let got = match self {
            Row::Sqlite(r) => r
                .get_ref(index)
                .map_err(|e| e.to_string())
                .and_then(T::from_sqlite),
            Row::Pg(r) => T::from_pg(r, index),
        };
        got.map_err(|e| StoreError::Database(format!("column {index}: {e}")))
    }
}

type Params<'p> = &'p [&'p dyn Param];

impl Conn<'_> {
    pub fn dialect(&self) -> Dialect {
        match self {
            Conn::Sqlite(_) => Dialect::Sqlite,
            Conn::Pg(_) | Conn::PgTx(_) => Dialect::Postgres,
        }
    }

    /// SQLite's `INDEXED BY index`, where its planner would choose
    /// another; nothing on PostgreSQL, whose planner needs no such hint.
    pub fn indexed_by(&self, index: &str) -> String {
        match self.dialect() {
            Dialect::Sqlite => format!("INDEXED BY {index}"),
            Dialect::Postgres => String::new(),
        }
    }

    /// Every row, each through `map`.
    pub async fn query<T>(
        &self,
        sql: &(impl Text + ?Sized),
        params: Params<'_>,
        mut map: impl FnMut(&Row<'_>) -> Result<T, StoreError> + Send,
    ) -> Result<Vec<T>, StoreError> {
        let values: Vec<Value<'_>> = params.iter().map(|p| p.value()).collect();
        match self {
            Conn::Sqlite(m) => {
                let c = lock(m);
                let mut st = c.prepare_cached(&sql.sqlite())?;
                let mut rows = st.query(rusqlite::params_from_iter(values.iter()))?;
                let mut out = Vec::new();
                while let Some(r) = rows.next()? {
                    out.push(map(&Row::Sqlite(r))?);
                }
                Ok(out)
            }
            Conn::Pg(c) => pg_query(&**c, sql.postgres(), &values, map).await,
            Conn::PgTx(c) => pg_query(*c, sql.postgres(), &values, map).await,
        }
    }

    /// The first row, if any.
    pub async fn query_opt<T>(
        &self,
        sql: &(impl Text + ?Sized),
        params: Params<'_>,
        map: impl FnMut(&Row<'_>) -> Result<T, StoreError> + Send,
    ) -> Result<Option<T>, StoreError> {
        Ok(self.query(sql, params, map).await?.into_iter().next())
    }

    /// The one row the query must give.
    pub async fn query_one<T>(
        &self,
        sql: &(impl Text + ?Sized),
        params: Params<'_>,
        map: impl FnMut(&Row<'_>) -> Result<T, StoreError> + Send,
    ) -> Result<T, StoreError> {
        self.query_opt(sql, params, map)
            .await?
            .ok_or_else(|| StoreError::Database("the query returned no row".into()))
    }

    /// Runs a statement; the rows it changed.
    pub async fn execute(
        &self,
        sql: &(impl Text + ?Sized),
        params: Params<'_>,
    ) -> Result<u64, StoreError> {
        let values: Vec<Value<'_>> = params.iter().map(|p| p.value()).collect();
        match self {
            Conn::Sqlite(m) => {
                let c = lock(m);
                let mut st = c.prepare_cached(&sql.sqlite())?;
                Ok(st.execute(rusqlite::params_from_iter(values.iter()))? as u64)
            }
            Conn::Pg(c) => pg_execute(&**c, sql.postgres(), &values).await,
            Conn::PgTx(c) => pg_execute(*c, sql.postgres(), &values).await,
        }
    }
}

fn lock(m: &Mutex<rusqlite::Connection>) -> std::sync::MutexGuard<'_, rusqlite::Connection> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn pg_params<'v>(values: &'v [Value<'_>]) -> Vec<&'v (dyn ToSql + Sync)> {
    values.iter().map(|v| v as &(dyn ToSql + Sync)).collect()
}

async fn pg_query<T>(
    c: &impl GenericClient,
    sql: &str,
    values: &[Value<'_>],
    mut map: impl FnMut(&Row<'_>) -> Result<T, StoreError>,
) -> Result<Vec<T>, StoreError> {
    let st = c.prepare_cached(sql).await?;
    let rows = c.query(&st, &pg_params(values)).await?;
    rows.iter().map(|r| map(&Row::Pg(r))).collect()
}

async fn pg_execute(
    c: &impl GenericClient,
    sql: &str,
    values: &[Value<'_>],
) -> Result<u64, StoreError> {
    let st = c.prepare_cached(sql).await?;
    Ok(c.execute(&st, &pg_params(values)).await?)
}

/// Runs a query function on a SQLite connection, here and now: it never
/// waits, so one poll finishes it.
pub fn run_sqlite<T>(
    conn: &Mutex<rusqlite::Connection>,
    f: impl for<'c> FnOnce(&'c Conn<'c>) -> Run<'c, T>,
) -> Result<T, StoreError> {
    let c = Conn::Sqlite(conn);
    f(&c).now_or_never().unwrap_or_else(|| {
        Err(StoreError::Database(
            "a SQLite query function waited for something".into(),
        ))
    })
}
