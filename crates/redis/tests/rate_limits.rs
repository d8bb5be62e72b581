//! `RedisRateLimits` against a real `redis-server`: the in-memory store's
//! results (burst, refusal, wait), one budget shared by two instances,
//! idle buckets expiring, and both fail modes through an outage and back.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::AsyncCommands;
use support::{RedisServer, eventually};
use toolwire_redis::{CLOSED_RETRY, FailMode, RedisConfig, RedisRateLimits};
use toolwire_server::{RateLimit, RateLimitStore};

#[tokio::test]
async fn a_burst_then_a_refusal_with_the_wait() {
    let redis = RedisServer::start();
    let store = RedisRateLimits::new(redis.connect().await);
    let limit = RateLimit::per_minute(2);
    assert_eq!(store.check("a", &limit).await, Ok(()));
    assert_eq!(store.check("a", &limit).await, Ok(()));
    let wait = store.check("a", &limit).await.unwrap_err();
    assert!(
        wait > Duration::from_secs(29) && wait <= Duration::from_secs(30),
        "{wait:?}"
    );
    // A refusal takes nothing: the next wait is no longer.
    let again = store.check("a", &limit).await.unwrap_err();
    assert!(again <= wait, "{again:?} after {wait:?}");
    // Another key has its own bucket.
    assert_eq!(store.check("b", &limit).await, Ok(()));
}

#[tokio::test]
async fn a_burst_may_differ_from_the_count() {
    let redis = RedisServer::start();
    let store = RedisRateLimits::new(redis.connect().await);
    let limit = RateLimit::per_minute(60).burst(3);
    for _ in 0..3 {
        assert_eq!(store.check("k", &limit).await, Ok(()));
    }
    let wait = store.check("k", &limit).await.unwrap_err();
    assert!(
        wait > Duration::ZERO && wait <= Duration::from_secs(1),
        "{wait:?}"
    );
}

#[tokio::test]
async fn two_instances_share_one_budget() {
    let redis = RedisServer::start();
    let one = RedisRateLimits::new(redis.connect().await);
    let two = RedisRateLimits::new(redis.connect().await);
    let limit = RateLimit::per_minute(3);
    assert_eq!(one.check("tools\0s:alice", &limit).await, Ok(()));
    assert_eq!(two.check("tools\0s:alice", &limit).await, Ok(()));
    assert_eq!(one.check("tools\0s:alice", &limit).await, Ok(()));
    let wait = two.check("tools\0s:alice", &limit).await.unwrap_err();
    assert!(
        wait > Duration::from_secs(19) && wait <= Duration::from_secs(20),
        "{wait:?}"
    );
    assert!(one.check("tools\0s:alice", &limit).await.is_err());
    // Keys stay independent across instances too.
    assert_eq!(two.check("tools\0s:bob", &limit).await, Ok(()));
    assert_eq!(one.check("tool\0x\0s:alice", &limit).await, Ok(()));
}

#[tokio::test]
async fn buckets_are_prefixed_and_expire_when_full_again() {
    let redis = RedisServer::start();
    let store = RedisRateLimits::new(redis.connect().await);
    let mut raw = redis.raw().await;
    assert_eq!(store.check("slow", &RateLimit::per_minute(2)).await, Ok(()));
    let ttl: i64 = raw.pttl("toolwire:rl:slow").await.unwrap();
    assert!(ttl > 25_000 && ttl <= 30_000, "{ttl}");
    let fast = RateLimit::new(1, Duration::from_millis(200));
    assert_eq!(store.check("fast", &fast).await, Ok(()));
    assert!(raw.exists::<_, bool>("toolwire:rl:fast").await.unwrap());
    eventually("the idle bucket expires", || {
        let mut raw = raw.clone();
        async move { !raw.exists::<_, bool>("toolwire:rl:fast").await.unwrap() }
    })
    .await;
    // An expired bucket is a full one.
    assert_eq!(store.check("fast", &fast).await, Ok(()));
}

#[tokio::test]
async fn failing_closed_refuses_for_one_second_then_recovers() {
    let mut redis = RedisServer::start();
    let store = RedisRateLimits::new(redis.connect().await);
    assert_eq!(store.get_fail_mode(), FailMode::Closed);
    let limit = RateLimit::per_minute(100);
    assert_eq!(store.check("k", &limit).await, Ok(()));
    assert_eq!(store.unavailable(), None);
    redis.kill();
    for _ in 0..3 {
        assert_eq!(store.check("k", &limit).await, Err(CLOSED_RETRY));
    }
    assert_eq!(CLOSED_RETRY, Duration::from_secs(1));
    // The refusal can say why: not a limit, an unreachable store.
    assert_eq!(
        store.unavailable(),
        Some(format!(
            "Redis at 127.0.0.1:{} is unreachable",
            redis.port()
        ))
    );
    redis.restart();
    eventually("checks reach Redis again", || async {
        store.check("k", &limit).await.is_ok()
    })
    .await;
    assert_eq!(store.unavailable(), None);
    // Enforced again: the restarted (empty) Redis counts from zero.
    let tight = RateLimit::per_minute(1);
    assert_eq!(store.check("t", &tight).await, Ok(()));
    let wait = store.check("t", &tight).await.unwrap_err();
    assert!(wait > Duration::from_secs(50), "{wait:?}");
}

#[tokio::test]
async fn failing_open_allows_warns_once_then_recovers() {
    let (warnings, _guard) = count_warnings();
    let mut redis = RedisServer::start();
    let store = RedisRateLimits::new(redis.connect().await).fail_mode(FailMode::Open);
    let limit = RateLimit::per_minute(1);
    assert_eq!(store.check("k", &limit).await, Ok(()));
    assert!(store.check("k", &limit).await.is_err());
    redis.kill();
    // Over the limit, yet allowed: the outage lifts it.
    for _ in 0..3 {
        assert_eq!(store.check("k", &limit).await, Ok(()));
    }
    assert_eq!(*warnings.lock().unwrap(), 1, "one warning per outage");
    redis.restart();
    eventually("the limit is enforced again", || async {
        store.check("k", &limit).await.is_err()
    })
    .await;
    assert_eq!(*warnings.lock().unwrap(), 1);
    // A second outage is warned about again.
    redis.kill();
    assert_eq!(store.check("k", &limit).await, Ok(()));
    assert_eq!(*warnings.lock().unwrap(), 2);
}

#[tokio::test]
async fn a_lazy_connection_starts_before_redis_does() {
    let port = support::free_port();
    let url = format!("redis://127.0.0.1:{port}");
    let connection = RedisConfig::new(url).connect_lazy().unwrap();
    let store = RedisRateLimits::new(connection);
    let limit = RateLimit::per_minute(1);
    assert_eq!(store.check("k", &limit).await, Err(CLOSED_RETRY));
    let _redis = RedisServer::start_on(port);
    eventually("the first check that reaches Redis", || async {
        store.check("k", &limit).await.is_ok()
    })
    .await;
    assert!(store.check("k", &limit).await.unwrap_err() > Duration::from_secs(50));
}

#[tokio::test]
async fn many_checks_one_bucket_no_more_than_the_burst() {
    let redis = RedisServer::start();
    let store = Arc::new(RedisRateLimits::new(redis.connect().await));
    let other = Arc::new(RedisRateLimits::new(redis.connect().await));
    let limit = RateLimit::per_minute(10);
    let mut tasks = Vec::new();
    for i in 0..40 {
        let store = if i % 2 == 0 { &store } else { &other };
        let store = Arc::clone(store);
        tasks.push(tokio::spawn(async move {
            store.check("race", &limit).await.is_ok()
        }));
    }
    let mut allowed = 0;
    for task in tasks {
        allowed += usize::from(task.await.unwrap());
    }
    assert_eq!(allowed, 10);
}

/// Counts WARN events on this thread (tests run on a current-thread runtime).
fn count_warnings() -> (Arc<Mutex<usize>>, tracing::subscriber::DefaultGuard) {
    use tracing_subscriber::layer::SubscriberExt;
    let count = Arc::new(Mutex::new(0));
    let layer = WarnCounter(Arc::clone(&count));
    let guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));
    (count, guard)
}

struct WarnCounter(Arc<Mutex<usize>>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for WarnCounter {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        let meta = event.metadata();
        if *meta.level() == tracing::Level::WARN && meta.target().starts_with("toolwire_redis") {
            *self.0.lock().unwrap() += 1;
        }
    }
}
