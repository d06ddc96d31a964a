//! What the sandbox's tests share: a sandbox on 127.0.0.1:0 (`running`),
//! receivers that answer what a test says, and a client.

use serde_json::Value;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

/// A webhook secret for accounts that sign.
pub const SECRET: &str = "your_secret_key_here_0123456789abcdef";

pub use crate::running::*;

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
