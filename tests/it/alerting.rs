//! The harness of the alerter's tests: a chat tool's webhook receiver, an
//! app that tells it and a real SMTP server, rounds driven by the test,
//! and waits for what arrives.

use serde_json::Value;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::helpers::*;
use crate::smtp::SmtpServer;
use pointhook::domain::AuditOutcome;

pub const ADMIN_TOKEN: &str = "admin-secret-for-the-alerter-tests";
pub const PUBLIC: &str = "https://ph.shop.example:8081";

/// A chat tool's incoming webhook: takes every POST to `/hook`.
pub struct Hook {
    server: MockServer,
}

impl Hook {
    pub async fn start() -> Hook {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/hook"))
            .respond_with(ResponseTemplate::new(200))
            .mount(&server)
            .await;
        Hook { server }
    }

    fn url(&self) -> String {
        format!("{}/hook", self.server.uri())
    }

    pub async fn messages(&self) -> Vec<Value> {
        self.server
            .received_requests()
            .await
            .unwrap_or_default()
            .iter()
            .map(|r| serde_json::from_slice(&r.body).unwrap())
            .collect()
    }
}

/// Both channels: e-mail through `smtp_port`, and the hook.
pub fn channels(smtp_port: u16, hook: &Hook, rules: &str) -> String {
    format!(
        "[[alerts]]\nkind = \"email\"\nto = [\"ops@shop.example\"]\n\
         [[alerts]]\nkind = \"webhook\"\nurl = \"{}\"\n\
         [smtp]\nhost = \"127.0.0.1\"\nport = {smtp_port}\nstarttls = false\n\
         from = \"pointhook@shop.example\"\n\
         [alert_rules]\ncheck_interval_secs = 3600\n{rules}\n",
        hook.url()
    )
}

/// An app that tells both channels, with an admin listener whose public
/// address the messages link to.
pub async fn alerting(tc: TestConfig, smtp_port: u16, hook: &Hook, rules: &str) -> TestApp {
    spawn_app_with(TestConfig {
        admin_token: Some(ADMIN_TOKEN.into()),
        admin: format!("public_url = \"{PUBLIC}\"\nsession_idle_secs = 100000000"),
        ..tc.extra(&channels(smtp_port, hook, rules))
    })
    .await
}

/// Messages handed to the channels by one round.
pub async fn round(app: &TestApp) -> usize {
    app.alerter
        .as_ref()
        .expect("[[alerts]]")
        .round()
        .await
        .messages
}

/// Waits until the SMTP server holds `n` mails and the hook `n` messages.
pub async fn told(smtp: &SmtpServer, hook: &Hook, n: usize) -> (Vec<String>, Vec<Value>) {
    wait_for(&format!("{n} message(s) on both channels"), async || {
        smtp.mails().len() >= n && hook.messages().await.len() >= n
    })
    .await;
    let (mails, messages) = (smtp.mails(), hook.messages().await);
    assert_eq!((mails.len(), messages.len()), (n, n), "{messages:?}");
    (mails, messages)
}

/// Waits until the audit holds `n` sends by the alerts, all ended as
/// `outcome`.
pub async fn audited(app: &TestApp, n: i64, outcome: AuditOutcome) {
    let sql = format!(
        "SELECT count(*) FROM audit WHERE actor = 'alerts' AND outcome = {}",
        outcome as i16
    );
    wait_for(&format!("{n} alert(s) audited"), async || {
        app.count(&sql) >= n
    })
    .await;
    assert_eq!(app.count(&sql), n);
}

/// An SMTP server that accepts connections and never says a word.
pub async fn dead_smtp() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    port
}
