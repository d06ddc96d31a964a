//! The stored state enums as database values: each `#[repr(i16)]` enum is
//! its number (SMALLINT on PostgreSQL, INTEGER on SQLite), and an unknown
//! number read back is an error, not a guess. Compiled only with the
//! `sqlite` or `postgres` feature, which the receiver's store enables; the
//! orphan rule is why these impls live beside the types.

use super::attention::AlertKind;
use super::{
    Action, AuditOutcome, DestinationState, EventState, HoldState, JobKind, JobState, Kind, Lane,
    Review, SignatureStatus, Via,
};

/// Runs `$m!` over every stored enum, so a new one is named once.
macro_rules! stored_enums {
    ($m:ident) => {
        $m!(
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
    };
}

#[cfg(feature = "sqlite")]
macro_rules! sqlite_enum {
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

#[cfg(feature = "sqlite")]
stored_enums!(sqlite_enum);

#[cfg(feature = "postgres")]
macro_rules! pg_enum {
    ($($ty:ident),+) => {$(
        impl postgres_types::ToSql for $ty {
            fn to_sql(
                &self,
                ty: &postgres_types::Type,
                out: &mut bytes::BytesMut,
            ) -> Result<postgres_types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
                (*self as i16).to_sql(ty, out)
            }
            postgres_types::accepts!(INT2);
            postgres_types::to_sql_checked!();
        }

        impl<'a> postgres_types::FromSql<'a> for $ty {
            fn from_sql(
                ty: &postgres_types::Type,
                raw: &'a [u8],
            ) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
                let n = i16::from_sql(ty, raw)?;
                $ty::all()
                    .find(|v| *v as i16 == n)
                    .ok_or_else(|| format!("{n} is not a {}", stringify!($ty)).into())
            }
            postgres_types::accepts!(INT2);
        }
    )+};
}

#[cfg(feature = "postgres")]
stored_enums!(pg_enum);

#[cfg(all(test, feature = "sqlite"))]
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
