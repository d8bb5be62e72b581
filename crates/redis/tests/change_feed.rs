//! `RedisChangeFeed` against a real `redis-server`, with two feeds on two
//! connections as two instances would have: changes cross over once,
//! topics filter, stray messages are ignored, `rediss://` works, two
//! `Server`s' listen streams hear each other, and an outage is survived
//! with a catch-up.

mod support;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use serde_json::{Value, json};
use support::{RedisServer, WAIT, eventually, fixtures};
use tokio::sync::mpsc;
use tokio::time::timeout;
use toolwire_redis::{RedisChangeFeed, RedisConfig};
use toolwire_server::protocol::{Message, Request};
use toolwire_server::{
    Change, ChangeFeed, ChangeTopics, NoArgs, Outbox, RequestContext, RequestEnv, ResourceBuilder,
    Server, ToolBuilder, text_contents,
};

type Changes = BoxStream<'static, Change>;

/// How long "nothing arrives" is watched for.
const QUIET: Duration = Duration::from_millis(300);

fn topics(tools: bool, prompts: bool, uris: &[&str]) -> ChangeTopics {
    ChangeTopics {
        tools,
        prompts,
        resources: false,
        resource_uris: (!uris.is_empty()).then(|| uris.iter().map(|u| u.to_string()).collect()),
    }
}

async fn next(changes: &mut Changes) -> Change {
    timeout(WAIT, changes.next())
        .await
        .expect("a change within WAIT")
        .expect("the feed is open")
}

async fn nothing(changes: &mut Changes) {
    if let Ok(change) = timeout(QUIET, changes.next()).await {
        panic!("unexpected {change:?}");
    }
}

/// Whether `wanted` arrives within `within` (other changes are skipped).
async fn hears(changes: &mut Changes, wanted: &Change, within: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    while let Ok(Some(change)) = tokio::time::timeout_at(deadline, changes.next()).await {
        if change == *wanted {
            return true;
        }
    }
    false
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

/// Two feeds on one Redis, both subscribed.
async fn two_feeds(redis: &RedisServer) -> (RedisChangeFeed, RedisChangeFeed) {
    let a = RedisChangeFeed::new(&redis.connect().await);
    let b = RedisChangeFeed::new(&redis.connect().await);
    assert_eq!(a.channel(), "toolwire:changes");
    assert_ne!(a.instance_id(), b.instance_id());
    subscribed(redis, a.channel(), 2).await;
    (a, b)
}

#[tokio::test]
async fn a_list_change_reaches_the_other_instance_and_its_own_once() {
    let redis = RedisServer::start();
    let (a, b) = two_feeds(&redis).await;
    let mut on_a = a.subscribe(topics(true, false, &[]));
    let mut on_b = b.subscribe(topics(true, false, &[]));
    let mut prompts_on_b = b.subscribe(topics(false, true, &[]));
    a.publish(Change::ToolsListChanged);
    assert_eq!(next(&mut on_b).await, Change::ToolsListChanged);
    assert_eq!(next(&mut on_a).await, Change::ToolsListChanged);
    nothing(&mut on_a).await;
    nothing(&mut on_b).await;
    nothing(&mut prompts_on_b).await;
}

#[tokio::test]
async fn changes_cross_over_rediss_too() {
    let redis = RedisServer::start_tls();
    let ca = std::fs::read(fixtures().join("ca.pem")).unwrap();
    let config = RedisConfig::new(redis.url()).root_certificate(ca);
    let a = RedisChangeFeed::new(&config.connect().await.unwrap());
    let b = RedisChangeFeed::new(&config.connect().await.unwrap());
    let mut on_b = b.subscribe(topics(false, false, &["file:///tls"]));
    let updated = Change::ResourceUpdated("file:///tls".into());
    // No plain port to ask PUBSUB NUMSUB: publish until B is subscribed.
    let mut arrived = false;
    for _ in 0..20 {
        a.publish(updated.clone());
        if hears(&mut on_b, &updated, Duration::from_millis(500)).await {
            arrived = true;
            break;
        }
    }
    assert!(arrived, "{updated:?} never crossed over rediss://");
}

#[tokio::test]
async fn two_lists_changed_together_both_reach_a_subscriber_of_both() {
    let redis = RedisServer::start();
    let (a, b) = two_feeds(&redis).await;
    let mut on_a = a.subscribe(topics(true, true, &[]));
    let mut on_b = b.subscribe(topics(true, true, &[]));
    a.publish(Change::ToolsListChanged);
    a.publish(Change::PromptsListChanged);
    for changes in [&mut on_a, &mut on_b] {
        let mut heard = vec![next(changes).await, next(changes).await];
        heard.sort_by_key(|c| format!("{c:?}"));
        assert_eq!(
            heard,
            [Change::PromptsListChanged, Change::ToolsListChanged]
        );
        nothing(changes).await;
    }
}

#[tokio::test]
async fn a_resource_update_reaches_only_subscribers_of_its_uri_once() {
    let redis = RedisServer::start();
    let (a, b) = two_feeds(&redis).await;
    let mut on_a = a.subscribe(topics(false, false, &["file:///a"]));
    let mut on_b = b.subscribe(topics(false, false, &["file:///a"]));
    let mut other_uri = b.subscribe(topics(false, false, &["file:///other"]));
    let mut lists_only = b.subscribe(topics(true, true, &[]));
    let updated = Change::ResourceUpdated("file:///a".into());
    a.publish(updated.clone());
    assert_eq!(next(&mut on_b).await, updated);
    assert_eq!(next(&mut on_a).await, updated);
    nothing(&mut on_a).await;
    nothing(&mut on_b).await;
    nothing(&mut other_uri).await;
    nothing(&mut lists_only).await;
}

#[tokio::test]
async fn its_own_echo_and_malformed_messages_are_ignored() {
    let redis = RedisServer::start();
    let (a, b) = two_feeds(&redis).await;
    let mut on_a = a.subscribe(topics(false, true, &["file:///z"]));
    let mut on_b = b.subscribe(topics(false, true, &[]));
    let own = json!({"from": a.instance_id(), "change": "prompts"}).to_string();
    let mut raw = redis.raw().await;
    for message in [
        "not json",
        r#"{"from":"x","change":"weather"}"#,
        r#"{"from":"x","change":"resource"}"#,
        &own,
        r#"{"from":"x","change":"resource","uri":"file:///z"}"#,
    ] {
        let _: i64 = redis::cmd("PUBLISH")
            .arg(a.channel())
            .arg(message)
            .query_async(&mut raw)
            .await
            .unwrap();
    }
    // A skips its own message; B takes it as another instance's.
    let z = Change::ResourceUpdated("file:///z".into());
    assert_eq!(next(&mut on_a).await, z);
    nothing(&mut on_a).await;
    assert_eq!(next(&mut on_b).await, Change::PromptsListChanged);
    nothing(&mut on_b).await;
    // Still relaying after the junk.
    b.publish(Change::PromptsListChanged);
    assert_eq!(next(&mut on_a).await, Change::PromptsListChanged);
}

fn server(feed: RedisChangeFeed) -> Server {
    Server::builder("fan-out", "1")
        .change_feed(Arc::new(feed))
        .resource(
            ResourceBuilder::new("test://r", "r").handler(|req, _cx| async move {
                Ok(vec![text_contents(req.uri, "text/plain", "r")])
            }),
        )
        .build()
        .unwrap()
}

fn tool(name: &str) -> ToolBuilder {
    ToolBuilder::new(name)
        .description("added at run time")
        .handler(|_: NoArgs, _cx: RequestContext| async { "ok" })
}

/// Opens `subscriptions/listen` on `server` through the dispatcher; returns
/// the outbox's receiver and the request's task.
fn listen(
    server: &Server,
    filter: Value,
) -> (mpsc::Receiver<Message>, tokio::task::JoinHandle<Message>) {
    let (tx, rx) = mpsc::channel(64);
    let env = RequestEnv::new().with_outbox(Outbox::new(tx));
    let params = json!({
        "notifications": filter,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "0"}
        }
    });
    let Value::Object(params) = params else {
        unreachable!()
    };
    let request = Request::new(1, "subscriptions/listen", Some(params));
    let server = server.clone();
    let task = tokio::spawn(async move { server.handle_request(request, env).await });
    (rx, task)
}

async fn notification(rx: &mut mpsc::Receiver<Message>) -> Value {
    let message = timeout(WAIT, rx.recv())
        .await
        .expect("a notification within WAIT")
        .expect("the stream is open");
    serde_json::to_value(message).unwrap()
}

#[tokio::test]
async fn a_tool_added_on_one_server_is_announced_on_the_others_listen_stream() {
    let redis = RedisServer::start();
    let (a, b) = two_feeds(&redis).await;
    let (server_a, server_b) = (server(a), server(b));
    let filter = json!({"toolsListChanged": true, "resourceSubscriptions": ["test://r"]});
    let (mut stream, task) = listen(&server_b, filter);
    let ack = notification(&mut stream).await;
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );

    server_a.add_tool(tool("added")).unwrap();
    let changed = notification(&mut stream).await;
    assert_eq!(
        changed["method"], "notifications/tools/list_changed",
        "{changed}"
    );

    server_a.notify_resource_updated("test://r");
    let updated = notification(&mut stream).await;
    assert_eq!(
        updated["method"], "notifications/resources/updated",
        "{updated}"
    );
    assert_eq!(updated["params"]["uri"], "test://r");

    server_a.remove_tool("added").unwrap();
    let removed = notification(&mut stream).await;
    assert_eq!(
        removed["method"], "notifications/tools/list_changed",
        "{removed}"
    );
    assert!(timeout(QUIET, stream.recv()).await.is_err(), "nothing more");
    task.abort();
}

#[tokio::test]
async fn an_outage_is_survived_and_followed_by_a_catch_up() {
    let mut redis = RedisServer::start();
    let (a, b) = two_feeds(&redis).await;
    let after = "file:///after";
    let mut on_a = a.subscribe(topics(true, false, &[]));
    let mut on_b = b.subscribe(topics(true, true, &[after]));

    redis.kill();
    a.publish(Change::ToolsListChanged);
    assert_eq!(next(&mut on_a).await, Change::ToolsListChanged);
    nothing(&mut on_b).await;

    redis.restart();
    // Subscribed again, the instances tell their listeners that every list
    // may have changed (A only ever published a tools change).
    let catch_up = Change::PromptsListChanged;
    assert!(hears(&mut on_b, &catch_up, WAIT).await, "no catch-up on B");
    subscribed(&redis, a.channel(), 2).await;
    // And A's changes reach B again.
    let updated = Change::ResourceUpdated(after.into());
    let mut arrived = false;
    for _ in 0..20 {
        a.publish(updated.clone());
        if hears(&mut on_b, &updated, Duration::from_millis(500)).await {
            arrived = true;
            break;
        }
    }
    assert!(
        arrived,
        "{updated:?} from A never reached B after the restart"
    );
}
