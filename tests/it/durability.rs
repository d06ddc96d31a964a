//! What was acknowledged survives a kill -9; shutdown drains in-flight work.

use std::process::Command;
use std::time::Duration;

use crate::helpers::*;
use crate::platform::{FakeApi, Merchant};

on_both_backends!(in_process_shutdown_waits_for_the_request_in_flight,);

fn write_config(dir: &std::path::Path) -> std::path::PathBuf {
    write_config_with(
        dir,
        "[worker]\nenabled = false\n[api]\nbase_url = \"http://127.0.0.1:9\"\n",
    )
}

#[tokio::test]
async fn every_acknowledged_delivery_survives_kill_9() {
    init_logs();
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path());
    let mut served = serve_binary(&config, &[]);
    let client = client();

    // A burst, killed while part of it is still in flight.
    let acked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for i in 0..400 {
        let client = client.clone();
        let url = format!("http://{}/notifications?topic=payment&id=7{i}", served.addr);
        let acked = acked.clone();
        tasks.push(tokio::spawn(async move {
            if let Ok(res) = client.post(url).send().await
                && res.status() == 200
            {
                let body: serde_json::Value = res.json().await.unwrap();
                acked
                    .lock()
                    .unwrap()
                    .push(body["delivery_id"].as_i64().unwrap());
            }
        }));
    }
    // Kill as soon as a good part has been acknowledged.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while acked.lock().unwrap().len() < 150 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    served.child.kill().unwrap(); // SIGKILL
    served.child.wait().unwrap();
    for t in tasks {
        let _ = t.await;
    }
    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() >= 150, "only {} acknowledged", acked.len());

    // Restart on the same file: it opens, and every acknowledged one is there.
    let mut served = serve_binary(&config, &[]);
    let res = client
        .get(format!("http://{}/readyz", served.addr))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let conn = rusqlite::Connection::open(dir.path().join("pointhook.db")).unwrap();
    for id in &acked {
        let n: i64 = conn
            .query_row(
                "SELECT count(*) FROM deliveries WHERE id = ?1 AND job_key IS NOT NULL",
                [id],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(n, 1, "acknowledged delivery {id} was lost");
    }
    let jobs: i64 = conn
        .query_row("SELECT count(*) FROM jobs j JOIN deliveries d ON d.job_key = j.job_key WHERE d.id IN (SELECT value FROM json_each(?1))",
            [serde_json::to_string(&acked).unwrap()], |r| r.get(0))
        .unwrap();
    assert_eq!(
        jobs as usize,
        acked.len(),
        "each acknowledged delivery has its job"
    );
    served.child.kill().unwrap();
    served.child.wait().unwrap();
}

/// The log's reader goes away (journald restarted, a pipe closed): a log
/// line that cannot be written is dropped, and the service still answers
/// and still stops on SIGTERM (a failed write once made every task that
/// logged panic, the signal handler among them).
#[tokio::test]
async fn a_lost_log_reader_stops_nothing() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path());
    let mut child = KillOnDrop(
        Command::new(env!("CARGO_BIN_EXE_pointhook"))
            .args(["serve", "--log-format", "json", "--config"])
            .arg(&config)
            .env("RUST_LOG", "info")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let addr = loop {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "no address logged"
        );
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        if v["message"] == "pointhook serving" {
            break v["listen"].as_str().unwrap().to_string();
        }
    };
    drop(stderr);
    let res = client()
        .post(format!("http://{addr}/notifications?topic=payment&id=1"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200, "answers with nobody reading its log");
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "SIGTERM did not stop it"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn sigterm_drains_an_in_flight_request_and_exits() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    init_logs();
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path());
    let mut served = serve_binary(&config, &[]);

    // Headers and half the body are in when the signal arrives.
    let mut stream = tokio::net::TcpStream::connect(served.addr).await.unwrap();
    let body = br#"{"resource":"1","topic":"payment"}"#;
    let head = format!(
        "POST /notifications?topic=payment&id=31337 HTTP/1.1\r\nhost: x\r\nexpect: 100-continue\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    // `100 Continue` comes back once the handler reads the body: the
    // request is in flight when the signal arrives.
    stream.write_all(&body[..10]).await.unwrap();
    expect_continue(&mut stream).await;
    let pid = served.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    // It says it stopped accepting; from then on new connections are
    // refused while the old one finishes.
    wait_for("SIGTERM to be taken", async || {
        // Ended by the signal itself: it was not handled.
        if let Ok(Some(status)) = served.child.try_wait() {
            panic!("exited before draining: {status}");
        }
        served.logged("no longer accepting")
    })
    .await;
    assert!(
        client()
            .post(format!(
                "http://{}/notifications?topic=payment&id=31338",
                served.addr
            ))
            .send()
            .await
            .is_err(),
        "no longer accepting"
    );
    stream.write_all(&body[10..]).await.unwrap();
    let mut response = vec![0u8; 512];
    let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut response))
        .await
        .unwrap()
        .unwrap();
    let response = String::from_utf8_lossy(&response[..n]).into_owned();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");

    let status = tokio::task::spawn_blocking(move || served.child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "clean exit: {status:?}");
    let conn = rusqlite::Connection::open(dir.path().join("pointhook.db")).unwrap();
    let n: i64 = conn
        .query_row(
            "SELECT count(*) FROM deliveries WHERE resource_id = '31337'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(n, 1);
}

async fn in_process_shutdown_waits_for_the_request_in_flight() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = spawn_app().await;
    let mut stream = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    stream
        .write_all(b"POST /notifications?topic=payment&id=9 HTTP/1.1\r\nhost: x\r\nexpect: 100-continue\r\ncontent-length: 2\r\n\r\n{")
        .await
        .unwrap();
    expect_continue(&mut stream).await;
    app.shutdown.cancel();
    // The listener closes (a new connection is refused), and the app is
    // still running: it waits for the request in flight.
    wait_for("the listener to close", async || {
        tokio::net::TcpStream::connect(app.addr).await.is_err()
    })
    .await;
    assert!(!app.task.is_finished(), "waits for the request in flight");
    stream.write_all(b"}").await.unwrap();
    let mut buf = vec![0u8; 512];
    let n = stream.read(&mut buf).await.unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    assert_eq!(app.count("SELECT count(*) FROM deliveries"), 1);
    app.stop().await;
}

#[tokio::test]
async fn kill_9_in_the_middle_of_processing_loses_and_repeats_nothing() {
    init_logs();
    const ORDERS: usize = 20;
    let api = FakeApi::start().await;
    let merchant = Merchant::start().await;
    for i in 0..ORDERS {
        let (payment, order) = (format!("{}", 5_000 + i), format!("{}", 9_000 + i));
        api.payment(&payment, "approved", "10", Some(&order));
        api.order(&order, "10", &[(&payment, "10", "approved")], None);
    }
    // Slow enough that the kill lands while jobs are in flight.
    api.set_delay(Duration::from_millis(100));
    let dir = tempfile::tempdir().unwrap();
    let config = write_config_with(
        dir.path(),
        &format!(
            "[api]\nbase_url = \"{}\"\ntimeout_secs = 5\nrequests_per_second = 1000\n\
             [worker]\nconcurrency = 4\n{}",
            api.uri(),
            merchant.config()
        ),
    );
    let mut served = serve_binary(&config, &[]);
    let client = client();
    for i in 0..ORDERS {
        let url = format!(
            "http://{}/notifications?topic=payment&id={}",
            served.addr,
            5_000 + i
        );
        assert_eq!(client.post(url).send().await.unwrap().status(), 200);
    }
    let db = dir.path().join("pointhook.db");
    let events = |db: &std::path::Path| -> i64 {
        let conn = rusqlite::Connection::open(db).unwrap();
        conn.busy_timeout(Duration::from_secs(5)).unwrap();
        conn.query_row("SELECT count(*) FROM events", [], |r| r.get(0))
            .unwrap()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while events(&db) < 3 {
        assert!(
            std::time::Instant::now() < deadline,
            "no progress before the kill"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    served.child.kill().unwrap();
    served.child.wait().unwrap();
    let before = events(&db);
    assert!(
        before < 2 * ORDERS as i64,
        "killed too late to prove anything ({before})"
    );

    let mut served = serve_binary(&config, &[]);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.busy_timeout(Duration::from_secs(5)).unwrap();
        let delivered: i64 = conn
            .query_row(
                "SELECT count(*) FROM events WHERE state = ?1",
                [pointhook::domain::EventState::Delivered],
                |r| r.get(0),
            )
            .unwrap();
        // Each order: payment.updated and order.released.
        if delivered == 2 * ORDERS as i64 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "only {delivered} of {} events decided and delivered in a minute",
            2 * ORDERS
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let conn = rusqlite::Connection::open(&db).unwrap();
    let released: i64 = conn
        .query_row(
            "SELECT count(DISTINCT subject) FROM events WHERE type = 'order.released'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(released, ORDERS as i64);
    assert_eq!(events(&db), 2 * ORDERS as i64, "no event twice");
    let ids: std::collections::HashSet<String> = merchant
        .received()
        .await
        .iter()
        .map(|r| r.headers["webhook-id"].to_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 2 * ORDERS, "every event reached the merchant");
    served.child.kill().unwrap();
    served.child.wait().unwrap();
}

/// The crash campaign, small: 20 kills at random moments while the
/// platform sends and the worker is mid-job; every invariant holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_crash_campaign_of_20_kills_loses_and_repeats_nothing() {
    let _serial = TIMING.lock().await;
    let report = crate::campaign::run(crate::campaign::Settings {
        binary: env!("CARGO_BIN_EXE_pointhook").into(),
        kills: 20,
        orders: 30,
        api_delay: Duration::from_millis(60),
        kill_every_ms: (150, 400),
        seed: 20261123,
        instances: 1,
        postgres: None,
    })
    .await;
    let summary = report.summary();
    assert_eq!(report.kills, 20, "{summary}");
    assert_eq!(report.released, 30, "{summary}");
    assert_eq!(report.acknowledged, 60, "{summary}");
    assert_eq!(report.events_delivered, 60, "{summary}");
}

/// Three instances on one PostgreSQL database (one ingest-only), sent to
/// in turn; one at a time killed with SIGKILL mid-load and restarted.
/// Every acknowledged notification decided exactly once, no event posted
/// with two bodies, no job left running.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_instances_on_one_database_survive_kills() {
    let Some(Backend::Postgres(pg)) = Backend::postgres() else {
        return;
    };
    let _serial = TIMING.lock().await;
    let report = crate::campaign::run(crate::campaign::Settings {
        binary: env!("CARGO_BIN_EXE_pointhook").into(),
        kills: 6,
        orders: 40,
        api_delay: Duration::from_millis(60),
        kill_every_ms: (300, 700),
        seed: 3,
        instances: 3,
        postgres: Some(pg.url.clone()),
    })
    .await;
    let summary = report.summary();
    assert_eq!(report.kills, 6, "{summary}");
    assert_eq!(report.released, 40, "{summary}");
    assert_eq!(report.acknowledged, 80, "{summary}");
    assert_eq!(report.events_delivered, 80, "{summary}");
}

/// A full disk (SQLite's max_page_count, a portable one): every request is
/// either 200 and stored, or 503 and not stored; nothing in between. Room
/// again, and it takes notifications again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_full_disk_answers_200_and_stored_or_503_and_not() {
    let app =
        spawn_app_with(TestConfig::default().extra("[server]\nmax_connections_per_ip = 0\n")).await;
    let pages = app.store.limit_pages(None).await.unwrap();
    app.store.limit_pages(Some(pages + 40)).await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..400u64 {
        let client = app.client.clone();
        let url = app.url(&format!(
            "/notifications?type=payment&data.id={}",
            1_000_000 + i
        ));
        let body = serde_json::json!({"type": "payment", "pad": "x".repeat(3000)}).to_string();
        tasks.push(tokio::spawn(async move {
            let res = client.post(url).body(body).send().await.unwrap();
            let status = res.status().as_u16();
            let body: serde_json::Value = res.json().await.unwrap_or_default();
            (1_000_000 + i, status, body["delivery_id"].as_i64())
        }));
    }
    let (mut stored, mut refused) = (0, 0);
    let db = app.db();
    for t in tasks {
        let (id, status, delivery) = t.await.unwrap();
        let found: Option<i64> = db
            .query_row(
                "SELECT id FROM deliveries WHERE resource_id = ?1",
                [id.to_string()],
                |r| r.get(0),
            )
            .ok();
        match status {
            200 => {
                assert_eq!(found, delivery, "{id}: answered 200, so stored");
                stored += 1;
            }
            503 => {
                assert_eq!(found, None, "{id}: answered 503, so not stored");
                refused += 1;
            }
            other => panic!("{id}: answered {other}"),
        }
    }
    assert!(
        stored > 0 && refused > 0,
        "{stored} stored, {refused} refused: the disk filled mid-run"
    );
    let check: String = db
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    let ready = || async {
        app.client
            .get(app.url("/readyz"))
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    };
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await; // past its cache
    assert_eq!(ready().await, 503, "a full disk is not ready");
    app.store.limit_pages(None).await.unwrap();
    assert_eq!(
        app.post("topic=payment&id=1", &[], None).await.status(),
        200
    );
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    assert_eq!(ready().await, 200, "ready again once a commit succeeds");
    app.stop().await;
}

/// Reads the `100 Continue` the server sends when its handler starts
/// reading the body of a request that asked for one.
async fn expect_continue(stream: &mut tokio::net::TcpStream) {
    use tokio::io::AsyncReadExt;
    let mut seen = Vec::new();
    let mut buf = [0u8; 64];
    while !seen.ends_with(b"\r\n\r\n") {
        let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf))
            .await
            .expect("100 Continue in time")
            .unwrap();
        assert!(n > 0, "closed before 100 Continue");
        seen.extend_from_slice(&buf[..n]);
    }
    assert!(
        seen.starts_with(b"HTTP/1.1 100"),
        "{}",
        String::from_utf8_lossy(&seen)
    );
}
