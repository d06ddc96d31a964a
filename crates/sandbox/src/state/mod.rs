//! The sandbox's state in SQLite (in memory, or a file that survives a
//! restart), and the only place that speaks SQL. Each submodule owns the
//! statements of its tables; callers hand `Db::call` a closure that runs
//! inside one transaction (committed when it returns `Ok`, rolled back
//! otherwise) and call those functions with the `Tx` it is given.
//!
//! - `accounts`: accounts, their presets and integrator settings;
//! - `resources`: resources as the API serves them, ids, intent events,
//!   what eventual consistency hides;
//! - `refunds`, `devices` (devices, their presets, terminal steps),
//!   `dispatches` (the queue, attempts, dropped notifications), `mails`,
//!   `quirks`, `orders` (the Orders API's versions, steps and keys);
//! - `schema`: the tables; `enums`: the state enums as integers.

mod enums;
mod schema;

pub mod accounts;
pub mod devices;
pub mod dispatches;
pub mod mails;
pub mod orders;
pub mod quirks;
pub mod refunds;
pub mod resources;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, Transaction};

/// What can go wrong with the state.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("cannot open the sandbox state {}: {source}", path.display())]
    Open {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("sandbox state: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("a sandbox state task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
}

pub type Result<T, E = StateError> = std::result::Result<T, E>;

/// One connection, used from blocking threads only.
#[derive(Clone)]
pub struct Db(Arc<Mutex<Connection>>);

/// A transaction in progress, handed to the closures of `Db::call`.
pub struct Tx<'c>(Transaction<'c>);

impl Db {
    /// `None`: in memory.
    pub fn open(path: Option<&Path>) -> Result<Db> {
        let opened = match path {
            Some(p) => Connection::open(p),
            None => Connection::open_in_memory(),
        };
        let conn = opened.map_err(|source| StateError::Open {
            path: path.map_or_else(|| PathBuf::from(":memory:"), Path::to_path_buf),
            source,
        })?;
        conn.pragma_update(None, "journal_mode", "wal")?;
        conn.execute_batch(schema::SCHEMA)?;
        // Attempts cut short by a restart are simply due again.
        dispatches::reset_sending(&conn)?;
        Ok(Db(Arc::new(Mutex::new(conn))))
    }

    /// Runs `f` in one transaction off the async runtime: committed when
    /// `f` answers `Ok`, rolled back when it answers `Err`.
    pub async fn call<T, E, F>(&self, f: F) -> Result<T, E>
    where
        T: Send + 'static,
        E: From<StateError> + Send + 'static,
        F: FnOnce(&Tx<'_>) -> Result<T, E> + Send + 'static,
    {
        let db = self.0.clone();
        tokio::task::spawn_blocking(move || Db(db).call_blocking(f))
            .await
            .map_err(|e| E::from(StateError::from(e)))?
    }

    /// `call`, on the calling thread.
    pub fn call_blocking<T, E>(&self, f: impl FnOnce(&Tx<'_>) -> Result<T, E>) -> Result<T, E>
    where
        E: From<StateError>,
    {
        let mut conn = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let tx = Tx(conn
            .transaction()
            .map_err(|e| E::from(StateError::from(e)))?);
        let out = f(&tx)?;
        tx.0.commit().map_err(|e| E::from(StateError::from(e)))?;
        Ok(out)
    }
}

/// A stored JSON text read back; a body that is not JSON reads as `null`.
fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or(serde_json::Value::Null)
}
