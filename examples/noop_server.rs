//! The ceiling of the HTTP stack on this machine: a minimal hyper server
//! that answers every request 200 at once and stores nothing. The load
//! generator is pointed at it and at pointhook in the same session.
//!
//!   cargo run --release --example noop_server -- 127.0.0.1:8099

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;

#[tokio::main]
async fn main() {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8099".into());
    let listener = tokio::net::TcpListener::bind(&addr).await.expect("bind");
    println!("no-op server on {addr}");
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        tokio::spawn(async move {
            let service = service_fn(|req: Request<hyper::body::Incoming>| async move {
                let _ = req.into_body().collect().await;
                Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(
                    br#"{"status":"accepted","delivery_id":0,"duplicate":false}"#,
                ))))
            });
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
