//! SQLite conversions for the `#[repr(i16)]` state enums of `domain`: each
//! is stored as its number, and an unknown number read back is an error,
//! not a guess.

use crate::domain::{EventState, JobKind, JobState, Kind, Review, SignatureStatus};

/// Implements `ToSql`/`FromSql` for a fieldless `#[repr(i16)]` enum.
macro_rules! sql_enum {
    ($ty:ident { $($variant:ident),+ $(,)? }) => {
        impl rusqlite::types::ToSql for $ty {
            fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
                Ok(rusqlite::types::ToSqlOutput::from(*self as i16 as i64))
            }
        }

        impl rusqlite::types::FromSql for $ty {
            fn column_result(
                value: rusqlite::types::ValueRef<'_>,
            ) -> rusqlite::types::FromSqlResult<Self> {
                let n = value.as_i64()?;
                $(if n == $ty::$variant as i16 as i64 {
                    return Ok($ty::$variant);
                })+
                Err(rusqlite::types::FromSqlError::OutOfRange(n))
            }
        }
    };
}

sql_enum!(Kind {
    Ipn,
    Webhook,
    IntentWebhook,
    Reconcile
});
sql_enum!(JobKind {
    Payment,
    MerchantOrder,
    Chargeback,
    PaymentIntent,
    FraudAlert,
    PlatformOrder,
});
sql_enum!(JobState {
    Pending,
    Running,
    Done,
    Dead
});
sql_enum!(EventState {
    Pending,
    Delivered,
    Dead,
    Stored,
});
sql_enum!(SignatureStatus {
    NotChecked,
    Valid,
    Invalid,
    Unsigned,
    ValidUnbound,
});
sql_enum!(Review {
    Held,
    Confirmed,
    Dismissed
});

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::Connection;

    #[test]
    fn enums_round_trip_and_unknown_numbers_fail() {
        let conn = Connection::open_in_memory().unwrap();
        let back: JobState = conn
            .query_row("SELECT ?1", [JobState::Dead], |r| r.get(0))
            .unwrap();
        assert_eq!(back, JobState::Dead);
        let bad: rusqlite::Result<JobState> = conn.query_row("SELECT 42", [], |r| r.get(0));
        assert!(bad.is_err());
    }
}
