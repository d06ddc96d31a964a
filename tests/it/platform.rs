//! A stand-in for the platform API (until the sandbox serves it): real HTTP
//! on 127.0.0.1, resources that tests set and change, faults injected for the
//! next N calls, and the log of calls received.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

#[derive(Clone, Default)]
struct Resources(Arc<Mutex<HashMap<String, Value>>>, Arc<Mutex<Duration>>);

impl Respond for Resources {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        match self.0.lock().unwrap().get(request.url.path()) {
            Some(body) => ResponseTemplate::new(200)
                .set_body_json(body)
                .set_delay(*self.1.lock().unwrap()),
            None => ResponseTemplate::new(404).set_body_json(json!({
                "message": "resource not found", "error": "not_found", "status": 404, "cause": []
            })),
        }
    }
}

pub struct FakeApi {
    pub server: MockServer,
    resources: Resources,
}

impl FakeApi {
    pub async fn start() -> FakeApi {
        let server = MockServer::start().await;
        let resources = Resources::default();
        Mock::given(method("GET"))
            .respond_with(resources.clone())
            .with_priority(10)
            .mount(&server)
            .await;
        FakeApi { server, resources }
    }

    pub fn uri(&self) -> String {
        self.server.uri()
    }

    /// Every resource is served this much later.
    pub fn set_delay(&self, delay: Duration) {
        *self.resources.1.lock().unwrap() = delay;
    }

    pub fn set(&self, path: &str, body: Value) {
        self.resources
            .0
            .lock()
            .unwrap()
            .insert(path.to_string(), body);
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

    /// `payments`: (id, amount, status); `shipments`: first shipment's status.
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

    /// The next `n` calls to `at` get `answer` instead of the resource.
    pub async fn fail_next(&self, at: &str, n: u64, answer: ResponseTemplate) {
        Mock::given(method("GET"))
            .and(path(at))
            .respond_with(answer)
            .up_to_n_times(n)
            .with_priority(1)
            .mount(&self.server)
            .await;
    }

    pub async fn calls(&self, at: &str) -> usize {
        self.server
            .received_requests()
            .await
            .unwrap_or_default()
            .iter()
            .filter(|r| r.url.path() == at)
            .count()
    }

    pub async fn authorization_headers(&self) -> Vec<String> {
        self.server
            .received_requests()
            .await
            .unwrap_or_default()
            .iter()
            .filter_map(|r| {
                r.headers
                    .get("authorization")
                    .map(|v| v.to_str().unwrap().to_string())
            })
            .collect()
    }
}

pub fn status(code: u16) -> ResponseTemplate {
    ResponseTemplate::new(code).set_body_json(json!({
        "message": format!("injected {code}"), "error": "injected", "status": code, "cause": []
    }))
}

pub fn slow(by: Duration) -> ResponseTemplate {
    ResponseTemplate::new(200)
        .set_delay(by)
        .set_body_json(json!({}))
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

impl FakeApi {
    /// Accepts cancels (`PUT /v1/payments/{id}`) and refunds
    /// (`POST /v1/payments/{id}/refunds`).
    pub async fn accept_undo(&self) {
        Mock::given(method("PUT"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({"status": "cancelled"})))
            .with_priority(10)
            .mount(&self.server)
            .await;
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(201).set_body_json(json!({"id": 1, "status": "approved"})),
            )
            .with_priority(10)
            .mount(&self.server)
            .await;
    }

    /// The next `n` calls with `verb` to `at` get `answer`.
    pub async fn fail_next_call(&self, verb: &str, at: &str, n: u64, answer: ResponseTemplate) {
        Mock::given(method(verb))
            .and(path(at))
            .respond_with(answer)
            .up_to_n_times(n)
            .with_priority(1)
            .mount(&self.server)
            .await;
    }

    /// Every call other than a GET: (method, path, x-idempotency-key, body).
    pub async fn changes(&self) -> Vec<(String, String, Option<String>, String)> {
        self.server
            .received_requests()
            .await
            .unwrap_or_default()
            .iter()
            .filter(|r| r.method.as_str() != "GET")
            .map(|r| {
                (
                    r.method.to_string(),
                    r.url.path().to_string(),
                    r.headers
                        .get("x-idempotency-key")
                        .map(|v| v.to_str().unwrap().to_string()),
                    String::from_utf8_lossy(&r.body).into_owned(),
                )
            })
            .collect()
    }
}
