//! The admin listener's front door, before any route runs: a request
//! naming a `Host` that is not this listener's is answered 421 before
//! anything else of it is read (DNS rebinding: a page on another site
//! reaching a listener bound to loopback), and the body must arrive whole
//! within the read timeout and size cap the notification listener keeps
//! (408, 413), so a stalled request cannot hold a connection slot. The
//! route table then gets the body whole and the client's address.

use std::net::SocketAddr;
use std::time::Duration;

use http::{Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use tower::ServiceExt;

use pointhook_common::host::AllowedHosts;
use pointhook_common::response::{self, Body};
use pointhook_common::serve::Handler;
use pointhook_common::text::printable;

/// The address a request came from, for the routes (a request extension).
#[derive(Debug, Clone, Copy)]
pub struct ClientAddr(pub SocketAddr);

/// The route table behind its door.
pub struct AdminHandler {
    pub router: axum::Router,
    pub hosts: AllowedHosts,
    /// The body must arrive within this (the headers, too: the accept
    /// loop's header timeout is the same figure).
    pub read_timeout: Duration,
    pub max_body_bytes: usize,
}

impl AdminHandler {
    /// The names the listener bound to `listen` answers: loopback ones on
    /// its port, its own address, and `public_url`'s host.
    pub fn hosts(listen: SocketAddr, public_url: Option<&url::Url>) -> AllowedHosts {
        let mut hosts = AllowedHosts::loopback(Some(listen.port()));
        if !listen.ip().is_unspecified() && !listen.ip().is_loopback() {
            hosts = hosts.also_on(&listen.ip().to_string(), Some(listen.port()));
        }
        if let Some(h) = public_url.and_then(|u| u.host_str()) {
            hosts = hosts.also(h);
        }
        hosts
    }

    async fn answer(&self, req: Request<Incoming>, peer: SocketAddr) -> Response<Body> {
        let host = req
            .headers()
            .get(header::HOST)
            .map(|h| h.as_bytes().to_vec());
        if !host.as_deref().is_some_and(|h| self.hosts.allows(h)) {
            let named = host
                .map(|h| String::from_utf8_lossy(&h).into_owned())
                .unwrap_or_default();
            tracing::info!(%peer, host = %printable(&named), "admin request for another host refused");
            return response::error(
                StatusCode::MISDIRECTED_REQUEST,
                "misdirected_request",
                &format!(
                    "Host {:?} is not this listener's: call it by 127.0.0.1, localhost, [::1] or admin.public_url's host",
                    printable(&named)
                ),
            );
        }
        let (mut parts, body) = req.into_parts();
        let declared = parts
            .headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        let too_large = || {
            response::error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "body_too_large",
                &format!("body is larger than {} bytes", self.max_body_bytes),
            )
        };
        if declared.is_some_and(|n| n > self.max_body_bytes as u64) {
            return too_large();
        }
        let read = Limited::new(body, self.max_body_bytes).collect();
        let body = match tokio::time::timeout(self.read_timeout, read).await {
            Err(_) => {
                tracing::info!(%peer, "admin request body too slow: 408");
                return response::error(
                    StatusCode::REQUEST_TIMEOUT,
                    "read_timeout",
                    "the body took too long to arrive",
                );
            }
            Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => return too_large(),
            Ok(Err(e)) => {
                return response::error(
                    StatusCode::BAD_REQUEST,
                    "unreadable_body",
                    &format!("cannot read the body: {}", printable(&e.to_string())),
                );
            }
            Ok(Ok(c)) => c.to_bytes(),
        };
        parts.extensions.insert(ClientAddr(peer));
        let req = Request::from_parts(parts, axum::body::Body::from(body));
        let res = match self.router.clone().oneshot(req).await {
            Ok(res) => res,
            Err(never) => match never {},
        };
        let (parts, body) = res.into_parts();
        match body.collect().await {
            Ok(collected) => Response::from_parts(parts, Body::new(collected.to_bytes())),
            Err(e) => {
                tracing::warn!(error = %e, "an answer could not be read");
                response::error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal_error",
                    "the answer could not be produced",
                )
            }
        }
    }
}

impl Handler for AdminHandler {
    fn handle(
        &self,
        req: Request<Incoming>,
        peer: SocketAddr,
    ) -> impl std::future::Future<Output = Response<Body>> + Send {
        self.answer(req, peer)
    }
}
