//! How the sandbox's route tables are put together and served: two axum
//! `Router`s (the platform's API in `resources`, with the Orders API in
//! `orders`, and the control API in `control`), chosen by path, through the
//! accept loop every pointhook listener shares. Also what their route
//! functions extract: the account, path segments, bodies, and the one
//! error type that turns a failure into a 500.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{FromRequest, FromRequestParts, Path, Request};
use axum::response::IntoResponse;
use bytes::Bytes;
use http::request::Parts;
use http::{Response, StatusCode, Uri};
use hyper::body::Incoming;
use pointhook_common::response::{self, Body};
use pointhook_common::serve::{Handler, RouterHandler};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::Sandbox;

/// The state every route function gets.
pub(crate) type Sb = Arc<Sandbox>;

/// What a route function answers.
pub(crate) type Answer = Result<Response<Body>, Fail>;

/// Both route tables, each with its own fallback and error shape.
pub(crate) struct Routes {
    platform: RouterHandler,
    control: RouterHandler,
}

impl Routes {
    pub(crate) fn new(sb: Sb) -> Routes {
        Routes {
            platform: RouterHandler(super::resources::routes(sb.clone())),
            control: RouterHandler(super::control::routes(sb)),
        }
    }
}

impl Handler for Routes {
    fn handle(
        &self,
        mut req: http::Request<Incoming>,
        peer: SocketAddr,
    ) -> impl std::future::Future<Output = Response<Body>> + Send {
        without_trailing_slash(&mut req);
        let path = req.uri().path();
        if path == "/sandbox" || path.starts_with("/sandbox/") {
            self.control.handle(req, peer)
        } else {
            self.platform.handle(req, peer)
        }
    }
}

/// `/v1/payments/` is `/v1/payments`, as the platform's router has it.
fn without_trailing_slash<B>(req: &mut http::Request<B>) {
    let path = req.uri().path();
    if path.len() < 2 || !path.ends_with('/') {
        return;
    }
    let trimmed = match path.trim_end_matches('/') {
        "" => "/",
        t => t,
    };
    let target = match req.uri().query() {
        Some(q) => format!("{trimmed}?{q}"),
        None => trimmed.to_string(),
    };
    if let Ok(uri) = target.parse::<Uri>() {
        *req.uri_mut() = uri;
    }
}

/// A failure of the sandbox itself (its database, a body it wrote): 500,
/// logged.
pub(crate) struct Fail(anyhow::Error);

impl<E: Into<anyhow::Error>> From<E> for Fail {
    fn from(e: E) -> Fail {
        Fail(e.into())
    }
}

impl IntoResponse for Fail {
    fn into_response(self) -> axum::response::Response {
        tracing::error!(error = format!("{:#}", self.0), "sandbox request failed");
        response::error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal_error",
            &self.0.to_string(),
        )
        .into_response()
    }
}

/// Whether a request is for the control API, whose errors have pointhook's
/// shape rather than the platform's.
fn is_control(uri: &Uri) -> bool {
    uri.path().starts_with("/sandbox")
}

/// A refusal of the request itself, in the shape of the API it was for.
pub(crate) fn bad_request(uri: &Uri, status: StatusCode, message: &str) -> Response<Body> {
    if is_control(uri) {
        response::error(status, "bad_request", message)
    } else {
        super::resources::platform_error(status, "bad_request", message, &[])
    }
}

/// Path segments, percent-decoded; one that is not UTF-8 is a 400 in the
/// API's own error shape.
pub(crate) struct Seg<T>(pub T);

impl<S, T> FromRequestParts<S> for Seg<T>
where
    S: Send + Sync,
    T: DeserializeOwned + Send,
{
    type Rejection = Response<Body>;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(t)) => Ok(Seg(t)),
            Err(e) => Err(bad_request(&parts.uri, e.status(), &e.body_text())),
        }
    }
}

/// The raw body (the platform's routes read it themselves).
pub(crate) struct Raw(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for Raw {
    type Rejection = Response<Body>;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let uri = req.uri().clone();
        Bytes::from_request(req, state)
            .await
            .map(Raw)
            .map_err(|e| bad_request(&uri, e.status(), &e.body_text()))
    }
}

/// A control call's JSON body; an empty one is `{}`.
pub(crate) struct JsonBody(pub Value);

impl<S: Send + Sync> FromRequest<S> for JsonBody {
    type Rejection = Response<Body>;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let uri = req.uri().clone();
        let Raw(bytes) = Raw::from_request(req, state).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(JsonBody(json!({})));
        }
        serde_json::from_slice(&bytes).map(JsonBody).map_err(|e| {
            bad_request(
                &uri,
                StatusCode::BAD_REQUEST,
                &format!("body is not JSON: {e}"),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn trailing_slashes_go_and_the_query_stays() {
        let cases = [
            ("/v1/payments/", "/v1/payments"),
            ("/v1/payments/?a=1", "/v1/payments?a=1"),
            ("/", "/"),
            ("//", "/"),
            ("/v1/payments", "/v1/payments"),
        ];
        for (given, want) in cases {
            let mut req = http::Request::builder().uri(given).body(()).unwrap();
            super::without_trailing_slash(&mut req);
            assert_eq!(req.uri(), want, "{given}");
        }
    }
}
