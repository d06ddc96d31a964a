//! Every statement of the hot paths is prepared once per connection and
//! kept (its text is fixed, so the cache stays small): a call is then one
//! round trip with no parse and no planning, where a bare string costs two
//! round trips, a parse and a plan each time.

use deadpool_postgres::GenericClient;
use tokio_postgres::Statement;
use tokio_postgres::types::ToSql;

use crate::store::StoreError;

/// Parameters bound to one statement.
pub type Params<'a> = Vec<&'a (dyn ToSql + Sync)>;

pub async fn prepared(tx: &impl GenericClient, sql: &str) -> Result<Statement, StoreError> {
    Ok(tx.prepare_cached(sql).await?)
}
