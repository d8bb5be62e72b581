//! Redis round trips per call, counted by the server itself (`INFO
//! commandstats`): one per rate-limit check, one per handle insert or
//! remove, two per handle modify. Commands that the scripts run inside
//! Redis are not round trips; only what clients send is counted.

mod support;

use std::time::Duration;

use support::RedisServer;
use toolwire_redis::{RedisHandles, RedisRateLimits};
use toolwire_server::{HandleStore, RateLimit, RateLimitStore};

/// Top-level commands clients sent since the last reset (the stores send
/// only EVALSHA, and SCRIPT LOAD / EVAL when a script is unknown).
async fn client_commands(raw: &mut redis::aio::MultiplexedConnection) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(raw)
        .await
        .unwrap();
    let sent = [
        "cmdstat_evalsha:",
        "cmdstat_eval:",
        "cmdstat_script|load:",
        "cmdstat_script:",
    ];
    info.lines()
        .filter(|line| sent.iter().any(|name| line.starts_with(name)))
        .map(|line| {
            let calls = line.split("calls=").nth(1).unwrap();
            calls.split(',').next().unwrap().parse::<u64>().unwrap()
        })
        .sum()
}

async fn reset(raw: &mut redis::aio::MultiplexedConnection) {
    let () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query_async(raw)
        .await
        .unwrap();
}

#[tokio::test]
async fn one_round_trip_per_check_two_per_modify() {
    let redis = RedisServer::start();
    let mut raw = redis.raw().await;
    let limits = RedisRateLimits::new(redis.connect().await);
    let handles = RedisHandles::<u32>::new(redis.connect().await, "counters");
    let limit = RateLimit::per_minute(100);
    let idle = Duration::from_secs(60);
    // Warm up: every script loaded once.
    limits.check("k", &limit).await.unwrap();
    handles.insert("c_0", "s:a", 0, idle, 10).await.unwrap();
    assert!(
        handles
            .modify("c_0", "s:a", Box::new(|n| *n += 1))
            .await
            .unwrap()
    );
    assert!(handles.remove("c_0", "s:a").await.unwrap());

    reset(&mut raw).await;
    limits.check("k", &limit).await.unwrap();
    assert_eq!(client_commands(&mut raw).await, 1, "a rate-limit check");
    reset(&mut raw).await;
    handles.insert("c_1", "s:a", 0, idle, 10).await.unwrap();
    assert_eq!(client_commands(&mut raw).await, 1, "an insert");
    reset(&mut raw).await;
    assert!(
        handles
            .modify("c_1", "s:a", Box::new(|n| *n += 1))
            .await
            .unwrap()
    );
    assert_eq!(client_commands(&mut raw).await, 2, "a modify");
    reset(&mut raw).await;
    assert!(handles.remove("c_1", "s:a").await.unwrap());
    assert_eq!(client_commands(&mut raw).await, 1, "a remove");
    reset(&mut raw).await;
    assert!(
        !handles
            .modify("c_1", "s:a", Box::new(|n| *n += 1))
            .await
            .unwrap()
    );
    assert_eq!(
        client_commands(&mut raw).await,
        1,
        "a modify of a missing handle"
    );
}
