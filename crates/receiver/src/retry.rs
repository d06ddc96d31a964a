//! The one backoff schedule, and how a server's `Retry-After` is read:
//! jobs and outbound events both use them.

use std::time::Duration;

use rand::RngExt;

const FIRST: Duration = Duration::from_secs(1);
/// The longest wait: backoff and a server's `Retry-After` alike.
pub const CAP: Duration = Duration::from_secs(300);

/// The delay after failed attempt number `attempt` (from 1): 1 s, doubling,
/// with ±20 % jitter so that work that failed together does not retry
/// together, and never more than 5 minutes (the cap applies after the
/// jitter).
pub fn backoff(attempt: u32) -> Duration {
    let base = FIRST.saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
    base.mul_f64(rand::rng().random_range(0.8..1.2)).min(CAP)
}

/// A `Retry-After` as a wait, never longer than `CAP`.
pub fn clamp_retry_after(after: Duration) -> Duration {
    after.min(CAP)
}

/// `Retry-After`: seconds, or an HTTP date (a date in the past is "now").
/// Unbounded here; whoever waits takes `clamp_retry_after` of it.
pub fn retry_after(headers: &http::HeaderMap) -> Option<Duration> {
    let text = headers
        .get(http::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    if let Ok(secs) = text.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = httpdate::parse_http_date(text).ok()?;
    Some(
        at.duration_since(std::time::SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn after(value: &str) -> Option<Duration> {
        let mut headers = http::HeaderMap::new();
        headers.insert(http::header::RETRY_AFTER, value.parse().unwrap());
        retry_after(&headers)
    }

    #[test]
    fn retry_after_in_seconds_or_as_a_date() {
        assert_eq!(after("7"), Some(Duration::from_secs(7)));
        assert_eq!(
            after("18446744073709551615"),
            Some(Duration::from_secs(u64::MAX))
        );
        assert_eq!(after("Wed, 21 Oct 2015 07:28:00 GMT"), Some(Duration::ZERO));
        let later =
            httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(120));
        let d = after(&later).unwrap();
        assert!(
            d > Duration::from_secs(100) && d <= Duration::from_secs(120),
            "{d:?}"
        );
        assert_eq!(after("soon"), None);
        assert_eq!(after("-1"), None);
    }

    #[test]
    fn doubles_from_one_second_to_five_minutes() {
        for (attempt, secs) in [
            (1, 1.0),
            (2, 2.0),
            (3, 4.0),
            (9, 256.0),
            (10, 300.0),
            (40, 300.0),
        ] {
            for _ in 0..50 {
                let d = backoff(attempt).as_secs_f64();
                assert!(d >= secs * 0.8 && d <= secs * 1.2, "attempt {attempt}: {d}");
                assert!(
                    d <= CAP.as_secs_f64(),
                    "attempt {attempt}: {d} over the cap"
                );
            }
        }
    }
}
