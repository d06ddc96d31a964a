//! What route functions extract: path segments, raw bodies and JSON
//! bodies, each refused (400) in the shape of the API the request is for,
//! which each table marks on its requests (`Api`).

use axum::extract::{FromRequest, FromRequestParts, Path, Request};
use bytes::Bytes;
use http::StatusCode;
use http::request::Parts;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::error::HttpError;

/// Which API a request is for: its refusals take that API's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Api {
    Platform,
    Control,
}

fn refusal(api: Option<Api>, status: StatusCode, message: &str) -> HttpError {
    match api {
        Some(Api::Control) => HttpError::control(status, message),
        _ => HttpError::platform(status, "bad_request", message),
    }
}

fn api_of(extensions: &http::Extensions) -> Option<Api> {
    extensions.get::<Api>().copied()
}

/// Path segments, percent-decoded; one that is not UTF-8 is a 400 in the
/// API's own error shape.
pub(super) struct Seg<T>(pub T);

impl<S, T> FromRequestParts<S> for Seg<T>
where
    S: Send + Sync,
    T: DeserializeOwned + Send,
{
    type Rejection = HttpError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(t)) => Ok(Seg(t)),
            Err(e) => Err(refusal(
                api_of(&parts.extensions),
                e.status(),
                &e.body_text(),
            )),
        }
    }
}

/// The raw body (the platform's routes read it themselves).
pub(super) struct Raw(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for Raw {
    type Rejection = HttpError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let api = api_of(req.extensions());
        Bytes::from_request(req, state)
            .await
            .map(Raw)
            .map_err(|e| refusal(api, e.status(), &e.body_text()))
    }
}

/// A control call's JSON body; an empty one is `{}`.
pub(super) struct JsonBody(pub Value);

impl<S: Send + Sync> FromRequest<S> for JsonBody {
    type Rejection = HttpError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let api = api_of(req.extensions());
        let Raw(bytes) = Raw::from_request(req, state).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(JsonBody(json!({})));
        }
        serde_json::from_slice(&bytes).map(JsonBody).map_err(|e| {
            refusal(
                api,
                StatusCode::BAD_REQUEST,
                &format!("body is not JSON: {e}"),
            )
        })
    }
}

/// The Bearer token of a request.
pub(super) fn bearer(headers: &http::HeaderMap) -> Option<String> {
    headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(|t| t.trim().to_string())
}
