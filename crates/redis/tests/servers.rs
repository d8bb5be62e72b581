//! End to end: two `toolwire_server::Server`s sharing one Redis through
//! the crate's stores, called in turn as a load balancer would: the
//! per-principal limits hold across both, a basket made on one is used on
//! the other, and with Redis down both fail closed, then recover.

mod support;

use std::sync::Arc;

use serde_json::{Value, json};
use support::{RedisServer, eventually};
use toolwire_redis::{RedisConnection, RedisHandles, RedisRateLimits};
use toolwire_server::protocol::Request;
use toolwire_server::{
    Handles, NoArgs, Principal, RateLimit, RequestContext, RequestEnv, Server, ServerBuilder,
    Structured, ToolBuilder, ToolError,
};

/// A `tools/call` request with the `_meta` a 2026-07-28 client sends.
fn call(tool: &str, arguments: Value) -> Request {
    let params = json!({
        "name": tool,
        "arguments": arguments,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "redis-test", "version": "0"}
        }
    });
    let Value::Object(params) = params else {
        unreachable!()
    };
    Request::new(1, "tools/call", Some(params))
}

/// What one tool call answered: whether it is a tool error, and its text.
async fn call_as(server: &Server, who: &str, tool: &str, arguments: Value) -> (bool, String) {
    let env = RequestEnv::new().with_principal(Principal::new(who));
    let response = server.handle_request(call(tool, arguments), env).await;
    let response = serde_json::to_value(response).unwrap();
    let result = &response["result"];
    assert!(result.is_object(), "{response}");
    let text = result["content"][0]["text"].as_str().unwrap_or("");
    (result["isError"] == json!(true), text.to_owned())
}

/// A server whose rate-limit buckets are in Redis (through its own connection).
fn limited_server(redis: RedisConnection, configure: fn(ServerBuilder) -> ServerBuilder) -> Server {
    let builder = Server::builder("redis-e2e", "1")
        .rate_limit_store(Arc::new(RedisRateLimits::new(redis)))
        .tool(ToolBuilder::new("free").handler(|_: NoArgs, _cx: RequestContext| async { "free" }))
        .tool(
            ToolBuilder::new("limited")
                .rate_limit(RateLimit::per_minute(2))
                .handler(|_: NoArgs, _cx: RequestContext| async { "done" }),
        );
    configure(builder).build().unwrap()
}

fn ok(text: &str) -> (bool, String) {
    (false, text.to_owned())
}

#[tokio::test]
async fn a_per_principal_tool_call_limit_holds_across_two_servers() {
    let redis = RedisServer::start();
    let four = |b: ServerBuilder| b.tool_call_limit(RateLimit::per_minute(4));
    let a = limited_server(redis.connect().await, four);
    let b = limited_server(redis.connect().await, four);
    for server in [&a, &b, &a, &b] {
        assert_eq!(
            call_as(server, "alice", "free", json!({})).await,
            ok("free")
        );
    }
    // One call per 15 s: the wait is just under 15 s, rounded up.
    for server in [&a, &b] {
        let (error, text) = call_as(server, "alice", "free", json!({})).await;
        assert!(error, "{text}");
        assert!(
            text == "Rate limit reached for tool calls; retry in 15 s"
                || text == "Rate limit reached for tool calls; retry in 14 s",
            "{text}"
        );
    }
    // Bob has his own budget, on either server.
    assert_eq!(call_as(&b, "bob", "free", json!({})).await, ok("free"));
}

#[tokio::test]
async fn a_tools_own_limit_holds_across_two_servers() {
    let redis = RedisServer::start();
    let a = limited_server(redis.connect().await, |b| b);
    let b = limited_server(redis.connect().await, |b| b);
    assert_eq!(call_as(&a, "alice", "limited", json!({})).await, ok("done"));
    assert_eq!(call_as(&b, "alice", "limited", json!({})).await, ok("done"));
    let (error, text) = call_as(&a, "alice", "limited", json!({})).await;
    assert!(error);
    assert!(
        text == "Rate limit reached for tool limited; retry in 30 s"
            || text == "Rate limit reached for tool limited; retry in 29 s",
        "{text}"
    );
    assert_eq!(call_as(&b, "alice", "free", json!({})).await, ok("free"));
    assert_eq!(call_as(&b, "bob", "limited", json!({})).await, ok("done"));
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    basket_id: String,
    sku: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct View {
    basket_id: String,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Created {
    basket_id: String,
}

/// The basket tools with their baskets in Redis (through its own connection).
fn basket_server(redis: RedisConnection) -> Server {
    let baskets: Handles<Vec<String>> = Handles::new("bsk", "basket")
        .created_by("create_basket")
        .store(Arc::new(RedisHandles::new(redis.clone(), "baskets")));
    let (b1, b2, b3) = (baskets.clone(), baskets.clone(), baskets);
    Server::builder("redis-e2e", "1")
        .rate_limit_store(Arc::new(RedisRateLimits::new(redis)))
        .tool(
            ToolBuilder::new("create_basket").handler(move |_: NoArgs, cx: RequestContext| {
                let baskets = b1.clone();
                async move {
                    let basket_id = baskets.create(&cx, Vec::new()).await?;
                    Ok::<_, ToolError>(Structured(Created { basket_id }))
                }
            }),
        )
        .tool(
            ToolBuilder::new("add_item").handler(move |a: Add, cx: RequestContext| {
                let baskets = b2.clone();
                async move {
                    let n = baskets
                        .with(&cx, &a.basket_id, |items| {
                            items.push(a.sku.clone());
                            items.len()
                        })
                        .await?;
                    Ok::<_, ToolError>(format!("{n} item(s)"))
                }
            }),
        )
        .tool(
            ToolBuilder::new("view_basket").handler(move |a: View, cx: RequestContext| {
                let baskets = b3.clone();
                async move { Ok::<_, ToolError>(baskets.get(&cx, &a.basket_id).await?.join(",")) }
            }),
        )
        .build()
        .unwrap()
}

fn not_found(id: &str) -> (bool, String) {
    let text = format!(
        "Basket {id} was not found or has expired (baskets expire after 30 minutes of \
         inactivity); create a new one with create_basket"
    );
    (true, text)
}

#[tokio::test]
async fn a_basket_made_on_one_server_is_filled_on_the_other() {
    let redis = RedisServer::start();
    let a = basket_server(redis.connect().await);
    let b = basket_server(redis.connect().await);
    let (error, text) = call_as(&a, "alice", "create_basket", json!({})).await;
    assert!(!error, "{text}");
    let id = serde_json::from_str::<Value>(&text).unwrap()["basket_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let add = |sku: &str| json!({"basket_id": id, "sku": sku});
    assert_eq!(
        call_as(&b, "alice", "add_item", add("apple")).await,
        ok("1 item(s)")
    );
    assert_eq!(
        call_as(&a, "alice", "add_item", add("pear")).await,
        ok("2 item(s)")
    );
    let view = json!({"basket_id": id});
    assert_eq!(
        call_as(&b, "alice", "view_basket", view.clone()).await,
        ok("apple,pear")
    );
    // Bob holding alice's id gets what an unknown id gets.
    assert_eq!(
        call_as(&a, "bob", "view_basket", view).await,
        not_found(&id)
    );
}

#[tokio::test]
async fn with_redis_down_both_fail_closed_then_recover() {
    let mut redis = RedisServer::start();
    let a = basket_server(redis.connect().await);
    let b = basket_server(redis.connect().await);
    redis.kill();
    // The refusal says why: not a limit reached, Redis unreachable.
    let refused = (
        true,
        format!(
            "Rate limits cannot be checked (Redis at 127.0.0.1:{} is unreachable); retry in 1 s",
            redis.port()
        ),
    );
    assert_eq!(
        call_as(&a, "alice", "create_basket", json!({})).await,
        refused
    );
    assert_eq!(
        call_as(&b, "alice", "create_basket", json!({})).await,
        refused
    );
    redis.restart();
    eventually("calls go through again", || async {
        let (error, _) = call_as(&b, "alice", "create_basket", json!({})).await;
        !error
    })
    .await;
    assert!(!call_as(&a, "alice", "create_basket", json!({})).await.0);
}

#[tokio::test]
async fn with_redis_down_a_handle_tool_says_so() {
    let mut redis = RedisServer::start();
    // Rate limits in memory here, so that the handle store is what fails.
    let baskets: Handles<Vec<String>> = Handles::new("bsk", "basket").store(Arc::new(
        RedisHandles::new(redis.connect().await, "baskets"),
    ));
    let server = Server::builder("redis-e2e", "1")
        .tool(
            ToolBuilder::new("create_basket").handler(move |_: NoArgs, cx: RequestContext| {
                let baskets = baskets.clone();
                async move { baskets.create(&cx, Vec::new()).await }
            }),
        )
        .build()
        .unwrap();
    redis.kill();
    let unavailable = "The server could not reach its state store; try again shortly";
    assert_eq!(
        call_as(&server, "alice", "create_basket", json!({})).await,
        (true, unavailable.to_owned())
    );
}
