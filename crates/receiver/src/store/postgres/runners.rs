//! How work reaches PostgreSQL for query functions written once
//! (`store::sql`): a read on a pooled connection, a write in a transaction
//! of its own.

use super::PgStore;
use crate::store::StoreError;
use crate::store::sql::{Conn, Run};

impl PgStore {
    /// Runs a query function on a pooled connection.
    pub async fn read_conn<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        F: for<'c> FnOnce(&'c Conn<'c>) -> Run<'c, T>,
    {
        let client = self.client().await?;
        f(&Conn::Pg(&client)).await
    }

    /// Runs a query function in a transaction of its own.
    pub async fn write_conn<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        F: for<'c> Fn(&'c Conn<'c>) -> Run<'c, T>,
    {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let out = f(&Conn::PgTx(&tx)).await?;
        tx.commit().await?;
        Ok(out)
    }
}
