//! The API calls a job's run made, kept for the operator's history of the
//! job and for `orders export-scenario`: each call's endpoint, status,
//! time, and the body of a resource read.
//!
//! The log is handed to each call explicitly (a job's run owns one), so a
//! call made outside a job (a reconciliation search) is never mixed in, and
//! a run that panics still leaves the calls it made.

use std::sync::Mutex;

/// The longest body of a resource kept: the platform's resources are a few
/// KiB; a larger answer is recorded without its body.
pub const MAX_KEPT_BODY: usize = 64 * 1024;

/// One API call.
#[derive(Debug, Clone)]
pub struct Fetch {
    pub endpoint: &'static str,
    pub resource_id: String,
    /// The HTTP status, or 0 when no answer came.
    pub status: u16,
    pub elapsed_ms: u64,
    /// Unix ms, from the injected clock.
    pub at: i64,
    /// The version of the resource the answer showed (`version_of`).
    pub seen: Option<String>,
    /// The resource as the API answered it (reads that succeeded, up to
    /// `MAX_KEPT_BODY`).
    pub body: Option<Vec<u8>>,
}

/// The calls of one run, in the order they were made.
#[derive(Debug, Default)]
pub struct CallLog(Mutex<Vec<Fetch>>);

impl CallLog {
    pub fn push(&self, fetch: Fetch) {
        // A poisoned lock only means another call of this run panicked;
        // its calls are still worth keeping.
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(fetch);
    }

    /// The calls made so far, leaving the log empty.
    pub fn take(&self) -> Vec<Fetch> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}
