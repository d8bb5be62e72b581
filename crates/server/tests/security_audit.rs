//! The audit log: one `tool_call` event per call with principal, tool,
//! argument digest, outcome and duration, and one `denial` event per
//! refusal (authentication, scope, forbidden, rate limit), all with target
//! `toolwire::audit`. Arguments themselves never reach the log.

mod security_support;

use security_support::{Endpoint, Event, capture, meta};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use toolwire_protocol::Request;
use toolwire_server::auth::{AuthConfig, StaticTokens};
use toolwire_server::http::HttpConfig;
use toolwire_server::{
    InputLimits, NoArgs, Principal, RateLimit, RequestContext, RequestEnv, Server, ToolBuilder,
    ToolError,
};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Echo {
    text: String,
}

fn server() -> Server {
    Server::builder("audit-test", "1")
        .input_limits(InputLimits::default().max_string_bytes(100))
        .tool(
            ToolBuilder::new("echo").handler(|a: Echo, _cx: RequestContext| async move { a.text }),
        )
        .tool(
            ToolBuilder::new("fail").handler(|_: NoArgs, _cx: RequestContext| async {
                Err::<String, _>(ToolError::new("nope"))
            }),
        )
        .tool(
            ToolBuilder::new("admin")
                .require_scopes(["admin"])
                .handler(|_: NoArgs, _cx: RequestContext| async { "admin" }),
        )
        .tool(
            ToolBuilder::new("once")
                .rate_limit(RateLimit::per_minute(1))
                .handler(|_: NoArgs, _cx: RequestContext| async { "once" }),
        )
        .build()
        .unwrap()
}

async fn call(server: &Server, principal: Option<&str>, tool: &str, arguments: Value) -> Value {
    let params = json!({"name": tool, "arguments": arguments, "_meta": meta()});
    let request = Request::new(1, "tools/call", Some(params.as_object().unwrap().clone()));
    let env = match principal {
        Some(subject) => RequestEnv::new().with_principal(Principal::new(subject)),
        None => RequestEnv::new(),
    };
    serde_json::to_value(server.handle_request(request, env).await).unwrap()
}

fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn only(events: &[Event], kind: &str) -> Vec<Event> {
    events
        .iter()
        .filter(|e| e.field("event") == kind)
        .cloned()
        .collect()
}

#[tokio::test]
async fn every_tool_call_is_logged_with_its_outcome() {
    let (captured, _guard) = capture();
    let s = server();
    call(
        &s,
        Some("alice"),
        "echo",
        json!({"text": "secret-value", "z": 1}),
    )
    .await;
    call(&s, Some("alice"), "fail", json!({})).await;
    call(&s, None, "echo", json!({"text": "x".repeat(101)})).await;
    call(&s, None, "echo", json!({"wrong": 1})).await;
    call(&s, None, "no_such_tool", json!({})).await;

    let events = captured.audit();
    let calls = only(&events, "tool_call");
    assert_eq!(calls.len(), 5, "{events:#?}");
    let summary: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|e| (e.field("principal"), e.field("tool"), e.field("outcome")))
        .collect();
    assert_eq!(
        summary,
        [
            ("\"alice\"", "\"echo\"", "ok"),
            ("\"alice\"", "\"fail\"", "tool_error"),
            ("\"<anonymous>\"", "\"echo\"", "tool_error"),
            ("\"<anonymous>\"", "\"echo\"", "tool_error"),
            ("\"<anonymous>\"", "\"no_such_tool\"", "protocol_error"),
        ]
    );
    // The digest is of the canonical JSON (keys sorted); the value itself is never logged.
    assert_eq!(
        calls[0].field("arguments_sha256"),
        sha256_hex(r#"{"text":"secret-value","z":1}"#)
    );
    assert_eq!(calls[1].field("arguments_sha256"), sha256_hex("{}"));
    for call in &calls {
        assert!(call.field("duration_ms").parse::<u64>().is_ok());
    }
    let everything = format!("{events:?}");
    assert!(!everything.contains("secret-value"));
    assert!(only(&events, "denial").is_empty());
}

/// A server whose `seen` tool answers with what its handler was told of
/// the digest.
fn digest_server() -> Server {
    Server::builder("audit-test", "1")
        .tool(ToolBuilder::new("seen").raw_handler(
            json!({"type": "object"}).as_object().unwrap().clone(),
            |_args, cx: RequestContext| async move {
                let seen = cx.arguments_sha256().unwrap_or("none").to_owned();
                Ok::<_, ToolError>(toolwire_server::ToolOutput::Complete(
                    toolwire_server::protocol::CallToolResult::text(seen),
                ))
            },
        ))
        .build()
        .unwrap()
}

fn first_text(reply: &Value) -> &str {
    reply["result"]["content"][0]["text"].as_str().unwrap()
}

#[tokio::test]
async fn a_handler_is_told_the_digest_the_audit_record_logs() {
    let arguments = json!({"z": [1, {"b": true, "a": null}], "a": "x"});
    let (captured, guard) = capture();
    let reply = call(&digest_server(), Some("alice"), "seen", arguments.clone()).await;
    let logged = only(&captured.audit(), "tool_call");
    assert_eq!(logged.len(), 1, "{logged:#?}");
    let expected = sha256_hex(r#"{"a":"x","z":[1,{"a":null,"b":true}]}"#);
    assert_eq!(logged[0].field("arguments_sha256"), expected);
    assert_eq!(first_text(&reply), expected, "{reply}");

    // Nobody listening to audit events: nothing was computed to be told.
    drop(guard);
    let reply = call(&digest_server(), Some("alice"), "seen", arguments).await;
    assert_eq!(first_text(&reply), "none", "{reply}");
}

#[tokio::test]
async fn a_call_dropped_before_its_outcome_is_logged_as_cancelled() {
    let (captured, _guard) = capture();
    let started = std::sync::Arc::new(tokio::sync::Notify::new());
    let signal = std::sync::Arc::clone(&started);
    let hang = move |_: NoArgs| {
        signal.notify_one();
        std::future::pending::<String>()
    };
    let s = Server::builder("audit-test", "1")
        .tool(ToolBuilder::new("hang").handler(hang))
        .build()
        .unwrap();
    // The call is dropped once its handler runs.
    tokio::select! {
        _ = call(&s, Some("carol"), "hang", json!({})) => panic!("the call never ends"),
        _ = started.notified() => {}
    }

    let events = captured.audit();
    let calls = only(&events, "tool_call");
    let summary: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|e| (e.field("principal"), e.field("tool"), e.field("outcome")))
        .collect();
    assert_eq!(summary, [("\"carol\"", "\"hang\"", "cancelled")]);
}

#[tokio::test]
async fn denials_are_logged() {
    let (captured, _guard) = capture();
    let s = server();
    call(&s, Some("bob"), "admin", json!({})).await;
    call(&s, Some("bob"), "once", json!({})).await;
    call(&s, Some("bob"), "once", json!({})).await;

    let events = captured.audit();
    let outcomes: Vec<String> = only(&events, "tool_call")
        .iter()
        .map(|e| e.field("outcome").to_owned())
        .collect();
    assert_eq!(outcomes, ["denied", "ok", "rate_limited"]);
    let denials: Vec<(String, String, String)> = only(&events, "denial")
        .iter()
        .map(|e| {
            (
                e.field("reason").to_owned(),
                e.field("principal").to_owned(),
                e.field("detail").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        denials,
        [
            (
                "forbidden".to_owned(),
                "\"bob\"".to_owned(),
                "\"tool admin\"".to_owned()
            ),
            (
                "rate_limited".to_owned(),
                "\"bob\"".to_owned(),
                "\"tool once\"".to_owned()
            ),
        ]
    );
}

#[tokio::test]
async fn authentication_failures_are_logged() {
    let (captured, _guard) = capture();
    let tokens = StaticTokens::new().token("alice-token-0123456789abcdef", Principal::new("alice"));
    let auth = AuthConfig::new("https://mcp.example.com/mcp", tokens)
        .unwrap()
        .authorization_server("https://auth.example.com")
        .require_scopes(["mcp:use"]);
    let endpoint = Endpoint::start(server(), HttpConfig::new().auth(auth)).await;
    endpoint.call_tool(None, "echo", json!({"text": "a"})).await;
    endpoint
        .call_tool(Some("wrong-token"), "echo", json!({"text": "a"}))
        .await;
    endpoint
        .call_tool(
            Some("alice-token-0123456789abcdef"),
            "echo",
            json!({"text": "a"}),
        )
        .await;
    endpoint.stop().await;

    let events = captured.audit();
    let denials: Vec<(String, String, String)> = only(&events, "denial")
        .iter()
        .map(|e| {
            (
                e.field("reason").to_owned(),
                e.field("principal").to_owned(),
                e.field("detail").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        denials,
        [
            (
                "auth_failed".to_owned(),
                "\"<anonymous>\"".to_owned(),
                "\"no access token\"".to_owned()
            ),
            (
                "auth_failed".to_owned(),
                "\"<anonymous>\"".to_owned(),
                "\"The access token is not valid\"".to_owned()
            ),
            (
                "insufficient_scope".to_owned(),
                "\"alice\"".to_owned(),
                "\"This server needs the scope mcp:use\"".to_owned()
            ),
        ]
    );
    // No tool ran.
    assert!(only(&events, "tool_call").is_empty());
}
