//! SQLite conversions for the `model` state enums: each is stored as its
//! number, and an unknown number read back is an error, not a guess.

use crate::model::{DispatchState, FinalState, Form, MailState, TerminalStep};

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

sql_enum!(DispatchState {
    Pending,
    Sending,
    Acked,
    GivenUp,
    Dropped,
});

sql_enum!(Form {
    Ipn,
    Webhook,
    IntentWebhook,
});

sql_enum!(MailState {
    Pending,
    Sent,
    Skipped
});

sql_enum!(TerminalStep {
    OnTerminal,
    Processing,
    Final
});

sql_enum!(FinalState {
    Finished,
    ConfirmationRequired,
    Canceled,
    Error,
    Abandoned,
});
