//! Fault injection for testers: the next N calls to a path answer a given
//! status (with `Retry-After`), or answer late; and the log of every call to
//! the resources API (shown with its credentials masked). Kept in memory:
//! they are about this run.

use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Fault {
    /// Only calls with this method (any when absent).
    #[serde(default)]
    pub method: Option<String>,
    pub path: String,
    /// Answer this status instead (the platform's error body); absent: the
    /// normal answer, after `delay_ms`.
    #[serde(default)]
    pub status: Option<u16>,
    #[serde(default = "one")]
    pub times: u32,
    #[serde(default)]
    pub delay_ms: u64,
    #[serde(default)]
    pub retry_after: Option<u64>,
}

fn one() -> u32 {
    1
}

/// A call the resources API received.
#[derive(Debug, Clone, Serialize)]
pub struct Call {
    pub method: String,
    pub path: String,
    pub authorization: Option<String>,
    pub idempotency_key: Option<String>,
    pub body: String,
}

/// Body fields that are secrets: a card's number and security code.
const SECRET_FIELDS: [&str; 2] = ["card_number", "security_code"];

impl Call {
    /// The call as `GET /sandbox/requests` shows it: the credential's
    /// scheme without the credential, a card's number and security code
    /// replaced by `***`.
    pub fn masked(&self) -> Call {
        let authorization = self
            .authorization
            .as_ref()
            .map(|a| match a.split_once(' ') {
                Some((scheme, _)) => format!("{scheme} ***"),
                None => "***".to_string(),
            });
        let body = match serde_json::from_str::<serde_json::Value>(&self.body) {
            Ok(mut v) => {
                mask(&mut v);
                v.to_string()
            }
            Err(_) => self.body.clone(),
        };
        Call {
            authorization,
            body,
            ..self.clone()
        }
    }
}

fn mask(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(fields) => {
            for (k, x) in fields.iter_mut() {
                if SECRET_FIELDS.contains(&k.as_str()) {
                    *x = serde_json::Value::from("***");
                } else {
                    mask(x);
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(mask),
        _ => {}
    }
}

#[derive(Default)]
pub struct Faults {
    pending: Mutex<Vec<Fault>>,
    calls: Mutex<Vec<Call>>,
    /// Every read is answered this much later.
    delay: Mutex<Duration>,
}

impl Faults {
    pub fn set_read_delay(&self, d: Duration) {
        *self.delay.lock().unwrap_or_else(|p| p.into_inner()) = d;
    }

    pub fn read_delay(&self) -> Duration {
        *self.delay.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn add(&self, f: Fault) {
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(f);
    }

    pub fn clear(&self) {
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    /// The fault for this call, if one is armed (it is used up).
    pub fn take(&self, method: &str, path: &str) -> Option<(Option<u16>, Duration, Option<u64>)> {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        let i = pending.iter().position(|f| {
            f.path == path
                && f.times > 0
                && f.method
                    .as_deref()
                    .is_none_or(|m| m.eq_ignore_ascii_case(method))
        })?;
        let f = &mut pending[i];
        f.times -= 1;
        let out = (f.status, Duration::from_millis(f.delay_ms), f.retry_after);
        if f.times == 0 {
            pending.remove(i);
        }
        Some(out)
    }

    pub fn record(&self, call: Call) {
        self.calls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(call);
    }

    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}
