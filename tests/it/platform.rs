//! The platform API for tests: the real sandbox (its resources API, with
//! resources set in the shapes a test needs, faults injected for the next N
//! calls, and the log of calls it received), started alone or wired to a
//! pointhook; and the merchant's endpoint.

use std::sync::Arc;
use std::time::Duration;

use pointhook_common::clock::SystemClock;
use pointhook_sandbox::AccountSpec;
use pointhook_sandbox::faults::Fault;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use crate::helpers::*;

/// The token of the test app's default account.
const APP_TOKEN: &str = "tok";

pub struct FakeApi {
    sb: RunningSandbox,
}

impl FakeApi {
    pub async fn start() -> FakeApi {
        let account = AccountSpec {
            name: "default".into(),
            token: APP_TOKEN.into(),
            notification_url: None,
            webhook_url: None,
            webhook_secret: None,
            email: None,
            groups: None,
            devices: Vec::new(),
        };
        FakeApi {
            sb: start_sandbox(vec![account], Arc::new(SystemClock), 1.0, false, None).await,
        }
    }

    pub fn uri(&self) -> String {
        self.sb.url.clone()
    }

    /// Every read answered this much later.
    pub fn set_delay(&self, delay: Duration) {
        self.sb.sandbox.faults().set_read_delay(delay);
    }

    /// Serves `body` at `path` (an API path of the sandbox).
    pub fn set(&self, at: &str, body: Value) {
        let parts: Vec<&str> = at.trim_matches('/').split('/').collect();
        let (kind, id) = match parts.as_slice() {
            ["v1", "payments", id] => ("payment", *id),
            ["merchant_orders", id] => ("merchant_order", *id),
            ["v1", "chargebacks", id] => ("chargeback", *id),
            ["point", "integration-api", "payment-intents", id] => ("payment_intent", *id),
            _ => panic!("not a resource path: {at}"),
        };
        self.sb
            .sandbox
            .set_resource("default", kind, id, &body)
            .unwrap();
    }

    pub fn payment(&self, id: &str, status: &str, amount: &str, order: Option<&str>) {
        let mut body = json!({
            "id": id.parse::<u64>().map(Value::from).unwrap_or(Value::from(id)),
            "status": status,
            "status_detail": "accredited",
            "transaction_amount": serde_json::from_str::<Value>(amount).unwrap(),
        });
        if let Some(o) = order {
            body["order"] = json!({"id": o, "type": "mercadopago"});
        }
        self.set(&format!("/v1/payments/{id}"), body);
    }

    /// `payments`: (id, amount, status); `shipment`: the first shipment's status.
    pub fn order(
        &self,
        id: &str,
        total: &str,
        payments: &[(&str, &str, &str)],
        shipment: Option<&str>,
    ) {
        let payments: Vec<Value> = payments
            .iter()
            .map(|(pid, amount, status)| {
                json!({"id": pid.parse::<u64>().unwrap(), "transaction_amount": serde_json::from_str::<Value>(amount).unwrap(), "status": status})
            })
            .collect();
        let shipments: Vec<Value> = shipment
            .into_iter()
            .map(|s| json!({"id": 1, "status": s}))
            .collect();
        self.set(
            &format!("/merchant_orders/{id}"),
            json!({
                "id": id.parse::<u64>().unwrap(),
                "total_amount": serde_json::from_str::<Value>(total).unwrap(),
                "external_reference": format!("ref-{id}"),
                "payments": payments,
                "shipments": shipments,
            }),
        );
    }

    pub fn intent(&self, id: &str, state: &str, payment: Option<&str>) {
        let mut body = json!({
            "id": id, "state": state, "amount": 1500,
            "additional_info": {"external_reference": "table-12", "ticket_number": "T-1"},
        });
        if let Some(p) = payment {
            body["payment"] = json!({"id": p.parse::<u64>().unwrap()});
        }
        self.set(
            &format!("/point/integration-api/payment-intents/{id}"),
            body,
        );
    }

    /// The next `n` reads of `at` get `fault`.
    pub async fn fail_next(&self, at: &str, n: u32, fault: Fault) {
        self.fail_next_call("GET", at, n, fault).await;
    }

    /// The next `n` calls with `verb` to `at` get `fault`.
    pub async fn fail_next_call(&self, verb: &str, at: &str, n: u32, fault: Fault) {
        self.sb.sandbox.faults().add(Fault {
            method: Some(verb.to_string()),
            path: at.to_string(),
            times: n,
            ..fault
        });
    }

    pub fn clear_faults(&self) {
        self.sb.sandbox.faults().clear();
    }

    pub async fn calls(&self, at: &str) -> usize {
        self.sb
            .sandbox
            .faults()
            .calls()
            .iter()
            .filter(|c| c.path == at)
            .count()
    }

    pub async fn authorization_headers(&self) -> Vec<String> {
        self.sb
            .sandbox
            .faults()
            .calls()
            .into_iter()
            .filter_map(|c| c.authorization)
            .collect()
    }

    /// Every call other than a GET: (method, path, x-idempotency-key, body).
    pub async fn changes(&self) -> Vec<(String, String, Option<String>, String)> {
        self.sb
            .sandbox
            .faults()
            .calls()
            .into_iter()
            .filter(|c| c.method != "GET")
            .map(|c| (c.method, c.path, c.idempotency_key, c.body))
            .collect()
    }
}

/// Answer `code` with the platform's error body.
pub fn status(code: u16) -> Fault {
    Fault {
        method: None,
        path: String::new(),
        status: Some(code),
        times: 1,
        delay_ms: 0,
        retry_after: None,
    }
}

/// No answer for `by` (then a 500, which nobody waiting will see).
pub fn slow(by: Duration) -> Fault {
    Fault {
        delay_ms: by.as_millis() as u64,
        ..status(500)
    }
}

pub trait RetryAfter {
    fn retry_after(self, secs: u64) -> Self;
}

impl RetryAfter for Fault {
    fn retry_after(self, secs: u64) -> Fault {
        Fault {
            retry_after: Some(secs),
            ..self
        }
    }
}

/// The merchant's fulfillment endpoint: records every POST; can be told to
/// fail the next N.
pub struct Merchant {
    pub server: MockServer,
}

pub const MERCHANT_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

impl Merchant {
    pub async fn start() -> Merchant {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/events"))
            .respond_with(ResponseTemplate::new(204))
            .with_priority(10)
            .mount(&server)
            .await;
        Merchant { server }
    }

    pub fn config(&self) -> String {
        format!(
            "[fulfillment]\nurl = \"{}/events\"\nsecret = \"{MERCHANT_SECRET}\"\ntimeout_secs = 1\n",
            self.server.uri()
        )
    }

    pub async fn fail_next(&self, n: u64, code: u16) {
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(code))
            .up_to_n_times(n)
            .with_priority(1)
            .mount(&self.server)
            .await;
    }

    pub async fn received(&self) -> Vec<Request> {
        self.server.received_requests().await.unwrap_or_default()
    }
}

#[path = "../../crates/sandbox/tests/sandbox/running.rs"]
mod running;
pub use running::{RunningSandbox, TOKEN, account, start_sandbox, start_sandbox_mailing};

/// The sandbox and pointhook wired together on loopback: pointhook reads
/// the sandbox's API; the sandbox notifies pointhook.
pub async fn wired() -> (RunningSandbox, TestApp, Merchant) {
    wired_with(|tc| tc).await
}

/// `wired`, with the app's configuration adjusted.
pub async fn wired_with(
    adjust: impl FnOnce(TestConfig) -> TestConfig,
) -> (RunningSandbox, TestApp, Merchant) {
    wired_both(|a| a, adjust).await
}

/// `wired`, with the sandbox's account and the app's configuration adjusted.
pub async fn wired_both(
    account_of: impl FnOnce(AccountSpec) -> AccountSpec,
    adjust: impl FnOnce(TestConfig) -> TestConfig,
) -> (RunningSandbox, TestApp, Merchant) {
    let merchant = Merchant::start().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let notifications = format!("http://{}/notifications", listener.local_addr().unwrap());
    let sb = start_sandbox(
        vec![account_of(AccountSpec {
            webhook_url: Some(notifications.clone()),
            ..account(Some(notifications))
        })],
        Arc::new(SystemClock),
        0.01,
        true,
        None,
    )
    .await;
    let app = spawn_app_with(adjust(TestConfig {
        worker_loop: true,
        listener: Some(listener),
        accounts: format!("[[accounts]]\nname = \"default\"\naccess_token = \"{TOKEN}\"\n"),
        ..TestConfig::default().api(&sb.url).extra(&merchant.config())
    }))
    .await;
    (sb, app, merchant)
}

pub async fn wait_for_event(app: &TestApp, kind: &str) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        if let Some((_, data)) = app.events().into_iter().find(|(t, _)| t == kind) {
            return data;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no {kind}: {:?}",
            app.event_types()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub async fn wait_for_event_where(app: &TestApp, kind: &str, ok: impl Fn(&Value) -> bool) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        if let Some((_, data)) = app.events().into_iter().find(|(t, d)| t == kind && ok(d)) {
            return data;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no {kind}: {:?}",
            app.event_types()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
