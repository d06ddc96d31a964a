//! The demo's merchant endpoint: says what it receives, and refuses the
//! first deliveries of one type of event when a scenario wants to show a
//! redelivery. Beside it, `/warehouse` stands for a second system that is
//! down: it answers 503 to everything, silently.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Mutex;

use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde_json::Value;

use pointhook_common::response;
use pointhook_common::serve::Handler;
use pointhook_common::text::printable;

/// The path of the destination that is down.
pub const WAREHOUSE: &str = "/warehouse";

#[derive(Default)]
pub struct Merchant {
    /// Refuse this many next deliveries of events of this type.
    refuse: Mutex<Option<(String, u32)>>,
    /// Every answer given, by event id.
    answers: Mutex<HashMap<String, Vec<u16>>>,
}

impl Merchant {
    /// Refuses (503) the next `n` deliveries of events of type `kind`.
    pub fn refuse_next(&self, kind: &str, n: u32) {
        if let Ok(mut r) = self.refuse.lock() {
            *r = Some((kind.to_string(), n));
        }
    }

    /// The answers given to the deliveries of `event_id`, in order.
    pub fn answers(&self, event_id: &str) -> Vec<u16> {
        self.answers
            .lock()
            .map(|a| a.get(event_id).cloned().unwrap_or_default())
            .unwrap_or_default()
    }

    /// Whether to refuse a delivery of `kind` (counting it when so).
    fn refuses(&self, kind: &str) -> bool {
        let Ok(mut r) = self.refuse.lock() else {
            return false;
        };
        match r.as_mut() {
            Some((k, n)) if k == kind && *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        }
    }

    fn answered(&self, id: &str, status: StatusCode) {
        if let Ok(mut a) = self.answers.lock() {
            a.entry(id.to_string()).or_default().push(status.as_u16());
        }
    }
}

impl Handler for Merchant {
    fn handle(
        &self,
        req: Request<Incoming>,
        _peer: SocketAddr,
    ) -> impl std::future::Future<Output = Response<response::Body>> + Send {
        let down = req.uri().path() == WAREHOUSE;
        let id = req
            .headers()
            .get("webhook-id")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        async move {
            if down {
                return response::json(StatusCode::SERVICE_UNAVAILABLE, "{}");
            }
            let body = req
                .into_body()
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            let event: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let kind = event["type"].as_str().unwrap_or("?");
            let status = if self.refuses(kind) {
                StatusCode::SERVICE_UNAVAILABLE
            } else {
                StatusCode::OK
            };
            self.answered(&id, status);
            let (kind, id) = (printable(kind), printable(&id));
            if status == StatusCode::OK {
                println!("    merchant endpoint: received {kind} {id}");
            } else {
                println!(
                    "    merchant endpoint: answered 503 to {kind} {id} (pointhook will retry)"
                );
            }
            response::json(status, "{}")
        }
    }
}
