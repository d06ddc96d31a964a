//! A hold's mark inside the deciding transaction: placed once per
//! (account, kind, subject), and its state read by the guard that waits
//! on it. The decision writers hold a backend's own connection, so each
//! text runs through the backend's own call; `holds.rs` lists and answers
//! holds for a person.

use rusqlite::OptionalExtension;

use super::StoreError;
use super::sql::{Conn, Sql, Text};
use crate::domain::{HoldMark, HoldState};

/// A hold is placed once per (account, kind, subject); placing it again
/// changes nothing.
static PLACE: Sql = Sql::new(
    "INSERT INTO holds (account, kind, subject, state, reason, evidence, job_id, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     ON CONFLICT (account, kind, subject) DO NOTHING",
);

static STATE: Sql =
    Sql::new("SELECT state FROM holds WHERE account = $1 AND kind = $2 AND subject = $3");

/// `Mark::Hold` on SQLite's writer connection.
pub(super) fn place_sqlite(
    conn: &rusqlite::Connection,
    account: &str,
    h: &HoldMark,
    job_id: Option<i64>,
    now: i64,
) -> rusqlite::Result<()> {
    conn.prepare_cached(&PLACE.sqlite())?
        .execute(rusqlite::params![
            account,
            h.kind,
            h.subject,
            HoldState::Held,
            h.reason,
            h.evidence,
            job_id,
            now
        ])?;
    Ok(())
}

/// A hold's state, for `Guard::HoldApproved`, on SQLite's writer connection.
pub(super) fn state_sqlite(
    conn: &rusqlite::Connection,
    account: &str,
    kind: &str,
    subject: &str,
) -> rusqlite::Result<Option<HoldState>> {
    conn.prepare_cached(&STATE.sqlite())?
        .query_row(rusqlite::params![account, kind, subject], |r| r.get(0))
        .optional()
}

/// `Mark::Hold` in a PostgreSQL transaction.
pub(super) async fn place_pg(
    tx: &deadpool_postgres::Transaction<'_>,
    account: &str,
    h: &HoldMark,
    job_id: Option<i64>,
    now: i64,
) -> Result<(), StoreError> {
    Conn::PgTx(tx)
        .execute(
            &PLACE,
            &[
                &account,
                &h.kind,
                &h.subject,
                &HoldState::Held,
                &h.reason,
                &h.evidence,
                &job_id,
                &now,
            ],
        )
        .await?;
    Ok(())
}

/// The states of the holds `guards` name (`Guard::HoldApproved`), in a
/// PostgreSQL transaction.
pub(super) async fn states_pg(
    tx: &deadpool_postgres::Transaction<'_>,
    account: &str,
    guards: &[crate::domain::Guard],
) -> Result<std::collections::HashMap<(String, String), HoldState>, StoreError> {
    let mut states = std::collections::HashMap::new();
    for (kind, subject) in guards.iter().filter_map(crate::domain::Guard::hold) {
        let state: Option<HoldState> = Conn::PgTx(tx)
            .query_opt(&STATE, &[&account, &kind, &subject], |r| r.get(0))
            .await?;
        if let Some(state) = state {
            states.insert((kind.to_string(), subject.to_string()), state);
        }
    }
    Ok(states)
}
