//! The cache: TTL, scope and credentials, pages, stale fallback, and
//! invalidation by listen notifications.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use toolwire_client::transport::HttpTransport;
use toolwire_client::{Cache, Client, Error, Freshness, ListenEvent};
use toolwire_protocol::{Request, SubscriptionFilter};
use toolwire_server::{RequestContext, ToolBuilder};

use support::{EchoArgs, both, fake_http, fake_stdio, reply};

/// Two pages: the first fresh for a minute, the second stale at once.
fn paged_server() -> support::Script {
    Arc::new(|request: &Request| {
        let cursor = request
            .params
            .as_ref()
            .and_then(|p| p.get("cursor"))
            .cloned();
        let page = match cursor {
            None => json!({"tools": [{"name": "a", "inputSchema": {"type": "object"}}],
                "nextCursor": "p2", "ttlMs": 60000, "cacheScope": "public"}),
            Some(_) => json!({"tools": [{"name": "b", "inputSchema": {"type": "object"}}],
                "ttlMs": 0, "cacheScope": "public"}),
        };
        vec![reply(request, page)]
    })
}

fn cursors(received: &support::Received) -> Vec<Value> {
    received
        .requests()
        .iter()
        .map(|r| {
            r.params
                .as_ref()
                .and_then(|p| p.get("cursor"))
                .cloned()
                .unwrap_or(Value::Null)
        })
        .collect()
}

#[tokio::test]
async fn each_page_is_cached_on_its_own() {
    let (transport, received) = fake_stdio(paged_server());
    let client = Client::builder(transport).build();
    let first = client.list_tools().await.unwrap();
    assert_eq!(first.tools.len(), 2);
    assert_eq!(first.freshness, Freshness::Fetched);
    let second = client.list_tools().await.unwrap();
    assert_eq!(second.tools.len(), 2);
    assert_eq!(
        second.freshness,
        Freshness::Cached,
        "the least fresh page counts"
    );
    // Page 1 came from the cache; only the stale page 2 was fetched again.
    assert_eq!(cursors(&received), [Value::Null, json!("p2"), json!("p2")]);
}

#[tokio::test]
async fn a_stale_entry_is_served_when_the_refetch_fails_and_says_so() {
    let up = Arc::new(AtomicBool::new(true));
    let flag = up.clone();
    let app = axum::Router::new().route(
        "/mcp",
        axum::routing::post(move |body: axum::body::Bytes| {
            let up = flag.load(Ordering::SeqCst);
            async move {
                if !up {
                    return axum::response::Response::builder().status(503).body(axum::body::Body::from("down")).unwrap();
                }
                let toolwire_protocol::Message::Request(request) = toolwire_protocol::Message::from_slice(&body).unwrap() else {
                    panic!()
                };
                let body = serde_json::to_vec(&reply(&request, json!({"tools": [{"name": "a", "inputSchema": {"type": "object"}}], "ttlMs": 0}))).unwrap();
                axum::response::Response::builder().header("content-type", "application/json").body(axum::body::Body::from(body)).unwrap()
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let client = Client::builder(HttpTransport::new(url).unwrap()).build();
    assert_eq!(
        client.list_tools().await.unwrap().freshness,
        Freshness::Fetched
    );
    up.store(false, Ordering::SeqCst);
    let stale = client.list_tools().await.unwrap();
    assert_eq!(stale.freshness, Freshness::Stale);
    assert_eq!(stale.tools[0].name(), "a");
    // Without anything cached, the failure is reported.
    client.cache().clear();
    let err = client.list_tools().await.unwrap_err();
    assert!(matches!(err, Error::Transport(_)), "{err:?}");
}

/// A server whose list is private to the caller, counting requests.
fn private_server(scope: &'static str, count: Arc<AtomicUsize>) -> support::Script {
    Arc::new(move |request: &Request| {
        count.fetch_add(1, Ordering::SeqCst);
        vec![reply(
            request,
            json!({"tools": [], "ttlMs": 60000, "cacheScope": scope}),
        )]
    })
}

#[tokio::test]
async fn private_entries_are_partitioned_by_credentials_and_public_ones_shared() {
    for (scope, expected) in [("private", 3), ("public", 1)] {
        let count = Arc::new(AtomicUsize::new(0));
        let (url, _) = fake_http(private_server(scope, count.clone())).await;
        let cache = Cache::default();
        let client = |token: &str| {
            Client::builder(
                HttpTransport::builder(url.clone())
                    .bearer_token(token)
                    .build()
                    .unwrap(),
            )
            .cache(cache.clone())
            .build()
        };
        let alice = client("alice");
        let bob = client("bob");
        alice.list_tools().await.unwrap();
        alice.list_tools().await.unwrap();
        bob.list_tools().await.unwrap();
        client("alice").list_tools().await.unwrap();
        let third = client("carol").list_tools().await.unwrap();
        let expected_fresh = if scope == "public" {
            Freshness::Cached
        } else {
            Freshness::Fetched
        };
        assert_eq!(third.freshness, expected_fresh, "{scope}");
        assert_eq!(count.load(Ordering::SeqCst), expected, "{scope}");
    }
}

#[tokio::test]
async fn the_cache_is_keyed_by_server() {
    let count = Arc::new(AtomicUsize::new(0));
    let (one, _) = fake_http(private_server("public", count.clone())).await;
    let (two, _) = fake_http(private_server("public", count.clone())).await;
    let cache = Cache::default();
    for url in [&one, &two, &one] {
        Client::builder(HttpTransport::new(url.clone()).unwrap())
            .cache(cache.clone())
            .build()
            .list_tools()
            .await
            .unwrap();
    }
    assert_eq!(count.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn reads_are_cached_by_uri() {
    let count = Arc::new(AtomicUsize::new(0));
    let counter = count.clone();
    let (transport, _) = fake_stdio(Arc::new(move |request: &Request| {
        counter.fetch_add(1, Ordering::SeqCst);
        let uri = request.params.as_ref().unwrap()["uri"].clone();
        vec![reply(
            request,
            json!({"contents": [{"uri": uri, "text": "t"}], "ttlMs": 60000, "cacheScope": "public"}),
        )]
    }));
    let client = Client::builder(transport).build();
    client.read_resource("x://a").await.unwrap();
    let again = client.read_resource("x://a").await.unwrap();
    assert_eq!(again.freshness, Freshness::Cached);
    client.read_resource("x://b").await.unwrap();
    assert_eq!(count.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_listen_notification_invalidates_the_cached_list() {
    let server = support::demo_builder().list_changed(true).build().unwrap();
    for (transport, client) in both(server.clone()).await {
        let before = client.list_tools().await.unwrap();
        assert!(
            before.tools.iter().all(|t| t.name() != "late"),
            "{transport}"
        );
        assert_eq!(
            client.list_tools().await.unwrap().freshness,
            Freshness::Cached
        );
        let filter = SubscriptionFilter {
            tools_list_changed: Some(true),
            ..Default::default()
        };
        let mut events = client.listen(filter.clone()).await.unwrap();
        assert_eq!(
            events.acknowledged().tools_list_changed,
            Some(true),
            "{transport}"
        );
        server
            .add_tool(
                ToolBuilder::new("late")
                    .handler(|a: EchoArgs, _cx: RequestContext| async move { a.text }),
            )
            .unwrap();
        let event = tokio::time::timeout(Duration::from_secs(10), events.next())
            .await
            .expect("a notification")
            .expect("the stream is open")
            .unwrap();
        assert_eq!(event, ListenEvent::ToolsListChanged, "{transport}");
        let after = client.list_tools().await.unwrap();
        assert_eq!(
            after.freshness,
            Freshness::Fetched,
            "{transport}: the cached list was invalidated"
        );
        assert!(
            after.tools.iter().any(|t| t.name() == "late"),
            "{transport}"
        );
        // Calling the new tool works straight away.
        let result = client
            .call_tool("late", json!({"text": "hi"}))
            .await
            .unwrap();
        assert_eq!(result.content[0].as_text(), Some("hi"));
        server.remove_tool("late").unwrap();
    }
}

#[tokio::test]
async fn dropping_a_subscription_ends_it_on_the_server() {
    let server = support::demo_builder().list_changed(true).build().unwrap();
    for (transport, client) in both(server.clone()).await {
        let filter = SubscriptionFilter {
            tools_list_changed: Some(true),
            ..Default::default()
        };
        let events = client.listen(filter).await.unwrap();
        assert_eq!(server.open_subscriptions(), 1, "{transport}");
        drop(events);
        let mut closed = false;
        for _ in 0..200 {
            if server.open_subscriptions() == 0 {
                closed = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(
            closed,
            "{transport}: the server still holds the subscription"
        );
    }
}

#[tokio::test]
async fn a_graceful_server_shutdown_ends_the_stream() {
    let server = support::demo_builder().list_changed(true).build().unwrap();
    for (transport, client) in both(server.clone()).await {
        let filter = SubscriptionFilter {
            tools_list_changed: Some(true),
            ..Default::default()
        };
        let mut events = client.listen(filter).await.unwrap();
        server.shutdown();
        let end = tokio::time::timeout(Duration::from_secs(10), events.next())
            .await
            .expect("the stream ends");
        assert!(end.is_none(), "{transport}: {end:?}");
    }
}

#[tokio::test]
async fn resource_updates_invalidate_that_read_and_a_server_cancel_ends_the_stream() {
    let (transport, received) = fake_stdio(Arc::new(|request: &Request| {
        match request.method.as_str() {
            "resources/read" => {
                let uri = request.params.as_ref().unwrap()["uri"].clone();
                vec![reply(
                    request,
                    json!({"contents": [{"uri": uri, "text": "t"}], "ttlMs": 60000, "cacheScope": "public"}),
                )]
            }
            _ => {
                let sub = json!({"io.modelcontextprotocol/subscriptionId": request.id});
                let note = |method: &str, mut params: Value| {
                    params["_meta"] = sub.clone();
                    serde_json::from_value(
                        json!({"jsonrpc": "2.0", "method": method, "params": params}),
                    )
                    .unwrap()
                };
                vec![
                    note(
                        "notifications/subscriptions/acknowledged",
                        json!({"notifications": {"resourceSubscriptions": ["x://a"]}}),
                    ),
                    note("notifications/resources/updated", json!({"uri": "x://a"})),
                    note("notifications/cancelled", json!({"requestId": request.id})),
                ]
            }
        }
    }));
    let client = Client::builder(transport).build();
    client.read_resource("x://a").await.unwrap();
    client.read_resource("x://b").await.unwrap();
    let filter = SubscriptionFilter {
        resource_subscriptions: Some(vec!["x://a".into()]),
        ..Default::default()
    };
    let mut events = client.listen(filter).await.unwrap();
    assert_eq!(
        events.acknowledged().resource_subscriptions,
        Some(vec!["x://a".to_owned()])
    );
    let updated = events.next().await.unwrap().unwrap();
    assert_eq!(
        updated,
        ListenEvent::ResourceUpdated {
            uri: "x://a".into()
        }
    );
    let end = events.next().await.unwrap().unwrap_err();
    assert!(matches!(end, Error::Cancelled), "{end:?}");
    assert!(events.next().await.is_none());
    assert_eq!(
        client.read_resource("x://a").await.unwrap().freshness,
        Freshness::Fetched
    );
    assert_eq!(
        client.read_resource("x://b").await.unwrap().freshness,
        Freshness::Cached
    );
    let reads = received
        .methods()
        .iter()
        .filter(|m| *m == "resources/read")
        .count();
    assert_eq!(reads, 3);
}
