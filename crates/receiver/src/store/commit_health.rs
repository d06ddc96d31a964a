//! How this process's commits go: what `/readyz`, the console and the
//! storage alert read, a full disk told apart.

use std::sync::Mutex;
use std::time::Duration;

/// How the last commits went: the readiness check reads it. A commit that
/// fails (a full disk, a database gone) makes `/readyz` say "not ready"
/// at once, until one succeeds.
#[derive(Debug, Default)]
pub(crate) struct CommitHealth {
    /// The outcome recorded last. Comparing clock stamps of the last
    /// success and the last failure tied when both fell in one millisecond,
    /// and the failure went unseen.
    last_failed: std::sync::atomic::AtomicBool,
    /// Whether the failures that go on now are for a full disk.
    disk_full: std::sync::atomic::AtomicBool,
    /// When the failures that go on now began (for the alert "storage not
    /// ready"); touched only when the outcome changes, never per commit.
    failing_since: Mutex<Option<std::time::Instant>>,
}

impl CommitHealth {
    /// Whether the last commit recorded (if any) failed.
    pub fn failing(&self) -> bool {
        self.last_failed.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether the last commit failed for a full disk.
    pub fn disk_full(&self) -> bool {
        self.failing() && self.disk_full.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A failure for a full disk (`record(false)`, said in those words).
    pub fn record_disk_full(&self) {
        self.disk_full
            .store(true, std::sync::atomic::Ordering::Relaxed);
        self.record(false);
    }

    pub fn record(&self, ok: bool) {
        if ok {
            self.disk_full
                .store(false, std::sync::atomic::Ordering::Relaxed);
        }
        let was_failing = self
            .last_failed
            .swap(!ok, std::sync::atomic::Ordering::Relaxed);
        if was_failing == ok {
            let mut since = self.failing_since.lock().unwrap_or_else(|p| p.into_inner());
            *since = (!ok).then(std::time::Instant::now);
        }
    }

    /// How long commits have failed with none succeeding; `None` while the
    /// last one succeeded.
    pub fn failing_for(&self) -> Option<Duration> {
        if !self.failing() {
            return None;
        }
        let since = *self.failing_since.lock().unwrap_or_else(|p| p.into_inner());
        since.map(|at| at.elapsed())
    }
}

#[cfg(test)]
#[path = "commit_health_tests.rs"]
mod commit_health_tests;
