//! The sandbox's Orders API, through real HTTP on a virtual clock: orders
//! of each type created and read, emulated terminals, cancel (200, and 202
//! then the webhook), refunds, idempotency keys, busy terminals, expiry,
//! the status simulator, terminals and their mode, search by date, and the
//! `order` webhook as the receiver's own checker verifies it.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use pointhook_common::clock::{Clock, ManualClock};
use pointhook_common::money::Money;
use pointhook_common::signature::{self as verify, IdForm, SignedParts};
use pointhook_sandbox::AccountSpec;
use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::*;

const TERMINAL: &str = "PAX_A910__SMARTPOS1234567890";
const OTHER: &str = "NEWLAND_N950__N950NCB801293324";

struct Orders {
    sb: RunningSandbox,
    clock: Arc<ManualClock>,
    hook: MockServer,
}

/// A sandbox on a manual clock whose account has two terminals and sends
/// its webhooks, signed, to a receiver answering `statuses` in turn.
async fn orders_with(statuses: &[u16]) -> Orders {
    let hook = MockServer::start().await;
    for (i, s) in statuses.iter().enumerate() {
        let mock = Mock::given(method("POST")).respond_with(ResponseTemplate::new(*s));
        let mock = if i + 1 == statuses.len() {
            mock
        } else {
            mock.up_to_n_times(1)
        };
        mock.with_priority((i + 1) as u8).mount(&hook).await;
    }
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let sb = start_sandbox(
        vec![AccountSpec {
            webhook_url: Some(hook.uri()),
            webhook_secret: Some(SECRET.into()),
            devices: vec![TERMINAL.into(), OTHER.into()],
            ..account(None)
        }],
        clock.clone(),
        1.0,
        false,
        None,
    )
    .await;
    Orders { sb, clock, hook }
}

async fn orders() -> Orders {
    orders_with(&[200]).await
}

fn point(terminal: &str, amount: &str) -> Value {
    json!({
        "type": "point",
        "external_reference": "ext_ref_1234",
        "transactions": {"payments": [{"amount": amount}]},
        "config": {"point": {"terminal_id": terminal, "print_on_terminal": "no_ticket"}},
        "description": "Point Smart 2",
    })
}

fn online(amount: &str) -> Value {
    json!({
        "type": "online",
        "processing_mode": "automatic",
        "total_amount": amount,
        "external_reference": "online_1",
        "payer": {"email": "buyer@example.com"},
        "transactions": {"payments": [{
            "amount": amount,
            "payment_method": {"id": "master", "type": "credit_card", "token": "card-token", "installments": 1},
        }]},
    })
}

impl Orders {
    async fn call(
        &self,
        verb: &str,
        path: &str,
        key: Option<&str>,
        body: Option<&Value>,
    ) -> (u16, Value) {
        let verb = reqwest::Method::from_bytes(verb.as_bytes()).unwrap();
        let mut req = client()
            .request(verb, format!("{}{path}", self.sb.url))
            .bearer_auth(TOKEN);
        if let Some(k) = key {
            req = req.header("x-idempotency-key", k);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        answer(req.send().await.unwrap()).await
    }

    async fn create(&self, body: &Value) -> Value {
        let (status, order) = self
            .call("POST", "/v1/orders", Some(&key()), Some(body))
            .await;
        assert_eq!(status, 201, "{order}");
        order
    }

    async fn get(&self, id: &str) -> Value {
        let (status, order) = self
            .call("GET", &format!("/v1/orders/{id}"), None, None)
            .await;
        assert_eq!(status, 200, "{order}");
        order
    }

    async fn post(&self, path: &str, body: Option<&Value>) -> (u16, Value) {
        self.call("POST", path, Some(&key()), body).await
    }

    /// Moves the sandbox's clock and runs what falls due.
    async fn advance(&self, secs: u64) {
        self.clock.advance(Duration::from_secs(secs));
        self.sb.sandbox.run_due().await.unwrap();
    }

    /// The `order` webhooks received, in order: (query id, headers, body).
    async fn webhooks(&self) -> Vec<(String, http::HeaderMap, Value)> {
        self.hook
            .received_requests()
            .await
            .unwrap()
            .into_iter()
            .filter(|r| r.url.query().unwrap_or("").ends_with("&type=order"))
            .map(|r| {
                let id = r
                    .url
                    .query_pairs()
                    .find(|(k, _)| k == "data.id")
                    .map(|(_, v)| v.into_owned())
                    .unwrap();
                (
                    id,
                    r.headers.clone(),
                    serde_json::from_slice(&r.body).unwrap(),
                )
            })
            .collect()
    }

    async fn actions(&self, id: &str) -> Vec<String> {
        self.webhooks()
            .await
            .into_iter()
            .filter(|(i, ..)| i == id)
            .map(|(_, _, b)| b["action"].as_str().unwrap().to_string())
            .collect()
    }

    /// Checks a webhook's signature as pointhook's receiver checks it
    /// (its time is checked by `signed_at`).
    fn verified(&self, id: &str, headers: &http::HeaderMap) -> IdForm {
        let parts = SignedParts {
            data_id: id,
            request_id: headers.get("x-request-id").map(|v| v.as_bytes()),
            signature: headers.get("x-signature").map(|v| v.as_bytes()),
        };
        verify::verify(&[SECRET.as_bytes()], parts, self.clock.now(), None)
            .expect("the webhook's signature verifies")
            .id_form
    }

    /// Seconds from the sandbox's start to a webhook's signature `ts`.
    fn signed_at(&self, headers: &http::HeaderMap, start: SystemTime) -> u64 {
        let signature = headers["x-signature"].to_str().unwrap();
        let ts: u64 = signature
            .split(',')
            .find_map(|p| p.strip_prefix("ts="))
            .unwrap()
            .parse()
            .unwrap();
        let start = start
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        ts - start
    }
}

fn key() -> String {
    pointhook_sandbox::random_token()
}

fn id_of(order: &Value) -> String {
    order["id"].as_str().unwrap().to_string()
}

fn is_order_id(id: &str) -> bool {
    id.len() == 29
        && id.starts_with("ORD")
        && id[3..]
            .bytes()
            .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase())
}

#[tokio::test]
async fn each_type_is_created_and_read_back() {
    let o = orders().await;
    let p = o.create(&point(TERMINAL, "24.00")).await;
    assert!(is_order_id(p["id"].as_str().unwrap()), "{p}");
    assert_eq!(
        (p["type"].as_str(), p["status"].as_str()),
        (Some("point"), Some("created"))
    );
    assert_eq!(p["config"]["point"]["terminal_id"], TERMINAL);
    assert_eq!(p["expiration_time"], "PT15M");
    let payment = &p["transactions"]["payments"][0];
    assert!(payment["id"].as_str().unwrap().starts_with("PAY"));
    assert_eq!(payment["amount"], "24.00");
    assert_eq!(
        o.get(&id_of(&p)).await,
        p,
        "GET serves the order as created"
    );

    let qr = o
        .create(&json!({
            "type": "qr", "total_amount": "50.5", "external_reference": "qr_1",
            "config": {"qr": {"external_pos_id": "STORE1POS1", "mode": "dynamic"}},
        }))
        .await;
    assert_eq!(qr["status"], "created");
    assert_eq!(qr["total_amount"], "50.50");
    assert!(
        qr["type_response"]["qr_data"]
            .as_str()
            .unwrap()
            .starts_with("000201")
    );
    assert_eq!(
        qr["transactions"]["payments"][0]["status_detail"],
        "ready_to_process"
    );

    // Online, automatic: processed by the create call, its payment a real
    // classic payment.
    let on = o.create(&online("100.00")).await;
    assert_eq!(
        (on["status"].as_str(), on["status_detail"].as_str()),
        (Some("processed"), Some("accredited"))
    );
    assert_eq!(on["total_paid_amount"], "100.00");
    let reference = on["transactions"]["payments"][0]["reference_id"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, classic) = o
        .call("GET", &format!("/v1/payments/{reference}"), None, None)
        .await;
    assert_eq!(
        (status, classic["status"].as_str()),
        (200, Some("approved"))
    );
    assert_eq!(o.get(&id_of(&on)).await, on);

    // Online, manual: created, then processed by /process.
    let mut body = online("10.00");
    body["processing_mode"] = json!("manual");
    let manual = o.create(&body).await;
    assert_eq!(manual["status"], "created");
    let (status, processed) = o
        .post(&format!("/v1/orders/{}/process", id_of(&manual)), None)
        .await;
    assert_eq!(
        (status, processed["status"].as_str()),
        (200, Some("processed"))
    );

    // Online, manual capture: authorized, then captured.
    let mut body = online("10.00");
    body["capture_mode"] = json!("manual");
    let held = o.create(&body).await;
    assert_eq!(
        (held["status"].as_str(), held["status_detail"].as_str()),
        (Some("action_required"), Some("waiting_capture"))
    );
    let (status, captured) = o
        .post(&format!("/v1/orders/{}/capture", id_of(&held)), None)
        .await;
    assert_eq!(
        (status, captured["status"].as_str()),
        (200, Some("processed"))
    );
    let (status, _) = o
        .post(&format!("/v1/orders/{}/capture", id_of(&held)), None)
        .await;
    assert_eq!(status, 409, "captured once");

    // Bodies checked as the platform checks them, every problem named.
    let (status, refusal) = o
        .post(
            "/v1/orders",
            Some(&json!({"type": "point", "transactions": {"payments": [{"amount": 24}]}})),
        )
        .await;
    assert_eq!(status, 400);
    assert!(refusal["cause"].as_array().unwrap().len() >= 3, "{refusal}");
    for field in ["message", "error", "status"] {
        assert!(!refusal[field].is_null(), "{refusal}");
    }
    let (status, refusal) = o.call("GET", "/v1/orders/ord-1", None, None).await;
    assert_eq!(
        (status, refusal["error"].as_str()),
        (400, Some("invalid_path_param"))
    );
    let (status, refusal) = o
        .call(
            "GET",
            "/v1/orders/ORD01JQ4S4KY8HWQ6NA5PXB65B3D3",
            None,
            None,
        )
        .await;
    assert_eq!(
        (status, refusal["error"].as_str()),
        (404, Some("order_not_found"))
    );
    o.sb.stop().await;
}

/// An order on a terminal: taken by it, paid, told as `order.processed`
/// with the version the docs show, signed over the id as issued.
#[tokio::test]
async fn a_terminal_takes_the_order_and_the_webhook_is_signed_over_the_upper_case_id() {
    let o = orders().await;
    let id = id_of(&o.create(&point(TERMINAL, "120.00")).await);
    o.advance(4).await;
    assert_eq!(o.get(&id).await["status"], "created");
    o.advance(1).await;
    let at = o.get(&id).await;
    assert_eq!(at["status"], "at_terminal");
    assert_eq!(at["transactions"]["payments"][0]["status"], "at_terminal");
    o.advance(20).await;
    let paid = o.get(&id).await;
    assert_eq!(
        (paid["status"].as_str(), paid["status_detail"].as_str()),
        (Some("processed"), Some("processed"))
    );
    let payment = &paid["transactions"]["payments"][0];
    assert_eq!(payment["paid_amount"], "120.00");
    let reference = payment["reference_id"].as_str().unwrap();
    let (_, classic) = o
        .call("GET", &format!("/v1/payments/{reference}"), None, None)
        .await;
    assert_eq!(classic["status"], "approved");

    let hooks = o.webhooks().await;
    assert_eq!(hooks.len(), 1, "created and at_terminal are not notified");
    let (query_id, headers, body) = &hooks[0];
    assert_eq!(query_id, &id);
    assert_eq!(body["action"], "order.processed");
    assert_eq!(body["type"], "order");
    assert!(body.get("id").is_none(), "no top-level id in real bodies");
    assert_eq!(body["data"]["id"], id.as_str());
    assert_eq!(body["data"]["version"], 3);
    assert_eq!(body["data"]["status_detail"], "accredited");
    assert_eq!(
        body["data"]["transactions"]["payments"][0]["reference"]["id"],
        reference
    );
    assert_eq!(headers["x-retry"], "0");
    assert_eq!(o.verified(query_id, headers), IdForm::AsReceived);
    o.sb.stop().await;
}

/// The platform retries on its schedule; each retry counts itself in
/// `X-Retry` and is signed anew over the same upper-case id.
#[tokio::test]
async fn webhook_retries_count_in_x_retry_and_stay_verifiable() {
    let o = orders_with(&[500, 200]).await;
    let start = o.clock.now();
    let on = o.create(&online("5.00")).await;
    o.advance(0).await;
    o.advance(15 * 60).await;
    let hooks = o.webhooks().await;
    assert_eq!(hooks.len(), 2);
    for (n, (id, headers, body)) in hooks.iter().enumerate() {
        assert_eq!(id, &id_of(&on));
        assert_eq!(headers["x-retry"], n.to_string().as_str());
        assert_eq!(body["action"], "order.processed");
        assert_eq!(o.verified(id, headers), IdForm::AsReceived);
        assert_eq!(
            o.signed_at(headers, start),
            n as u64 * 900,
            "signed when sent"
        );
    }
    o.sb.stop().await;
}

#[tokio::test]
async fn cancel_is_200_while_created_and_202_then_the_webhook_while_at_terminal() {
    let o = orders().await;
    let first = id_of(&o.create(&point(TERMINAL, "24.00")).await);
    let (status, canceled) = o.post(&format!("/v1/orders/{first}/cancel"), None).await;
    assert_eq!(status, 200, "{canceled}");
    assert_eq!(canceled["status"], "canceled");
    assert_eq!(
        canceled["transactions"]["payments"][0]["status_detail"],
        "canceled_by_api"
    );
    let (status, refusal) = o.post(&format!("/v1/orders/{first}/cancel"), None).await;
    assert_eq!(
        (status, refusal["error"].as_str()),
        (409, Some("order_already_canceled"))
    );

    // The terminal is free again; this order reaches it.
    let second = id_of(&o.create(&point(TERMINAL, "30.00")).await);
    o.advance(5).await;
    assert_eq!(o.get(&second).await["status"], "at_terminal");
    let (status, refusal) = o.post(&format!("/v1/orders/{second}/cancel"), None).await;
    assert_eq!(
        (status, refusal["error"].as_str()),
        (409, Some("cannot_cancel_order"))
    );
    let (status, pending) = answer(
        client()
            .post(format!("{}/v1/orders/{second}/cancel", o.sb.url))
            .bearer_auth(TOKEN)
            .header("x-idempotency-key", key())
            .header("x-allow-cancelable-status", "at_terminal")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 202, "{pending}");
    assert_eq!(pending["status"], "at_terminal");
    assert_eq!(
        pending["transactions"]["payments"][0]["status_detail"],
        "cancellation_requested"
    );
    assert!(o.actions(&second).await.is_empty(), "not canceled yet");
    o.advance(5).await;
    assert_eq!(o.get(&second).await["status"], "canceled");
    let hooks = o.webhooks().await;
    let (id, headers, body) = hooks.iter().find(|(i, ..)| *i == second).unwrap();
    assert_eq!(body["action"], "order.canceled");
    assert_eq!(body["data"]["status"], "canceled");
    assert_eq!(o.verified(id, headers), IdForm::AsReceived);
    assert_eq!(o.actions(&first).await, ["order.canceled"]);
    o.sb.stop().await;
}

#[tokio::test]
async fn refunds_partial_by_payment_then_total() {
    let o = orders().await;
    let order = o.create(&online("100.00")).await;
    let id = id_of(&order);
    let pay = order["transactions"]["payments"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let reference = order["transactions"]["payments"][0]["reference_id"]
        .as_str()
        .unwrap()
        .to_string();
    let partial = json!({"transactions": [{"id": pay, "amount": "30.00"}]});
    let (status, refunded) = o
        .post(&format!("/v1/orders/{id}/refund"), Some(&partial))
        .await;
    assert_eq!(status, 201, "{refunded}");
    assert_eq!(
        (
            refunded["status"].as_str(),
            refunded["status_detail"].as_str()
        ),
        (Some("processed"), Some("partially_refunded"))
    );
    let refund = &refunded["transactions"]["refunds"][0];
    assert!(refund["id"].as_str().unwrap().starts_with("REF"));
    assert_eq!(
        (refund["transaction_id"].as_str(), refund["amount"].as_str()),
        (Some(pay.as_str()), Some("30.00"))
    );
    let (_, classic) = o
        .call("GET", &format!("/v1/payments/{reference}"), None, None)
        .await;
    assert_eq!(
        Money::parse(&classic["transaction_amount_refunded"].to_string()),
        Money::parse("30")
    );

    let too_much = json!({"transactions": [{"id": pay, "amount": "70.01"}]});
    let (status, refusal) = o
        .post(&format!("/v1/orders/{id}/refund"), Some(&too_much))
        .await;
    assert_eq!(
        (status, refusal["error"].as_str()),
        (400, Some("refund_amount_exceeds"))
    );
    let unknown =
        json!({"transactions": [{"id": "PAY01JQ4S4KY8HWQ6NA5PXB65B3D3", "amount": "1.00"}]});
    let (status, refusal) = o
        .post(&format!("/v1/orders/{id}/refund"), Some(&unknown))
        .await;
    assert_eq!(
        (status, refusal["error"].as_str()),
        (404, Some("transaction_not_found"))
    );

    // No body: whatever is left.
    let (status, total) = o.post(&format!("/v1/orders/{id}/refund"), None).await;
    assert_eq!(status, 201, "{total}");
    assert_eq!(
        (total["status"].as_str(), total["status_detail"].as_str()),
        (Some("refunded"), Some("refunded"))
    );
    assert_eq!(total["transactions"]["refunds"][1]["amount"], "70.00");
    let (_, classic) = o
        .call("GET", &format!("/v1/payments/{reference}"), None, None)
        .await;
    assert_eq!(classic["status"], "refunded");
    let (status, refusal) = o.post(&format!("/v1/orders/{id}/refund"), None).await;
    assert_eq!(
        (status, refusal["error"].as_str()),
        (409, Some("order_already_refunded"))
    );
    o.advance(0).await;
    assert_eq!(
        o.actions(&id).await,
        ["order.processed", "order.refunded"],
        "no webhook for the partial refund"
    );
    o.sb.stop().await;
}

#[tokio::test]
async fn an_idempotency_key_gives_the_same_order_or_a_409_and_lasts_24_hours() {
    let o = orders().await;
    let body = json!({
        "type": "qr", "total_amount": "10.00",
        "config": {"qr": {"external_pos_id": "POS1", "mode": "static"}},
    });
    let same_body_reordered = json!({
        "config": {"qr": {"mode": "static", "external_pos_id": "POS1"}},
        "total_amount": "10.00", "type": "qr",
    });
    let (status, first) = o
        .call("POST", "/v1/orders", Some("key-1"), Some(&body))
        .await;
    assert_eq!(status, 201);
    o.advance(60).await;
    let (status, again) = o
        .call(
            "POST",
            "/v1/orders",
            Some("key-1"),
            Some(&same_body_reordered),
        )
        .await;
    assert_eq!((status, again), (201, first.clone()), "the same order");
    let mut other = body.clone();
    other["total_amount"] = json!("11.00");
    let (status, refusal) = o
        .call("POST", "/v1/orders", Some("key-1"), Some(&other))
        .await;
    assert_eq!(
        (status, refusal["error"].as_str()),
        (409, Some("idempotency_key_already_used"))
    );
    let (status, refusal) = o.call("POST", "/v1/orders", None, Some(&body)).await;
    assert_eq!(
        (status, refusal["error"].as_str()),
        (400, Some("empty_required_header"))
    );
    let (status, refusal) = o
        .call(
            "POST",
            &format!("/v1/orders/{}/cancel", id_of(&first)),
            Some("key-1"),
            None,
        )
        .await;
    assert_eq!(status, 409, "a key is one request: {refusal}");

    o.advance(24 * 3600).await;
    let (status, fresh) = o
        .call("POST", "/v1/orders", Some("key-1"), Some(&other))
        .await;
    assert_eq!(status, 201, "{fresh}");
    assert_ne!(fresh["id"], first["id"]);
    o.sb.stop().await;
}

#[tokio::test]
async fn a_terminal_takes_one_queued_order() {
    let o = orders().await;
    let first = id_of(&o.create(&point(TERMINAL, "10.00")).await);
    let (status, refusal) = o.post("/v1/orders", Some(&point(TERMINAL, "11.00"))).await;
    assert_eq!(
        (status, refusal["error"].as_str()),
        (409, Some("already_queued_order_for_terminal"))
    );
    o.advance(5).await;
    let (status, _) = o.post("/v1/orders", Some(&point(TERMINAL, "11.00"))).await;
    assert_eq!(status, 409, "still on the terminal");
    o.create(&point(OTHER, "12.00")).await;
    let (status, refusal) = o
        .post("/v1/orders", Some(&point("PAX_A910__NOTMINE", "1.00")))
        .await;
    assert_eq!(
        (status, refusal["error"].as_str()),
        (403, Some("forbidden_checking_terminal_owner"))
    );
    o.advance(20).await;
    assert_eq!(o.get(&first).await["status"], "processed");
    o.create(&point(TERMINAL, "11.00")).await;
    o.sb.stop().await;
}

#[tokio::test]
async fn unpaid_orders_expire_on_the_sandbox_clock() {
    let o = orders().await;
    // A terminal that never gets paid keeps the order until it expires.
    let (status, _) =
        o.sb.control(
            &format!("terminals/{TERMINAL}"),
            json!({"status": "expired"}),
        )
        .await;
    assert_eq!(status, 200);
    let mut body = point(TERMINAL, "10.00");
    body["expiration_time"] = json!("PT30S");
    let point_id = id_of(&o.create(&body).await);
    let qr_id = id_of(
        &o.create(&json!({
            "type": "qr", "total_amount": "3.00",
            "config": {"qr": {"external_pos_id": "POS1"}},
        }))
        .await,
    );
    o.advance(29).await;
    assert_eq!(o.get(&point_id).await["status"], "at_terminal");
    o.advance(1).await;
    let expired = o.get(&point_id).await;
    assert_eq!(expired["status"], "expired");
    assert_eq!(expired["transactions"]["payments"][0]["status"], "expired");
    assert_eq!(o.actions(&point_id).await, ["order.expired"]);
    assert_eq!(o.get(&qr_id).await["status"], "created");
    o.advance(15 * 60).await;
    assert_eq!(
        o.get(&qr_id).await["status"],
        "expired",
        "15 minutes by default"
    );
    assert_eq!(o.actions(&qr_id).await, ["order.expired"]);

    body["expiration_time"] = json!("PT10S");
    let (status, refusal) = o.post("/v1/orders", Some(&body)).await;
    assert_eq!(
        (status, refusal["error"].as_str()),
        (400, Some("property_value"))
    );
    o.sb.stop().await;
}

#[tokio::test]
async fn the_status_simulator_answers_204_then_moves_the_order() {
    let o = orders().await;
    // The terminal would wait for its order forever: only the simulator
    // moves it.
    o.sb.control(
        &format!("terminals/{TERMINAL}"),
        json!({"status": "expired"}),
    )
    .await;
    let id = id_of(&o.create(&point(TERMINAL, "15.00")).await);
    let (status, body) = o
        .call(
            "POST",
            &format!("/v1/orders/{id}/events"),
            None,
            Some(&json!({"status": "action_required"})),
        )
        .await;
    assert_eq!((status, body), (204, Value::Null));
    o.advance(0).await;
    assert_eq!(o.get(&id).await["status"], "at_terminal");
    o.advance(39).await;
    assert_eq!(o.get(&id).await["status"], "at_terminal");
    o.advance(1).await;
    let order = o.get(&id).await;
    assert_eq!(order["status"], "action_required");
    let reference = order["transactions"]["payments"][0]["reference_id"]
        .as_str()
        .unwrap();
    let (_, classic) = o
        .call("GET", &format!("/v1/payments/{reference}"), None, None)
        .await;
    assert_eq!(classic["status"], "approved", "the answer is the payment's");
    let hooks = o.webhooks().await;
    let (_, _, body) = hooks.iter().find(|(i, ..)| *i == id).unwrap();
    assert_eq!(body["action"], "order.action_required");
    assert_eq!(body["data"]["status_detail"], "check_on_terminal");
    assert!(body["data"].get("transactions").is_none());

    // Processed with a named method, then refunded.
    let other = id_of(&o.create(&point(OTHER, "20.00")).await);
    let this = &o;
    let sim = |b: Value| {
        let path = format!("/v1/orders/{other}/events");
        async move { this.call("POST", &path, None, Some(&b)).await.0 }
    };
    assert_eq!(
        sim(json!({"status": "refunded"})).await,
        400,
        "not processed yet"
    );
    assert_eq!(sim(json!({"status": "paid"})).await, 400);
    assert_eq!(
        sim(json!({"status": "canceled", "installments": 3})).await,
        400
    );
    assert_eq!(
        sim(json!({"status": "processed", "color": "red"})).await,
        400
    );
    assert_eq!(
        sim(json!({"status": "processed", "payment_method_type": "debit_card"})).await,
        204
    );
    o.advance(10).await;
    let paid = o.get(&other).await;
    assert_eq!(paid["status"], "processed");
    assert_eq!(
        paid["transactions"]["payments"][0]["payment_method"]["type"],
        "debit_card"
    );
    assert_eq!(sim(json!({"status": "refunded"})).await, 204);
    o.advance(10).await;
    assert_eq!(o.get(&other).await["status"], "refunded");
    o.advance(0).await;
    assert_eq!(
        o.actions(&other).await,
        ["order.processed", "order.refunded"]
    );
    let hooks = o.webhooks().await;
    let versions: Vec<i64> = hooks
        .iter()
        .filter(|(i, ..)| *i == other)
        .map(|(_, _, b)| b["data"]["version"].as_i64().unwrap())
        .collect();
    assert_eq!(versions, [3, 4], "as the docs number them");
    let (status, _) = o
        .call(
            "POST",
            "/v1/orders/ORD01JQ4S4KY8HWQ6NA5PXB65B3D3/events",
            None,
            Some(&json!({"status": "processed"})),
        )
        .await;
    assert_eq!(status, 404);
    o.sb.stop().await;
}

#[tokio::test]
async fn terminal_presets_decide_how_orders_end() {
    let o = orders().await;
    o.sb.control(
        &format!("terminals/{TERMINAL}"),
        json!({"status": "failed"}),
    )
    .await;
    let failed = id_of(&o.create(&point(TERMINAL, "9.00")).await);
    o.advance(25).await;
    assert_eq!(o.get(&failed).await["status"], "failed");
    assert_eq!(o.actions(&failed).await, ["order.failed"]);

    let (status, _) =
        o.sb.control(
            &format!("terminals/{TERMINAL}"),
            json!({"status": "action_required", "payment_status": "rejected"}),
        )
        .await;
    assert_eq!(status, 200);
    let refused = id_of(&o.create(&point(TERMINAL, "9.00")).await);
    o.advance(5).await;
    o.advance(40).await;
    let order = o.get(&refused).await;
    assert_eq!(order["status"], "action_required");
    let reference = order["transactions"]["payments"][0]["reference_id"]
        .as_str()
        .unwrap();
    let (_, classic) = o
        .call("GET", &format!("/v1/payments/{reference}"), None, None)
        .await;
    assert_eq!(classic["status"], "rejected");

    o.sb.control(
        &format!("terminals/{TERMINAL}"),
        json!({"status": "canceled"}),
    )
    .await;
    let canceled = id_of(&o.create(&point(TERMINAL, "9.00")).await);
    o.advance(25).await;
    let order = o.get(&canceled).await;
    assert_eq!(order["status"], "canceled");
    assert_eq!(
        order["transactions"]["payments"][0]["status_detail"],
        "canceled_on_terminal"
    );
    let (status, _) =
        o.sb.control("terminals/PAX_A910__NOTMINE", json!({"status": "failed"}))
            .await;
    assert_eq!(status, 404);
    o.sb.stop().await;
}

#[tokio::test]
async fn terminals_are_listed_and_only_pdv_takes_orders() {
    let o = orders().await;
    let (status, list) = o.call("GET", "/terminals/v1/list", None, None).await;
    assert_eq!(status, 200);
    // The account's two, after the device every account starts with.
    let terminals = list["data"]["terminals"].as_array().unwrap();
    assert_eq!(terminals.len(), 3);
    assert_eq!(list["paging"]["total"], 3);
    assert!(terminals.iter().all(|t| t["operating_mode"] == "PDV"));
    assert!(terminals[0]["store_id"].is_string() && terminals[0]["pos_id"].is_u64());
    let (_, page) = o
        .call("GET", "/terminals/v1/list?limit=1&offset=1", None, None)
        .await;
    assert_eq!(page["data"]["terminals"].as_array().unwrap().len(), 1);

    let setup = |mode: &str| json!({"terminals": [{"id": TERMINAL, "operating_mode": mode}]});
    let (status, changed) = o
        .call(
            "PATCH",
            "/terminals/v1/setup",
            None,
            Some(&setup("STANDALONE")),
        )
        .await;
    assert_eq!(status, 200, "{changed}");
    assert_eq!(changed["terminals"][0]["operating_mode"], "STANDALONE");
    let id = id_of(&o.create(&point(TERMINAL, "5.00")).await);
    o.advance(60).await;
    assert_eq!(o.get(&id).await["status"], "created", "not in PDV mode");
    let (status, _) = o
        .call("PATCH", "/terminals/v1/setup", None, Some(&setup("PDV")))
        .await;
    assert_eq!(status, 200);
    o.advance(5).await;
    assert_eq!(o.get(&id).await["status"], "at_terminal");

    let (status, _) = o
        .call(
            "PATCH",
            "/terminals/v1/setup",
            None,
            Some(&json!({"terminals": [{"id": "PAX_A910__NOTMINE", "operating_mode": "PDV"}]})),
        )
        .await;
    assert_eq!(status, 404);
    let (status, _) = o
        .call("PATCH", "/terminals/v1/setup", None, Some(&setup("KIOSK")))
        .await;
    assert_eq!(status, 400);

    // The platform's virtual terminal works for any account.
    let virtual_terminal = "NEWLAND_N950__SBX0000001";
    o.create(&point(virtual_terminal, "1.00")).await;
    let (_, list) = o.call("GET", "/terminals/v1/list", None, None).await;
    assert_eq!(list["paging"]["total"], 4);
    o.sb.stop().await;
}

#[tokio::test]
async fn orders_are_searched_by_creation_date_with_paging() {
    let o = orders().await;
    let start = o.clock.now();
    let mut ids = Vec::new();
    for _ in 0..3 {
        let body = json!({
            "type": "qr", "total_amount": "1.00", "external_reference": "search_me",
            "config": {"qr": {"external_pos_id": "POS1"}},
        });
        ids.push(id_of(&o.create(&body).await));
        o.advance(86_400).await;
    }
    let iso = |t: SystemTime| humantime::format_rfc3339_millis(t).to_string();
    let day = Duration::from_secs(86_400);
    let window =
        |from: SystemTime, to: SystemTime| format!("begin_date={}&end_date={}", iso(from), iso(to));
    let (status, found) = o
        .call(
            "GET",
            &format!("/v1/orders?{}", window(start - day, start + day + day / 2)),
            None,
            None,
        )
        .await;
    assert_eq!(status, 200, "{found}");
    let got: Vec<&str> = found["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap())
        .collect();
    assert_eq!(got, [ids[0].as_str(), ids[1].as_str()]);
    assert_eq!(found["paging"]["total"], "2");

    let all = window(start, start + day * 3);
    let (_, page) = o
        .call(
            "GET",
            &format!("/v1/orders?{all}&limit=1&offset=2"),
            None,
            None,
        )
        .await;
    assert_eq!(page["data"][0]["id"], ids[2].as_str());
    assert_eq!(
        (
            page["paging"]["total_pages"].as_str(),
            page["paging"]["limit"].as_str()
        ),
        (Some("3"), Some("1"))
    );
    let (_, page) = o
        .call(
            "GET",
            &format!("/v1/orders?{all}&page=2&page_size=2"),
            None,
            None,
        )
        .await;
    assert_eq!(page["data"][0]["id"], ids[2].as_str());
    let (status, page) = o
        .call(
            "GET",
            &format!("/v1/orders?{all}&page={}&page_size=100", u64::MAX),
            None,
            None,
        )
        .await;
    assert_eq!(
        (status, page["data"].as_array().map(Vec::len)),
        (200, Some(0))
    );
    let (_, filtered) = o
        .call(
            "GET",
            &format!("/v1/orders?{all}&status=expired"),
            None,
            None,
        )
        .await;
    assert_eq!(filtered["paging"]["total"], "3", "each expired a day ago");

    let (status, refusal) = o.call("GET", "/v1/orders", None, None).await;
    assert_eq!(
        (status, refusal["error"].as_str()),
        (400, Some("missing_required_params"))
    );
    let (status, refusal) = o
        .call(
            "GET",
            &format!("/v1/orders?{}", window(start, start + day * 31)),
            None,
            None,
        )
        .await;
    assert_eq!(
        (status, refusal["error"].as_str()),
        (400, Some("invalid_parameter"))
    );
    o.sb.stop().await;
}

fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/../../fixtures/api/orders/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Every path of `v` with its JSON type (arrays by their first element).
fn shape(v: &Value) -> std::collections::BTreeSet<String> {
    fn walk(v: &Value, at: String, out: &mut std::collections::BTreeSet<String>) {
        let kind = match v {
            Value::Null => "null",
            Value::Bool(_) => "bool",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        out.insert(format!("{at}: {kind}"));
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    walk(x, format!("{at}.{k}"), out);
                }
            }
            Value::Array(a) => {
                if let Some(x) = a.first() {
                    walk(x, format!("{at}[]"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = std::collections::BTreeSet::new();
    walk(v, String::new(), &mut out);
    out
}

/// The documented bodies (fixtures/api/orders/) hold the sandbox to the
/// platform: the documented Point request is accepted as printed, and what
/// the sandbox writes has the documented fields, of the documented types.
#[tokio::test]
async fn the_sandbox_speaks_the_documented_shapes() {
    let o = orders().await;
    let request = fixture("point-create-request.json");
    let order = o.create(&request).await;
    assert_eq!(order["expiration_time"], "PT16M");
    assert_eq!(
        order["config"]["point"]["terminal_id"],
        request["config"]["point"]["terminal_id"]
    );
    assert_eq!(order["integration_data"]["sponsor"]["id"], "446566691");
    let id = id_of(&order);
    o.advance(25).await;
    let hooks = o.webhooks().await;
    let (_, _, processed) = hooks.iter().find(|(i, ..)| *i == id).unwrap();
    assert_eq!(
        shape(processed),
        shape(&fixture("webhook-point-processed.json"))
    );

    let pay = o.get(&id).await["transactions"]["payments"][0]["id"].clone();
    let partial = json!({"transactions": [{"id": pay, "amount": "1.00"}]});
    let (_, refunded) = o
        .post(&format!("/v1/orders/{id}/refund"), Some(&partial))
        .await;
    let documented = fixture("refund-partial-sdk-java.json");
    for field in ["status", "status_detail"] {
        assert_eq!(refunded[field], documented[field]);
    }
    assert_eq!(
        shape(&refunded["transactions"]["refunds"]),
        shape(&documented["transactions"]["refunds"])
    );
    let (_, total) = o.post(&format!("/v1/orders/{id}/refund"), None).await;
    let documented = fixture("refund-total-sdk-java.json");
    for field in ["status", "status_detail"] {
        assert_eq!(total[field], documented[field]);
    }

    let now = humantime::format_rfc3339_millis(o.clock.now()).to_string();
    let (_, found) = o
        .call(
            "GET",
            &format!(
                "/v1/orders?begin_date={}&end_date={now}",
                humantime::format_rfc3339_millis(o.clock.now() - Duration::from_secs(86_400))
            ),
            None,
            None,
        )
        .await;
    assert_eq!(
        shape(&found["paging"]),
        shape(&fixture("search-sdk-go.json")["paging"])
    );

    let setup = fixture("terminals-setup-request.json");
    let (status, answer) = o
        .call("PATCH", "/terminals/v1/setup", None, Some(&setup))
        .await;
    assert_eq!((status, answer), (200, setup), "answered in the same shape");
    o.sb.stop().await;
}

/// Switching a terminal's mode through the Orders API is a device event,
/// mailed like those of the legacy device API once the e-mails are on.
#[tokio::test]
async fn a_change_of_mode_is_mailed_as_a_device_event() {
    let spool = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let sb = start_sandbox_mailing(
        vec![AccountSpec {
            email: Some("ops@shop.example".into()),
            devices: vec![TERMINAL.into()],
            ..account(None)
        }],
        clock.clone(),
        1.0,
        false,
        None,
        pointhook_sandbox::MailSettings::Spool(spool.path().to_path_buf()),
    )
    .await;
    let (status, _) = answer(
        client()
            .patch(format!("{}/point/integration-api/integrator", sb.url))
            .bearer_auth(TOKEN)
            .json(&json!({"event_channel_devices": ["email"]}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    clock.advance(Duration::from_secs(31 * 60));
    for mode in ["STANDALONE", "STANDALONE", "PDV"] {
        let (status, _) = answer(
            client()
                .patch(format!("{}/terminals/v1/setup", sb.url))
                .bearer_auth(TOKEN)
                .json(&json!({"terminals": [{"id": TERMINAL, "operating_mode": mode}]}))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, 200);
    }
    assert_eq!(
        sb.sandbox.send_due_mails().await.unwrap(),
        2,
        "one per change"
    );
    let mails: Vec<String> = std::fs::read_dir(spool.path())
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    assert!(mails.iter().any(|m| m.contains("from PDV to STANDALONE")));
    assert!(mails.iter().any(|m| m.contains("from STANDALONE to PDV")));
    assert!(mails.iter().all(|m| m.contains(TERMINAL)));
    sb.stop().await;
}
