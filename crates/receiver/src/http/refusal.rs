//! Why the notification endpoint refuses a request, and the one place that
//! says which status and code each refusal is answered with.

use http::{HeaderValue, Response, StatusCode, header};
use pointhook_common::response::{self, Body};
use pointhook_common::signature::SignatureError;

use super::classify::ClassifyError;
use super::record::TooLarge;

#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error(transparent)]
    TooLarge(#[from] TooLarge),
    #[error(transparent)]
    Unclassifiable(#[from] ClassifyError),
    #[error("{0}")]
    UnknownAccount(String),
    #[error("body is larger than {0} bytes")]
    BodyTooLarge(usize),
    #[error("the body took too long to arrive")]
    ReadTimeout,
    #[error("cannot read the body: {0}")]
    UnreadableBody(String),
    #[error(transparent)]
    BadSignature(SignatureError),
    #[error("storage is unavailable; send again later")]
    StorageUnavailable,
    #[error("too many requests from this address")]
    RateLimited,
}

impl Refusal {
    /// The status a sender is answered with. A 4xx is only for what the
    /// platform never sends; a 503 makes it send again.
    pub fn status(&self) -> StatusCode {
        match self {
            Refusal::TooLarge(TooLarge::Query) => StatusCode::URI_TOO_LONG,
            Refusal::TooLarge(TooLarge::Header(_) | TooLarge::Headers) => {
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE
            }
            Refusal::Unclassifiable(_) | Refusal::UnreadableBody(_) => StatusCode::BAD_REQUEST,
            Refusal::UnknownAccount(_) => StatusCode::NOT_FOUND,
            Refusal::BodyTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Refusal::ReadTimeout => StatusCode::REQUEST_TIMEOUT,
            Refusal::BadSignature(_) => StatusCode::UNAUTHORIZED,
            Refusal::StorageUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            Refusal::RateLimited => StatusCode::TOO_MANY_REQUESTS,
        }
    }

    /// The machine-readable code of the JSON error body and the metrics.
    pub fn code(&self) -> &'static str {
        match self {
            Refusal::TooLarge(TooLarge::Query) => "query_too_long",
            Refusal::TooLarge(TooLarge::Header(_) | TooLarge::Headers) => "header_too_large",
            Refusal::Unclassifiable(e) => e.code(),
            Refusal::UnknownAccount(_) => "unknown_account",
            Refusal::BodyTooLarge(_) => "body_too_large",
            Refusal::ReadTimeout => "read_timeout",
            Refusal::UnreadableBody(_) => "unreadable_body",
            Refusal::BadSignature(_) => "bad_signature",
            Refusal::StorageUnavailable => "storage_unavailable",
            Refusal::RateLimited => "rate_limited",
        }
    }

    /// The answer: the status and a JSON body naming the problem.
    pub fn answer(&self) -> Response<Body> {
        let mut res = response::error(self.status(), self.code(), &self.to_string());
        if let Refusal::RateLimited = self {
            res.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        res
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_refusal_has_its_status_and_code() {
        let cases = [
            (Refusal::TooLarge(TooLarge::Query), 414, "query_too_long"),
            (
                Refusal::TooLarge(TooLarge::Headers),
                431,
                "header_too_large",
            ),
            (
                Refusal::TooLarge(TooLarge::Header("x-signature")),
                431,
                "header_too_large",
            ),
            (
                Refusal::Unclassifiable(ClassifyError::Unrecognised),
                400,
                "unrecognised_notification",
            ),
            (Refusal::UnknownAccount("x".into()), 404, "unknown_account"),
            (Refusal::BodyTooLarge(10), 413, "body_too_large"),
            (Refusal::ReadTimeout, 408, "read_timeout"),
            (Refusal::UnreadableBody("x".into()), 400, "unreadable_body"),
            (
                Refusal::BadSignature(SignatureError::Missing),
                401,
                "bad_signature",
            ),
            (Refusal::StorageUnavailable, 503, "storage_unavailable"),
            (Refusal::RateLimited, 429, "rate_limited"),
        ];
        for (r, status, code) in cases {
            assert_eq!((r.status().as_u16(), r.code()), (status, code), "{r}");
        }
    }
}
