//! The one error type of the admin listener: each variant decides its HTTP
//! status and becomes the JSON error shape every answer uses.

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};

use crate::store::StoreError;
use pointhook_common::response;

#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{message}")]
    Conflict { code: &'static str, message: String },
    /// No or wrong credentials; `challenge` is the scheme to ask for.
    #[error("{message}")]
    Unauthorized {
        challenge: &'static str,
        message: &'static str,
    },
    #[error("{0}")]
    Forbidden(&'static str),
    #[error("storage is unavailable")]
    Storage(#[from] StoreError),
}

impl IntoResponse for AdminError {
    fn into_response(self) -> Response {
        let (status, code) = match &self {
            AdminError::BadRequest(_) => (StatusCode::BAD_REQUEST, "bad_request"),
            AdminError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
            AdminError::Conflict { code, .. } => (StatusCode::CONFLICT, *code),
            AdminError::Unauthorized { .. } => (StatusCode::UNAUTHORIZED, "unauthorized"),
            AdminError::Forbidden(_) => (StatusCode::FORBIDDEN, "forbidden"),
            AdminError::Storage(e) => {
                // The cause is for the log; the answer names no internals.
                tracing::error!(error = %e, "admin request failed");
                (StatusCode::SERVICE_UNAVAILABLE, "storage_unavailable")
            }
        };
        let (parts, body) = response::error(status, code, &self.to_string()).into_parts();
        let mut res = Response::from_parts(parts, axum::body::Body::new(body));
        if let AdminError::Unauthorized { challenge, .. } = self {
            res.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(challenge),
            );
        }
        res
    }
}

pub type Result<T> = std::result::Result<T, AdminError>;
