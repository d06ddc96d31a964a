//! How work reaches a SQLite file: writes through the writer's group commit
//! (or, a client's, a transaction of its own), reads on a pooled connection
//! off the async runtime; for query functions written once (`store::sql`)
//! and for this backend's own.

use std::sync::Mutex;

use rusqlite::Connection;

use super::files::open_connection;
use super::{READ_POOL, SqliteStore, Writes, writer};
use crate::store::StoreError;
use crate::store::sql::{Conn, Run, run_sqlite};

impl SqliteStore {
    /// Runs `f` in a durable transaction: the writer's next group commit,
    /// or (a client) a transaction of its own.
    pub(super) async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: Fn(&Connection) -> Result<T, rusqlite::Error> + Send + 'static,
    {
        match &self.writes {
            Writes::Thread(w) => w.write(f).await,
            Writes::Direct(conn) => {
                let conn = conn.clone();
                tokio::task::spawn_blocking(move || {
                    let mut conn = conn.lock().unwrap_or_else(|p| p.into_inner());
                    let tx =
                        conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
                    let out = f(&tx)?;
                    tx.commit()?;
                    Ok(out)
                })
                .await
                .map_err(|e| StoreError::Unavailable(format!("write task failed: {e}")))?
            }
        }
    }

    /// Runs a query function in a durable transaction: the writer's next
    /// group commit, or (a client) a transaction of its own. `Fn`: a
    /// batch that fails is run again one operation at a time.
    pub async fn write_conn<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: for<'c> Fn(&'c Conn<'c>) -> Run<'c, T> + Send + 'static,
    {
        match &self.writes {
            Writes::Thread(w) => w.write_conn(f).await,
            Writes::Direct(conn) => {
                let conn = conn.clone();
                tokio::task::spawn_blocking(move || {
                    writer::lock(&conn).execute_batch("BEGIN IMMEDIATE")?;
                    let out = run_sqlite(&conn, f);
                    let c = writer::lock(&conn);
                    match out {
                        Ok(v) => c
                            .execute_batch("COMMIT")
                            .map(|_| v)
                            .map_err(StoreError::from),
                        Err(e) => {
                            if !c.is_autocommit() {
                                c.execute_batch("ROLLBACK")?;
                            }
                            Err(e)
                        }
                    }
                })
                .await
                .map_err(|e| StoreError::Unavailable(format!("write task failed: {e}")))?
            }
        }
    }

    /// Runs a query function on a read connection, off the async runtime.
    pub async fn read_conn<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c Conn<'c>) -> Run<'c, T> + Send + 'static,
    {
        let path = self.path.clone();
        let pool = self.pool_take();
        let span = tracing::Span::current();
        let (out, conn) = tokio::task::spawn_blocking(move || {
            let _entered = span.enter();
            let conn = Mutex::new(match pool {
                Some(c) => c,
                None => open_connection(&path)?,
            });
            let out = run_sqlite(&conn, f);
            Ok::<_, StoreError>((out, conn.into_inner().unwrap_or_else(|p| p.into_inner())))
        })
        .await
        .map_err(|e| StoreError::Unavailable(format!("read task failed: {e}")))??;
        self.pool_put(conn);
        out
    }

    /// Runs `f` on a read connection off the async runtime.
    pub(super) async fn read<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, rusqlite::Error> + Send + 'static,
    {
        self.read_raw(move |c| f(c).map_err(StoreError::from)).await
    }

    pub(super) async fn read_raw<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let path = self.path.clone();
        let pool = self.pool_take();
        let span = tracing::Span::current();
        let (out, conn) = tokio::task::spawn_blocking(move || {
            let _entered = span.enter();
            let conn = match pool {
                Some(c) => c,
                None => open_connection(&path)?,
            };
            let out = f(&conn);
            Ok::<_, StoreError>((out, conn))
        })
        .await
        .map_err(|e| StoreError::Unavailable(format!("read task failed: {e}")))??;
        self.pool_put(conn);
        out
    }

    fn pool_take(&self) -> Option<Connection> {
        self.readers.lock().ok().and_then(|mut p| p.pop())
    }

    fn pool_put(&self, conn: Connection) {
        if let Ok(mut pool) = self.readers.lock()
            && pool.len() < READ_POOL
        {
            pool.push(conn);
        }
    }
}
