//! How much of their rate limits each principal uses, for the web console:
//! [`MeteredRateLimits`] wraps the store the gateway's server checks its
//! limits in, passes every check through, and counts per bucket the calls
//! allowed lately and the calls refused.
//!
//! The counts are this instance's: behind a load balancer with a shared
//! store (Redis), each instance sees the calls it served.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::time::Instant;
use toolwire_server::{RateLimit, RateLimitStore};

use crate::audit::AuditRecord;

/// The most buckets metered; beyond, the one used longest ago is dropped.
pub const MAX_METERED_KEYS: usize = 10_000;

/// The most calls remembered per bucket (so [`RateUse::used`] is at most
/// this).
const MAX_TIMES_PER_KEY: usize = 1_024;

/// One principal's use of one rate limit, on this instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateUse {
    /// The caller's subject, or `anonymous` (every caller without a token).
    pub principal: String,
    /// The tool, by exposed name; `None` for the limit on all tool calls
    /// (`call_limit`).
    pub tool: Option<String>,
    /// The limit.
    pub limit: RateLimit,
    /// The calls allowed within the last `limit.period()` (counted up to the
    /// limit's count plus its burst, the most it can allow in a period, and
    /// up to 1,024).
    pub used: u32,
    /// The calls refused since the gateway started.
    pub refused: u64,
    /// When a call was last refused, in milliseconds since the Unix epoch.
    pub last_refused_ms: Option<u64>,
}

/// A [`RateLimitStore`] that passes every check to another store and
/// counts, per bucket of tool calls, what was allowed and refused (see
/// [`Gateway::rate_use`](crate::Gateway::rate_use)). Buckets of other keys are passed through
/// uncounted.
#[derive(Debug)]
pub struct MeteredRateLimits {
    inner: Arc<dyn RateLimitStore>,
    meters: Mutex<Meters>,
}

/// The buckets metered, and their order of last use.
#[derive(Debug, Default)]
struct Meters {
    by_key: HashMap<String, Meter>,
    /// Last use (a sequence number) to key, oldest first.
    by_use: BTreeMap<u64, String>,
    next_use: u64,
}

/// One bucket's counts.
#[derive(Debug)]
struct Meter {
    principal: String,
    tool: Option<String>,
    limit: RateLimit,
    /// When the latest calls were allowed, oldest first.
    allowed: VecDeque<Instant>,
    refused: u64,
    last_refused_ms: Option<u64>,
    last_use: u64,
}

impl MeteredRateLimits {
    /// Meters the checks made in `inner`.
    pub fn new(inner: Arc<dyn RateLimitStore>) -> MeteredRateLimits {
        MeteredRateLimits {
            inner,
            meters: Mutex::default(),
        }
    }

    /// Every bucket metered, sorted by principal, then tool (the limit on
    /// all tool calls first).
    pub fn uses(&self) -> Vec<RateUse> {
        let now = Instant::now();
        let mut uses: Vec<RateUse> = self
            .meters()
            .by_key
            .values()
            .map(|meter| meter.rate_use(now))
            .collect();
        uses.sort_by(|a, b| (&a.principal, &a.tool).cmp(&(&b.principal, &b.tool)));
        uses
    }

    /// Counts one check of `key` under `limit`.
    fn record(&self, key: &str, limit: &RateLimit, allowed: bool) {
        let Some((principal, tool)) = parse_key(key) else {
            return;
        };
        let now = Instant::now();
        let mut meters = self.meters();
        let meter = meters.touch(key, || {
            Meter::new(principal.to_owned(), tool.map(str::to_owned), *limit)
        });
        meter.limit = *limit;
        if allowed {
            meter.allow(now);
        } else {
            meter.refused += 1;
            meter.last_refused_ms = Some(AuditRecord::now_ms());
        }
    }

    fn meters(&self) -> MutexGuard<'_, Meters> {
        self.meters.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl RateLimitStore for MeteredRateLimits {
    fn check<'a>(
        &'a self,
        key: &'a str,
        limit: &'a RateLimit,
    ) -> BoxFuture<'a, Result<(), Duration>> {
        Box::pin(async move {
            let outcome = self.inner.check(key, limit).await;
            self.record(key, limit, outcome.is_ok());
            outcome
        })
    }

    /// The inner store's answer when it has one at once (the in-memory
    /// store), counted the same: a check then needs no future, and its
    /// key no string of its own.
    fn check_ready(&self, key: &str, limit: &RateLimit) -> Option<Result<(), Duration>> {
        let outcome = self.inner.check_ready(key, limit)?;
        self.record(key, limit, outcome.is_ok());
        Some(outcome)
    }

    fn unavailable(&self) -> Option<String> {
        self.inner.unavailable()
    }
}

impl Meters {
    /// The meter of `key` (made by `new` when there is none, dropping the
    /// one used longest ago when full), marked as used now.
    ///
    /// A known key (every call but a bucket's first) allocates nothing: its
    /// name moves from its old place in the order of use to the new one.
    fn touch(&mut self, key: &str, new: impl FnOnce() -> Meter) -> &mut Meter {
        let use_now = self.next_use;
        self.next_use += 1;
        let last_use = self.by_key.get(key).map(|meter| meter.last_use);
        let name = match last_use.and_then(|last| self.by_use.remove(&last)) {
            Some(name) => name,
            None => {
                if self.by_key.len() >= MAX_METERED_KEYS {
                    if let Some((_, oldest)) = self.by_use.pop_first() {
                        self.by_key.remove(&oldest);
                    }
                }
                self.by_key.entry(key.to_owned()).or_insert_with(new);
                key.to_owned()
            }
        };
        self.by_use.insert(use_now, name);
        let meter = self.by_key.get_mut(key).expect("kept or just made");
        meter.last_use = use_now;
        meter
    }
}

impl Meter {
    fn new(principal: String, tool: Option<String>, limit: RateLimit) -> Meter {
        Meter {
            principal,
            tool,
            limit,
            allowed: VecDeque::new(),
            refused: 0,
            last_refused_ms: None,
            last_use: 0,
        }
    }

    /// Records a call allowed at `now`, forgetting calls outside the
    /// limit's period and beyond what can count.
    fn allow(&mut self, now: Instant) {
        let period = self.limit.period();
        while let Some(first) = self.allowed.front() {
            if now.saturating_duration_since(*first) < period {
                break;
            }
            self.allowed.pop_front();
        }
        // A full burst, then the units regained within one period.
        let kept = self.limit.count() as usize + self.limit.get_burst() as usize;
        let kept = kept.min(MAX_TIMES_PER_KEY);
        while self.allowed.len() >= kept {
            self.allowed.pop_front();
        }
        self.allowed.push_back(now);
    }

    fn rate_use(&self, now: Instant) -> RateUse {
        let period = self.limit.period();
        let used = self
            .allowed
            .iter()
            .filter(|at| now.saturating_duration_since(**at) < period)
            .count();
        RateUse {
            principal: self.principal.clone(),
            tool: self.tool.clone(),
            limit: self.limit,
            used: u32::try_from(used).unwrap_or(u32::MAX),
            refused: self.refused,
            last_refused_ms: self.last_refused_ms,
        }
    }
}

/// The principal and tool of a bucket of tool calls: `tool\0TOOL\0WHO` (one
/// tool's limit) or `tools\0WHO` (all tool calls), where `WHO` is `s:SUBJECT`
/// or empty (anonymous). `None` for other buckets.
fn parse_key(key: &str) -> Option<(&str, Option<&str>)> {
    let (tool, who) = if let Some(who) = key.strip_prefix("tools\0") {
        (None, who)
    } else {
        let (tool, who) = key.strip_prefix("tool\0")?.split_once('\0')?;
        (Some(tool), who)
    };
    let principal = match who {
        "" => "anonymous",
        who => who.strip_prefix("s:").unwrap_or(who),
    };
    Some((principal, tool))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store that answers as scripted (then allows everything).
    #[derive(Debug, Default)]
    struct Scripted(Mutex<VecDeque<bool>>);

    impl RateLimitStore for Scripted {
        fn check<'a>(
            &'a self,
            _: &'a str,
            _: &'a RateLimit,
        ) -> BoxFuture<'a, Result<(), Duration>> {
            let allowed = self.0.lock().unwrap().pop_front().unwrap_or(true);
            let outcome = if allowed {
                Ok(())
            } else {
                Err(Duration::from_secs(1))
            };
            Box::pin(std::future::ready(outcome))
        }
    }

    impl Scripted {
        /// The next answers.
        fn script(&self, answers: &[bool]) {
            self.0.lock().unwrap().extend(answers);
        }
    }

    /// A metered store, and the store it meters.
    fn metered() -> (MeteredRateLimits, Arc<Scripted>) {
        let scripted = Arc::new(Scripted::default());
        (MeteredRateLimits::new(scripted.clone()), scripted)
    }

    /// `n` checks of `key`; how many were allowed.
    async fn check(store: &MeteredRateLimits, key: &str, limit: RateLimit, n: usize) -> usize {
        let mut allowed = 0;
        for _ in 0..n {
            allowed += usize::from(store.check(key, &limit).await.is_ok());
        }
        allowed
    }

    fn used_and_refused(store: &MeteredRateLimits, index: usize) -> (u32, u64) {
        let rate_use = &store.uses()[index];
        (rate_use.used, rate_use.refused)
    }

    #[tokio::test(start_paused = true)]
    async fn checks_answered_at_once_are_passed_through_and_counted() {
        // Two a minute, no burst beyond that.
        let limit = RateLimit::per_minute(2);
        let memory = MeteredRateLimits::new(Arc::new(toolwire_server::InMemoryRateLimits::new()));
        let key = "tool\0crm__search\0s:alice";
        let answers: Vec<bool> = (0..3)
            .map(|_| {
                memory
                    .check_ready(key, &limit)
                    .expect("answered at once")
                    .is_ok()
            })
            .collect();
        assert_eq!(answers, [true, true, false]);
        assert_eq!(used_and_refused(&memory, 0), (2, 1));
        assert_eq!(memory.uses()[0].principal, "alice");

        // A store that only answers with a future: nothing at once, nothing counted.
        let (scripted, _) = metered();
        assert_eq!(scripted.check_ready(key, &limit), None);
        assert_eq!(scripted.uses(), []);
    }

    #[test]
    fn keys_name_the_principal_and_the_tool() {
        assert_eq!(
            parse_key("tool\0crm__search\0s:alice"),
            Some(("alice", Some("crm__search")))
        );
        assert_eq!(
            parse_key("tool\0crm__search\0"),
            Some(("anonymous", Some("crm__search")))
        );
        assert_eq!(parse_key("tools\0s:bob"), Some(("bob", None)));
        assert_eq!(parse_key("tools\0"), Some(("anonymous", None)));
        assert_eq!(parse_key("http\0s:bob"), None);
        assert_eq!(parse_key("tool\0no-principal"), None);
    }

    #[tokio::test(start_paused = true)]
    async fn allowed_calls_count_within_the_period_and_refusals_since_start() {
        let (store, inner) = metered();
        inner.script(&[true, true, true, false, false]);
        let limit = RateLimit::new(3, Duration::from_secs(60));
        let calls = RateLimit::per_second(100);
        let search = "tool\0crm__search\0s:alice";
        let before = AuditRecord::now_ms();
        assert_eq!(check(&store, search, limit, 5).await, 3);
        assert_eq!(check(&store, "tools\0s:alice", calls, 2).await, 2);
        assert_eq!(check(&store, "tools\0", calls, 1).await, 1);
        check(&store, "http\0s:alice", calls, 1).await;
        let uses = store.uses();
        let last_refused = uses[1].last_refused_ms.unwrap();
        assert!((before..=AuditRecord::now_ms()).contains(&last_refused));
        let rate_use = |principal: &str, tool: Option<&str>, limit, used, refused, last| RateUse {
            principal: principal.into(),
            tool: tool.map(Into::into),
            limit,
            used,
            refused,
            last_refused_ms: last,
        };
        assert_eq!(
            uses,
            [
                rate_use("alice", None, calls, 2, 0, None),
                rate_use(
                    "alice",
                    Some("crm__search"),
                    limit,
                    3,
                    2,
                    Some(last_refused)
                ),
                rate_use("anonymous", None, calls, 1, 0, None),
            ]
        );

        tokio::time::advance(Duration::from_secs(20)).await;
        inner.script(&[true, false]);
        assert_eq!(check(&store, search, limit, 2).await, 1);
        assert_eq!(used_and_refused(&store, 1), (4, 3));
        assert_eq!(used_and_refused(&store, 0), (0, 0), "its second is over");
        // 61 s after the first three: they are out of the period.
        tokio::time::advance(Duration::from_secs(41)).await;
        assert_eq!(used_and_refused(&store, 1), (1, 3));
        tokio::time::advance(Duration::from_secs(20)).await;
        assert_eq!(used_and_refused(&store, 1), (0, 3));
    }

    #[tokio::test(start_paused = true)]
    async fn at_most_count_plus_burst_calls_and_1024_are_remembered_per_bucket() {
        let (store, _) = metered();
        let key = "tools\0s:alice";
        // The inner store allows more than the limit could: only count +
        // burst can count.
        check(&store, key, RateLimit::new(5, Duration::from_secs(1)), 12).await;
        assert_eq!(store.meters().by_key[key].allowed.len(), 10);
        assert_eq!(used_and_refused(&store, 0), (10, 0));
        let burst = RateLimit::new(5, Duration::from_secs(1)).burst(8);
        check(&store, key, burst, 10).await;
        assert_eq!(used_and_refused(&store, 0), (13, 0));
        let many = RateLimit::new(5_000, Duration::from_secs(1));
        check(&store, key, many, 2_000).await;
        assert_eq!(store.meters().by_key[key].allowed.len(), 1_024);
        assert_eq!(used_and_refused(&store, 0), (1_024, 0));
    }

    #[tokio::test]
    async fn past_the_key_limit_the_bucket_used_longest_ago_is_dropped() {
        let (store, _) = metered();
        let limit = RateLimit::per_second(1_000);
        for n in 0..MAX_METERED_KEYS {
            check(&store, &format!("tools\0s:p{n:05}"), limit, 1).await;
        }
        // p00000 used again: p00001 is now the one used longest ago.
        check(&store, "tools\0s:p00000", limit, 1).await;
        check(&store, "tools\0s:newcomer", limit, 1).await;
        let uses = store.uses();
        assert_eq!(uses.len(), MAX_METERED_KEYS);
        let principals: Vec<&str> = uses.iter().map(|u| u.principal.as_str()).collect();
        assert_eq!(principals[..3], ["newcomer", "p00000", "p00002"]);
        assert_eq!(uses[1].used, 2);
        // The order of use names each bucket exactly once, at its last use.
        let meters = store.meters();
        assert_eq!(meters.by_use.len(), MAX_METERED_KEYS);
        for (last_use, key) in &meters.by_use {
            assert_eq!(meters.by_key[key].last_use, *last_use, "{key:?}");
        }
    }
}
