//! Fault injection for testers: the next N calls to a path answer a given
//! status (with `Retry-After`), or answer late; and the log of every call to
//! the resources API. Kept in memory: they are about this run.

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
