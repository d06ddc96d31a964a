//! A sandbox on 127.0.0.1:0 for tests, with the accounts and clock a test
//! gives it, called as its first account: its API, its control API and its
//! delivery log. The sandbox's tests use it, and pointhook's tests include
//! this file (`#[path]`) to start the sandbox as their platform.

#![allow(dead_code)]

use std::sync::{Arc, Once};

use pointhook_common::clock::{Clock, ManualClock};
use pointhook_sandbox::{AccountSpec, MailSettings, Reach, Sandbox, SandboxSettings};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

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
        answer_of(
            http()
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
        http()
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
        answer_of(req.send().await.unwrap()).await
    }

    pub async fn log(&self) -> Vec<Value> {
        let (_, log) = answer_of(
            http()
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
    logs();
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

/// Logs for `TEST_LOG=1`.
fn logs() {
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

async fn answer_of(res: reqwest::Response) -> (u16, Value) {
    let status = res.status().as_u16();
    let body = res.json().await.unwrap_or(Value::Null);
    (status, body)
}

fn http() -> reqwest::Client {
    pointhook_common::tls::install_default_provider();
    reqwest::Client::new()
}
