//! The accept loop every listener shares (the notification endpoint, the
//! admin API, the sandbox): a cap on open connections overall and per
//! address, a header read timeout, a bounded buffer per connection, and a
//! bounded graceful drain. A route
//! table (axum's `Router`) is served through it by [`RouterHandler`], so
//! its limits hold there too.

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::response::{self, Body};

/// The most a connection buffers, unfinished headers included (hyper
/// answers 431 past it). Hyper's default, about 400 KB, let 1,024
/// connections that never finish their headers hold some 400 MB; nothing
/// any listener serves needs more than a few KiB of headers.
pub const CONNECTION_BUFFER: usize = 32 * 1024;

/// What the accept loop bounds.
#[derive(Debug, Clone)]
pub struct Limits {
    pub read_timeout: Duration,
    pub max_connections: usize,
    /// Connections one address may hold open at once; 0: no cap.
    pub max_connections_per_ip: usize,
    pub drain_timeout: Duration,
}

/// Answers requests; one per listener.
pub trait Handler: Send + Sync + 'static {
    fn handle(
        &self,
        req: Request<Incoming>,
        peer: SocketAddr,
    ) -> impl std::future::Future<Output = Response<Body>> + Send;
}

/// An axum route table as a [`Handler`]. Answers are collected whole: the
/// routes served this way answer small bodies.
#[derive(Clone)]
pub struct RouterHandler(pub axum::Router);

impl Handler for RouterHandler {
    fn handle(
        &self,
        req: Request<Incoming>,
        _peer: SocketAddr,
    ) -> impl std::future::Future<Output = Response<Body>> + Send {
        let router = self.0.clone();
        async move {
            let res = match router.oneshot(req.map(axum::body::Body::new)).await {
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
}

/// The connection handling every listener shares: the connection limit,
/// the header read timeout and the graceful drain.
pub async fn serve_with<H: Handler>(
    listener: TcpListener,
    limits: &Limits,
    router: Arc<H>,
    shutdown: CancellationToken,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let per_ip = PerAddress::new(limits.max_connections_per_ip);
    let graceful = GracefulShutdown::new();
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.read_timeout)
        .max_buf_size(CONNECTION_BUFFER)
        .keep_alive(true);
    tokio::spawn(keep_a_timer_ahead(limits.read_timeout, shutdown.clone()));

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
        () = tokio::time::sleep(limits.drain_timeout) => {
            tracing::warn!(timeout = ?limits.drain_timeout, "drain deadline reached; closing what is left");
        }
    }
}

/// Keeps one timer always due before any header deadline. Hyper sets a
/// timer for every request's headers, and tokio wakes its I/O driver (an
/// eventfd write, and a thread woken) whenever a timer is set earlier than
/// the driver's next wake-up, which under load meant once every other
/// request: the deadlines are cancelled as the headers arrive, so the
/// driver often parked with none. With this one pending, a header deadline
/// is never the earliest, and the driver wakes only for it, twice per
/// timeout. Measured at 64 connections: 0.5 wake-ups per request before,
/// 0.05 after.
async fn keep_a_timer_ahead(header_timeout: Duration, shutdown: CancellationToken) {
    let mut every = tokio::time::interval((header_timeout / 2).max(Duration::from_millis(1)));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = every.tick() => {}
            () = shutdown.cancelled() => return,
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
