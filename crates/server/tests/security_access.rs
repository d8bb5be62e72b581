//! Access control: lists show only what the caller may use and are marked
//! `cacheScope: "private"` when they depend on the caller; calling,
//! getting or reading something the caller may not use is answered byte
//! for byte like something that does not exist.

mod security_support;

use reqwest::StatusCode;
use security_support::{Endpoint, call, names, request};
use serde_json::{Value, json};
use toolwire_protocol::{PromptMessage, Role};
use toolwire_server::auth::{AuthConfig, StaticTokens};
use toolwire_server::http::HttpConfig;
use toolwire_server::{
    CacheHint, NoArgs, Principal, PromptBuilder, RequestContext, ResourceBuilder, Server,
    ToolBuilder, text_contents,
};

const ADMIN: &str = "admin-token-0123456789abcdef";
const USER: &str = "user-token-0123456789abcdef0";

fn tokens() -> StaticTokens {
    StaticTokens::new()
        .token(ADMIN, Principal::new("ada").with_scopes(["admin"]))
        .token(USER, Principal::new("bob"))
}

/// A server with one public and one admin-only entry of each kind; without
/// `scoped`, the admin-only entries do not exist at all.
fn server(scoped: bool) -> Server {
    let mut builder =
        Server::builder("access-test", "1")
            .tool(
                ToolBuilder::new("public_tool")
                    .handler(|_: NoArgs, _cx: RequestContext| async { "public" }),
            )
            .prompt(
                PromptBuilder::new("public_prompt")
                    .handler(|_, _cx| async { Ok(vec![PromptMessage::text(Role::User, "hi")]) }),
            )
            .resource(ResourceBuilder::new("test://public", "public").handler(
                |req, _cx| async move { Ok(vec![text_contents(req.uri, "text/plain", "public")]) },
            ));
    if scoped {
        builder = builder
            .tool(
                ToolBuilder::new("admin_tool")
                    .require_scopes(["admin"])
                    .handler(|_: NoArgs, _cx: RequestContext| async { "admin" }),
            )
            .prompt(
                PromptBuilder::new("admin_prompt")
                    .require_scopes(["admin"])
                    .handler(|_, _cx| async { Ok(vec![PromptMessage::text(Role::User, "hi")]) }),
            )
            .resource(
                ResourceBuilder::new("test://admin", "admin")
                    .require_scopes(["admin"])
                    .cache(CacheHint {
                        ttl_ms: 1000,
                        scope: toolwire_protocol::CacheScope::Public,
                    })
                    .handler(|req, _cx| async move {
                        Ok(vec![text_contents(req.uri, "text/plain", "secret")])
                    }),
            );
    }
    builder.build().unwrap()
}

async fn endpoint(scoped: bool, auth: bool) -> Endpoint {
    let mut config = HttpConfig::new();
    if auth {
        let auth = AuthConfig::new("https://mcp.example.com/mcp", tokens())
            .unwrap()
            .authorization_server("https://auth.example.com");
        config = config.auth(auth);
    }
    Endpoint::start(server(scoped), config).await
}

#[tokio::test]
async fn lists_show_only_what_the_caller_may_use() {
    let endpoint = endpoint(true, true).await;
    let admin = endpoint.list_tools(Some(ADMIN)).await;
    assert_eq!(
        names(admin.result(), "tools", "name"),
        ["public_tool", "admin_tool"]
    );
    assert_eq!(admin.result()["cacheScope"], "private");
    let user = endpoint.list_tools(Some(USER)).await;
    assert_eq!(names(user.result(), "tools", "name"), ["public_tool"]);
    assert_eq!(user.result()["cacheScope"], "private");

    for (method, field, key, public) in [
        ("prompts/list", "prompts", "name", "public_prompt"),
        ("resources/list", "resources", "uri", "test://public"),
    ] {
        let admin = endpoint
            .post(Some(ADMIN), &request(1, method, json!({})))
            .await;
        assert_eq!(names(admin.result(), field, key).len(), 2, "{method}");
        assert_eq!(admin.result()["cacheScope"], "private", "{method}");
        let user = endpoint
            .post(Some(USER), &request(1, method, json!({})))
            .await;
        assert_eq!(names(user.result(), field, key), [public], "{method}");
        assert_eq!(user.result()["cacheScope"], "private", "{method}");
    }
    endpoint.stop().await;
}

#[tokio::test]
async fn anonymous_lists_are_private_when_entries_require_scopes() {
    // Auth off, but one tool requires a scope: what an anonymous caller
    // sees is not what everyone sees, so it must not be shared.
    let endpoint = endpoint(true, false).await;
    let list = endpoint.list_tools(None).await;
    assert_eq!(names(list.result(), "tools", "name"), ["public_tool"]);
    assert_eq!(list.result()["cacheScope"], "private");
    endpoint.stop().await;
}

#[tokio::test]
async fn lists_are_public_when_nothing_depends_on_the_caller() {
    let endpoint = endpoint(false, false).await;
    for method in ["tools/list", "prompts/list", "resources/list"] {
        let list = endpoint.post(None, &request(1, method, json!({}))).await;
        assert_eq!(list.result()["cacheScope"], "public", "{method}");
    }
    endpoint.stop().await;
    // With authentication on, every list is private (even without scoped entries).
    let endpoint = endpoint_auth_unscoped().await;
    let list = endpoint.list_tools(Some(USER)).await;
    assert_eq!(list.result()["cacheScope"], "private");
    endpoint.stop().await;
}

async fn endpoint_auth_unscoped() -> Endpoint {
    endpoint(false, true).await
}

/// Status, content type and body bytes of a reply.
fn fingerprint(reply: &security_support::Reply) -> (StatusCode, String, String) {
    (
        reply.status,
        reply.header("content-type").to_owned(),
        reply.text.clone(),
    )
}

#[tokio::test]
async fn forbidden_is_byte_for_byte_unknown() {
    let scoped = endpoint(true, true).await;
    let absent = endpoint(false, true).await;
    let cases = [
        call(7, "admin_tool", json!({})),
        request(7, "prompts/get", json!({"name": "admin_prompt"})),
        request(7, "resources/read", json!({"uri": "test://admin"})),
    ];
    for body in &cases {
        let forbidden = scoped.post(Some(USER), body).await;
        let unknown = absent.post(Some(USER), body).await;
        assert_eq!(fingerprint(&forbidden), fingerprint(&unknown), "{body}");
        assert!(forbidden.body.get("error").is_some(), "{}", forbidden.text);
        // The admin is served.
        let allowed = scoped.post(Some(ADMIN), body).await;
        assert!(allowed.body.get("result").is_some(), "{}", allowed.text);
        // And the user's next good request is answered.
        let ok = scoped.call_tool(Some(USER), "public_tool", json!({})).await;
        assert_eq!(ok.text0(), "public");
    }
    let forbidden = scoped.call_tool(Some(USER), "admin_tool", json!({})).await;
    assert_eq!(
        forbidden.text,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Unknown tool: admin_tool"}}"#
    );
    scoped.stop().await;
    absent.stop().await;
}

#[tokio::test]
async fn reading_a_scoped_resource_is_private_whatever_its_hint() {
    let endpoint = endpoint(true, true).await;
    let read = endpoint
        .post(
            Some(ADMIN),
            &request(1, "resources/read", json!({"uri": "test://admin"})),
        )
        .await;
    assert_eq!(read.result()["contents"][0]["text"], "secret");
    assert_eq!(read.result()["cacheScope"], "private");
    assert_eq!(read.result()["ttlMs"], 1000);
    endpoint.stop().await;
}

#[tokio::test]
async fn the_dispatcher_applies_the_same_rules() {
    // No transport: an anonymous principal and a scoped one.
    let s = server(true);
    let anonymous = toolwire_server::RequestEnv::new();
    let admin = toolwire_server::RequestEnv::new()
        .with_principal(Principal::new("ada").with_scopes(["admin"]));
    let list = |env: toolwire_server::RequestEnv| {
        let s = s.clone();
        async move {
            let request = toolwire_protocol::Request::new(
                1,
                "tools/list",
                Some(serde_json::from_value(json!({"_meta": security_support::meta()})).unwrap()),
            );
            serde_json::to_value(s.handle_request(request, env).await).unwrap()
        }
    };
    let seen: Value = list(anonymous).await;
    assert_eq!(names(&seen["result"], "tools", "name"), ["public_tool"]);
    let seen: Value = list(admin).await;
    assert_eq!(
        names(&seen["result"], "tools", "name"),
        ["public_tool", "admin_tool"]
    );
    assert_eq!(seen["result"]["cacheScope"], "private");
}
