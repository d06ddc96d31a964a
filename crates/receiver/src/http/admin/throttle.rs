//! How sign-in attempts are let through to the password check (argon2,
//! slow on purpose), so that a stranger's flood neither takes the CPU nor
//! locks the operators out:
//!
//! - each client address (an IPv6 one by its /64) has its own bucket of
//!   attempts; past it, its attempts are refused (429) before any check;
//! - after failures for a name from an address, that address waits a
//!   growing delay before its next attempt at that name (the first few are
//!   free: people mistype). The delay is kept per name *and* address, so a
//!   stranger's failures never delay the operator's own attempt from
//!   another address;
//! - the checks run two at a time behind a bounded queue: an attempt
//!   waits its turn, and one address holds at most one place in it (a
//!   person submits one form at a time), so a flood from one address keeps
//!   at most one check busy and adds at most one check to anyone's wait.
//!
//! What is refused is counted (`console_sign_in_refusals`). Behind a proxy
//! every client is the proxy's address: the limits then hold per name.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use tokio::sync::Semaphore;

/// Attempts per address: a burst for a person who mistypes, then one a
/// second.
const PER_ADDRESS_BURST: u32 = 10;
const PER_ADDRESS_PER_SECOND: u32 = 1;
/// Failures of a name from an address before its delay starts.
const FREE_FAILURES: u32 = 3;
/// The first delay; it doubles with each further failure, up to the cap.
const FIRST_DELAY: Duration = Duration::from_secs(1);
const MAX_DELAY: Duration = Duration::from_secs(15 * 60);
/// Failures are forgotten this long after the last one.
const FORGET_AFTER: Duration = Duration::from_secs(60 * 60);
/// The most (name, address) pairs remembered; past it the oldest goes.
const MAX_TRACKED: usize = 10_000;
/// Checks that run at once (each takes a core for a few tens of ms).
const PARALLEL_CHECKS: usize = 2;
/// Attempts waiting for or in a check, in all and per address.
const QUEUE: usize = 64;
const QUEUED_PER_ADDRESS: usize = 1;

/// Why an attempt was refused before its check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Too many attempts from this address.
    Address,
    /// This name failed from this address lately: wait this long.
    Name(Duration),
    /// The queue of checks is full.
    Busy,
}

impl Refusal {
    /// The metric's label.
    pub fn reason(self) -> &'static str {
        match self {
            Refusal::Address => "address",
            Refusal::Name(_) => "name",
            Refusal::Busy => "busy",
        }
    }

    /// Seconds to say in `Retry-After`.
    pub fn retry_after(self) -> u64 {
        match self {
            Refusal::Name(d) => d.as_secs().max(1),
            Refusal::Address | Refusal::Busy => 1,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Failures {
    count: u32,
    last: Instant,
}

impl Failures {
    /// When the next attempt is allowed.
    fn next_allowed(&self) -> Instant {
        let over = self.count.saturating_sub(FREE_FAILURES);
        if over == 0 {
            return self.last;
        }
        let delay = FIRST_DELAY
            .checked_mul(1u32 << (over - 1).min(20))
            .unwrap_or(MAX_DELAY)
            .min(MAX_DELAY);
        self.last + delay
    }
}

/// The sign-in throttle of one admin listener.
pub struct SignInThrottle {
    per_address: DefaultKeyedRateLimiter<IpAddr>,
    failures: Mutex<HashMap<(String, IpAddr), Failures>>,
    checks: Arc<Semaphore>,
    queued: Mutex<(usize, HashMap<IpAddr, usize>)>,
    admitted: std::sync::atomic::AtomicU64,
}

/// A place in the queue of checks; leaving frees it.
pub struct Place<'a> {
    throttle: &'a SignInThrottle,
    address: IpAddr,
}

impl Default for SignInThrottle {
    fn default() -> Self {
        SignInThrottle::new()
    }
}

impl SignInThrottle {
    pub fn new() -> SignInThrottle {
        let quota =
            Quota::per_second(NonZeroU32::new(PER_ADDRESS_PER_SECOND).unwrap_or(NonZeroU32::MIN))
                .allow_burst(NonZeroU32::new(PER_ADDRESS_BURST).unwrap_or(NonZeroU32::MIN));
        SignInThrottle {
            per_address: RateLimiter::keyed(quota),
            failures: Mutex::default(),
            checks: Arc::new(Semaphore::new(PARALLEL_CHECKS)),
            queued: Mutex::default(),
            admitted: Default::default(),
        }
    }

    /// Lets an attempt at `name` from `address` into the queue, or says
    /// why not.
    pub fn admit(&self, name: &str, address: IpAddr) -> Result<Place<'_>, Refusal> {
        let address = bucket(address);
        let n = self
            .admitted
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if n % 1024 == 1023 {
            self.forget_idle();
        }
        if self.per_address.check_key(&address).is_err() {
            return Err(Refusal::Address);
        }
        let now = Instant::now();
        if let Some(f) = lock(&self.failures).get(&(name.to_string(), address)) {
            let at = f.next_allowed();
            if at > now {
                return Err(Refusal::Name(at - now));
            }
        }
        let mut queued = lock(&self.queued);
        let (all, by_address) = &mut *queued;
        let mine = by_address.entry(address).or_insert(0);
        if *all >= QUEUE || *mine >= QUEUED_PER_ADDRESS {
            return Err(Refusal::Busy);
        }
        *mine += 1;
        *all += 1;
        Ok(Place {
            throttle: self,
            address,
        })
    }

    /// A wrong password (or an unknown name) from `address`.
    pub fn failed(&self, name: &str, address: IpAddr) {
        let now = Instant::now();
        let mut failures = lock(&self.failures);
        if failures.len() >= MAX_TRACKED {
            failures.retain(|_, f| now.duration_since(f.last) < FORGET_AFTER);
        }
        if failures.len() >= MAX_TRACKED
            && let Some(oldest) = failures
                .iter()
                .min_by_key(|(_, f)| f.last)
                .map(|(k, _)| k.clone())
        {
            failures.remove(&oldest);
        }
        let entry = failures
            .entry((name.to_string(), bucket(address)))
            .or_insert(Failures {
                count: 0,
                last: now,
            });
        if now.duration_since(entry.last) >= FORGET_AFTER {
            entry.count = 0;
        }
        entry.count = entry.count.saturating_add(1);
        entry.last = now;
    }

    /// The right password: this address's failures at `name` are forgiven.
    pub fn succeeded(&self, name: &str, address: IpAddr) {
        lock(&self.failures).remove(&(name.to_string(), bucket(address)));
    }

    /// Forgets idle addresses and old failures (every 1,024 attempts).
    fn forget_idle(&self) {
        self.per_address.retain_recent();
        self.per_address.shrink_to_fit();
        let now = Instant::now();
        lock(&self.failures).retain(|_, f| now.duration_since(f.last) < FORGET_AFTER);
    }
}

impl Place<'_> {
    /// Runs `check` (blocking) when its turn comes.
    pub async fn check<T: Send + 'static>(
        &self,
        check: impl FnOnce() -> T + Send + 'static,
    ) -> Option<T> {
        let _turn = self.throttle.checks.clone().acquire_owned().await.ok()?;
        tokio::task::spawn_blocking(check).await.ok()
    }
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        let mut queued = lock(&self.throttle.queued);
        let (all, by_address) = &mut *queued;
        *all = all.saturating_sub(1);
        if let Some(n) = by_address.get_mut(&self.address) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                by_address.remove(&self.address);
            }
        }
    }
}

/// An IPv6 client is its /64: one host usually holds a whole one.
fn bucket(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) if v6.to_ipv4_mapped().is_none() => {
            let s = v6.segments();
            IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
        }
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
        v4 => v4,
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn a_names_delay_grows_for_the_address_that_failed_only() {
        let t = SignInThrottle::new();
        let stranger = ip("127.0.0.2");
        for _ in 0..FREE_FAILURES {
            assert!(t.admit("alice", stranger).is_ok());
            t.failed("alice", stranger);
        }
        t.failed("alice", stranger);
        match t.admit("alice", stranger).err() {
            Some(Refusal::Name(d)) => assert!(d <= FIRST_DELAY && d > Duration::ZERO),
            other => panic!("{other:?}"),
        }
        t.failed("alice", stranger);
        match t.admit("alice", stranger).err() {
            Some(Refusal::Name(d)) => assert!(d > FIRST_DELAY, "{d:?}"),
            other => panic!("{other:?}"),
        }
        assert!(t.admit("alice", ip("127.0.0.1")).is_ok());
        t.succeeded("alice", stranger);
        assert!(t.admit("alice", stranger).is_ok());
    }

    #[test]
    fn one_address_holds_one_place_and_its_own_bucket() {
        let t = SignInThrottle::new();
        let a = ip("2001:db8::1");
        let first = t.admit("x", a).unwrap();
        assert_eq!(
            t.admit("z", ip("2001:db8::2")).err(),
            Some(Refusal::Busy),
            "the same /64"
        );
        assert!(t.admit("z", ip("127.0.0.1")).is_ok());
        drop(first);
        assert!(t.admit("z", a).is_ok());
        for _ in 0..PER_ADDRESS_BURST {
            let _ = t.admit("w", ip("10.0.0.9"));
        }
        assert_eq!(t.admit("w", ip("10.0.0.9")).err(), Some(Refusal::Address));
        let now = Instant::now();
        let long = Failures {
            count: 40,
            last: now,
        };
        assert!(long.next_allowed() <= now + MAX_DELAY);
    }
}
