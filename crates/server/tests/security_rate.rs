//! Rate limits: a tool's own limit and the per-principal limit on tool
//! calls answer with a tool execution error that says when to retry, and
//! recover; an HTTP request flood gets 429 with `Retry-After`. Waits are
//! bounded; nothing asserts how long anything took.

mod security_support;

use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use security_support::{Endpoint, Reply, WAIT};
use serde_json::json;
use toolwire_server::auth::{AuthConfig, StaticTokens};
use toolwire_server::http::HttpConfig;
use toolwire_server::{
    InMemoryRateLimits, NoArgs, Principal, RateLimit, RateLimitStore, RequestContext, Server,
    ToolBuilder,
};

const ALICE: &str = "alice-token-0123456789abcdef";
const BOB: &str = "bob-token-0123456789abcdef00";

fn auth() -> AuthConfig {
    let tokens = StaticTokens::new()
        .token(ALICE, Principal::new("alice"))
        .token(BOB, Principal::new("bob"));
    AuthConfig::new("https://mcp.example.com/mcp", tokens)
        .unwrap()
        .authorization_server("https://auth.example.com")
}

fn tools(builder: toolwire_server::ServerBuilder, limited: RateLimit) -> Server {
    builder
        .tool(
            ToolBuilder::new("limited")
                .rate_limit(limited)
                .handler(|_: NoArgs, _cx: RequestContext| async { "done" }),
        )
        .tool(ToolBuilder::new("free").handler(|_: NoArgs, _cx: RequestContext| async { "free" }))
        .build()
        .unwrap()
}

/// Calls `tool` until it succeeds, at most for [`WAIT`].
async fn until_ok(endpoint: &Endpoint, token: Option<&str>, tool: &str) -> Reply {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let reply = endpoint.call_tool(token, tool, json!({})).await;
        if !reply.is_tool_error() {
            return reply;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "still limited: {}",
            reply.text
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_tools_own_limit_is_reached_and_recovers() {
    // Two calls at once, then one every 250 ms.
    let limit = RateLimit::new(4, Duration::from_secs(1)).burst(2);
    let server = tools(Server::builder("rate", "1"), limit);
    let endpoint = Endpoint::start(server, HttpConfig::new().auth(auth())).await;
    for _ in 0..2 {
        let ok = endpoint.call_tool(Some(ALICE), "limited", json!({})).await;
        assert_eq!(ok.text0(), "done");
    }
    let limited = endpoint.call_tool(Some(ALICE), "limited", json!({})).await;
    assert!(limited.is_tool_error());
    assert_eq!(limited.status, StatusCode::OK);
    assert_eq!(
        limited.result()["content"],
        json!([{"type": "text", "text": "Rate limit reached for tool limited; retry in 1 s"}])
    );
    // Other tools and other principals are not limited.
    assert_eq!(
        endpoint
            .call_tool(Some(ALICE), "free", json!({}))
            .await
            .text0(),
        "free"
    );
    assert_eq!(
        endpoint
            .call_tool(Some(BOB), "limited", json!({}))
            .await
            .text0(),
        "done"
    );
    // Recovered once the bucket refills.
    assert_eq!(
        until_ok(&endpoint, Some(ALICE), "limited").await.text0(),
        "done"
    );
    endpoint.stop().await;
}

#[tokio::test]
async fn the_per_principal_tool_call_limit_covers_every_tool() {
    let builder = Server::builder("rate", "1").tool_call_limit(RateLimit::per_minute(3));
    let server = tools(builder, RateLimit::per_second(1000));
    let endpoint = Endpoint::start(server, HttpConfig::new().auth(auth())).await;
    for tool in ["free", "limited", "free"] {
        assert!(
            !endpoint
                .call_tool(Some(ALICE), tool, json!({}))
                .await
                .is_tool_error()
        );
    }
    let limited = endpoint.call_tool(Some(ALICE), "limited", json!({})).await;
    let text = limited.text0();
    assert!(limited.is_tool_error());
    // One call per 20 s: the wait is just under 20 s, rounded up.
    assert!(
        text == "Rate limit reached for tool calls; retry in 20 s"
            || text == "Rate limit reached for tool calls; retry in 19 s",
        "{text}"
    );
    let limited = endpoint.call_tool(Some(ALICE), "free", json!({})).await;
    assert!(
        limited
            .text0()
            .starts_with("Rate limit reached for tool calls; retry in ")
    );
    // Bob has his own bucket; listing is not a tool call.
    assert_eq!(
        endpoint
            .call_tool(Some(BOB), "free", json!({}))
            .await
            .text0(),
        "free"
    );
    assert_eq!(
        endpoint.list_tools(Some(ALICE)).await.status,
        StatusCode::OK
    );
    endpoint.stop().await;
}

#[tokio::test]
async fn the_default_limit_is_generous_and_can_be_removed() {
    let server = Server::builder("rate", "1")
        .tool(ToolBuilder::new("free").handler(|_: NoArgs, _cx: RequestContext| async { "free" }))
        .build()
        .unwrap();
    assert_eq!(
        server.config().tool_call_limit,
        Some(toolwire_server::DEFAULT_TOOL_CALL_LIMIT)
    );
    let limit = toolwire_server::DEFAULT_TOOL_CALL_LIMIT;
    assert_eq!(
        (limit.count(), limit.period(), limit.get_burst()),
        (100, Duration::from_secs(1), 200)
    );
    let server = Server::builder("rate", "1")
        .no_tool_call_limit()
        .build()
        .unwrap();
    assert_eq!(server.config().tool_call_limit, None);
}

#[tokio::test]
async fn an_http_flood_gets_429_with_retry_after() {
    let server = tools(Server::builder("rate", "1"), RateLimit::per_second(1000));
    let config = HttpConfig::new()
        .auth(auth())
        .request_limit(RateLimit::per_minute(2));
    let endpoint = Endpoint::start(server, config).await;
    for _ in 0..2 {
        assert_eq!(
            endpoint.list_tools(Some(ALICE)).await.status,
            StatusCode::OK
        );
    }
    let flood = endpoint.list_tools(Some(ALICE)).await;
    assert_eq!(flood.status, StatusCode::TOO_MANY_REQUESTS);
    let retry: u64 = flood.header("retry-after").parse().unwrap();
    assert!(retry == 30 || retry == 29, "{retry}");
    assert_eq!(flood.body["error"]["code"], -32600);
    assert_eq!(
        flood.body["error"]["message"],
        format!("Invalid request: too many requests; retry in {retry} s")
    );
    // Another principal is not affected.
    assert_eq!(endpoint.list_tools(Some(BOB)).await.status, StatusCode::OK);
    endpoint.stop().await;
}

#[tokio::test]
async fn an_anonymous_flood_is_keyed_by_address_and_recovers() {
    let server = tools(Server::builder("rate", "1"), RateLimit::per_second(1000));
    let config = HttpConfig::new().request_limit(RateLimit::new(1, Duration::from_millis(300)));
    let endpoint = Endpoint::start(server, config).await;
    assert_eq!(endpoint.list_tools(None).await.status, StatusCode::OK);
    let flood = endpoint.list_tools(None).await;
    assert_eq!(flood.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(flood.header("retry-after"), "1");
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let reply = endpoint.list_tools(None).await;
        if reply.status == StatusCode::OK {
            break;
        }
        assert_eq!(reply.status, StatusCode::TOO_MANY_REQUESTS);
        assert!(tokio::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    endpoint.stop().await;
}

#[tokio::test]
async fn a_shared_store_replaces_memory() {
    // One store behind two servers: they share the buckets.
    let store: Arc<dyn RateLimitStore> = Arc::new(InMemoryRateLimits::new());
    let make = || {
        Server::builder("rate", "1")
            .rate_limit_store(Arc::clone(&store))
            .tool_call_limit(RateLimit::per_minute(2))
            .tool(
                ToolBuilder::new("free").handler(|_: NoArgs, _cx: RequestContext| async { "free" }),
            )
            .build()
            .unwrap()
    };
    let (one, two) = (make(), make());
    let first = Endpoint::start(one, HttpConfig::new()).await;
    let second = Endpoint::start(two, HttpConfig::new()).await;
    assert_eq!(
        first.call_tool(None, "free", json!({})).await.text0(),
        "free"
    );
    assert_eq!(
        second.call_tool(None, "free", json!({})).await.text0(),
        "free"
    );
    assert!(
        first
            .call_tool(None, "free", json!({}))
            .await
            .is_tool_error()
    );
    assert!(
        second
            .call_tool(None, "free", json!({}))
            .await
            .is_tool_error()
    );
    first.stop().await;
    second.stop().await;
}

#[tokio::test]
async fn refused_requests_count_against_the_address() {
    let server = tools(Server::builder("rate", "1"), RateLimit::per_second(1000));
    let config = HttpConfig::new()
        .auth(auth())
        .request_limit(RateLimit::per_minute(2));
    let endpoint = Endpoint::start(server, config).await;
    for _ in 0..2 {
        let refused = endpoint.list_tools(Some("guessed-token")).await;
        assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
    }
    let flood = endpoint.list_tools(Some("guessed-token")).await;
    assert_eq!(flood.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(!flood.header("retry-after").is_empty());
    // A valid token has its own bucket.
    assert_eq!(
        endpoint.list_tools(Some(ALICE)).await.status,
        StatusCode::OK
    );
    endpoint.stop().await;
}
