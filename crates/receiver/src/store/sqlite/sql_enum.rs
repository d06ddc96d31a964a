//! SQLite conversions for the `#[repr(i16)]` state enums of `domain`: each
//! is stored as its number, and an unknown number read back is an error,
//! not a guess.

use crate::domain::attention::AlertKind;
use crate::domain::{
    Action, AuditOutcome, DestinationState, EventState, HoldState, JobKind, JobState, Kind, Lane,
    Review, SignatureStatus, Via,
};

/// Implements `ToSql`/`FromSql` for fieldless `#[repr(i16)]` enums; every
/// variant is read back through `all()`, so a new one needs no edit here.
macro_rules! sql_enum {
    ($($ty:ident),+) => {$(
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
                $ty::all()
                    .find(|v| *v as i16 as i64 == n)
                    .ok_or(rusqlite::types::FromSqlError::OutOfRange(n))
            }
        }
    )+};
}

sql_enum!(
    AlertKind,
    Kind,
    JobKind,
    JobState,
    Lane,
    EventState,
    DestinationState,
    SignatureStatus,
    Review,
    HoldState,
    Via,
    Action,
    AuditOutcome
);

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
