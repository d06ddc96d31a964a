//! PostgreSQL's and the pool's errors as `StoreError`, with every cause.

use crate::store::StoreError;

impl From<tokio_postgres::Error> for StoreError {
    fn from(e: tokio_postgres::Error) -> StoreError {
        // A database error has a code; anything else (a connection gone,
        // a timeout) means nothing was committed.
        if let Some(db) = e.as_db_error() {
            if db.code() == &tokio_postgres::error::SqlState::DISK_FULL {
                return StoreError::DiskFull(db.message().to_string());
            }
            // The error's own Display says only "db error".
            StoreError::Database(format!("{} ({})", db.message(), db.code().code()))
        } else {
            StoreError::Unavailable(with_causes(&e))
        }
    }
}

impl From<deadpool_postgres::PoolError> for StoreError {
    fn from(e: deadpool_postgres::PoolError) -> StoreError {
        StoreError::Unavailable(format!("no database connection: {}", with_causes(&e)))
    }
}

/// An error and what caused it, on one line: the cause is what a person
/// acts on ("error performing TLS handshake" alone says too little).
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut line = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !line.contains(&text) {
            line = format!("{line}: {text}");
        }
        cause = c.source();
    }
    line
}
