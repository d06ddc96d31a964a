//! A job's failure as columns beside its error text: its class, the
//! platform's status and the endpoint (`domain::Failure`), written with
//! the outcome by either backend's `finish` and read back with the job.
//! They mean something only while `last_error` is set: a job that is done
//! again, or revived, has no failure whatever the columns still hold.

use super::StoreError;
use super::model::JobOutcome;
use super::sql::Row;
use crate::domain::{Failure, FailureClass};

/// The cells an outcome writes: all `NULL` for a job that decided.
#[derive(Debug, Clone, Copy, Default)]
pub(in crate::store) struct FailureCells<'a> {
    pub class: Option<&'static str>,
    pub status: Option<i32>,
    pub endpoint: Option<&'a str>,
}

impl FailureCells<'_> {
    pub(in crate::store) fn of(outcome: &JobOutcome) -> FailureCells<'_> {
        match outcome {
            JobOutcome::Done(_) => FailureCells::default(),
            JobOutcome::Retry { failure, .. } | JobOutcome::Dead { failure, .. } => FailureCells {
                class: Some(failure.class.as_str()),
                status: failure.status.map(i32::from),
                endpoint: failure.endpoint.as_deref(),
            },
        }
    }
}

/// The failure in `failure_class, failure_status, failure_endpoint` from
/// column `at` on; `None` for none
/// (or one written before the columns were, or of a class this build does
/// not know).
pub(in crate::store) fn read(r: &Row<'_>, at: usize) -> Result<Option<Failure>, StoreError> {
    let Some(class) = r
        .get::<Option<String>>(at)?
        .as_deref()
        .and_then(FailureClass::parse)
    else {
        return Ok(None);
    };
    Ok(Some(Failure {
        class,
        status: r
            .get::<Option<i64>>(at + 1)?
            .and_then(|s| u16::try_from(s).ok()),
        endpoint: r.get(at + 2)?,
    }))
}
