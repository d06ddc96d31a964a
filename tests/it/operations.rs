//! Running as a systemd service: the sd_notify protocol, credentials from
//! `$CREDENTIALS_DIRECTORY`, metrics, backup and prune.

use std::io::{BufRead, BufReader};
use std::os::unix::net::UnixDatagram;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::helpers::*;

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

/// Starts the binary; returns it and the address it serves.
fn spawn(
    config: &std::path::Path,
    env: &[(&str, &str)],
) -> (std::process::Child, std::net::SocketAddr) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pointhook"));
    cmd.args(["serve", "--log-format", "json", "--config"])
        .arg(config)
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line)
                && v["message"] == "pointhook serving"
            {
                let _ = tx.send(v["listen"].as_str().unwrap().parse().unwrap());
            }
        }
    });
    let addr = rx.recv_timeout(Duration::from_secs(20)).expect("serving");
    (child, addr)
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
    let (mut child, addr) = spawn(
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
    let (mut child, addr) = spawn(
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
        let good = pointhook::http::verify::sign(SECRET.as_bytes(), Some("5"), None, now);
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
