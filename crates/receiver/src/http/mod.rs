//! The notification listener: accepts connections (bounded in number, with
//! header and body read timeouts), applies the optional per-address rate
//! limit, routes to the ingest endpoint and the health checks, and drains
//! in-flight requests on shutdown.

pub mod admin;
pub mod classify;
mod health;
pub mod ingest;
mod lenient_json;
pub mod record;
mod refusal;

use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use http::{Method, Request, Response};
use hyper::body::Incoming;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use ingest::Ingest;
use pointhook_common::response::{self, Body};
use pointhook_common::serve::{Handler, Limits, serve_with};

/// How the listener behaves, from `[server]`.
#[derive(Debug, Clone)]
pub struct ServerSettings {
    pub path: String,
    pub read_timeout: Duration,
    pub max_connections: usize,
    /// Connections one address may hold open at once; 0: no cap.
    pub max_connections_per_ip: usize,
    pub drain_timeout: Duration,
    pub rate_limit_per_ip: u32,
}

impl ServerSettings {
    pub fn limits(&self) -> Limits {
        Limits {
            read_timeout: self.read_timeout,
            max_connections: self.max_connections,
            max_connections_per_ip: self.max_connections_per_ip,
            drain_timeout: self.drain_timeout,
        }
    }
}

struct Router {
    path: String,
    ingest: Ingest,
    limiter: Option<DefaultKeyedRateLimiter<IpAddr>>,
}

/// Serves `listener` until `shutdown` is cancelled, then lets in-flight
/// requests finish for at most the drain timeout.
pub async fn serve(
    listener: TcpListener,
    settings: ServerSettings,
    ingest: Ingest,
    shutdown: CancellationToken,
) {
    let limiter = NonZeroU32::new(settings.rate_limit_per_ip)
        .map(|n| RateLimiter::keyed(Quota::per_second(n)));
    let router = Arc::new(Router {
        path: settings.path.clone(),
        ingest,
        limiter,
    });
    if router.limiter.is_some() {
        tokio::spawn(forget_idle_addresses(router.clone(), shutdown.clone()));
    }
    serve_with(listener, &settings.limits(), router, shutdown).await;
}

impl Handler for Router {
    fn handle(
        &self,
        req: Request<Incoming>,
        peer: SocketAddr,
    ) -> impl std::future::Future<Output = Response<Body>> + Send {
        self.route(req, peer)
    }
}

impl Router {
    async fn route(&self, req: Request<Incoming>, peer: SocketAddr) -> Response<Body> {
        let path = req.uri().path();
        if path == self.path {
            if req.method() != Method::POST {
                return response::method_not_allowed("POST");
            }
            if let Some(limiter) = &self.limiter
                && limiter.check_key(&peer.ip()).is_err()
            {
                tracing::info!(%peer, "rate limited");
                self.ingest.metrics.rate_limited();
                return refusal::Refusal::RateLimited.answer();
            }
            return self.ingest.handle(req, peer).await;
        }
        match (req.method(), path) {
            (&Method::GET, "/healthz") => health::alive(),
            (&Method::GET, "/readyz") => health::ready(&self.ingest.store).await,
            (m, p) => response::not_found(m, p),
        }
    }
}

/// Keeps the rate limiter's memory bounded by dropping idle addresses.
async fn forget_idle_addresses(router: Arc<Router>, shutdown: CancellationToken) {
    let mut every = tokio::time::interval(Duration::from_secs(60));
    loop {
        tokio::select! {
            _ = every.tick() => {}
            () = shutdown.cancelled() => return,
        }
        if let Some(l) = &router.limiter {
            l.retain_recent();
            l.shrink_to_fit();
        }
    }
}
