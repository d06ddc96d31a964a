//! Why a job did not decide (`JobError`): the words a person reads, and
//! the failure's class and endpoint (`domain::Failure`) kept beside them,
//! made where the failure is (`ApiError::failure`, or the worker's own).

use std::time::Duration;

use crate::api::error::{ApiError, ErrorClass};
use crate::domain::{Failure, FailureClass};
use crate::rules::wait::{self, Wait};
use crate::store::{LeasedJob, StoreError};

/// Why a job did not decide: the words for a person, and the failure's
/// class and endpoint, kept beside them for grouping.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error("{reason}")]
    Retry {
        reason: String,
        after: Option<Duration>,
        failure: Failure,
    },
    #[error("{reason}")]
    Permanent { reason: String, failure: Failure },
    #[error("{0}")]
    Panicked(String),
    /// The run no longer holds its lease: it stops and records nothing.
    #[error("the lease was lost")]
    LeaseLost,
    /// The API does not know what an unauthenticated notification named,
    /// after the reads `Wait::NotFoundUnauthenticated` allows: the job ends
    /// without a decision, and reconciliation takes over.
    #[error("{0}")]
    Unknown(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl JobError {
    pub(super) fn from_api(e: ApiError, job: &LeasedJob) -> JobError {
        let not_found = if job.unauthenticated {
            Wait::NotFoundUnauthenticated
        } else {
            Wait::NotFound
        };
        let failure = e.failure();
        match e.class() {
            ErrorClass::Retry(after) => JobError::Retry {
                reason: e.to_string(),
                after,
                failure,
            },
            ErrorClass::NotFound if wait::again(not_found, job.attempt, u32::MAX) => {
                JobError::Retry {
                    reason: e.to_string(),
                    after: None,
                    failure,
                }
            }
            ErrorClass::NotFound if job.unauthenticated => JobError::Unknown(e.to_string()),
            ErrorClass::NotFound | ErrorClass::Permanent => JobError::Permanent {
                reason: e.to_string(),
                failure,
            },
        }
    }

    /// The platform is not where a rule decides yet: asked again.
    pub(super) fn waiting(reason: String) -> JobError {
        JobError::Retry {
            reason,
            after: None,
            failure: Failure::of(FailureClass::Waiting),
        }
    }

    /// What the job names cannot be worked on: it dies.
    pub(super) fn unprocessable(reason: impl Into<String>) -> JobError {
        JobError::Permanent {
            reason: reason.into(),
            failure: Failure::of(FailureClass::Unprocessable),
        }
    }

    /// No rule decides: a person must look (the inbox shows it as such).
    pub(super) fn needs_person(reason: String) -> JobError {
        JobError::Permanent {
            reason,
            failure: Failure::of(FailureClass::NeedsPerson),
        }
    }

    /// The failure as the job keeps it.
    pub(super) fn failure(&self) -> Failure {
        match self {
            JobError::Retry { failure, .. } | JobError::Permanent { failure, .. } => {
                failure.clone()
            }
            JobError::Panicked(_) => Failure::of(FailureClass::Panicked),
            JobError::Store(_) => Failure::of(FailureClass::Storage),
            // Neither is recorded as a failure.
            JobError::LeaseLost | JobError::Unknown(_) => Failure::of(FailureClass::Unprocessable),
        }
    }
}
