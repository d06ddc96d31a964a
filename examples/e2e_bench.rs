//! End-to-end benchmark: notification → fetch → decision → event received
//! by a local merchant endpoint, against a local stand-in for the platform
//! API that answers at once. Everything runs in this process on loopback.
//!
//!   cargo run --release --example e2e_bench -- --rate 200 --seconds 20
//!   cargo run --release --example e2e_bench -- --max --count 5000
//!   … -- --postgres postgres://postgres@127.0.0.1/bench   (an empty database)
//!   … -- --destinations 3   (three [[destinations]], each its own endpoint;
//!                            1, the default, is today's [fulfillment])
//!   … -- --storage          (SQLite: what the run left on disk, per sale,
//!                            by table and index, from SQLite's dbstat)
//!
//! Each notification is an IPN for a fresh payment of a fresh merchant
//! order that is paid in full, so each must end in one `order.released`.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use pointhook::config::Config;
use pointhook::{App, Options};
use tokio_util::sync::CancellationToken;

type Received = Arc<Mutex<HashMap<String, Instant>>>;

#[tokio::main]
async fn main() {
    let mut rate = 200u64;
    let mut seconds = 20u64;
    let mut max = false;
    let mut count = 5000usize;
    let mut postgres: Option<String> = None;
    let mut destinations = 1usize;
    let mut storage_report = false;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--rate" => rate = args.next().and_then(|v| v.parse().ok()).expect("--rate N"),
            "--seconds" => {
                seconds = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--seconds N")
            }
            "--count" => count = args.next().and_then(|v| v.parse().ok()).expect("--count N"),
            "--max" => max = true,
            "--postgres" => postgres = Some(args.next().expect("--postgres URL")),
            "--storage" => storage_report = true,
            "--destinations" => {
                destinations = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|n| *n >= 1)
                    .expect("--destinations N (1 or more)")
            }
            other => panic!("unknown flag {other}"),
        }
    }

    let api = serve(|path| {
        let id = path.rsplit('/').next().unwrap_or("0").to_string();
        if path.starts_with("/v1/payments/") {
            format!(r#"{{"id":{id},"status":"approved","transaction_amount":10,"order":{{"id":{id}}}}}"#)
        } else {
            format!(
                r#"{{"id":{id},"total_amount":10,"payments":[{{"id":{id},"transaction_amount":10,"status":"approved"}}],"shipments":[]}}"#
            )
        }
    })
    .await;
    let received: Vec<Received> = (0..destinations).map(|_| Received::default()).collect();
    let mut outbound = String::new();
    for (i, r) in received.iter().enumerate() {
        let merchant = serve_merchant(r.clone()).await;
        outbound += &if destinations == 1 {
            format!("[fulfillment]\nurl = \"http://{merchant}/events\"\nsecret = \"{SECRET}\"\n")
        } else {
            format!(
                "[[destinations]]\nname = \"d{i}\"\nurl = \"http://{merchant}/events\"\nsecret = \"{SECRET}\"\n"
            )
        };
    }

    let dir = tempfile::tempdir().expect("temp dir");
    let storage = match &postgres {
        Some(url) => format!("url = {url:?}"),
        None => format!(
            "path = {:?}",
            dir.path().join("bench.db").display().to_string()
        ),
    };
    // One load generator is one address: no per-address rate limit.
    let toml = format!(
        "[server]\nrate_limit_per_ip = 0\n[storage]\n{storage}\n[api]\nbase_url = \"http://{api}\"\nrequests_per_second = 100000\n\
         [[accounts]]\nname = \"default\"\naccess_token = \"t\"\n\
         {outbound}\
         [worker]\nconcurrency = 16\n[reconcile]\nenabled = false\n"
    );
    let config = Config::from_toml(&toml, Vec::new()).expect("config");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = App::new(config, listener, Options::default())
        .await
        .expect("app");
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(app.run(shutdown.clone()));

    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<Full<Bytes>>();
    let base = 70_000_000_000u64;
    let sent: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let start = Instant::now();
    let total = if max {
        count
    } else {
        (rate * seconds) as usize
    };
    let mut sends = tokio::task::JoinSet::new();
    for i in 0..total {
        if !max {
            let at = start + Duration::from_secs_f64(i as f64 / rate as f64);
            tokio::time::sleep_until(at.into()).await;
        } else {
            while sends.len() >= 64 {
                sends.join_next().await;
            }
        }
        let id = (base + i as u64).to_string();
        let (client, sent) = (client.clone(), sent.clone());
        sends.spawn(async move {
            let req = Request::post(format!("http://{addr}/notifications?topic=payment&id={id}"))
                .body(Full::new(Bytes::new()))
                .unwrap();
            sent.lock().unwrap().insert(id, Instant::now());
            let res = client.request(req).await.expect("post");
            assert_eq!(res.status(), 200);
        });
    }
    while sends.join_next().await.is_some() {}
    let deadline = Instant::now() + Duration::from_secs(120);
    let arrived = |r: &Received| r.lock().unwrap().len();
    while received.iter().map(arrived).min().unwrap_or(0) < total && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let elapsed = start.elapsed().as_secs_f64();
    shutdown.cancel();
    let _ = task.await;

    let sent = sent.lock().unwrap();
    let received: Vec<_> = received.iter().map(|r| r.lock().unwrap().clone()).collect();
    let histogram = || hdrhistogram::Histogram::<u64>::new_with_bounds(1, 600_000_000, 3).unwrap();
    // Each event at each destination, and each notification's last one.
    let (mut hist, mut last) = (histogram(), histogram());
    for (id, s) in sent.iter() {
        let ats: Vec<Instant> = received.iter().filter_map(|r| r.get(id).copied()).collect();
        for at in &ats {
            hist.record(at.duration_since(*s).as_micros().max(1) as u64)
                .unwrap();
        }
        if ats.len() == received.len()
            && let Some(at) = ats.iter().max()
        {
            last.record(at.duration_since(*s).as_micros().max(1) as u64)
                .unwrap();
        }
    }
    let events = received.iter().map(|r| r.len()).min().unwrap_or(0);
    println!(
        "mode={} destinations={destinations} notifications={} events={} elapsed={:.1}s end_to_end={:.0}/s",
        if max {
            "max".to_string()
        } else {
            format!("rate {rate}/s")
        },
        total,
        events,
        elapsed,
        events as f64 / elapsed
    );
    println!(
        "notification_to_event_ms p50={:.2} p99={:.2} max={:.2}",
        hist.value_at_quantile(0.5) as f64 / 1000.0,
        hist.value_at_quantile(0.99) as f64 / 1000.0,
        hist.max() as f64 / 1000.0
    );
    if storage_report && postgres.is_none() {
        report_storage(&dir.path().join("bench.db"), total);
    }
    println!(
        "notification_to_every_destination_ms p50={:.2} p99={:.2} max={:.2}",
        last.value_at_quantile(0.5) as f64 / 1000.0,
        last.value_at_quantile(0.99) as f64 / 1000.0,
        last.max() as f64 / 1000.0
    );
}

/// Bytes on disk per sale, by table and index (pages, and the rows'
/// payload in them), read with SQLite's `dbstat` after the run.
fn report_storage(path: &std::path::Path, sales: usize) {
    let conn = rusqlite::Connection::open(path).expect("open the bench's database");
    let mut st = conn
        .prepare(
            "SELECT name, sum(pgsize), sum(payload) FROM dbstat
             GROUP BY name HAVING sum(pgsize) > 4096 ORDER BY 2 DESC",
        )
        .expect("dbstat");
    let rows: Vec<(String, i64, i64)> = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("dbstat rows")
        .map(Result::unwrap)
        .collect();
    let per = |n: i64| n as f64 / sales as f64;
    let (mut pages, mut payload) = (0, 0);
    for (name, size, data) in &rows {
        println!(
            "storage {name}: {:.0} B/sale on disk, {:.0} B/sale of rows",
            per(*size),
            per(*data)
        );
        pages += size;
        payload += data;
    }
    let file = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    println!(
        "storage total: {:.0} B/sale on disk ({:.0} B/sale of rows), file {file} B for {sales} sales",
        per(pages),
        per(payload)
    );
}

const SECRET: &str = "whsec_cG9pbnRob29rLWJlbmNoLW1lcmNoYW50LXNlY3JldCE=";

/// A server answering every GET with `answer(path)` as JSON, at once.
async fn serve(answer: fn(&str) -> String) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            tokio::spawn(async move {
                let service = service_fn(move |req: Request<hyper::body::Incoming>| async move {
                    let body = answer(req.uri().path());
                    Ok::<_, Infallible>(Response::new(Full::new(Bytes::from(body))))
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

/// The merchant's endpoint: notes when each order's event arrived.
async fn serve_merchant(received: Received) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let received = received.clone();
            tokio::spawn(async move {
                let service = service_fn(move |req: Request<hyper::body::Incoming>| {
                    let received = received.clone();
                    async move {
                        let body = req
                            .into_body()
                            .collect()
                            .await
                            .map(|b| b.to_bytes())
                            .unwrap_or_default();
                        let at = Instant::now();
                        // The decision measured: the order's release (ids
                        // in events are strings).
                        if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&body)
                            && v["type"] == "order.released"
                            && let Some(id) = v["data"]["merchant_order_id"].as_str()
                        {
                            received.lock().unwrap().entry(id.to_string()).or_insert(at);
                        }
                        Ok::<_, Infallible>(Response::new(Full::new(Bytes::new())))
                    }
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}
