//! What each order is known by (`domain::refs`): kept in the transaction
//! that records a job's decisions, from what the job read; and the orders
//! a reference names, for the console's search. Written once for both
//! backends.

use crate::domain::{OrderRef, RefKind};
use crate::store::StoreError;
use crate::store::sql::{Conn, Sql, Text};

static KEEP: Sql = Sql::new(
    "INSERT INTO order_refs (account, kind, value, subject) VALUES ($1, $2, $3, $4)
     ON CONFLICT DO NOTHING",
);

static NAMED: Sql = Sql::new(
    "SELECT kind, subject FROM order_refs WHERE account = $1 AND value = $2
     ORDER BY subject, kind LIMIT 20",
);

/// `refs` on SQLite's writer connection, in its transaction.
pub(super) fn keep_sqlite(
    conn: &rusqlite::Connection,
    account: &str,
    refs: &[OrderRef],
) -> rusqlite::Result<()> {
    let mut st = conn.prepare_cached(&KEEP.sqlite())?;
    for r in refs {
        st.execute(rusqlite::params![
            account,
            r.kind.as_str(),
            r.value,
            r.subject
        ])?;
    }
    Ok(())
}

/// `refs` in a PostgreSQL transaction.
pub(super) async fn keep_pg(
    tx: &deadpool_postgres::Transaction<'_>,
    account: &str,
    refs: &[OrderRef],
) -> Result<(), StoreError> {
    for r in refs {
        Conn::PgTx(tx)
            .execute(&KEEP, &[&account, &r.kind.as_str(), &r.value, &r.subject])
            .await?;
    }
    Ok(())
}

/// The subjects `text` is a reference of in `account`, with what kind of
/// reference it is (an e-mail as typed or in lower case).
pub(super) async fn named_by(
    c: &Conn<'_>,
    account: &str,
    text: &str,
) -> Result<Vec<(RefKind, String)>, StoreError> {
    let mut found: Vec<(RefKind, String)> = Vec::new();
    let lower = RefKind::PayerEmail.normal(text);
    let mut values = vec![text];
    if lower != text && text.contains('@') {
        values.push(&lower);
    }
    for value in values {
        let rows: Vec<(String, String)> = c
            .query(&NAMED, &[&account, &value], |r| Ok((r.get(0)?, r.get(1)?)))
            .await?;
        for (kind, subject) in rows {
            if let Some(kind) = RefKind::parse(&kind)
                && !found.contains(&(kind, subject.clone()))
            {
                found.push((kind, subject));
            }
        }
    }
    Ok(found)
}
