//! `RedisFlag` against a real `redis-server`, with two flags on two
//! connections as two instances would have: a toggle on one is seen by the
//! other's watch, concurrent toggles from both end consistent, and a Redis
//! killed and restarted gives a clear error, then recovery.

mod support;

use std::time::Duration;

use support::{RedisServer, WAIT, eventually};
use tokio::sync::watch;
use tokio::time::timeout;
use toolwire_redis::{FlagError, RedisConfig, RedisFlag};

/// Two flags named `extras`, as two instances hold them.
async fn two_flags(redis: &RedisServer) -> (RedisFlag, RedisFlag) {
    let a = RedisFlag::new(&redis.connect().await, "extras");
    let b = RedisFlag::new(&redis.connect().await, "extras");
    assert_eq!(a.key(), "toolwire:flag:extras");
    subscribed(redis, a.key(), 2).await;
    (a, b)
}

/// Waits until `count` connections are subscribed to `channel`.
async fn subscribed(redis: &RedisServer, channel: &str, count: i64) {
    let raw = redis.raw().await;
    eventually(&format!("{count} subscribers on {channel}"), || {
        let (mut raw, channel) = (raw.clone(), channel.to_owned());
        async move {
            let numsub: redis::RedisResult<(String, i64)> = redis::cmd("PUBSUB")
                .arg("NUMSUB")
                .arg(&channel)
                .query_async(&mut raw)
                .await;
            matches!(numsub, Ok((_, n)) if n == count)
        }
    })
    .await;
}

/// The flag's version field: how many writes it has had.
async fn version(redis: &RedisServer, key: &str) -> u64 {
    let mut raw = redis.raw().await;
    redis::cmd("HGET")
        .arg(key)
        .arg("version")
        .query_async(&mut raw)
        .await
        .unwrap()
}

/// The next value `changes` reports (bounded wait).
async fn next(changes: &mut watch::Receiver<bool>) -> bool {
    timeout(WAIT, changes.changed())
        .await
        .expect("a change within WAIT")
        .expect("the flag lives");
    *changes.borrow_and_update()
}

#[tokio::test]
async fn a_toggle_on_one_instance_is_seen_by_the_others_watch() {
    let redis = RedisServer::start();
    let (a, b) = two_flags(&redis).await;
    let mut on_b = b.watch();
    assert!(!*on_b.borrow_and_update());
    assert!(a.toggle().await.unwrap());
    assert!(a.current());
    assert!(next(&mut on_b).await);
    assert!(b.current());
    assert!(b.get().await.unwrap());

    assert!(!b.toggle().await.unwrap());
    // B's own toggle is known to B at once.
    assert!(!*on_b.borrow_and_update());
    let mut on_a = a.watch();
    eventually("A hears B's toggle", || {
        let off = !*on_a.borrow_and_update();
        async move { off }
    })
    .await;
    // Setting the value it has answers it and writes nothing.
    assert!(!a.set(false).await.unwrap());
    assert_eq!(version(&redis, a.key()).await, 2);
    assert!(a.set(true).await.unwrap());
    assert!(next(&mut on_b).await);
}

#[tokio::test]
async fn a_flag_set_before_an_instance_starts_is_read_at_start() {
    let redis = RedisServer::start();
    let a = RedisFlag::new(&redis.connect().await, "extras");
    assert!(a.toggle().await.unwrap());
    let late = RedisFlag::new(&redis.connect().await, "extras");
    let mut changes = late.watch();
    assert!(next(&mut changes).await);
    // Other names and prefixes are other flags.
    let other = RedisFlag::new(&redis.connect().await, "other:flag");
    assert_eq!(other.key(), "toolwire:flag:other%3Aflag");
    assert!(!other.get().await.unwrap());
    let prefixed = RedisConfig::new(redis.url()).key_prefix("shop:");
    let prefixed = RedisFlag::new(&prefixed.connect().await.unwrap(), "extras");
    assert!(!prefixed.get().await.unwrap());
}

/// Toggles `flag` 25 times; the values it answered.
async fn toggles(flag: &RedisFlag) -> Vec<bool> {
    let mut seen = Vec::new();
    for _ in 0..25 {
        seen.push(flag.toggle().await.unwrap());
    }
    seen
}

#[tokio::test]
async fn concurrent_toggles_from_both_instances_end_consistent() {
    let redis = RedisServer::start();
    let (a, b) = two_flags(&redis).await;
    let (from_a, from_b) = tokio::join!(toggles(&a), toggles(&b));
    // 50 toggles in all, applied one after the other from off: they answer
    // on and off alternately, 25 times each, and the flag ends off.
    let ons = from_a.iter().chain(&from_b).filter(|on| **on).count();
    assert_eq!(ons, 25);
    assert!(!a.get().await.unwrap());
    assert_eq!(version(&redis, a.key()).await, 50);
    for flag in [&a, &b] {
        eventually("both instances know it is off", || {
            let off = !flag.current();
            async move { off }
        })
        .await;
    }
}

#[tokio::test]
async fn a_key_of_another_type_is_refused_with_its_type() {
    let redis = RedisServer::start();
    let mut raw = redis.raw().await;
    let () = redis::cmd("SET")
        .arg("toolwire:flag:extras")
        .arg("x")
        .query_async(&mut raw)
        .await
        .unwrap();
    let flag = RedisFlag::new(&redis.connect().await, "extras");
    let refused = flag.toggle().await.unwrap_err();
    assert_eq!(
        refused.to_string(),
        "the Redis key toolwire:flag:extras holds a string, not a flag"
    );
}

#[tokio::test]
async fn a_redis_restart_fails_clearly_then_recovers() {
    let mut redis = RedisServer::start();
    let (a, b) = two_flags(&redis).await;
    assert!(a.toggle().await.unwrap());
    eventually("B knows it is on", || {
        let on = b.current();
        async move { on }
    })
    .await;

    let mut on_b = b.watch();
    assert!(*on_b.borrow_and_update());
    redis.kill();
    let refused = a.toggle().await.unwrap_err();
    let address = format!("127.0.0.1:{}", redis.port());
    assert_eq!(
        refused.to_string(),
        format!("Redis at {address} is unreachable")
    );
    assert!(
        matches!(&refused, FlagError::Unavailable { address: a, detail }
            if *a == address && detail.starts_with(&format!("Redis at {address}: "))),
        "{refused:?}"
    );
    assert!(b.get().await.is_err());
    // The last value known stays.
    assert!(b.current());

    // Back, empty: both re-read the flag (off), and toggles work again.
    redis.restart();
    assert!(!next(&mut on_b).await);
    subscribed(&redis, a.key(), 2).await;
    eventually("A re-read it too", || {
        let off = !a.current();
        async move { off }
    })
    .await;
    let mut turned_on = None;
    for _ in 0..50 {
        match a.toggle().await {
            Ok(on) => {
                turned_on = Some(on);
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    assert_eq!(turned_on, Some(true), "A toggles again once Redis is back");
    assert!(next(&mut on_b).await);
}
