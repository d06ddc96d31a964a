//! The one source of "now" for code whose behaviour depends on time, so
//! tests can fix it (signature tolerance, timestamps); and the one way
//! times are written: unix milliseconds, shown as RFC 3339.

use std::time::SystemTime;

pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> SystemTime;

    /// The clock as one that moves only when told to, if it is one (the
    /// sandbox's `POST /sandbox/clock/advance`).
    fn manual(&self) -> Option<&ManualClock> {
        None
    }
}

/// The operating system's clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// A clock stopped at one instant.
#[derive(Debug, Clone, Copy)]
pub struct FixedClock(pub SystemTime);

impl Clock for FixedClock {
    fn now(&self) -> SystemTime {
        self.0
    }
}

/// A clock that moves only when told to (tests of backoff and retries).
#[derive(Debug)]
pub struct ManualClock(std::sync::Mutex<SystemTime>);

impl ManualClock {
    pub fn new(start: SystemTime) -> Self {
        ManualClock(std::sync::Mutex::new(start))
    }

    pub fn advance(&self, by: std::time::Duration) {
        let mut t = self.0.lock().unwrap_or_else(|p| p.into_inner());
        *t += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn manual(&self) -> Option<&ManualClock> {
        Some(self)
    }
}

/// Unix milliseconds of `t` (0 before 1970, saturating far ahead).
pub fn unix_ms(t: SystemTime) -> i64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

pub fn unix_ms_now() -> i64 {
    unix_ms(SystemTime::now())
}

/// Unix milliseconds as RFC 3339 UTC (`2026-11-22T14:00:00.000Z`). Total:
/// a time before 1970 shows as the epoch, one past year 9999 as the last
/// millisecond of 9999, so no stored number can make a page fail.
pub fn rfc3339(ms: i64) -> String {
    const LAST: i64 = 253_402_300_799_999; // 9999-12-31T23:59:59.999Z
    let ms = ms.clamp(0, LAST) as u64;
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms);
    humantime::format_rfc3339_millis(t).to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_time_formats() {
        assert_eq!(super::rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(super::rfc3339(-5), "1970-01-01T00:00:00.000Z");
        assert_eq!(super::rfc3339(i64::MAX), "9999-12-31T23:59:59.999Z");
        assert_eq!(
            super::rfc3339(1_763_632_800_000),
            "2025-11-20T10:00:00.000Z"
        );
    }
}
