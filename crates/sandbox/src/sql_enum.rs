//! SQLite conversions for the sandbox's `#[repr(i16)]` state enums: each
//! is stored as its number, and an unknown number read back is an error,
//! not a guess.

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
pub(crate) use sql_enum;
