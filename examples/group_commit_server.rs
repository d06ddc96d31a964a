//! The second anchor of the ack-path benchmark: the least a durable
//! receiver can do. A hyper server that hands each request's query and
//! body to one writer thread, which inserts a row per request into SQLite
//! (WAL, `synchronous=FULL`) and commits whatever queued in one
//! transaction, then answers. What pointhook does beyond this is its
//! per-request cost.
//!
//!   cargo run --release --example group_commit_server -- 127.0.0.1:8098 /tmp/anchor.db

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::sync::{mpsc, oneshot};

type Job = (String, Bytes, oneshot::Sender<i64>);

fn writer(path: String, mut rx: mpsc::Receiver<Job>) {
    let mut conn = rusqlite::Connection::open(path).expect("open");
    conn.pragma_update(None, "journal_mode", "wal").unwrap();
    conn.pragma_update(None, "synchronous", "full").unwrap();
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS d (id INTEGER PRIMARY KEY, at INTEGER, query TEXT, body BLOB)",
    )
    .unwrap();
    let mut batch = Vec::new();
    while let Some(first) = rx.blocking_recv() {
        batch.push(first);
        while batch.len() < 1024 {
            match rx.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let tx = conn.transaction().unwrap();
        let mut ids = Vec::with_capacity(batch.len());
        {
            let mut stmt = tx
                .prepare_cached("INSERT INTO d (at, query, body) VALUES (?1, ?2, ?3)")
                .unwrap();
            for (query, body, _) in &batch {
                stmt.execute(rusqlite::params![0i64, query, &body[..]])
                    .unwrap();
                ids.push(tx.last_insert_rowid());
            }
        }
        tx.commit().unwrap();
        for ((_, _, reply), id) in batch.drain(..).zip(ids) {
            let _ = reply.send(id);
        }
    }
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:8098".into());
    let path = args.next().unwrap_or_else(|| "/tmp/anchor.db".into());
    let (tx, rx) = mpsc::channel::<Job>(4096);
    std::thread::spawn(move || writer(path, rx));
    let listener = tokio::net::TcpListener::bind(&addr).await.expect("bind");
    println!("group-commit server on {addr}");
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        let tx = tx.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req: Request<hyper::body::Incoming>| {
                let tx = tx.clone();
                async move {
                    let query = req.uri().query().unwrap_or_default().to_string();
                    let body = req
                        .into_body()
                        .collect()
                        .await
                        .map(|b| b.to_bytes())
                        .unwrap_or_default();
                    let (reply, id) = oneshot::channel();
                    let _ = tx.send((query, body, reply)).await;
                    let id = id.await.unwrap_or(-1);
                    Ok::<_, Infallible>(Response::new(Full::new(Bytes::from(format!(
                        r#"{{"status":"accepted","delivery_id":{id},"duplicate":false}}"#
                    )))))
                }
            });
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
