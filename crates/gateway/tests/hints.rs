//! The gateway's list results carry the most cautious caching hints of its
//! upstreams' lists: the shortest `ttlMs`, and `private` when any upstream
//! says so. Upstreams and gateway are real servers on loopback HTTP.

mod support;

use std::time::Duration;

use support::serve;
use toolwire_client::transport::HttpTransport;
use toolwire_client::{CacheHints, Client};
use toolwire_gateway::Gateway;
use toolwire_gateway::config::GatewayConfig;
use toolwire_server::http::{HttpConfig, HttpServer};
use toolwire_server::protocol::CacheScope;
use toolwire_server::protocol::{PromptMessage, Role};
use toolwire_server::{
    NoArgs, PromptBuilder, RequestContext, ResourceTemplateBuilder, Server, ToolBuilder,
};

/// A server with one tool `tool` whose lists say `ttl_ms` and `scope`,
/// on loopback; its URL.
async fn upstream(tool: &str, ttl_ms: u64, scope: CacheScope) -> String {
    serve(upstream_server(tool, ttl_ms, scope).build().unwrap()).await
}

fn upstream_server(tool: &str, ttl_ms: u64, scope: CacheScope) -> toolwire_server::ServerBuilder {
    Server::builder("upstream", "1")
        .list_cache(ttl_ms, scope)
        .tool(ToolBuilder::new(tool).handler(|_: NoArgs, _cx: RequestContext| async { "done" }))
}

/// A gateway in front of `urls` (upstreams `u0`, `u1`, ...), on loopback;
/// a client of it.
async fn gateway(urls: &[String]) -> (Gateway, Client) {
    let mut text = "[gateway]\nhttp = \"127.0.0.1:0\"\n".to_owned();
    for (n, url) in urls.iter().enumerate() {
        text.push_str(&format!("\n[[upstream]]\nname = \"u{n}\"\nurl = {url:?}\n"));
    }
    let config = GatewayConfig::parse(&text, "gw.toml").unwrap();
    let gateway = Gateway::start(&config).await.unwrap();
    assert_eq!(gateway.failures(), []);
    let url = serve(gateway.server().clone()).await;
    let transport = HttpTransport::builder(url).build().unwrap();
    let client = Client::builder(transport)
        .timeout(Duration::from_secs(10))
        .build();
    (gateway, client)
}

fn hints(ttl_ms: u64, scope: CacheScope) -> CacheHints {
    CacheHints { ttl_ms, scope }
}

#[tokio::test]
async fn the_shortest_ttl_of_the_upstreams_is_advertised() {
    let a = upstream("ping", 20_000, CacheScope::Public).await;
    let b = upstream("pong", 5_000, CacheScope::Public).await;
    let (_gateway, client) = gateway(&[a, b]).await;
    let listed = client.list_tools().await.unwrap();
    let names: Vec<&str> = listed.tools.iter().map(|t| t.name()).collect();
    assert_eq!(names, ["u0__ping", "u1__pong"]);
    assert_eq!(listed.hints, hints(5_000, CacheScope::Public));
}

#[tokio::test]
async fn one_private_upstream_makes_the_list_private() {
    let a = upstream("ping", 5_000, CacheScope::Public).await;
    let b = upstream("pong", 60_000, CacheScope::Private).await;
    let (_gateway, client) = gateway(&[a, b]).await;
    let listed = client.list_tools().await.unwrap();
    assert_eq!(listed.hints, hints(5_000, CacheScope::Private));
}

#[tokio::test]
async fn never_longer_than_an_upstream_said_even_below_the_gateways_own() {
    // The gateway's own default is 60 s public; an upstream saying 0
    // (immediately stale) wins.
    let a = upstream("ping", 0, CacheScope::Public).await;
    let (_gateway, client) = gateway(&[a]).await;
    let listed = client.list_tools().await.unwrap();
    assert_eq!(listed.hints, hints(0, CacheScope::Public));
}

#[tokio::test]
async fn an_upstream_longer_than_the_gateways_default_is_followed() {
    let a = upstream("ping", 600_000, CacheScope::Public).await;
    let b = upstream("pong", 300_000, CacheScope::Public).await;
    let (_gateway, client) = gateway(&[a, b]).await;
    let listed = client.list_tools().await.unwrap();
    assert_eq!(listed.hints, hints(300_000, CacheScope::Public));
}

#[tokio::test]
async fn each_list_is_merged_from_the_upstreams_that_list_it() {
    let greet = PromptBuilder::new("greet")
        .handler(|_args, _cx| async { Ok(vec![PromptMessage::text(Role::User, "Hello")]) });
    let a = upstream_server("ping", 7_000, CacheScope::Public)
        .prompt(greet)
        .build()
        .unwrap();
    let a = serve(a).await;
    // b has no prompts (its prompts/list is refused): only a's count there.
    let b = upstream("pong", 3_000, CacheScope::Private).await;
    let (_gateway, client) = gateway(&[a, b]).await;
    let tools = client.list_tools().await.unwrap();
    assert_eq!(tools.hints, hints(3_000, CacheScope::Private));
    let prompts = client.list_prompts().await.unwrap();
    let names: Vec<&str> = prompts.value.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["u0__greet"]);
    assert_eq!(prompts.hints, hints(7_000, CacheScope::Public));
}

#[tokio::test]
async fn resource_templates_are_merged_too() {
    let template = |uri: &str| {
        ResourceTemplateBuilder::new(uri, "file").handler(|_request, _cx| async { Ok(Vec::new()) })
    };
    let a = upstream_server("ping", 9_000, CacheScope::Public)
        .resource_template(template("a://{path}"))
        .build()
        .unwrap();
    let b = upstream_server("pong", 4_000, CacheScope::Private)
        .resource_template(template("b://{path}"))
        .build()
        .unwrap();
    let (a, b) = (serve(a).await, serve(b).await);
    let (_gateway, client) = gateway(&[a, b]).await;
    let templates = client.list_resource_templates().await.unwrap();
    let uris: Vec<&str> = templates
        .value
        .iter()
        .map(|t| t.uri_template.as_str())
        .collect();
    assert_eq!(uris, ["a://{path}", "b://{path}"]);
    assert_eq!(templates.hints, hints(4_000, CacheScope::Private));
}

#[tokio::test]
async fn an_upstream_that_leaves_no_longer_counts() {
    let a = upstream("ping", 20_000, CacheScope::Public).await;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let b = upstream_server("pong", 1_000, CacheScope::Private)
        .build()
        .unwrap();
    let addr = "127.0.0.1:0".parse().unwrap();
    let http = HttpServer::bind(addr, b, HttpConfig::new()).await.unwrap();
    let b = format!("http://{}/mcp", http.local_addr());
    let served = tokio::spawn(http.run_until(async {
        let _ = stopped.await;
    }));
    let (gateway, client) = gateway(&[a, b]).await;
    gateway.watch_upstreams();
    assert_eq!(
        client.list_tools().await.unwrap().hints,
        hints(1_000, CacheScope::Private)
    );

    let _ = stop.send(());
    served.await.unwrap().unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        client.cache().clear();
        let listed = client.list_tools().await.unwrap();
        let names: Vec<&str> = listed.tools.iter().map(|t| t.name()).collect();
        // Its tools leave first, then its hints stop counting.
        if names == ["u0__ping"] && listed.hints == hints(20_000, CacheScope::Public) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "not within 20 s: {names:?} {:?}",
            listed.hints
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
