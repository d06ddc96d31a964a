//! Running as a systemd service: the sd_notify protocol, credentials from
//! `$CREDENTIALS_DIRECTORY`, metrics, backup and prune, TLS to the database.

use std::os::unix::net::UnixDatagram;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::backends::{Backend, TestDb};
use crate::helpers::*;

on_both_backends!(prune_keeps_unprocessed_work_and_decisions);

fn config_file(dir: &std::path::Path, extra: &str) -> std::path::PathBuf {
    let path = dir.join("pointhook.toml");
    std::fs::write(
        &path,
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n[storage]\npath = {:?}\n[api]\nbase_url = \"http://127.0.0.1:9\"\n\
             [worker]\nenabled = false\n{extra}",
            dir.join("pointhook.db").display().to_string()
        ),
    )
    .unwrap();
    path
}

#[test]
fn sd_notify_ready_after_bind_watchdog_pings_and_stopping() {
    let dir = tempfile::tempdir().unwrap();
    let socket_path = dir.path().join("notify.sock");
    let socket = UnixDatagram::bind(&socket_path).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let config = config_file(
        dir.path(),
        "[[accounts]]\nname = \"default\"\naccess_token = \"t\"\n",
    );
    let Served {
        mut child, addr, ..
    } = serve_binary(
        &config,
        &[
            ("NOTIFY_SOCKET", socket_path.to_str().unwrap()),
            ("WATCHDOG_USEC", "200000"),
        ],
    );
    let mut buf = [0u8; 512];
    let read = |buf: &mut [u8]| {
        let n = socket.recv(buf).expect("a notification");
        String::from_utf8_lossy(&buf[..n]).into_owned()
    };
    let first = read(&mut buf);
    assert!(first.contains("READY=1"), "{first}");
    // Ready means bound: a connection is accepted now.
    std::net::TcpStream::connect(addr).expect("listening when READY=1 is sent");
    let mut pings = 0;
    let deadline = Instant::now() + Duration::from_secs(5);
    while pings < 3 && Instant::now() < deadline {
        if read(&mut buf).contains("WATCHDOG=1") {
            pings += 1;
        }
    }
    assert_eq!(pings, 3, "watchdog pings while healthy");
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let mut stopping = false;
    let deadline = Instant::now() + Duration::from_secs(5);
    while !stopping && Instant::now() < deadline {
        stopping = read(&mut buf).contains("STOPPING=1");
    }
    assert!(stopping, "STOPPING=1 on shutdown");
    assert!(child.wait().unwrap().success());
}

#[test]
fn tokens_and_secrets_come_from_the_credentials_directory() {
    let dir = tempfile::tempdir().unwrap();
    let creds = dir.path().join("creds");
    std::fs::create_dir(&creds).unwrap();
    std::fs::write(creds.join("access_token"), "token-from-credentials\n").unwrap();
    std::fs::write(creds.join("webhook_secret"), SECRET).unwrap();
    let config = config_file(
        dir.path(),
        "[[accounts]]\nname = \"default\"\naccess_token_file = \"access_token\"\nwebhook_secret_file = \"webhook_secret\"\n",
    );
    let out = Command::new(env!("CARGO_BIN_EXE_pointhook"))
        .args(["check-config", "--config"])
        .arg(&config)
        .env("CREDENTIALS_DIRECTORY", &creds)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("token-from-credentials"));

    let out = Command::new(env!("CARGO_BIN_EXE_pointhook"))
        .args(["check-config", "--config"])
        .arg(&config)
        .env("CREDENTIALS_DIRECTORY", dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&out.stderr).contains("accounts[0].access_token_file"));

    // The secret read from the credentials is the one the receiver checks.
    let Served {
        mut child, addr, ..
    } = serve_binary(
        &config,
        &[("CREDENTIALS_DIRECTORY", creds.to_str().unwrap())],
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let url = format!("http://{addr}/notifications?type=payment&data.id=5");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let good = pointhook_common::signature::sign(SECRET.as_bytes(), Some("5"), None, now);
        let res = client()
            .post(&url)
            .header("x-signature", good)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        let res = client().post(&url).send().await.unwrap();
        assert_eq!(res.status(), 401);
    });
    child.kill().unwrap();
    child.wait().unwrap();
}

fn cli(config: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_pointhook"))
        .args(args)
        .arg("--config")
        .arg(config)
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_taken_under_load_holds_every_acknowledged_delivery() {
    let app = spawn_app().await;
    let acked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let stop = tokio_util::sync::CancellationToken::new();
    let mut load = Vec::new();
    for w in 0..8 {
        let (client, url, acked, stop) = (
            app.client.clone(),
            app.url("/notifications"),
            acked.clone(),
            stop.clone(),
        );
        load.push(tokio::spawn(async move {
            let mut i = 0;
            while !stop.is_cancelled() {
                let res = client
                    .post(format!("{url}?topic=payment&id=1{w}00{i}"))
                    .send()
                    .await
                    .unwrap();
                let body: serde_json::Value = res.json().await.unwrap();
                acked
                    .lock()
                    .unwrap()
                    .push(body["delivery_id"].as_i64().unwrap());
                i += 1;
            }
        }));
    }
    wait_for("the load to run", async || acked.lock().unwrap().len() > 50).await;
    let before: Vec<i64> = acked.lock().unwrap().clone();
    let dest = app.db_path.with_file_name("backup.db");
    let (config, target) = (app.config_path.clone(), dest.clone());
    let out =
        tokio::task::spawn_blocking(move || cli(&config, &["backup", target.to_str().unwrap()]))
            .await
            .unwrap();
    stop.cancel();
    for l in load {
        l.await.unwrap();
    }
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&dest).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "only its owner reads the copy");
    let backup = rusqlite::Connection::open(&dest).unwrap();
    let check: String = backup
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    for id in &before {
        let n: i64 = backup
            .query_row("SELECT count(*) FROM deliveries WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(n, 1, "acknowledged delivery {id} is in the backup");
    }
    let again = tokio::task::spawn_blocking({
        let (config, target) = (app.config_path.clone(), dest.clone());
        move || cli(&config, &["backup", target.to_str().unwrap()])
    })
    .await
    .unwrap();
    assert!(!again.status.success(), "never overwrites");
    app.stop().await;
}

async fn prune_keeps_unprocessed_work_and_decisions() {
    use crate::platform::{FakeApi, Merchant, status};
    let api = FakeApi::start().await;
    let merchant = Merchant::start().await;
    // Everything below happens 30 days ago.
    let clock = std::sync::Arc::new(pointhook_common::clock::ManualClock::new(
        std::time::SystemTime::now() - Duration::from_secs(30 * 86_400),
    ));
    let app = spawn_app_with(
        TestConfig::default()
            .api(&api.uri())
            .clock(clock.clone())
            .extra(&merchant.config()),
    )
    .await;
    api.order("1", "10", &[("11", "10", "approved")], None);
    api.order("2", "10", &[("21", "10", "approved")], None);
    api.fail_next("/merchant_orders/3", 100, status(500)).await;
    app.post("topic=merchant_order&id=1", &[], None).await; // done, event delivered
    app.post("topic=merchant_order&id=2", &[], None).await; // done, event pending
    app.post("topic=merchant_order&id=3", &[], None).await; // dead
    app.post("topic=subscription&id=9", &[], None).await; // ignored
    for _ in 0..8 {
        app.run_jobs().await;
        clock.advance(Duration::from_secs(400));
    }
    merchant.fail_next(1000, 500).await;
    // Deliver order 1's event only.
    app.sql.execute(
        &format!(
            "UPDATE events SET state = {} WHERE subject = 'merchant_order:1'",
            EventState::Delivered as i16
        ),
        &[],
    );
    app.post("topic=merchant_order&id=4", &[], None).await; // pending job
    assert_eq!(app.job("merchant_order:3").0, JobState::Dead);
    // Order 1's job finished just now: it stays, and so does the old
    // delivery it decides from.
    app.sql.execute(
        &format!(
            "UPDATE jobs SET updated_at = {} WHERE job_key = 'merchant_order:1'",
            pointhook::store::unix_ms_now()
        ),
        &[],
    );

    // API calls are stamped by the wall clock: made old too.
    app.sql.execute(
        &format!("UPDATE fetches SET at = at - {}", 30 * 86_400_000_i64),
        &[],
    );

    let config = app.config_path.clone();
    let out = tokio::task::spawn_blocking(move || cli(&config, &["prune", "--older-than", "1h"]))
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "a period under 96 h is refused");
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
    let config = app.config_path.clone();
    let out = tokio::task::spawn_blocking(move || cli(&config, &["prune", "--older-than", "7d"]))
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let column =
        |sql| -> Vec<String> { app.sql.rows(sql, &[]).iter().map(|r| r[0].text()).collect() };
    let keys = column("SELECT job_key FROM jobs ORDER BY job_key");
    assert_eq!(
        keys,
        ["merchant_order:1", "merchant_order:3", "merchant_order:4"],
        "old done jobs go; recent ones, dead and pending stay"
    );
    let kept = column("SELECT resource_id FROM deliveries ORDER BY resource_id");
    assert_eq!(
        kept,
        ["1", "3", "4"],
        "deliveries of unfinished jobs, and those a job decides from, stay"
    );
    assert_eq!(
        app.event_types(),
        ["order.released"],
        "the undelivered event stays"
    );
    assert_eq!(
        column("SELECT DISTINCT resource_id FROM fetches ORDER BY resource_id"),
        ["3"],
        "the API calls of the dead job stay, those of finished ones go"
    );
    assert_eq!(
        app.count("SELECT count(*) FROM decisions"),
        2,
        "decisions are never pruned"
    );
    // Order 1 notified again: decided already, so nothing is sent twice.
    app.post("topic=merchant_order&id=1", &[], None).await;
    app.run_jobs().await;
    assert_eq!(app.count("SELECT count(*) FROM events"), 1);

    // The hourly retention prunes the same way.
    let cutoff = pointhook::store::unix_ms_now();
    let pruned = app.store.prune(cutoff).await.unwrap();
    assert_eq!(pruned.jobs, 1, "the re-run job, done now");
    app.stop().await;
}

#[test]
fn json_logs_carry_delivery_ids_and_never_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_file(
        dir.path(),
        &format!(
            "[[accounts]]\nname = \"default\"\naccess_token = \"secret-token-42\"\nwebhook_secret = \"{SECRET}\"\n"
        ),
    );
    let served = serve_binary(&config, &[]);
    let Served {
        mut child,
        addr,
        logs,
    } = served;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let id = rt.block_on(async {
        let res = client()
            .post(format!("http://{addr}/notifications?topic=payment&id=77"))
            .send()
            .await
            .unwrap();
        let body: serde_json::Value = res.json().await.unwrap();
        // A bad signature is logged too, without the secret.
        client()
            .post(format!(
                "http://{addr}/notifications?type=payment&data.id=5"
            ))
            .header("x-signature", "ts=1,v1=00")
            .send()
            .await
            .unwrap();
        body["delivery_id"].as_i64().unwrap()
    });
    // Both answers are in; the stored one's log line follows its commit.
    rt.block_on(wait_for("the delivery's log line", async || {
        logs.lock()
            .unwrap()
            .iter()
            .any(|l| l.contains("delivery stored"))
    }));
    child.kill().unwrap();
    child.wait().unwrap();
    let logs = logs.lock().unwrap().clone();
    let stored: Vec<serde_json::Value> = logs
        .iter()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["message"] == "delivery stored")
        .collect();
    assert_eq!(stored.len(), 1, "{logs:?}");
    assert_eq!(stored[0]["delivery_id"], id);
    assert!(stored[0]["job_id"].is_number());
    for line in &logs {
        assert!(
            serde_json::from_str::<serde_json::Value>(line).is_ok(),
            "JSON lines only: {line}"
        );
        assert!(
            !line.contains("secret-token-42") && !line.contains(SECRET),
            "a secret in the log: {line}"
        );
    }
}

/// Control characters sent in a notification never reach a text log line
/// or the terminal of an operator reading it, raw.
#[tokio::test]
async fn control_characters_from_outside_are_escaped_in_logs_and_the_cli() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config_with(
        dir.path(),
        "[worker]\nenabled = false\n[api]\nbase_url = \"http://127.0.0.1:9\"\n",
    );
    let served = serve_binary(&config, &[]);
    // Ends with a right-to-left override and a line separator (UTF-8).
    let evil = "%1B%5B31mEVIL%0Aforged%20line%C2%9B2J%E2%80%AEdesrever%E2%80%A8";
    let res = client()
        .post(format!(
            "http://{}/notifications?topic={evil}&id=1",
            served.addr
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let body = "\u{1b}]0;title\u{7}{\"type\":\"x\u{1b}[2J\"}";
    let res = client()
        .post(format!("http://{}/notifications", served.addr))
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
    let mut child = served.child;
    child.kill().unwrap();
    child.wait().unwrap();
    // The same in the text format.
    let mut text = std::process::Command::new(env!("CARGO_BIN_EXE_pointhook"))
        .args(["serve", "--log-format", "text", "--config"])
        .arg(&config)
        .env("RUST_LOG", "info")
        // Not a terminal: no colour codes, with or without NO_COLOR.
        .env_remove("NO_COLOR")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let logs_json = served.logs.lock().unwrap().join("\n");
    text.kill().unwrap();
    let mut text_logs = String::new();
    text.stderr
        .take()
        .unwrap()
        .read_to_string(&mut text_logs)
        .unwrap();
    text.wait().unwrap();
    for logs in [&logs_json, &text_logs] {
        assert!(!logs.contains('\u{1b}'), "{logs}");
        assert!(!logs.contains('\u{9b}'), "{logs}");
        assert!(!logs.contains(['\u{202e}', '\u{2028}']), "{logs}");
        assert!(!logs.contains("\nforged"), "{logs}");
    }
    assert!(logs_json.contains("EVIL"), "the topic is logged, escaped");
    for args in [
        vec!["deliveries", "list"],
        vec!["deliveries", "list", "--json"],
        vec!["deliveries", "show", "1"],
        vec!["deliveries", "show", "1", "--json"],
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_pointhook"))
            .args(&args)
            .arg("--config")
            .arg(&config)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}");
        let shown = String::from_utf8(out.stdout).unwrap();
        assert!(shown.contains("EVIL"), "{args:?}: {shown}");
        assert!(
            !shown.contains(['\u{1b}', '\u{9b}', '\u{202e}', '\u{2028}']),
            "{args:?}: {shown}"
        );
        assert!(!shown.contains("\nforged"), "{args:?}: {shown}");
    }
}

/// `sslmode=require`: every connection is TLS, and the server's certificate
/// is checked (trusted here through `SSL_CERT_FILE`, valid for `localhost`
/// only), so the same server under another name is refused, saying why.
#[test]
fn tls_to_the_database_is_used_and_verified() {
    let Some(Backend::Postgres(pg)) = Backend::postgres() else {
        return;
    };
    let admin = TestDb::Postgres(pg.url.clone());
    if admin.value("SHOW ssl", &[]).text() != "on" {
        eprintln!("TLS test skipped: the PostgreSQL server has ssl off");
        return;
    }
    let cert = admin.value("SHOW ssl_cert_file", &[]).text();
    let mut url = url::Url::parse(&pg.url).unwrap();
    url.query_pairs_mut().append_pair("sslmode", "require");
    url.set_host(Some("localhost")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("pointhook.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n[storage]\nurl = {:?}\n\
             [api]\nbase_url = \"http://127.0.0.1:9\"\n\
             [[accounts]]\nname = \"default\"\naccess_token = \"t\"\n",
            url.as_str()
        ),
    )
    .unwrap();
    let mut served = serve_binary(&config, &[("SSL_CERT_FILE", cert.as_str())]);
    let encrypted = admin.rows(
        "SELECT s.ssl FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid)
         WHERE a.datname = current_database() AND a.application_name = 'pointhook'",
        &[],
    );
    served.child.kill().unwrap();
    served.child.wait().unwrap();
    assert!(!encrypted.is_empty(), "the instance is connected");
    assert!(
        encrypted.iter().all(|r| r[0].int() == 1),
        "every connection is TLS: {encrypted:?}"
    );

    url.set_host(Some("127.0.0.1")).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pointhook"))
        .args(["migrate", "--store", url.as_str()])
        .env("SSL_CERT_FILE", &cert)
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(!out.status.success());
    assert!(err.contains("certificate not valid for name"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}
