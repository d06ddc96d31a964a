//! How a call to the API fails, and what the caller should do about it.

use std::time::Duration;

use super::wire::PlatformError;
use crate::domain::{Failure, FailureClass};

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{endpoint} {id}: rate limited by the platform")]
    RateLimited {
        endpoint: &'static str,
        id: String,
        retry_after: Option<Duration>,
    },
    #[error("{endpoint} {id}: the platform answered {status}: {error}")]
    Server {
        endpoint: &'static str,
        id: String,
        status: u16,
        error: PlatformError,
    },
    #[error("{endpoint} {id}: no answer within the timeout")]
    Timeout { endpoint: &'static str, id: String },
    #[error("{endpoint} {id}: cannot reach the platform: {message}")]
    Connect {
        endpoint: &'static str,
        id: String,
        message: String,
    },
    #[error(
        "{endpoint} {id}: the access token of account {account:?} was refused ({status}): {error}"
    )]
    Unauthorized {
        endpoint: &'static str,
        id: String,
        account: String,
        status: u16,
        error: PlatformError,
    },
    #[error("{endpoint} {id}: not found: {error}")]
    NotFound {
        endpoint: &'static str,
        id: String,
        error: PlatformError,
    },
    #[error("{endpoint} {id}: refused ({status}): {error}")]
    Refused {
        endpoint: &'static str,
        id: String,
        status: u16,
        error: PlatformError,
    },
    #[error("{endpoint} {id}: unexpected answer: {message}")]
    Decode {
        endpoint: &'static str,
        id: String,
        message: String,
    },
    #[error("{endpoint} {id}: the platform answered with {got:?}, not the resource asked for")]
    WrongResource {
        endpoint: &'static str,
        id: String,
        got: String,
    },
    #[error("no such account {0:?}")]
    UnknownAccount(String),
}

/// What the worker should do about an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// Try again later (after this long, when the platform said so).
    Retry(Option<Duration>),
    /// Not readable yet, perhaps: retried a few times (`rules::wait`), then
    /// given up.
    NotFound,
    Permanent,
}

impl ApiError {
    /// Whether a call that changes something may have done so anyway: the
    /// platform answered nothing clear (a timeout, a broken connection, a
    /// 5xx, an answer that cannot be read). A 4xx is a clear "not done".
    pub fn may_have_acted(&self) -> bool {
        match self {
            ApiError::Server { .. }
            | ApiError::Timeout { .. }
            | ApiError::Connect { .. }
            | ApiError::Decode { .. }
            | ApiError::WrongResource { .. } => true,
            ApiError::RateLimited { .. }
            | ApiError::Unauthorized { .. }
            | ApiError::NotFound { .. }
            | ApiError::Refused { .. }
            | ApiError::UnknownAccount(_) => false,
        }
    }

    /// The failure as a job keeps it: its class, the platform's status
    /// where it refused or failed, and the endpoint asked.
    pub fn failure(&self) -> Failure {
        let (class, status, endpoint) = match self {
            ApiError::RateLimited { endpoint, .. } => (FailureClass::RateLimited, None, *endpoint),
            ApiError::Server {
                endpoint, status, ..
            } => (FailureClass::ServerError, Some(*status), *endpoint),
            ApiError::Timeout { endpoint, .. } => (FailureClass::Timeout, None, *endpoint),
            ApiError::Connect { endpoint, .. } => (FailureClass::Unreachable, None, *endpoint),
            ApiError::Unauthorized { endpoint, .. } => {
                (FailureClass::TokenRefused, None, *endpoint)
            }
            ApiError::NotFound { endpoint, .. } => (FailureClass::NotFound, None, *endpoint),
            ApiError::Refused {
                endpoint, status, ..
            } => (FailureClass::Refused, Some(*status), *endpoint),
            ApiError::Decode { endpoint, .. } => (FailureClass::UnexpectedAnswer, None, *endpoint),
            ApiError::WrongResource { endpoint, .. } => {
                (FailureClass::WrongResource, None, *endpoint)
            }
            ApiError::UnknownAccount(_) => {
                return Failure::of(FailureClass::UnknownAccount);
            }
        };
        Failure {
            class,
            status,
            endpoint: Some(endpoint.to_string()),
        }
    }

    pub fn class(&self) -> ErrorClass {
        match self {
            ApiError::RateLimited { retry_after, .. } => ErrorClass::Retry(*retry_after),
            ApiError::Server { .. } | ApiError::Timeout { .. } | ApiError::Connect { .. } => {
                ErrorClass::Retry(None)
            }
            ApiError::NotFound { .. } => ErrorClass::NotFound,
            ApiError::Unauthorized { .. }
            | ApiError::Refused { .. }
            | ApiError::Decode { .. }
            | ApiError::WrongResource { .. }
            | ApiError::UnknownAccount(_) => ErrorClass::Permanent,
        }
    }
}

/// The API's base URL can hold credentials: errors never repeat it.
pub(super) fn transport_error(endpoint: &'static str, id: &str, e: reqwest::Error) -> ApiError {
    let e = e.without_url();
    if e.is_timeout() {
        ApiError::Timeout {
            endpoint,
            id: id.to_string(),
        }
    } else {
        ApiError::Connect {
            endpoint,
            id: id.to_string(),
            message: error_chain(&e),
        }
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The failure is made from the error's fields, not its words.
    #[test]
    fn a_failure_names_its_class_status_and_endpoint() {
        let server = ApiError::Server {
            endpoint: "merchant_order",
            id: "7".into(),
            status: 502,
            error: PlatformError::default(),
        };
        let f = server.failure();
        assert_eq!(
            (f.class, f.status, f.endpoint.as_deref()),
            (FailureClass::ServerError, Some(502), Some("merchant_order"))
        );
        let timeout = ApiError::Timeout {
            endpoint: "payment",
            id: "1".into(),
        };
        assert_eq!(timeout.failure().class, FailureClass::Timeout);
        assert_eq!(timeout.failure().status, None);
        let unknown = ApiError::UnknownAccount("x".into()).failure();
        assert_eq!(unknown, Failure::of(FailureClass::UnknownAccount));
    }
}
