//! Values in and out of a query, the same on both backends.
//!
//! A parameter is turned into a `Value`, which each driver binds as its
//! column wants: an integer goes into PostgreSQL's SMALLINT, INTEGER or
//! BIGINT alike (range-checked), so Rust code uses `i64` throughout. A
//! column is read through `Col`, which widens the same way.

use std::error::Error;

use bytes::BytesMut;
use rusqlite::types::{ToSqlOutput, ValueRef};
use tokio_postgres::types::{FromSql, IsNull, ToSql, Type, to_sql_checked};

use crate::domain::attention::AlertKind;
use crate::domain::{
    Action, AuditOutcome, DestinationState, EventState, HoldState, JobKind, JobState, Kind, Lane,
    Review, SignatureStatus, Via,
};

/// One bound value, borrowed from the parameter.
#[derive(Debug, Clone, Copy)]
pub enum Value<'a> {
    Null,
    Int(i64),
    Bool(bool),
    Text(&'a str),
    Bytes(&'a [u8]),
}

/// What can be bound to a query on either backend.
pub trait Param: Sync {
    fn value(&self) -> Value<'_>;
}

impl Param for i64 {
    fn value(&self) -> Value<'_> {
        Value::Int(*self)
    }
}

impl Param for i32 {
    fn value(&self) -> Value<'_> {
        Value::Int(i64::from(*self))
    }
}

impl Param for u32 {
    fn value(&self) -> Value<'_> {
        Value::Int(i64::from(*self))
    }
}

impl Param for bool {
    fn value(&self) -> Value<'_> {
        Value::Bool(*self)
    }
}

impl Param for str {
    fn value(&self) -> Value<'_> {
        Value::Text(self)
    }
}

impl Param for String {
    fn value(&self) -> Value<'_> {
        Value::Text(self)
    }
}

impl Param for [u8] {
    fn value(&self) -> Value<'_> {
        Value::Bytes(self)
    }
}

impl Param for Vec<u8> {
    fn value(&self) -> Value<'_> {
        Value::Bytes(self)
    }
}

impl<T: Param + ?Sized> Param for &T {
    fn value(&self) -> Value<'_> {
        (**self).value()
    }
}

impl<T: Param> Param for Option<T> {
    fn value(&self) -> Value<'_> {
        match self {
            Some(v) => v.value(),
            None => Value::Null,
        }
    }
}

impl rusqlite::ToSql for Value<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match *self {
            Value::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            Value::Int(n) => ToSqlOutput::Borrowed(ValueRef::Integer(n)),
            Value::Bool(b) => ToSqlOutput::Borrowed(ValueRef::Integer(i64::from(b))),
            Value::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
            Value::Bytes(b) => ToSqlOutput::Borrowed(ValueRef::Blob(b)),
        })
    }
}

type PgError = Box<dyn Error + Sync + Send>;

impl ToSql for Value<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, PgError> {
        match *self {
            Value::Null => Ok(IsNull::Yes),
            Value::Int(n) => match *ty {
                Type::INT2 => i16::try_from(n)?.to_sql(ty, out),
                Type::INT4 => i32::try_from(n)?.to_sql(ty, out),
                Type::BOOL => (n != 0).to_sql(ty, out),
                _ => n.to_sql(ty, out),
            },
            Value::Bool(b) => match *ty {
                Type::INT2 | Type::INT4 | Type::INT8 => Value::Int(i64::from(b)).to_sql(ty, out),
                _ => b.to_sql(ty, out),
            },
            Value::Text(s) => s.to_sql(ty, out),
            Value::Bytes(b) => b.to_sql(ty, out),
        }
    }

    // Each arm above checks its own type, with the driver's message.
    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

/// What a column can be read as, on either backend.
pub trait Col: Sized {
    fn from_sqlite(value: ValueRef<'_>) -> Result<Self, String>;
    fn from_pg(row: &tokio_postgres::Row, index: usize) -> Result<Self, String>;
}

impl Col for i64 {
    fn from_sqlite(value: ValueRef<'_>) -> Result<i64, String> {
        value.as_i64().map_err(|e| e.to_string())
    }

    fn from_pg(row: &tokio_postgres::Row, index: usize) -> Result<i64, String> {
        let got = match row.columns().get(index).map(|c| c.type_().clone()) {
            Some(Type::INT2) => row.try_get::<_, i16>(index).map(i64::from),
            Some(Type::INT4) => row.try_get::<_, i32>(index).map(i64::from),
            _ => row.try_get::<_, i64>(index),
        };
        got.map_err(|e| e.to_string())
    }
}

impl Col for u64 {
    fn from_sqlite(value: ValueRef<'_>) -> Result<u64, String> {
        let n = i64::from_sqlite(value)?;
        u64::try_from(n).map_err(|_| format!("{n} is negative"))
    }

    fn from_pg(row: &tokio_postgres::Row, index: usize) -> Result<u64, String> {
        let n = i64::from_pg(row, index)?;
        u64::try_from(n).map_err(|_| format!("{n} is negative"))
    }
}

impl Col for bool {
    fn from_sqlite(value: ValueRef<'_>) -> Result<bool, String> {
        Ok(i64::from_sqlite(value)? != 0)
    }

    fn from_pg(row: &tokio_postgres::Row, index: usize) -> Result<bool, String> {
        match row.columns().get(index).map(|c| c.type_().clone()) {
            Some(Type::BOOL) => row.try_get(index).map_err(|e| e.to_string()),
            _ => Ok(i64::from_pg(row, index)? != 0),
        }
    }
}

impl Col for String {
    fn from_sqlite(value: ValueRef<'_>) -> Result<String, String> {
        value.as_str().map(str::to_owned).map_err(|e| e.to_string())
    }

    fn from_pg(row: &tokio_postgres::Row, index: usize) -> Result<String, String> {
        row.try_get(index).map_err(|e| e.to_string())
    }
}

impl Col for Vec<u8> {
    fn from_sqlite(value: ValueRef<'_>) -> Result<Vec<u8>, String> {
        value
            .as_blob()
            .map(<[u8]>::to_vec)
            .map_err(|e| e.to_string())
    }

    fn from_pg(row: &tokio_postgres::Row, index: usize) -> Result<Vec<u8>, String> {
        row.try_get(index).map_err(|e| e.to_string())
    }
}

impl<T: Col> Col for Option<T> {
    fn from_sqlite(value: ValueRef<'_>) -> Result<Option<T>, String> {
        match value {
            ValueRef::Null => Ok(None),
            v => T::from_sqlite(v).map(Some),
        }
    }

    fn from_pg(row: &tokio_postgres::Row, index: usize) -> Result<Option<T>, String> {
        match row.try_get::<_, Option<AnyValue>>(index) {
            Ok(None) => Ok(None),
            Ok(Some(_)) => T::from_pg(row, index).map(Some),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// Any PostgreSQL value, read only to tell NULL from the rest.
struct AnyValue;

impl<'a> FromSql<'a> for AnyValue {
    fn from_sql(_: &Type, _: &'a [u8]) -> Result<AnyValue, PgError> {
        Ok(AnyValue)
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

/// The `#[repr(i16)]` state enums of `domain`: each stored as its number
/// (SMALLINT on PostgreSQL); an unknown number read back is an error, not
/// a guess. Every variant is read back through `all()`, so a new one needs
/// no edit here.
macro_rules! coded {
    ($($ty:ident),+) => {$(
        impl Param for $ty {
            fn value(&self) -> Value<'_> {
                Value::Int(*self as i16 as i64)
            }
        }

        impl Col for $ty {
            fn from_sqlite(value: ValueRef<'_>) -> Result<$ty, String> {
                let n = i64::from_sqlite(value)?;
                $ty::all().find(|v| *v as i16 as i64 == n)
                    .ok_or_else(|| format!("{n} is not a {}", stringify!($ty)))
            }

            fn from_pg(row: &tokio_postgres::Row, index: usize) -> Result<$ty, String> {
                let n = i64::from_pg(row, index)?;
                $ty::all().find(|v| *v as i16 as i64 == n)
                    .ok_or_else(|| format!("{n} is not a {}", stringify!($ty)))
            }
        }
    )+};
}

coded!(
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
