//! Load generator for the ack path: POSTs IPNs (a fresh resource id each)
//! over keep-alive HTTP/1.1 connections and reports throughput and ack
//! latency percentiles.
//!
//! Closed loop (as fast as N connections go):
//!   cargo run --release --example loadgen -- --url http://127.0.0.1:8080/notifications --connections 64 --seconds 10
//! Open loop (a fixed rate, latency measured from the scheduled send time,
//! so a stall is not hidden):
//!   cargo run --release --example loadgen -- --url … --rate 1000 --connections 16 --seconds 20
//! `--pid PID` also reports the peak RSS of that process and the CPU time
//! it spent per acknowledged request, by thread name (from
//! `/proc/PID/task/*/schedstat`): steadier than requests/s on a shared
//! machine, and it says which thread the time goes to; `--ids random`
//! sends random ids instead of increasing numbers, `--ids same` one id
//! every time (duplicates coalescing into one job). `--url` given several
//! times spreads the connections over the URLs (several instances).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;

struct Args {
    urls: Vec<hyper::Uri>,
    connections: usize,
    seconds: u64,
    rate: Option<u64>,
    pid: Option<u32>,
    random_ids: bool,
    /// Every request names the same payment (`--ids same`): a duplicate
    /// of one job each time.
    same_id: bool,
}

fn parse_args() -> Args {
    let mut args = Args {
        urls: Vec::new(),
        connections: 64,
        seconds: 10,
        rate: None,
        pid: None,
        random_ids: false,
        same_id: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--url" => args.urls.push(value.parse().expect("--url")),
            "--connections" => args.connections = value.parse().expect("--connections"),
            "--seconds" => args.seconds = value.parse().expect("--seconds"),
            "--rate" => args.rate = Some(value.parse().expect("--rate")),
            "--pid" => args.pid = Some(value.parse().expect("--pid")),
            "--ids" => {
                args.random_ids = value == "random";
                args.same_id = value == "same";
            }
            other => panic!("unknown flag {other}"),
        }
    }
    if args.urls.is_empty() {
        args.urls
            .push("http://127.0.0.1:8080/notifications".parse().unwrap());
    }
    args
}

#[tokio::main]
async fn main() {
    let args = Arc::new(parse_args());
    let counter = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let run_id = std::process::id() as u64;
    // A fresh range of ids per run, so one database can take several runs.
    let id_base: u64 = 90_000_000_000
        + std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
            % 100_000
            * 1_000_000;
    let cpu_before = args.pid.map(cpu_by_thread);
    let start = Instant::now();
    let end = start + Duration::from_secs(args.seconds);

    // Open loop: an OS thread paces the sends (tokio's timer rounds to the
    // millisecond, which would show up as latency); a send waits for a free
    // connection, and that wait counts as latency, so a stall is not hidden.
    let pacer = args.rate.map(|rate| {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Instant>();
        let interval = Duration::from_secs_f64(1.0 / rate as f64);
        std::thread::spawn(move || {
            let mut k = 0u32;
            loop {
                let at = start + interval * k;
                if at >= end {
                    break;
                }
                if let Some(wait) = at.checked_duration_since(Instant::now()) {
                    std::thread::sleep(wait);
                }
                if tx.send(at).is_err() {
                    break;
                }
                k += 1;
            }
        });
        Arc::new(tokio::sync::Mutex::new(rx))
    });
    let mut tasks = Vec::new();
    for c in 0..args.connections {
        let (args, counter, errors) = (args.clone(), counter.clone(), errors.clone());
        let url = args.urls[c % args.urls.len()].clone();
        let pacer = pacer.clone();
        tasks.push(tokio::spawn(async move {
            let mut hist =
                hdrhistogram::Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
            let authority = url.authority().unwrap().clone();
            let stream = tokio::net::TcpStream::connect(authority.as_str())
                .await
                .expect("connect");
            stream.set_nodelay(true).unwrap();
            let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
                .await
                .expect("handshake");
            tokio::spawn(conn);
            loop {
                let scheduled = match &pacer {
                    Some(rx) => match rx.lock().await.recv().await {
                        Some(at) => at,
                        None => break,
                    },
                    None => {
                        let now = Instant::now();
                        if now >= end {
                            break;
                        }
                        now
                    }
                };
                let n = counter.fetch_add(1, Ordering::Relaxed);
                // Payment ids are increasing numbers on the platform; `--ids
                // random` sends UUID-like ids instead (as payment intents have).
                let uri = if args.random_ids {
                    format!(
                        "{}?topic=point_integration_ipn&id={:016x}-{:016x}",
                        url.path(),
                        rand_u64(n ^ run_id),
                        rand_u64(n)
                    )
                } else if args.same_id {
                    format!("{}?topic=payment&id={}", url.path(), id_base)
                } else {
                    format!("{}?topic=payment&id={}", url.path(), id_base + n)
                };
                let req = Request::post(uri)
                    .header("host", authority.as_str())
                    .header("content-type", "application/json")
                    .body(Full::new(Bytes::from_static(
                        br#"{"resource":"x","topic":"payment"}"#,
                    )))
                    .unwrap();
                match sender.send_request(req).await {
                    Ok(res) => {
                        let ok = res.status() == 200;
                        let _ = res.into_body().collect().await;
                        if ok {
                            hist.record(scheduled.elapsed().as_micros().max(1) as u64)
                                .unwrap();
                        } else {
                            errors.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    Err(_) => {
                        errors.fetch_add(1, Ordering::Relaxed);
                        break;
                    }
                }
            }
            hist
        }));
    }
    let mut hist = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
    for t in tasks {
        hist.add(t.await.unwrap()).unwrap();
    }
    let elapsed = start.elapsed().as_secs_f64();
    println!(
        "mode={} connections={} seconds={:.1} ok={} errors={} throughput={:.0}/s",
        args.rate
            .map_or("closed".to_string(), |r| format!("rate {r}/s")),
        args.connections,
        elapsed,
        hist.len(),
        errors.load(Ordering::Relaxed),
        hist.len() as f64 / elapsed
    );
    println!(
        "latency_ms p50={:.3} p99={:.3} p99.9={:.3} max={:.3}",
        hist.value_at_quantile(0.50) as f64 / 1000.0,
        hist.value_at_quantile(0.99) as f64 / 1000.0,
        hist.value_at_quantile(0.999) as f64 / 1000.0,
        hist.max() as f64 / 1000.0
    );
    if let Some(pid) = args.pid {
        let before = cpu_before.unwrap_or_default();
        let after = cpu_by_thread(pid);
        let per_request = |ns: u64| ns as f64 / 1000.0 / hist.len().max(1) as f64;
        let mut total = 0;
        let mut line = String::new();
        for (name, ns) in &after {
            let spent = ns.saturating_sub(before.get(name).copied().unwrap_or(0));
            total += spent;
            if spent > 0 {
                line.push_str(&format!(" {name}={:.1}", per_request(spent)));
            }
        }
        println!(
            "server_cpu_us_per_request total={:.1}{line}",
            per_request(total)
        );
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        for line in status
            .lines()
            .filter(|l| l.starts_with("VmHWM") || l.starts_with("VmRSS"))
        {
            println!("{line}");
        }
    }
}

/// On-CPU nanoseconds of `pid`'s threads, summed by thread name (threads
/// that ended are not counted).
fn cpu_by_thread(pid: u32) -> std::collections::BTreeMap<String, u64> {
    let mut by_name = std::collections::BTreeMap::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return by_name;
    };
    for task in tasks.flatten() {
        let dir = task.path();
        let name = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        let ns = std::fs::read_to_string(dir.join("schedstat"))
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
            .unwrap_or(0);
        *by_name.entry(name.trim().to_string()).or_default() += ns;
    }
    by_name
}

/// splitmix64: cheap, well-spread ids without a dependency.
fn rand_u64(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
