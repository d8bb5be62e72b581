//! `RedisHandles` against a real `redis-server`, with two store instances
//! on two connections as two servers would have: the round trip, owner
//! binding, expiry, the per-owner cap, concurrent modifies, the lock, and
//! an outage.

mod support;

use std::sync::Arc;
use std::time::Duration;

use redis::AsyncCommands;
use support::{RedisServer, eventually};
use toolwire_redis::RedisHandles;
use toolwire_server::{HandleStore, HandleStoreError};

const MINUTE: Duration = Duration::from_secs(60);
const HANDLE: &str = "toolwire:h:{o:s%3Aalice}:baskets:id:bsk_1";
const OWNED: &str = "toolwire:h:{o:s%3Aalice}:baskets:owned";

async fn two_stores(redis: &RedisServer) -> (RedisHandles<Vec<String>>, RedisHandles<Vec<String>>) {
    (
        RedisHandles::new(redis.connect().await, "baskets"),
        RedisHandles::new(redis.connect().await, "baskets"),
    )
}

/// Pushes `item` through `store`; returns whether the handle was found.
async fn push(store: &RedisHandles<Vec<String>>, id: &str, owner: &str, item: &str) -> bool {
    let item = item.to_owned();
    store
        .modify(
            id,
            owner,
            Box::new(move |items: &mut Vec<String>| items.push(item)),
        )
        .await
        .unwrap()
}

/// The items of handle `id`, or `None` when it is not found.
async fn read(store: &RedisHandles<Vec<String>>, id: &str, owner: &str) -> Option<Vec<String>> {
    let mut out = None;
    let found = store
        .modify(
            id,
            owner,
            Box::new(|items: &mut Vec<String>| out = Some(items.clone())),
        )
        .await
        .unwrap();
    assert_eq!(found, out.is_some());
    out
}

#[tokio::test]
async fn insert_modify_remove_across_two_instances() {
    let redis = RedisServer::start();
    let (a, b) = two_stores(&redis).await;
    let mut raw = redis.raw().await;
    a.insert("bsk_1", "s:alice", Vec::new(), MINUTE, 10)
        .await
        .unwrap();
    assert!(push(&b, "bsk_1", "s:alice", "apple").await);
    assert!(push(&a, "bsk_1", "s:alice", "pear").await);
    assert_eq!(
        read(&b, "bsk_1", "s:alice").await.unwrap(),
        ["apple", "pear"]
    );
    // Stored as JSON with its owner and idle time; no lock left behind.
    let mut fields: Vec<(String, String)> = raw.hgetall(HANDLE).await.unwrap();
    fields.sort();
    assert_eq!(
        fields,
        [
            ("idle".to_owned(), "60000".to_owned()),
            ("owner".to_owned(), "s:alice".to_owned()),
            ("value".to_owned(), r#"["apple","pear"]"#.to_owned()),
        ]
    );
    let ttl: i64 = raw.pttl(HANDLE).await.unwrap();
    assert!(ttl > 50_000 && ttl <= 60_000, "{ttl}");
    let owned: Vec<String> = raw.zrange(OWNED, 0, -1).await.unwrap();
    assert_eq!(owned, ["bsk_1"]);
    // Removed on one instance, gone on both.
    assert!(b.remove("bsk_1", "s:alice").await.unwrap());
    assert_eq!(read(&a, "bsk_1", "s:alice").await, None);
    assert!(!a.remove("bsk_1", "s:alice").await.unwrap());
    assert!(!raw.exists::<_, bool>(HANDLE).await.unwrap());
    assert_eq!(raw.zcard::<_, usize>(OWNED).await.unwrap(), 0);
}

#[tokio::test]
async fn another_owners_handle_is_an_unknown_one() {
    let redis = RedisServer::start();
    let (a, b) = two_stores(&redis).await;
    a.insert("bsk_1", "s:alice", vec!["x".into()], MINUTE, 10)
        .await
        .unwrap();
    let mut ran = false;
    let found = b
        .modify("bsk_1", "s:bob", Box::new(|_: &mut Vec<String>| ran = true))
        .await
        .unwrap();
    assert!(!found && !ran);
    assert!(!b.remove("bsk_1", "s:bob").await.unwrap());
    assert!(!b.remove("bsk_1", "").await.unwrap());
    assert_eq!(read(&b, "bsk_nope", "s:alice").await, None);
    // Still alice's, untouched.
    assert_eq!(read(&b, "bsk_1", "s:alice").await.unwrap(), ["x"]);
}

#[tokio::test]
async fn use_restarts_the_idle_clock_and_idle_handles_expire() {
    let redis = RedisServer::start();
    let (a, b) = two_stores(&redis).await;
    let idle = Duration::from_millis(400);
    a.insert("bsk_1", "s:alice", Vec::new(), idle, 10)
        .await
        .unwrap();
    // Four uses 150 ms apart: 600 ms in all, longer than the idle time.
    for (i, store) in [&a, &b, &a, &b].into_iter().enumerate() {
        tokio::time::sleep(Duration::from_millis(150)).await;
        assert!(
            push(store, "bsk_1", "s:alice", &i.to_string()).await,
            "use {i}"
        );
    }
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(read(&b, "bsk_1", "s:alice").await, None);
    assert!(!a.remove("bsk_1", "s:alice").await.unwrap());
    // A zero idle time is expired at once, as in memory.
    a.insert("bsk_0", "s:alice", Vec::new(), Duration::ZERO, 10)
        .await
        .unwrap();
    assert_eq!(read(&a, "bsk_0", "s:alice").await, None);
}

#[tokio::test]
async fn the_per_owner_cap_holds_across_instances() {
    let redis = RedisServer::start();
    let (a, b) = two_stores(&redis).await;
    a.insert("bsk_1", "s:alice", Vec::new(), MINUTE, 3)
        .await
        .unwrap();
    b.insert("bsk_2", "s:alice", Vec::new(), MINUTE, 3)
        .await
        .unwrap();
    a.insert("bsk_3", "s:alice", Vec::new(), MINUTE, 3)
        .await
        .unwrap();
    let full = b.insert("bsk_4", "s:alice", Vec::new(), MINUTE, 3).await;
    assert_eq!(full, Err(HandleStoreError::Full { limit: 3 }));
    // Other owners, and other stores' handles, count apart.
    b.insert("bsk_5", "s:bob", Vec::new(), MINUTE, 3)
        .await
        .unwrap();
    let carts = RedisHandles::<Vec<String>>::new(redis.connect().await, "carts");
    carts
        .insert("crt_1", "s:alice", Vec::new(), MINUTE, 3)
        .await
        .unwrap();
    // Removing one makes room, on any instance.
    assert!(a.remove("bsk_2", "s:alice").await.unwrap());
    b.insert("bsk_4", "s:alice", Vec::new(), MINUTE, 3)
        .await
        .unwrap();
    assert!(
        a.insert("bsk_6", "s:alice", Vec::new(), MINUTE, 3)
            .await
            .is_err()
    );
}

#[tokio::test]
async fn expired_handles_do_not_count() {
    let redis = RedisServer::start();
    let (a, b) = two_stores(&redis).await;
    let idle = Duration::from_millis(200);
    a.insert("bsk_1", "s:alice", Vec::new(), idle, 2)
        .await
        .unwrap();
    b.insert("bsk_2", "s:alice", Vec::new(), idle, 2)
        .await
        .unwrap();
    assert!(
        a.insert("bsk_3", "s:alice", Vec::new(), idle, 2)
            .await
            .is_err()
    );
    eventually("expired handles free their places", || async {
        b.insert("bsk_3", "s:alice", Vec::new(), MINUTE, 2)
            .await
            .is_ok()
    })
    .await;
    a.insert("bsk_4", "s:alice", Vec::new(), MINUTE, 2)
        .await
        .unwrap();
    assert_eq!(read(&b, "bsk_1", "s:alice").await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_modifies_from_two_instances_lose_no_update() {
    let redis = RedisServer::start();
    let a = Arc::new(RedisHandles::<u64>::new(redis.connect().await, "counters"));
    let b = Arc::new(RedisHandles::<u64>::new(redis.connect().await, "counters"));
    a.insert("cnt_1", "s:alice", 0, MINUTE, 10).await.unwrap();
    let mut tasks = Vec::new();
    for store in [a.clone(), b.clone()] {
        tasks.push(tokio::spawn(async move {
            for _ in 0..50 {
                let ran = store.modify("cnt_1", "s:alice", Box::new(|n: &mut u64| *n += 1));
                assert!(ran.await.unwrap());
            }
        }));
    }
    for task in tasks {
        tokio::time::timeout(support::WAIT, task)
            .await
            .unwrap()
            .unwrap();
    }
    let mut total = 0;
    assert!(
        a.modify("cnt_1", "s:alice", Box::new(|n: &mut u64| total = *n))
            .await
            .unwrap()
    );
    assert_eq!(total, 100);
}

#[tokio::test]
async fn a_modify_waits_out_another_holders_lock() {
    let redis = RedisServer::start();
    let (a, _) = two_stores(&redis).await;
    let mut raw = redis.raw().await;
    a.insert("bsk_1", "s:alice", Vec::new(), MINUTE, 10)
        .await
        .unwrap();
    // A holder that never gives its lock back (it crashed): 300 ms left.
    let (secs, micros): (u64, u64) = redis::cmd("TIME").query_async(&mut raw).await.unwrap();
    let until = secs * 1000 + micros / 1000 + 300;
    let () = raw
        .hset_multiple(
            HANDLE,
            &[("lock", "crashed"), ("lock_until", &until.to_string())],
        )
        .await
        .unwrap();
    assert!(push(&a, "bsk_1", "s:alice", "after").await);
    assert_eq!(read(&a, "bsk_1", "s:alice").await.unwrap(), ["after"]);
    // One that keeps it past the wait: a clear error, the value untouched.
    let forever = until + 600_000;
    let () = raw
        .hset_multiple(
            HANDLE,
            &[("lock", "stuck"), ("lock_until", &forever.to_string())],
        )
        .await
        .unwrap();
    let error = a
        .modify(
            "bsk_1",
            "s:alice",
            Box::new(|items: &mut Vec<String>| items.clear()),
        )
        .await
        .unwrap_err();
    let HandleStoreError::Unavailable(text) = error else {
        panic!("{error:?}")
    };
    assert!(
        text.starts_with(&format!("Redis at 127.0.0.1:{}: ", redis.port())),
        "{text}"
    );
    assert!(text.contains("stayed locked by another modify"), "{text}");
    let value: String = raw.hget(HANDLE, "value").await.unwrap();
    assert_eq!(value, r#"["after"]"#);
}

#[tokio::test]
async fn a_modify_that_panics_gives_its_lock_back() {
    let redis = RedisServer::start();
    let a = Arc::new(RedisHandles::<Vec<String>>::new(
        redis.connect().await,
        "baskets",
    ));
    let raw = redis.raw().await;
    a.insert("bsk_1", "s:alice", Vec::new(), MINUTE, 10)
        .await
        .unwrap();
    let store = Arc::clone(&a);
    let panicked = tokio::spawn(async move {
        let boom = Box::new(|_: &mut Vec<String>| {
            if true {
                panic!("boom");
            }
        });
        store.modify("bsk_1", "s:alice", boom).await
    })
    .await;
    assert!(panicked.unwrap_err().is_panic());
    eventually("the lock is given back", || {
        let mut raw = raw.clone();
        async move { !raw.hexists::<_, _, bool>(HANDLE, "lock").await.unwrap() }
    })
    .await;
    assert!(push(&a, "bsk_1", "s:alice", "ok").await);
}

#[tokio::test]
async fn redis_down_is_a_clear_error_then_recovery() {
    let mut redis = RedisServer::start();
    let (a, _) = two_stores(&redis).await;
    a.insert("bsk_1", "s:alice", Vec::new(), MINUTE, 10)
        .await
        .unwrap();
    redis.kill();
    let expected = format!("Redis at 127.0.0.1:{}: ", redis.port());
    let errors = [
        a.insert("bsk_2", "s:alice", Vec::new(), MINUTE, 10)
            .await
            .unwrap_err(),
        a.modify("bsk_1", "s:alice", Box::new(|_: &mut Vec<String>| {}))
            .await
            .unwrap_err(),
        a.remove("bsk_1", "s:alice").await.unwrap_err(),
    ];
    for error in errors {
        let HandleStoreError::Unavailable(text) = &error else {
            panic!("{error:?}")
        };
        assert!(text.starts_with(&expected), "{text}");
        assert_eq!(
            error.to_string(),
            format!("handle store unavailable: {text}")
        );
    }
    // Back (empty, nothing was saved): the store works again by itself.
    redis.restart();
    eventually("the store reaches Redis again", || async {
        a.insert("bsk_3", "s:alice", Vec::new(), MINUTE, 10)
            .await
            .is_ok()
    })
    .await;
    assert!(push(&a, "bsk_3", "s:alice", "x").await);
    assert_eq!(read(&a, "bsk_1", "s:alice").await, None);
}
