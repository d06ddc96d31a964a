//! PostgreSQL conversions for the `#[repr(i16)]` state enums of `domain`:
//! each is a SMALLINT, and an unknown number read back is an error, not a
//! guess.

use std::error::Error;

use bytes::BytesMut;
use tokio_postgres::types::{FromSql, IsNull, ToSql, Type, accepts, to_sql_checked};

use crate::domain::attention::AlertKind;
use crate::domain::{
    Action, AuditOutcome, DestinationState, EventState, HoldState, JobKind, JobState, Kind, Lane,
    Review, SignatureStatus, Via,
};

macro_rules! pg_enum {
    ($($ty:ident),+) => {$(
        impl ToSql for $ty {
            fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
                (*self as i16).to_sql(ty, out)
            }
            accepts!(INT2);
            to_sql_checked!();
        }

        impl<'a> FromSql<'a> for $ty {
            fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn Error + Sync + Send>> {
                let n = i16::from_sql(ty, raw)?;
                $ty::all()
                    .find(|v| *v as i16 == n)
                    .ok_or_else(|| format!("{n} is not a {}", stringify!($ty)).into())
            }
            accepts!(INT2);
        }
    )+};
}

pg_enum!(
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
