//! Test harness: a real pointhook on 127.0.0.1:0 over a temporary SQLite
//! file, driven with a real HTTP client. `TEST_LOG=1` shows its logs.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Once};
use std::time::{Duration, SystemTime};

pub use crate::backends::{Backend, SqlValue, TestDb};
use pointhook::config::Config;
pub use pointhook::domain::{EventState, JobState};
use pointhook::store::Store;
use pointhook::{App, Options};
use pointhook_common::clock::{Clock, FixedClock, SystemClock};
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
    /// Run the worker loop (off: tests drive `worker.run_one()`).
    pub worker_loop: bool,
    pub api_base: String,
    pub api_timeout_secs: u64,
    /// Serve the admin API (on its own port 0) with this token.
    pub admin_token: Option<String>,
    /// More keys of the `[admin]` section.
    pub admin: String,
    /// Serve notifications here (bound by the test) instead of a new port.
    pub listener: Option<tokio::net::TcpListener>,
    /// More keys of the `[worker]` section.
    pub worker: String,
    /// The `[reconcile]` section (off unless a test turns it on: its
    /// searches would show in the API's call log).
    pub reconcile: String,
    /// Where the app keeps its data.
    pub backend: Backend,
    /// The folder its files go in (a new temporary one inside it); the
    /// system's temporary folder when `None`.
    pub dir: Option<PathBuf>,
}

impl Default for TestConfig {
    fn default() -> Self {
        TestConfig {
            accounts: "[[accounts]]\nname = \"default\"\naccess_token = \"tok\"\n".into(),
            extra: String::new(),
            clock: Arc::new(SystemClock),
            worker_loop: false,
            api_base: "http://127.0.0.1:9".into(),
            api_timeout_secs: 1,
            admin_token: None,
            admin: String::new(),
            listener: None,
            worker: String::new(),
            reconcile: "enabled = false".into(),
            backend: crate::backends::current(),
            dir: None,
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

    /// An account that opted into `fraud_unauthenticated = "act"`: a
    /// verified alert undoes the payment without a person.
    pub fn acting() -> Self {
        TestConfig {
            accounts: "[[accounts]]\nname = \"default\"\naccess_token = \"tok\"\n\
                       fraud_unauthenticated = \"act\"\n"
                .into(),
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

    /// Serves the admin listener with `token`.
    pub fn admin(mut self, token: &str) -> Self {
        self.admin_token = Some(token.into());
        self
    }

    pub fn api(mut self, base: &str) -> Self {
        self.api_base = base.to_string();
        self
    }

    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    pub fn toml(&self, db: &Path) -> String {
        let admin = self
            .admin_token
            .as_ref()
            .map(|t| format!("[admin]\ntoken = {t:?}\n{}\n", self.admin))
            .unwrap_or_default();
        admin
            + &format!(
                "{extra}\n[storage]\n{storage}\n[api]\nbase_url = {api:?}\ntimeout_secs = {timeout}\n\
             requests_per_second = 1000\n[worker]\nenabled = {worker}\nmax_attempts = 6\n{worker_extra}\n\
             [reconcile]\n{reconcile}\n{accounts}",
                extra = self.extra,
                storage = match &self.backend {
                    Backend::Sqlite => format!("path = {:?}", db.display().to_string()),
                    Backend::Postgres(pg) => format!("url = {:?}", pg.url),
                },
                api = self.api_base,
                worker = self.worker_loop,
                worker_extra = self.worker,
                reconcile = self.reconcile,
                timeout = self.api_timeout_secs,
                accounts = self.accounts,
            )
    }
}

pub struct TestApp {
    pub addr: SocketAddr,
    /// The app's database, for the test's own reads (either backend).
    pub sql: TestDb,
    /// Keeps a PostgreSQL test database alive as long as the app.
    pub database: Backend,
    pub admin_addr: Option<SocketAddr>,
    /// A config file for the CLI, naming the same database.
    pub config_path: PathBuf,
    pub db_path: PathBuf,
    pub store: Store,
    pub worker: Arc<pointhook::worker::Worker>,
    pub outbox: Option<Arc<pointhook::outbox::Outbox>>,
    /// With `[[alerts]]`: drive a round with `round()`.
    pub alerter: Option<Arc<pointhook::alerts::alerter::Alerter>>,
    pub client: reqwest::Client,
    pub shutdown: CancellationToken,
    pub task: JoinHandle<anyhow::Result<()>>,
    _dir: TempDir,
}

/// Now, in seconds since the epoch (for signatures made now).
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// The rules a store opened by a test decides with: every event goes to
/// one destination, `default`.
pub fn rules() -> pointhook::domain::verdict::DecisionRules {
    use pointhook::domain::verdict::{EventPolicy, Route};
    pointhook::rules::decision_rules(EventPolicy::new(vec![Route {
        destination: "default".into(),
        types: pointhook::domain::EventType::all().collect(),
        accounts: None,
    }]))
}

/// What a test's batch says of its destination: nothing to disable.
pub fn healthy(now: i64) -> pointhook::store::BatchHealth {
    pointhook::store::BatchHealth {
        now,
        gone: None,
        failing_cutoff: i64::MIN,
        failing_reason: String::new(),
    }
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
    let dir = match &tc.dir {
        Some(parent) => tempfile::tempdir_in(parent),
        None => tempfile::tempdir(),
    }
    .expect("temp dir");
    let db_path = dir.path().join("pointhook.db");
    let toml = tc.toml(&db_path);
    let config_path = dir.path().join("pointhook.toml");
    std::fs::write(&config_path, &toml).unwrap();
    let config = Config::from_toml(&toml, Vec::new()).expect("test config");
    let backend = tc.backend.clone();
    let sql = match &backend {
        Backend::Sqlite => TestDb::Sqlite(db_path.clone()),
        Backend::Postgres(pg) => TestDb::Postgres(pg.url.clone()),
    };
    let listener = match tc.listener {
        Some(l) => l,
        None => tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap(),
    };
    let addr = listener.local_addr().unwrap();
    let admin_listener = match tc.admin_token {
        Some(_) => Some(tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap()),
        None => None,
    };
    let app = App::new(
        config,
        listener,
        Options {
            clock: tc.clock,
            admin_listener,
        },
    )
    .await
    .expect("app starts");
    let admin_addr = app.admin_addr();
    let store = app.store().clone();
    let worker = app.worker();
    let outbox = app.outbox();
    let alerter = app.alerter();
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(app.run(shutdown.clone()));
    TestApp {
        addr,
        sql,
        database: backend,
        admin_addr,
        config_path,
        db_path,
        store,
        worker,
        outbox,
        alerter,
        client: client(),
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

/// The fixture `name`; a body the docs print in a form JSON refuses is in
/// `body_text`, sent as is. A placeholder signature (`v1=<hex>`) is made
/// real with `SECRET`.
pub fn fixture(name: &str) -> Fixture {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/notifications")
        .join(name);
    let doc: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let query = doc["query"].as_str().unwrap().to_string();
    let mut headers: Vec<(String, String)> = doc["headers"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
        .collect();
    for (k, v) in &mut headers {
        if k == "x-signature" && v.contains("<hex>") {
            *v = sign_for(&query, &doc["headers"]["x-request-id"]);
        }
    }
    Fixture {
        query,
        headers,
        body: match (&doc["body"], doc["body_text"].as_str()) {
            (_, Some(text)) => Some(text.as_bytes().to_vec()),
            (Value::Null, None) => None,
            (b, None) => Some(serde_json::to_vec(b).unwrap()),
        },
    }
}

/// A valid `x-signature` with `SECRET` for `query`'s `data.id`.
fn sign_for(query: &str, request_id: &Value) -> String {
    let data_id = form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == "data.id")
        .map(|(_, v)| v.into_owned());
    pointhook_common::signature::sign(
        SECRET.as_bytes(),
        data_id.as_deref(),
        request_id.as_str(),
        1763632800,
    )
}

impl Fixture {
    /// The same request, signed with `SECRET` when it is a webhook form
    /// that carries no signature of its own.
    pub fn signed(mut self) -> Fixture {
        let webhook = self.query.contains("type=")
            || self.query.contains("data.id=")
            || self.body.as_ref().is_some_and(|b| {
                serde_json::from_slice::<Value>(b).is_ok_and(|v| v.get("type").is_some())
            });
        if webhook && !self.headers.iter().any(|(k, _)| k == "x-signature") {
            let sig = sign_for(&self.query, &Value::Null);
            self.headers.push(("x-signature".into(), sig));
        }
        self
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

    /// A request to the admin API with `token`: status and JSON body.
    pub async fn admin(&self, method: &str, path: &str, token: &str) -> (u16, Value) {
        let url = format!(
            "http://{}{path}",
            self.admin_addr.expect("an admin listener")
        );
        let req = match method {
            "POST" => self.client.post(url),
            _ => self.client.get(url),
        };
        answer(req.bearer_auth(token).send().await.unwrap()).await
    }

    pub async fn post_json(&self, query: &str, body: &Value) -> reqwest::Response {
        self.post(
            query,
            &[("content-type", "application/json")],
            Some(body.to_string().as_bytes()),
        )
        .await
    }

    /// A JSON body with `headers` besides its content type.
    pub async fn post_json_with(
        &self,
        query: &str,
        headers: &[(&str, &str)],
        body: &Value,
    ) -> reqwest::Response {
        let mut all = vec![("content-type", "application/json")];
        all.extend_from_slice(headers);
        self.post(query, &all, Some(body.to_string().as_bytes()))
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

    /// Runs due jobs until none is left.
    pub async fn run_jobs(&self) -> usize {
        let mut n = 0;
        while self.worker.run_one().await.unwrap() == pointhook::worker::Outcome::Done {
            n += 1;
            assert!(n < 1000, "jobs keep coming");
        }
        n
    }

    /// Attempts the events due now; returns how many were attempted.
    pub async fn deliver_events(&self) -> usize {
        self.outbox
            .as_ref()
            .expect("a [fulfillment] url")
            .deliver_due()
            .await
            .unwrap()
    }

    /// `(type, body)` of every event as stored, oldest first.
    fn event_rows(&self) -> Vec<(String, String)> {
        let order = match self.sql {
            TestDb::Sqlite(_) => "rowid",
            TestDb::Postgres(_) => "seq",
        };
        self.sql
            .rows(
                &format!("SELECT type, body FROM events ORDER BY {order}"),
                &[],
            )
            .into_iter()
            .map(|r| {
                let (t, body) = (r[0].text(), r[1].text());
                // Every event a test sees matches its schema.
                crate::event_catalog::check(&serde_json::from_str(&body).unwrap());
                (t, body)
            })
            .collect()
    }

    /// `(type, data)` of every event, oldest first.
    pub fn events(&self) -> Vec<(String, Value)> {
        self.event_rows()
            .into_iter()
            .map(|(t, body)| {
                let body: Value = serde_json::from_str(&body).unwrap();
                (t, body["data"].clone())
            })
            .collect()
    }

    /// Every event's body, byte for byte, oldest first.
    pub fn event_bodies(&self) -> Vec<String> {
        self.event_rows().into_iter().map(|(_, b)| b).collect()
    }

    pub fn event_types(&self) -> Vec<String> {
        self.events().into_iter().map(|(t, _)| t).collect()
    }

    /// The event types, sorted: what several jobs decided, in no order
    /// between them (the newest notification is worked first).
    pub fn event_types_sorted(&self) -> Vec<String> {
        let mut types = self.event_types();
        types.sort();
        types
    }

    /// The `data` of the first event of type `ty` whose `field` is
    /// `value` (any, when `field` is empty).
    pub fn event_where(&self, ty: &str, field: &str, value: &str) -> Value {
        self.events()
            .into_iter()
            .find(|(t, d)| t == ty && (field.is_empty() || d[field] == value))
            .unwrap_or_else(|| panic!("no {ty} event with {field} = {value}"))
            .1
    }

    /// `(state, attempts, last_error)` of the job with `key`.
    pub fn job(&self, key: &str) -> (JobState, i64, Option<String>) {
        let r = self
            .sql
            .rows(
                "SELECT state, attempts, last_error FROM jobs WHERE job_key = $1",
                &[SqlValue::Text(key.into())],
            )
            .pop()
            .unwrap_or_else(|| panic!("no job {key}"));
        (r[0].job_state(), r[1].int(), r[2].opt_text())
    }

    /// Jobs still to run (pending or running) plus events still to post.
    pub fn unsettled(&self) -> i64 {
        use pointhook::domain::{EventState, JobState};
        self.count(&format!(
            "SELECT (SELECT count(*) FROM jobs WHERE state IN ({}, {}))
                  + (SELECT count(*) FROM events WHERE state = {})",
            JobState::Pending as i16,
            JobState::Running as i16,
            EventState::Pending as i16
        ))
    }

    pub fn count(&self, sql: &str) -> i64 {
        self.sql.value(sql, &[]).int()
    }

    /// Stops the app's own tasks (listener, worker loop, outbox, sweeper)
    /// and waits for them to end; the database stays for the test's reads.
    pub async fn halt(&mut self) {
        self.shutdown.cancel();
        let task = std::mem::replace(&mut self.task, tokio::spawn(async { Ok(()) }));
        tokio::time::timeout(Duration::from_secs(20), task)
            .await
            .expect("app stops in time")
            .expect("app task")
            .expect("app run");
    }

    /// Cancels the shutdown token and waits for the app to finish; the
    /// temporary directory lives as long as the value returned.
    pub async fn stop(self) -> TempDir {
        self.shutdown.cancel();
        tokio::time::timeout(Duration::from_secs(20), self.task)
            .await
            .expect("app stops in time")
            .expect("app task")
            .expect("app run");
        self._dir
    }
}

/// Polls `ok` until it holds; fails the test, naming `what`, after 30 s.
pub async fn wait_for(what: &str, mut ok: impl AsyncFnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !ok().await {
        assert!(
            std::time::Instant::now() < deadline,
            "waited in vain for {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The value of the series `series` (name and labels, exactly as
/// exposed, e.g. `pointhook_reconcile_passes_total{outcome="ok"}`) on the
/// admin listener's `/metrics`; 0 while it is absent.
pub async fn metric(app: &TestApp, token: &str, series: &str) -> u64 {
    let text = client()
        .get(format!(
            "http://{}/metrics",
            app.admin_addr.expect("an admin listener")
        ))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or(0)
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

/// An HTTP client for tests (TLS set up as pointhook sets it up).
pub fn client() -> reqwest::Client {
    pointhook_common::tls::install_default_provider();
    reqwest::Client::new()
}

/// Held by the tests that measure time, so they never run together.
pub static TIMING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A child process that is killed if the test ends (or panics) first.
pub struct KillOnDrop(pub std::process::Child);

impl std::ops::Deref for KillOnDrop {
    type Target = std::process::Child;
    fn deref(&self) -> &std::process::Child {
        &self.0
    }
}

impl std::ops::DerefMut for KillOnDrop {
    fn deref_mut(&mut self) -> &mut std::process::Child {
        &mut self.0
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// The real binary, serving on an ephemeral port.
pub struct Served {
    pub child: KillOnDrop,
    pub addr: SocketAddr,
    /// Every log line so far.
    pub logs: Arc<std::sync::Mutex<Vec<String>>>,
}

impl Served {
    /// Whether a log line so far contains `text`.
    pub fn logged(&self, text: &str) -> bool {
        self.logs.lock().unwrap().iter().any(|l| l.contains(text))
    }
}

/// Starts `pointhook serve --config CONFIG` with `env` and waits until it
/// says where it listens.
pub fn serve_binary(config: &Path, env: &[(&str, &str)]) -> Served {
    use std::io::{BufRead, BufReader};
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_pointhook"));
    cmd.args(["serve", "--log-format", "json", "--config"])
        .arg(config)
        .env("RUST_LOG", "info")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let logs = Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = logs.clone();
    std::thread::spawn(move || {
        let mut sent = false;
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            keep.lock().unwrap().push(line.clone());
            if !sent
                && let Ok(v) = serde_json::from_str::<Value>(&line)
                && v["message"] == "pointhook serving"
            {
                let _ = tx.send(v["listen"].as_str().unwrap().parse().unwrap());
                sent = true;
            }
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("pointhook reports its address");
    Served {
        child: KillOnDrop(child),
        addr,
        logs,
    }
}

/// Runs the real binary with `args` and `--config` naming `app`'s database:
/// (success, stdout, stderr).
pub fn cli(app: &TestApp, args: &[&str]) -> (bool, String, String) {
    cli_with(&app.config_path, args)
}

fn cli_with(config: &Path, args: &[&str]) -> (bool, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pointhook"))
        .args(args)
        .arg("--config")
        .arg(config)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// The real binary run in `cwd` with exactly `args` and `env` (nothing of
/// the caller's colour or configuration settings): (success, stdout,
/// stderr).
pub fn cli_in(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_pointhook"));
    cmd.args(args).current_dir(cwd);
    for k in [
        "POINTHOOK_CONFIG",
        "NO_COLOR",
        "CLICOLOR",
        "CLICOLOR_FORCE",
        "RUST_LOG",
    ] {
        cmd.env_remove(k);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// `cli`, off the runtime: for a command that calls a server this test
/// serves on its own runtime (the sandbox).
pub async fn cli_async(app: &TestApp, args: &[&str]) -> (bool, String, String) {
    let config = app.config_path.clone();
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        cli_with(&config, &args)
    })
    .await
    .unwrap()
}

/// A config file in `dir` for the real binary: port 0, `dir/pointhook.db`,
/// one account, and `extra` TOML.
pub fn write_config_with(dir: &Path, extra: &str) -> PathBuf {
    let db = dir.join("pointhook.db");
    let config = dir.join("pointhook.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n[storage]\npath = {:?}\n{extra}\
             [[accounts]]\nname = \"default\"\naccess_token = \"tok\"\n",
            db.display().to_string()
        ),
    )
    .unwrap();
    config
}

/// Runs the binary on a pseudo-terminal (util-linux `script`), typing
/// `input`; what the terminal showed.
pub fn on_a_terminal(app: &TestApp, args: &[&str], input: &str) -> String {
    use std::io::Write;
    let command = format!(
        "{} {} --config {}",
        env!("CARGO_BIN_EXE_pointhook"),
        args.join(" "),
        app.config_path.display()
    );
    let mut child = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("util-linux script, for a pseudo-terminal");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}
