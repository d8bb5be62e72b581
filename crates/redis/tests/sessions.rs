//! Legacy (2025-11-25) HTTP sessions shared through Redis by two
//! endpoints, each with its own connection and store as two instances
//! behind a load balancer would have: a session opened on one is served by
//! the other, an elicitation's answer reaching the other instance completes
//! the call, DELETE ends it on both; with Redis down new sessions are
//! refused and a running one goes on; a Redis restarted empty has forgotten
//! every session (404, and `initialize` works again).

mod support;

#[allow(dead_code)]
#[path = "../../server/tests/common/legacy_http.rs"]
mod legacy_http;

use std::sync::Arc;

use legacy_http::{Endpoint, Events, builder, echo, echoed, initialize, legacy};
use serde_json::{Value, json};
use support::RedisServer;
use toolwire_redis::RedisSessionStore;
use toolwire_server::Server;
use toolwire_server::http::HttpConfig;

/// An endpoint of `server` whose session records are in `redis`.
async fn instance(server: &Server, redis: &RedisServer) -> Endpoint {
    let store = RedisSessionStore::new(&redis.connect().await);
    let config = HttpConfig::new().session_store(Arc::new(store));
    Endpoint::start(server.clone(), config).await
}

#[tokio::test]
async fn a_session_moves_between_instances_with_its_elicitation_and_ends_on_both() {
    let redis = RedisServer::start();
    let server = builder().build().unwrap();
    let (a, b) = (
        instance(&server, &redis).await,
        instance(&server, &redis).await,
    );
    let id = a.open(None).await;
    assert_eq!(
        b.call(&id, &echo(2, "via b")).await,
        (200, echoed(2, "via b"))
    );

    let call = legacy(3, "tools/call", json!({"name": "confirm", "arguments": {}}));
    let response = b.post(Some(&id), &call).send().await.unwrap();
    let mut events = Events::new(response);
    assert_eq!(events.next().await.unwrap().data, "", "priming event");
    let ask = events.message().await;
    assert_eq!(ask["method"], "elicitation/create");
    let answer = json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"ok": true}}});
    assert_eq!(
        a.post(Some(&id), &answer).send().await.unwrap().status(),
        202
    );
    assert_eq!(
        events.message().await,
        json!({"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "accepted {\"ok\":true}"}]}})
    );

    let mut stream = Events::new(a.standalone(&id).send().await.unwrap());
    assert_eq!(stream.next().await.unwrap().data, "", "priming event");
    let delete = b.delete(&id).send().await.unwrap();
    assert_eq!(delete.status(), 204);
    assert!(
        stream.next().await.is_none(),
        "a's stream of the session ends"
    );
    assert_eq!(a.call(&id, &echo(4, "x")).await.0, 404);
    assert_eq!(b.call(&id, &echo(5, "x")).await.0, 404);
    let mut raw = redis.raw().await;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("toolwire:session:*")
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(keys, Vec::<String>::new());
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn records_expire_in_redis_after_the_idle_timeout() {
    let redis = RedisServer::start();
    let server = builder().build().unwrap();
    let store = RedisSessionStore::new(&redis.connect().await);
    let config = HttpConfig::new()
        .session_store(Arc::new(store))
        .session_idle_timeout(std::time::Duration::from_secs(1));
    let a = Endpoint::start(server.clone(), config).await;
    let id = a.open(None).await;
    let mut raw = redis.raw().await;
    let ttl: i64 = redis::cmd("PTTL")
        .arg(format!("toolwire:session:{id}"))
        .query_async(&mut raw)
        .await
        .unwrap();
    assert!(
        (1..=1000).contains(&ttl),
        "expires within the idle timeout: {ttl} ms"
    );
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert_eq!(a.call(&id, &echo(2, "late")).await.0, 404);
    a.stop().await;
}

#[tokio::test]
async fn with_redis_down_new_sessions_are_refused_and_after_an_empty_restart_all_are_forgotten() {
    let mut redis = RedisServer::start();
    let server = builder().build().unwrap();
    let (a, b) = (
        instance(&server, &redis).await,
        instance(&server, &redis).await,
    );
    let id = a.open(None).await;
    redis.kill();

    let refused = a.post(None, &initialize(1)).send().await.unwrap();
    assert_eq!(refused.status(), 503);
    let body: Value = refused.json().await.unwrap();
    let message = body["error"]["message"].as_str().unwrap();
    let prefix = format!(
        "the session cannot be opened: Redis at 127.0.0.1:{}: ",
        redis.port()
    );
    assert!(message.starts_with(&prefix), "{message}");
    assert!(message.ends_with("; retry in 1 s"), "{message}");
    assert_eq!(
        a.call(&id, &echo(2, "still here")).await,
        (200, echoed(2, "still here")),
        "the instance running the session goes on"
    );
    let (status, body) = b.call(&id, &echo(3, "elsewhere")).await;
    assert_eq!(status, 503, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("the session cannot be looked up: Redis at 127.0.0.1:"),
        "{message}"
    );

    redis.restart();
    support::eventually("a's store reaches Redis again", || async {
        a.call(&id, &echo(4, "x")).await.0 == 404
    })
    .await;
    assert_eq!(b.call(&id, &echo(5, "x")).await.0, 404);
    let fresh = a.open(None).await;
    assert_eq!(
        b.call(&fresh, &echo(6, "new")).await,
        (200, echoed(6, "new"))
    );
    a.stop().await;
    b.stop().await;
}
