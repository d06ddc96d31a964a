//! How long a live sale waits behind a flood or a backlog,
//! measured with the release binaries and the default configuration
//! (`sample-config.toml`, with a `[fulfillment] url` added so events reach
//! a merchant endpoint this example serves):
//!
//!   cargo build --release --bins --examples
//!   target/release/examples/priority_bench burst
//!   target/release/examples/priority_bench backfill
//!
//! `burst`: one client sends IPNs for 1,500 made-up payment ids (waiting as
//! told on a 429), then a real order is paid in the sandbox; prints the time
//! from the payment to its `order.released` at the merchant endpoint.
//! `backfill`: 10,000 payments the receiver never heard of are put in the
//! sandbox and `pointhook reconcile --since` enqueues them; then a real
//! order is paid; prints the time from the payment to its `payment.updated`
//! at the merchant endpoint (its decision is recorded just before).
//! Both start `pointhook sandbox` and `pointhook serve` as child processes
//! and end them when done.

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const TOKEN: &str = "TEST-sandbox-token";
const FLOOD: usize = 1_500;
const BACKFILL: usize = 10_000;
const CLIENTS: usize = 16;

/// A child process ended when this ends.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What the merchant endpoint received: when, and the event.
type Received = Arc<Mutex<Vec<(Instant, Value)>>>;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mode = std::env::args().nth(1).unwrap_or_default();
    if mode != "burst" && mode != "backfill" {
        eprintln!("usage: priority_bench burst|backfill");
        std::process::exit(64);
    }
    pointhook_common::tls::install_default_provider();
    let bin = std::env::current_exe()
        .expect("this example's path")
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/examples")
        .join("pointhook");
    let dir = tempfile::tempdir().expect("temp dir");
    let received: Received = Arc::default();
    let merchant = serve_merchant(received.clone()).await;
    let (sandbox_addr, receiver_addr) = (free_addr(), free_addr());
    let sandbox_url = format!("http://{sandbox_addr}");
    let receiver_url = format!("http://{receiver_addr}/notifications");

    let _sandbox = Running(
        Command::new(&bin)
            .args(["sandbox", "--listen", &sandbox_addr.to_string()])
            .args(["--token", TOKEN, "--notification-url", &receiver_url])
            .args([
                "--mail-spool",
                &dir.path().join("mail").display().to_string(),
            ])
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .spawn()
            .expect("pointhook sandbox"),
    );
    let config = dir.path().join("pointhook.toml");
    let sample =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/sample-config.toml"))
            .expect("sample-config.toml");
    std::fs::write(
        &config,
        format!(
            "{sample}\n[fulfillment]\nurl = \"http://{merchant}/events\"\n\
             secret = \"whsec_cHJpb3JpdHktYmVuY2gtc2VjcmV0LW9mLTMyLWJ5dGVz\"\n"
        ),
    )
    .unwrap();
    let env = [
        ("POINTHOOK_SERVER_LISTEN", receiver_addr.to_string()),
        (
            "POINTHOOK_STORAGE_PATH",
            dir.path().join("pointhook.db").display().to_string(),
        ),
        ("POINTHOOK_API_BASE_URL", sandbox_url.clone()),
        ("RUST_LOG", "warn".to_string()),
    ];
    let _receiver = Running(
        Command::new(&bin)
            .args(["serve", "--config"])
            .arg(&config)
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .stdout(Stdio::null())
            .spawn()
            .expect("pointhook serve"),
    );
    let http = reqwest::Client::new();
    wait_ready(&http, &format!("{sandbox_url}/sandbox/clock")).await;
    wait_ready(&http, &format!("http://{receiver_addr}/readyz")).await;
    let sandbox = Sandbox {
        http: http.clone(),
        url: sandbox_url,
    };
    let db = dir.path().join("pointhook.db");

    match mode.as_str() {
        "burst" => {
            let started = Instant::now();
            flood(&http, &receiver_url).await;
            println!(
                "{FLOOD} IPNs for made-up ids accepted in {:.1} s",
                started.elapsed().as_secs_f64()
            );
        }
        _ => {
            let started = Instant::now();
            put_payments(&sandbox).await;
            println!(
                "{BACKFILL} payments put in the sandbox in {:.1} s",
                started.elapsed().as_secs_f64()
            );
            let since = jiff::Timestamp::now() - jiff::SignedDuration::from_hours(1);
            let started = Instant::now();
            let out = Command::new(&bin)
                .args([
                    "reconcile",
                    "--since",
                    &since.to_string(),
                    "--json",
                    "--config",
                ])
                .arg(&config)
                .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
                .output()
                .expect("pointhook reconcile");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            println!(
                "reconcile --since enqueued in {:.1} s: {}",
                started.elapsed().as_secs_f64(),
                String::from_utf8_lossy(&out.stdout).trim()
            );
        }
    }
    println!("before the sale: {}", backlog(&db));
    let order = sandbox
        .post("/sandbox/merchant_orders", json!({"total_amount": 10}))
        .await;
    let order_id = order["id"].to_string();
    let paid_at = Instant::now();
    let payment = sandbox
        .post(
            &format!("/sandbox/merchant_orders/{order_id}/payments"),
            json!({"amount": 10}),
        )
        .await;
    let payment_id = payment["id"].to_string().trim_matches('"').to_string();
    let (wanted, field, id) = match mode.as_str() {
        "burst" => ("order.released", "merchant_order_id", order_id),
        _ => ("payment.updated", "payment_id", payment_id),
    };
    let arrived = loop {
        let found = received.lock().unwrap().iter().find_map(|(at, e)| {
            (e["type"] == wanted && e["data"][field].as_str() == Some(id.as_str())).then_some(*at)
        });
        if let Some(at) = found {
            break at;
        }
        assert!(
            paid_at.elapsed() < Duration::from_secs(600),
            "no {wanted} for {id} after 10 minutes"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    println!(
        "{wanted} for {field} {id}: {:.2} s after the payment",
        (arrived - paid_at).as_secs_f64()
    );
    println!("at that moment: {}", backlog(&db));
}

/// Jobs still to run and API calls made so far, read from the database.
fn backlog(db: &Path) -> String {
    let conn = rusqlite::Connection::open(db).expect("the database");
    conn.busy_timeout(Duration::from_secs(5)).unwrap();
    let count = |sql: &str| -> i64 { conn.query_row(sql, [], |r| r.get(0)).unwrap_or(-1) };
    format!(
        "{} jobs pending, {} API calls made",
        count("SELECT count(*) FROM jobs WHERE state = 0"),
        count("SELECT count(*) FROM fetches")
    )
}

/// IPNs for made-up payment ids, from one client over `CLIENTS`
/// connections; a 429 is waited out as its `Retry-After` says and sent
/// again, so every one is stored.
async fn flood(http: &reqwest::Client, url: &str) {
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..CLIENTS {
        let (http, url, next) = (http.clone(), url.to_string(), next.clone());
        tasks.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= FLOOD {
                    return;
                }
                let id = 900_000_000_000u64 + i as u64 * 7_919;
                loop {
                    let res = http
                        .post(format!("{url}?topic=payment&id={id}"))
                        .send()
                        .await
                        .expect("the receiver answers");
                    match res.status().as_u16() {
                        200 => break,
                        429 => tokio::time::sleep(Duration::from_secs(1)).await,
                        s => panic!("IPN {id} answered {s}"),
                    }
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

/// `BACKFILL` approved payments, changed 20 minutes ago (past the
/// sweeper's grace), put in the sandbox with no notification.
async fn put_payments(sandbox: &Sandbox) {
    let when = (jiff::Timestamp::now() - jiff::SignedDuration::from_mins(20)).to_string();
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..CLIENTS {
        let (sandbox, next, when) = (sandbox.clone(), next.clone(), when.clone());
        tasks.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= BACKFILL {
                    return;
                }
                let id = 800_000_000_000u64 + i as u64;
                sandbox
                    .put(
                        &format!("/sandbox/resources/payment/{id}"),
                        json!({"id": id, "status": "approved", "status_detail": "accredited",
                               "transaction_amount": 10, "date_created": when,
                               "date_last_updated": when}),
                    )
                    .await;
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

#[derive(Clone)]
struct Sandbox {
    http: reqwest::Client,
    url: String,
}

impl Sandbox {
    async fn post(&self, path: &str, body: Value) -> Value {
        self.send(self.http.post(format!("{}{path}", self.url)), body)
            .await
    }

    async fn put(&self, path: &str, body: Value) -> Value {
        self.send(self.http.put(format!("{}{path}", self.url)), body)
            .await
    }

    async fn send(&self, req: reqwest::RequestBuilder, body: Value) -> Value {
        let res = req
            .bearer_auth(TOKEN)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .expect("the sandbox answers");
        let status = res.status();
        let answer: Value = res.json().await.unwrap_or(Value::Null);
        assert!(status.is_success(), "{status}: {answer}");
        answer
    }
}

async fn wait_ready(http: &reqwest::Client, url: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(res) = http.get(url).bearer_auth(TOKEN).send().await
            && res.status().is_success()
        {
            return;
        }
        assert!(Instant::now() < deadline, "{url} never answered");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// An address free now, for a child process to listen on.
fn free_addr() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
}

/// The merchant's endpoint: answers 204 and records each event with when it
/// came.
async fn serve_merchant(received: Received) -> SocketAddr {
    use http_body_util::BodyExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let received = received.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(
                    move |req: hyper::Request<hyper::body::Incoming>| {
                        let received = received.clone();
                        async move {
                            let body = req.into_body().collect().await?.to_bytes();
                            if let Ok(event) = serde_json::from_slice::<Value>(&body) {
                                received.lock().unwrap().push((Instant::now(), event));
                            }
                            Ok::<_, hyper::Error>(
                                hyper::Response::builder()
                                    .status(204)
                                    .body(http_body_util::Empty::<bytes::Bytes>::new())
                                    .unwrap(),
                            )
                        }
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}
