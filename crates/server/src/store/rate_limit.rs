//! Rate limits (GCRA, by `governor`): tool calls per principal, calls of one
//! tool per principal, and HTTP requests per principal.
//!
//! A limit is "`count` per `period`, bursts of up to `burst`". Buckets live in
//! a [`RateLimitStore`]; the default, [`InMemoryRateLimits`], keeps them in
//! this process, so several instances behind one endpoint each allow the full
//! rate unless they share a store.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota};

/// A rate limit: `count` units per `period`, with bursts of up to `burst`
/// units (by default `burst == count`).
///
/// ```
/// use std::time::Duration;
/// use toolwire_server::RateLimit;
/// let limit = RateLimit::per_minute(30).burst(5);
/// assert_eq!(limit.count(), 30);
/// assert_eq!(limit.period(), Duration::from_secs(60));
/// assert_eq!(limit.get_burst(), 5);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RateLimit {
    count: NonZeroU32,
    period: Duration,
    burst: NonZeroU32,
}

impl RateLimit {
    /// `count` per `period` (a count of 0 counts as 1; a zero period as 1 ns).
    pub fn new(count: u32, period: Duration) -> Self {
        let count = NonZeroU32::new(count).unwrap_or(NonZeroU32::MIN);
        RateLimit {
            count,
            period: period.max(Duration::from_nanos(1)),
            burst: count,
        }
    }

    /// `count` per second.
    pub fn per_second(count: u32) -> Self {
        RateLimit::new(count, Duration::from_secs(1))
    }

    /// `count` per minute.
    pub fn per_minute(count: u32) -> Self {
        RateLimit::new(count, Duration::from_secs(60))
    }

    /// The largest burst allowed after a quiet spell (at least 1).
    pub fn burst(mut self, burst: u32) -> Self {
        self.burst = NonZeroU32::new(burst).unwrap_or(NonZeroU32::MIN);
        self
    }

    /// Units per period.
    pub fn count(&self) -> u32 {
        self.count.get()
    }

    /// The period.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// The burst size.
    pub fn get_burst(&self) -> u32 {
        self.burst.get()
    }

    fn quota(&self) -> Quota {
        let interval = (self.period / self.count.get()).max(Duration::from_nanos(1));
        Quota::with_period(interval)
            .expect("a non-zero interval")
            .allow_burst(self.burst)
    }
}

/// Where rate-limit buckets live. The default is [`InMemoryRateLimits`];
/// a store shared by several instances (Redis, a database) implements this
/// trait and is installed with
/// [`ServerBuilder::rate_limit_store`](crate::ServerBuilder::rate_limit_store)
/// and [`HttpConfig::rate_limit_store`](crate::http::HttpConfig::rate_limit_store).
pub trait RateLimitStore: Send + Sync + std::fmt::Debug + 'static {
    /// Takes one unit from the bucket `key` governed by `limit`: `Ok(())`
    /// when allowed, or `Err(wait)` with how long until it would be.
    fn check<'a>(
        &'a self,
        key: &'a str,
        limit: &'a RateLimit,
    ) -> BoxFuture<'a, Result<(), Duration>>;

    /// The outcome of [`RateLimitStore::check`] when the store knows it at
    /// once, without a future (the in-memory store); `None` (the default)
    /// sends the caller to `check`.
    fn check_ready(&self, key: &str, limit: &RateLimit) -> Option<Result<(), Duration>> {
        let _ = (key, limit);
        None
    }

    /// While the store cannot reach its buckets and refuses calls (fails
    /// closed), why, in a few words (e.g. `"Redis at 10.0.0.5:6379 is
    /// unreachable"`), so that the refusal says so instead of claiming a
    /// limit was reached. `None` (the default) otherwise.
    fn unavailable(&self) -> Option<String> {
        None
    }
}

/// How often (in checks) idle buckets are dropped from memory.
const SWEEP_EVERY: u64 = 4096;

thread_local! {
    /// [`InMemoryRateLimits::check_now`]'s copy of a key.
    static KEY_COPY: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// Rate-limit buckets in this process's memory (GCRA via `governor`).
#[derive(Default)]
pub struct InMemoryRateLimits {
    /// One limiter per configured limit (the server's own keys: a fast
    /// hasher serves).
    limiters: Mutex<
        HashMap<RateLimit, Arc<DefaultKeyedRateLimiter<String>>, foldhash::fast::RandomState>,
    >,
    checks: AtomicU64,
}

impl std::fmt::Debug for InMemoryRateLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InMemoryRateLimits").finish_non_exhaustive()
    }
}

impl InMemoryRateLimits {
    /// An empty store.
    pub fn new() -> Self {
        InMemoryRateLimits::default()
    }

    /// Takes one unit from `key`'s bucket (the synchronous form of [`RateLimitStore::check`]).
    pub fn check_now(&self, key: &str, limit: &RateLimit) -> Result<(), Duration> {
        let limiter = {
            let mut limiters = self.limiters.lock().expect("rate limit lock");
            Arc::clone(
                limiters
                    .entry(*limit)
                    .or_insert_with(|| Arc::new(DefaultKeyedRateLimiter::keyed(limit.quota()))),
            )
        };
        if self.checks.fetch_add(1, Ordering::Relaxed) % SWEEP_EVERY == SWEEP_EVERY - 1 {
            self.sweep();
        }
        // The limiter looks up by `&String`: the key is copied into a
        // buffer kept per thread, not into a new string per check.
        KEY_COPY
            .with_borrow_mut(|copy| {
                copy.clear();
                copy.push_str(key);
                limiter.check_key(copy)
            })
            .map_err(|not_until| not_until.wait_time_from(DefaultClock::default().now()))
    }

    /// Drops buckets that are full again (they hold no information).
    fn sweep(&self) {
        let limiters: Vec<_> = self
            .limiters
            .lock()
            .expect("rate limit lock")
            .values()
            .cloned()
            .collect();
        for limiter in limiters {
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
    }
}

impl RateLimitStore for InMemoryRateLimits {
    fn check<'a>(
        &'a self,
        key: &'a str,
        limit: &'a RateLimit,
    ) -> BoxFuture<'a, Result<(), Duration>> {
        let outcome = self.check_now(key, limit);
        Box::pin(std::future::ready(outcome))
    }

    fn check_ready(&self, key: &str, limit: &RateLimit) -> Option<Result<(), Duration>> {
        Some(self.check_now(key, limit))
    }
}

/// Whole seconds to wait, rounded up, at least 1 (for messages and `Retry-After`).
pub(crate) fn retry_secs(wait: Duration) -> u64 {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    secs.max(1)
}

/// The default limit on tool calls per principal: 100 per second, bursts
/// of 200 (far above what a model does; it stops floods).
pub const DEFAULT_TOOL_CALL_LIMIT: RateLimit = RateLimit {
    count: NonZeroU32::new(100).expect("non-zero"),
    period: Duration::from_secs(1),
    burst: NonZeroU32::new(200).expect("non-zero"),
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_then_wait() {
        let store = InMemoryRateLimits::new();
        let limit = RateLimit::per_minute(2);
        assert!(store.check_now("a", &limit).is_ok());
        assert!(store.check_now("a", &limit).is_ok());
        let wait = store.check_now("a", &limit).unwrap_err();
        assert!(wait > Duration::from_secs(20) && wait <= Duration::from_secs(30));
        // Another key has its own bucket.
        assert!(store.check_now("b", &limit).is_ok());
    }

    #[test]
    fn rounding_up() {
        assert_eq!(retry_secs(Duration::from_millis(1)), 1);
        assert_eq!(retry_secs(Duration::from_millis(1500)), 2);
        assert_eq!(retry_secs(Duration::from_secs(3)), 3);
        assert_eq!(retry_secs(Duration::ZERO), 1);
    }

    #[test]
    fn burst_differs_from_count() {
        let store = InMemoryRateLimits::new();
        let limit = RateLimit::per_minute(60).burst(3);
        for _ in 0..3 {
            assert!(store.check_now("k", &limit).is_ok());
        }
        assert!(store.check_now("k", &limit).is_err());
    }
}
