//! The one error a sandbox call answers with, and the one place that turns
//! it into a response: in the platform's shape (`message`, `error`,
//! `status`, `cause[]`, the Orders API's causes with text codes) for the
//! platform's API, in pointhook's shape (`{"status":"error","error",
//! "message"}`) for the control API, or a 500 for a failure of the
//! sandbox itself (logged once, here).

use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde_json::{Value, json};

use crate::state::StateError;
use pointhook_common::response;

/// A refusal or a failure, with the status it answers.
#[derive(Debug)]
pub struct HttpError {
    status: StatusCode,
    kind: Kind,
    retry_after: Option<u64>,
}

#[derive(Debug)]
enum Kind {
    /// The platform's error body.
    Platform {
        error: String,
        message: String,
        causes: Vec<(Code, String)>,
    },
    /// The control API's error body.
    Control { error: String, message: String },
    /// The sandbox failed.
    Internal(anyhow::Error),
}

/// A cause's code: a number on the classic API, text on the Orders API.
#[derive(Debug)]
enum Code {
    Number(u32),
    Text(String),
}

impl HttpError {
    /// The platform's error body with no causes.
    pub fn platform(status: StatusCode, error: &str, message: &str) -> HttpError {
        HttpError {
            status,
            kind: Kind::Platform {
                error: error.into(),
                message: message.into(),
                causes: Vec::new(),
            },
            retry_after: None,
        }
    }

    /// 400 `bad_request` naming one cause, as the classic API words them.
    pub fn bad_request(code: u32, message: &str) -> HttpError {
        HttpError::platform(StatusCode::BAD_REQUEST, "bad_request", message).cause(code, message)
    }

    /// 404 `not_found` with cause 2000 (a payment, an order, a chargeback …).
    pub fn not_found(message: &str) -> HttpError {
        HttpError::platform(StatusCode::NOT_FOUND, "not_found", message).cause(2000, message)
    }

    /// The Orders API's refusal: its code as the error and as the cause.
    pub fn orders(status: StatusCode, code: &str, message: &str) -> HttpError {
        HttpError::orders_all(status, code, message, &[(code, message.to_string())])
    }

    /// The Orders API's refusal naming every problem found.
    pub fn orders_all(
        status: StatusCode,
        error: &str,
        message: &str,
        causes: &[(&str, String)],
    ) -> HttpError {
        HttpError {
            status,
            kind: Kind::Platform {
                error: error.into(),
                message: message.into(),
                causes: causes
                    .iter()
                    .map(|(c, d)| (Code::Text(c.to_string()), d.clone()))
                    .collect(),
            },
            retry_after: None,
        }
    }

    /// Adds a numbered cause to a platform error.
    pub fn cause(mut self, code: u32, description: &str) -> HttpError {
        if let Kind::Platform { causes, .. } = &mut self.kind {
            causes.push((Code::Number(code), description.into()));
        }
        self
    }

    /// A refusal of the control API (`bad_request` whatever the status,
    /// as it always answered).
    pub fn control(status: StatusCode, message: &str) -> HttpError {
        HttpError::control_code(status, "bad_request", message)
    }

    /// A refusal of the control API with its own code.
    pub fn control_code(status: StatusCode, error: &str, message: &str) -> HttpError {
        HttpError {
            status,
            kind: Kind::Control {
                error: error.into(),
                message: message.into(),
            },
            retry_after: None,
        }
    }

    /// A failure of the sandbox itself: 500.
    pub fn internal(e: impl Into<anyhow::Error>) -> HttpError {
        HttpError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            kind: Kind::Internal(e.into()),
            retry_after: None,
        }
    }

    /// Answers with `Retry-After: secs`.
    pub fn retry_after(mut self, secs: Option<u64>) -> HttpError {
        self.retry_after = secs;
        self
    }

    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The body as the API it belongs to writes it.
    pub fn body(&self) -> Value {
        match &self.kind {
            Kind::Platform {
                error,
                message,
                causes,
            } => {
                let cause: Vec<Value> = causes
                    .iter()
                    .map(|(code, d)| match code {
                        Code::Number(n) => json!({"code": n, "description": d, "data": null}),
                        Code::Text(t) => json!({"code": t, "description": d}),
                    })
                    .collect();
                json!({"message": message, "error": error, "status": self.status.as_u16(), "cause": cause})
            }
            Kind::Control { error, message } => {
                json!({"status": "error", "error": error, "message": message})
            }
            Kind::Internal(e) => {
                json!({"status": "error", "error": "internal_error", "message": e.to_string()})
            }
        }
    }
}

impl From<StateError> for HttpError {
    fn from(e: StateError) -> HttpError {
        HttpError::internal(e)
    }
}

impl From<anyhow::Error> for HttpError {
    fn from(e: anyhow::Error) -> HttpError {
        HttpError::internal(e)
    }
}

impl From<serde_json::Error> for HttpError {
    fn from(e: serde_json::Error) -> HttpError {
        HttpError::internal(e)
    }
}

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        if let Kind::Internal(e) = &self.kind {
            tracing::error!(error = format!("{e:#}"), "sandbox request failed");
        }
        let mut res = response::json(self.status, self.body().to_string());
        if let Some(secs) = self.retry_after {
            res.headers_mut()
                .insert(http::header::RETRY_AFTER, http::HeaderValue::from(secs));
        }
        res.into_response()
    }
}
