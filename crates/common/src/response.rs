//! JSON answers: every error names its problem in a body of the same shape,
//! `{"status":"error","error":"<code>","message":"<what is wrong>"}`.

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::Full;

pub type Body = Full<Bytes>;

pub fn json(status: StatusCode, body: impl Into<Bytes>) -> Response<Body> {
    let mut res = Response::new(Full::new(body.into()));
    *res.status_mut() = status;
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
}

pub fn error(status: StatusCode, code: &str, message: &str) -> Response<Body> {
    let body = serde_json::json!({"status": "error", "error": code, "message": message});
    json(status, body.to_string())
}

pub fn not_found(method: &http::Method, path: &str) -> Response<Body> {
    error(
        StatusCode::NOT_FOUND,
        "not_found",
        &format!("no route for {method} {path}"),
    )
}

pub fn method_not_allowed(allow: &'static str) -> Response<Body> {
    let mut res = error(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        &format!("use {allow}"),
    );
    res.headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(allow));
    res
}
