//! What the sandbox's tests share: a sandbox on 127.0.0.1:0 with the
//! accounts and clock a test gives it, its control API and delivery log,
//! receivers that answer what a test says, and a client.

use std::sync::{Arc, Once};

use pointhook_common::clock::{Clock, ManualClock};
use pointhook_sandbox::{AccountSpec, MailSettings, Reach, Sandbox, SandboxSettings};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

/// A webhook secret for accounts that sign.
pub const SECRET: &str = "your_secret_key_here_0123456789abcdef";

pub const TOKEN: &str = "TEST-sandbox-token";

pub struct RunningSandbox {
    pub url: String,
    pub sandbox: Arc<Sandbox>,
    pub shutdown: CancellationToken,
    pub task: tokio::task::JoinHandle<()>,
}

impl RunningSandbox {
    pub async fn stop(self) {
        self.shutdown.cancel();
        let _ = self.task.await;
    }

    pub async fn control(&self, path: &str, body: Value) -> (u16, Value) {
        answer(
            client()
                .post(format!("{}/sandbox/{path}", self.url))
                .bearer_auth(TOKEN)
                .json(&body)
                .send()
                .await
                .unwrap(),
        )
        .await
    }

    /// A call with the account's token.
    pub fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        client()
            .request(method, format!("{}{path}", self.url))
            .bearer_auth(TOKEN)
    }

    /// A call with the account's token and `body` as JSON.
    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut req = self.request(method, path);
        if let Some(b) = body {
            req = req.json(&b);
        }
        answer(req.send().await.unwrap()).await
    }

    pub async fn log(&self) -> Vec<Value> {
        let (_, log) = answer(
            client()
                .get(format!("{}/sandbox/deliveries", self.url))
                .bearer_auth(TOKEN)
                .send()
                .await
                .unwrap(),
        )
        .await;
        let mut entries = log.as_array().unwrap().clone();
        entries.reverse(); // oldest first
        entries
    }
}

pub fn account(notification_url: Option<String>) -> AccountSpec {
    AccountSpec {
        name: "default".into(),
        token: TOKEN.into(),
        notification_url,
        webhook_url: None,
        webhook_secret: None,
        email: None,
        groups: None,
        devices: Vec::new(),
    }
}

pub async fn start_sandbox(
    accounts: Vec<AccountSpec>,
    clock: Arc<dyn Clock>,
    time_scale: f64,
    dispatch_loop: bool,
    state: Option<std::path::PathBuf>,
) -> RunningSandbox {
    let mail = MailSettings::Spool(
        std::env::temp_dir().join(format!("pointhook-mail-{}", std::process::id())),
    );
    start_sandbox_mailing(accounts, clock, time_scale, dispatch_loop, state, mail).await
}

pub async fn start_sandbox_mailing(
    accounts: Vec<AccountSpec>,
    clock: Arc<dyn Clock>,
    time_scale: f64,
    dispatch_loop: bool,
    state: Option<std::path::PathBuf>,
    mail: MailSettings,
) -> RunningSandbox {
    start_with(
        SandboxSettings {
            time_scale,
            state,
            accounts,
            dispatch_loop,
            mail,
            resend_first_signature: false,
            reach: Reach::Loopback,
        },
        clock,
    )
    .await
    .unwrap()
}

/// A sandbox with these settings, or why it would not start.
pub async fn start_with(
    settings: SandboxSettings,
    clock: Arc<dyn Clock>,
) -> anyhow::Result<RunningSandbox> {
    init_logs();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let sandbox = Sandbox::new(settings, clock, url.clone()).await?;
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(sandbox.clone().serve(listener, shutdown.clone()));
    Ok(RunningSandbox {
        url,
        sandbox,
        shutdown,
        task,
    })
}

/// The settings of a sandbox on the time it is given, no dispatcher loop,
/// loopback only.
pub fn settings(accounts: Vec<AccountSpec>) -> SandboxSettings {
    SandboxSettings {
        time_scale: 1.0,
        state: None,
        accounts,
        dispatch_loop: false,
        mail: MailSettings::Spool(
            std::env::temp_dir().join(format!("pointhook-mail-{}", std::process::id())),
        ),
        resend_first_signature: false,
        reach: Reach::Loopback,
    }
}

/// A sandbox on a manual clock with no dispatcher loop: nothing is sent
/// unless a test runs it.
pub async fn on_manual_clock(accounts: Vec<AccountSpec>) -> (RunningSandbox, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(std::time::SystemTime::now()));
    let sb = start_sandbox(accounts, clock.clone(), 1.0, false, None).await;
    (sb, clock)
}

/// A receiver that answers `statuses` in turn (the last one from then on).
pub async fn receiver(statuses: &[u16]) -> MockServer {
    let server = MockServer::start().await;
    for (i, s) in statuses.iter().enumerate() {
        let last = i + 1 == statuses.len();
        let mock = Mock::given(method("POST")).respond_with(ResponseTemplate::new(*s));
        let mock = if last { mock } else { mock.up_to_n_times(1) };
        mock.with_priority((i + 1) as u8).mount(&server).await;
    }
    server
}

pub fn attempt_offsets(entry: &Value) -> Vec<i64> {
    let at = |s: &str| humantime::parse_rfc3339_weak(s).unwrap();
    let first = at(entry["first_at"].as_str().unwrap());
    entry["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            at(a["at"].as_str().unwrap())
                .duration_since(first)
                .unwrap()
                .as_secs() as i64
        })
        .collect()
}

/// Logs for `TEST_LOG=1`.
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

/// Status and JSON body of a response.
pub async fn answer(res: reqwest::Response) -> (u16, Value) {
    let status = res.status().as_u16();
    let body = res.json().await.unwrap_or(Value::Null);
    (status, body)
}

/// An HTTP client for tests (TLS set up as pointhook sets it up).
pub fn client() -> reqwest::Client {
    pointhook_common::tls::install_default_provider();
    reqwest::Client::new()
}

/// Polls `ok` until it holds; fails the test, naming `what`, after 30 s.
pub async fn wait_for(what: &str, mut ok: impl AsyncFnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !ok().await {
        assert!(
            std::time::Instant::now() < deadline,
            "waited in vain for {what}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// Held by the tests that measure time, so they never run together.
pub static TIMING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
