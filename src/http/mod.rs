//! The notification listener: accepts connections (bounded in number, with
//! header and body read timeouts), applies the optional per-address rate
//! limit, routes to the ingest endpoint and the health checks, and drains
//! in-flight requests on shutdown.

pub mod admin;
pub mod classify;
mod health;
pub mod ingest;
mod lenient_json;
pub(crate) mod response;
pub mod verify;

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use ingest::Ingest;
use response::Body;

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
    serve_with(listener, &settings, router, shutdown).await;
}

/// Answers requests; one per listener.
pub trait Handler: Send + Sync + 'static {
    fn handle(
        &self,
        req: Request<Incoming>,
        peer: SocketAddr,
    ) -> impl std::future::Future<Output = Response<Body>> + Send;
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

/// The connection handling every listener shares: the connection limit,
/// the header read timeout and the graceful drain.
pub async fn serve_with<H: Handler>(
    listener: TcpListener,
    settings: &ServerSettings,
    router: Arc<H>,
    shutdown: CancellationToken,
) {
    let slots = Arc::new(Semaphore::new(settings.max_connections));
    let per_ip = PerAddress::new(settings.max_connections_per_ip);
    let graceful = GracefulShutdown::new();
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(settings.read_timeout)
        .keep_alive(true);

    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot,
            () = shutdown.cancelled() => break,
        };
        let Ok(slot) = slot else { break };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors and the like: back off, go on.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = shutdown.cancelled() => break,
        };
        // One address cannot take every slot: past its cap, the new
        // connection is closed at once.
        let Some(held) = per_ip.enter(peer.ip()) else {
            tracing::debug!(%peer, "too many connections from this address: closed");
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let router = router.clone();
        let service = service_fn(move |req| {
            let router = router.clone();
            async move { Ok::<_, Infallible>(router.handle(req, peer).await) }
        });
        let conn = graceful.watch(http.serve_connection(TokioIo::new(stream), service));
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, %peer, "connection ended with an error");
            }
            drop(held);
            drop(slot);
        });
    }
    drop(listener);
    tracing::info!("no longer accepting; draining in-flight requests");
    tokio::select! {
        () = graceful.shutdown() => tracing::info!("every connection drained"),
        () = tokio::time::sleep(settings.drain_timeout) => {
            tracing::warn!(timeout = ?settings.drain_timeout, "drain deadline reached; closing what is left");
        }
    }
}

/// Open connections per remote address.
#[derive(Clone)]
struct PerAddress {
    cap: usize,
    open: Arc<std::sync::Mutex<std::collections::HashMap<IpAddr, usize>>>,
}

/// One open connection of an address; closing it frees its place.
struct Held {
    ip: IpAddr,
    of: PerAddress,
}

impl PerAddress {
    fn new(cap: usize) -> PerAddress {
        PerAddress {
            cap,
            open: Arc::default(),
        }
    }

    fn enter(&self, ip: IpAddr) -> Option<Held> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let n = open.entry(ip).or_insert(0);
        if self.cap > 0 && *n >= self.cap {
            return None;
        }
        *n += 1;
        Some(Held {
            ip,
            of: self.clone(),
        })
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut open = self.of.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = open.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.ip);
            }
        }
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
                let mut res = response::error(
                    StatusCode::TOO_MANY_REQUESTS,
                    "rate_limited",
                    "too many requests from this address",
                );
                res.headers_mut()
                    .insert(http::header::RETRY_AFTER, HeaderValue::from_static("1"));
                return res;
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
