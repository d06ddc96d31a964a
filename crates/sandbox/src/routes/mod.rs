//! The sandbox's HTTP face: one axum `Router` served through the accept
//! loop every pointhook listener shares. The platform's API (`platform`:
//! its resources, the Point API, the Orders API) answers in the platform's
//! shape; the control API (`control`) is nested under `/sandbox` with its
//! own fallback and error shape; the checkout page (`checkout`) a
//! preference leads to is HTML for a buyer's browser. The two APIs take
//! an account's Bearer token, and no route answers a browser's
//! cross-site request nor a foreign `Host` (`guard`). Route functions extract (`extract`), call one operation
//! (`ops`) and answer JSON; every failure is an `HttpError`.

mod checkout;
mod control;
mod extract;
mod guard;
mod platform;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::response::{IntoResponse, Response};
use http::{StatusCode, Uri};
use hyper::body::Incoming;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::error::HttpError;
use crate::ops::sandbox::Sandbox;
use pointhook_common::response;
use pointhook_common::serve::{Handler, Limits, RouterHandler};

/// The state every route function gets.
type Sb = Arc<Sandbox>;

/// What a route function answers.
type Answer = Result<Response, HttpError>;

/// `value` as JSON with `status`.
fn json(status: StatusCode, value: &Value) -> Answer {
    Ok(response::json(status, value.to_string()).into_response())
}

/// The one route table, behind the shared accept loop.
struct Routes(RouterHandler);

impl Routes {
    fn new(sb: Sb) -> Routes {
        let table = Router::new()
            .nest("/sandbox", control::routes(sb.clone()))
            .merge(checkout::routes(sb.clone()))
            .merge(platform::routes(sb.clone()))
            .layer(axum::middleware::from_fn_with_state(sb, guard::same_origin));
        Routes(RouterHandler(table))
    }
}

impl Handler for Routes {
    fn handle(
        &self,
        mut req: http::Request<Incoming>,
        peer: SocketAddr,
    ) -> impl std::future::Future<Output = http::Response<response::Body>> + Send {
        without_trailing_slash(&mut req);
        self.0.handle(req, peer)
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

impl Sandbox {
    /// Serves `listener` and runs the dispatcher until `shutdown`.
    pub async fn serve(self: Arc<Self>, listener: TcpListener, shutdown: CancellationToken) {
        let dispatcher = self
            .dispatch_loop
            .then(|| tokio::spawn(self.clone().dispatch_forever(shutdown.clone())));
        let limits = Limits {
            read_timeout: Duration::from_secs(10),
            max_connections: 256,
            max_connections_per_ip: 0,
            drain_timeout: Duration::from_secs(5),
        };
        pointhook_common::serve::serve_with(
            listener,
            &limits,
            Arc::new(Routes::new(self)),
            shutdown,
        )
        .await;
        if let Some(d) = dispatcher {
            let _ = d.await;
        }
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
