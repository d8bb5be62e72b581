//! [`RedisRateLimits`]: GCRA buckets in Redis, one script call per check.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use redis::Script;
use toolwire_server::{RateLimit, RateLimitStore};

use crate::connection::{Failure, RedisConnection};
use crate::keys::rate_key;

static GCRA: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("lua/gcra.lua")));

/// The wait a refused check reports while Redis is unreachable under
/// [`FailMode::Closed`]: 1 s.
pub const CLOSED_RETRY: Duration = Duration::from_secs(1);

/// The longest interval passed to the script, in µs (about 35 years): Lua
/// numbers are doubles, exact up to 2^53.
const MAX_MICROS: u128 = 1 << 50;

/// What a rate-limit check answers while Redis is unreachable (down, too
/// slow, or refusing the script).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FailMode {
    /// Allow every call: an outage lifts the limits rather than stopping
    /// the service. A warning is logged once per outage.
    Open,
    /// Refuse every call with a wait of [`CLOSED_RETRY`] (the default):
    /// an outage never lifts a limit. An error is logged once per outage.
    #[default]
    Closed,
}

/// Rate-limit buckets in Redis, shared by every instance using the same
/// Redis and key prefix: a limit of N per minute holds across all of them.
///
/// Each check is one `EVALSHA` of a GCRA script (the algorithm of the
/// in-memory store, with the same burst and the same `Err(wait)`), timed
/// by Redis's clock so that instances agree. The bucket of key `K` is the
/// string `{prefix}rl:K`, holding the theoretical arrival time in µs; it
/// expires as soon as it is full again, so idle buckets vanish. One key is
/// one bucket whatever the limit: checking it with a changed limit applies
/// the new limit at once (the in-memory store keeps a bucket per limit).
///
/// When Redis is unreachable, [`FailMode`] decides (default
/// [`FailMode::Closed`]); once Redis answers again, checks go back to it
/// by themselves.
#[derive(Debug)]
pub struct RedisRateLimits {
    redis: RedisConnection,
    fail_mode: FailMode,
    /// True while Redis is failing (so an outage is logged once).
    down: AtomicBool,
}

impl RedisRateLimits {
    /// Buckets in `redis`, failing closed.
    pub fn new(redis: RedisConnection) -> Self {
        RedisRateLimits {
            redis,
            fail_mode: FailMode::default(),
            down: AtomicBool::new(false),
        }
    }

    /// What a check answers while Redis is unreachable.
    pub fn fail_mode(mut self, mode: FailMode) -> Self {
        self.fail_mode = mode;
        self
    }

    /// The fail mode in force.
    pub fn get_fail_mode(&self) -> FailMode {
        self.fail_mode
    }

    /// Takes one unit from `key`'s bucket (what [`RateLimitStore::check`] does).
    pub async fn check_key(&self, key: &str, limit: &RateLimit) -> Result<(), Duration> {
        match self.run(key, limit).await {
            Ok(wait_us) => {
                self.recovered();
                if wait_us <= 0 {
                    Ok(())
                } else {
                    Err(Duration::from_micros(wait_us.unsigned_abs()))
                }
            }
            Err(failure) => self.unreachable(&failure),
        }
    }

    async fn run(&self, key: &str, limit: &RateLimit) -> Result<i64, Failure> {
        let (interval, tolerance) = gcra_params(limit);
        let mut invocation = GCRA.key(rate_key(self.redis.key_prefix(), key));
        invocation.arg(interval).arg(tolerance);
        self.redis.invoke(&invocation).await
    }

    fn unreachable(&self, failure: &Failure) -> Result<(), Duration> {
        let first = !self.down.swap(true, Ordering::Relaxed);
        match self.fail_mode {
            FailMode::Open => {
                if first {
                    tracing::warn!(%failure, "rate limits not enforced while Redis is unreachable (fail open)");
                }
                Ok(())
            }
            FailMode::Closed => {
                if first {
                    tracing::error!(%failure, "every rate-limited call refused while Redis is unreachable (fail closed)");
                }
                Err(CLOSED_RETRY)
            }
        }
    }

    fn recovered(&self) {
        if self.down.swap(false, Ordering::Relaxed) {
            tracing::info!(
                address = self.redis.address(),
                "Redis reachable again: rate limits enforced"
            );
        }
    }
}

impl RateLimitStore for RedisRateLimits {
    fn check<'a>(
        &'a self,
        key: &'a str,
        limit: &'a RateLimit,
    ) -> BoxFuture<'a, Result<(), Duration>> {
        Box::pin(self.check_key(key, limit))
    }

    fn unavailable(&self) -> Option<String> {
        (self.fail_mode == FailMode::Closed && self.down.load(Ordering::Relaxed))
            .then(|| format!("Redis at {} is unreachable", self.redis.address()))
    }
}

/// The emission interval T and the tolerance T × (burst − 1), in whole µs
/// (T rounded up, so the store never allows more than the limit): the
/// in-memory store's GCRA, whose T is `period / count`, at least 1 ns.
pub(crate) fn gcra_params(limit: &RateLimit) -> (u64, u64) {
    let interval = (limit.period() / limit.count()).max(Duration::from_nanos(1));
    let micros = interval.as_nanos().div_ceil(1000).min(MAX_MICROS);
    let tolerance = (micros * u128::from(limit.get_burst() - 1)).min(MAX_MICROS);
    (to_u64(micros), to_u64(tolerance))
}

fn to_u64(micros: u128) -> u64 {
    u64::try_from(micros).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_match_the_in_memory_gcra() {
        assert_eq!(
            gcra_params(&RateLimit::per_minute(2)),
            (30_000_000, 30_000_000)
        );
        assert_eq!(
            gcra_params(&RateLimit::per_minute(60).burst(3)),
            (1_000_000, 2_000_000)
        );
        assert_eq!(
            gcra_params(&RateLimit::new(4, Duration::from_secs(1)).burst(1)),
            (250_000, 0)
        );
        // 1/3 s rounds up to whole µs; a sub-µs interval becomes 1 µs.
        assert_eq!(
            gcra_params(&RateLimit::new(3, Duration::from_secs(1))).0,
            333_334
        );
        assert_eq!(gcra_params(&RateLimit::per_second(u32::MAX)).0, 1);
        assert_eq!(gcra_params(&RateLimit::new(1, Duration::MAX)).0, 1 << 50);
    }

    #[test]
    fn closed_is_the_default() {
        assert_eq!(FailMode::default(), FailMode::Closed);
    }
}
