//! Test harness: a real pointhook on 127.0.0.1:0 over a temporary SQLite
//! file, driven with a real HTTP client. `TEST_LOG=1` shows its logs.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Once};
use std::time::{Duration, SystemTime};

use pointhook::clock::{Clock, FixedClock, SystemClock};
use pointhook::config::Config;
use pointhook::store::Store;
use pointhook::{App, Options};
use serde_json::Value;
use tempfile::TempDir;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub const SECRET: &str = "your_secret_key_here_0123456789abcdef";

/// Builds the configuration of a test app; `extra` is appended TOML.
pub struct TestConfig {
    pub accounts: String,
    pub extra: String,
    pub clock: Arc<dyn Clock>,
}

impl Default for TestConfig {
    fn default() -> Self {
        TestConfig {
            accounts: "[[accounts]]\nname = \"default\"\naccess_token = \"tok\"\n".into(),
            extra: String::new(),
            clock: Arc::new(SystemClock),
        }
    }
}

impl TestConfig {
    pub fn with_secret() -> Self {
        TestConfig {
            accounts: format!(
                "[[accounts]]\nname = \"default\"\naccess_token = \"tok\"\nwebhook_secret = \"{SECRET}\"\n"
            ),
            ..Default::default()
        }
    }

    pub fn at_unix(mut self, secs: u64) -> Self {
        self.clock = Arc::new(FixedClock(
            SystemTime::UNIX_EPOCH + Duration::from_secs(secs),
        ));
        self
    }

    pub fn extra(mut self, toml: &str) -> Self {
        self.extra.push_str(toml);
        self
    }

    pub fn toml(&self, db: &Path) -> String {
        format!(
            "{extra}\n[storage]\npath = {db:?}\n[api]\nbase_url = \"http://127.0.0.1:9\"\n{accounts}",
            extra = self.extra,
            db = db.display().to_string(),
            accounts = self.accounts,
        )
    }
}

pub struct TestApp {
    pub addr: SocketAddr,
    pub db_path: PathBuf,
    pub store: Store,
    pub client: reqwest::Client,
    pub shutdown: CancellationToken,
    pub task: JoinHandle<anyhow::Result<()>>,
    _dir: TempDir,
}

pub fn init_logs() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if std::env::var_os("TEST_LOG").is_some() {
            let _ = tracing_subscriber::fmt()
                .with_env_filter("debug,hyper=info")
                .with_test_writer()
                .try_init();
        }
    });
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with(TestConfig::default()).await
}

pub async fn spawn_app_with(tc: TestConfig) -> TestApp {
    init_logs();
    let dir = tempfile::tempdir().expect("temp dir");
    let db_path = dir.path().join("pointhook.db");
    let config = Config::from_toml(&tc.toml(&db_path), Vec::new()).expect("test config");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = App::new(config, listener, Options { clock: tc.clock })
        .await
        .expect("app starts");
    let store = app.store().clone();
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(app.run(shutdown.clone()));
    TestApp {
        addr,
        db_path,
        store,
        client: reqwest::Client::new(),
        shutdown,
        task,
        _dir: dir,
    }
}

/// One inbound request as `fixtures/notifications/*.json` shapes it.
pub struct Fixture {
    pub query: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
}

pub fn fixture(name: &str) -> Fixture {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/notifications")
        .join(name);
    let doc: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    Fixture {
        query: doc["query"].as_str().unwrap().to_string(),
        headers: doc["headers"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
            .collect(),
        body: match &doc["body"] {
            Value::Null => None,
            b => Some(serde_json::to_vec(b).unwrap()),
        },
    }
}

pub fn fixture_names() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/notifications");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

impl TestApp {
    pub fn url(&self, path_and_query: &str) -> String {
        format!("http://{}{path_and_query}", self.addr)
    }

    pub async fn post(
        &self,
        query: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> reqwest::Response {
        let mut req = self
            .client
            .post(self.url(&format!("/notifications?{query}")));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        if let Some(b) = body {
            req = req.body(b.to_vec());
        }
        req.send().await.expect("request sent")
    }

    pub async fn post_json(&self, query: &str, body: &Value) -> reqwest::Response {
        self.post(
            query,
            &[("content-type", "application/json")],
            Some(body.to_string().as_bytes()),
        )
        .await
    }

    pub async fn post_fixture(&self, f: &Fixture) -> reqwest::Response {
        let headers: Vec<(&str, &str)> = f
            .headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        self.post(&f.query, &headers, f.body.as_deref()).await
    }

    /// A connection of the test's own to the same SQLite file.
    pub fn db(&self) -> rusqlite::Connection {
        let conn = rusqlite::Connection::open(&self.db_path).unwrap();
        conn.busy_timeout(Duration::from_secs(5)).unwrap();
        conn
    }

    pub fn count(&self, sql: &str) -> i64 {
        self.db().query_row(sql, [], |r| r.get(0)).unwrap()
    }

    /// Cancels the shutdown token and waits for the app to finish.
    pub async fn stop(self) {
        self.shutdown.cancel();
        tokio::time::timeout(Duration::from_secs(20), self.task)
            .await
            .expect("app stops in time")
            .expect("app task")
            .expect("app run");
    }
}

/// Status and JSON body of a response.
pub async fn answer(res: reqwest::Response) -> (u16, Value) {
    let status = res.status().as_u16();
    let body = res.json().await.unwrap_or(Value::Null);
    (status, body)
}

/// Writes `request` on a fresh connection and reads until the server closes
/// it or 5 seconds pass; returns what came back.
pub async fn raw_exchange(addr: SocketAddr, request: &[u8]) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request).await.unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Ok(Ok(0)) | Err(_) | Ok(Err(_)) => break,
            Ok(Ok(n)) => {
                out.extend_from_slice(&buf[..n]);
                // One response is enough.
                if response_complete(&out) {
                    break;
                }
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn response_complete(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(bytes);
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        return false;
    };
    let length = head.lines().find_map(|l| {
        l.to_ascii_lowercase()
            .strip_prefix("content-length:")
            .map(|v| v.trim().parse::<usize>().unwrap_or(0))
    });
    length.is_some_and(|n| body.len() >= n)
}
