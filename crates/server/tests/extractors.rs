//! Handlers that take their arguments, the request context and shared
//! state as parameters, in any order; and `ToolBuilder::header`.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use common::*;
use serde_json::json;
use toolwire_server::{RequestContext, Server, State, ToolBuilder, ToolError};

#[derive(Clone, Default)]
struct Counter(Arc<AtomicU32>);

#[derive(Clone)]
struct Prefix(&'static str);

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    /// How much to add.
    by: u32,
}

async fn add(State(counter): State<Counter>, args: Add) -> String {
    (counter.0.fetch_add(args.by, Ordering::SeqCst) + args.by).to_string()
}

async fn add_last(
    cx: RequestContext,
    State(prefix): State<Prefix>,
    State(counter): State<Counter>,
    args: Add,
) -> String {
    let total = counter.0.fetch_add(args.by, Ordering::SeqCst) + args.by;
    format!("{}{total} for {}", prefix.0, cx.method())
}

async fn peek(State(counter): State<Counter>) -> String {
    counter.0.load(Ordering::SeqCst).to_string()
}

fn call_args(id: i64, name: &str, arguments: serde_json::Value) -> toolwire_protocol::Request {
    request(
        id,
        "tools/call",
        json!({"name": name, "arguments": arguments}),
    )
}

#[tokio::test]
async fn handlers_take_state_arguments_and_context_in_any_order() {
    let counter = Counter::default();
    let server = Server::builder("extractors", "1")
        .state(counter.clone())
        .state(Prefix("total "))
        .tool(ToolBuilder::new("add").handler(add))
        .tool(ToolBuilder::new("add_last").handler(add_last))
        .tool(ToolBuilder::new("peek").handler(peek))
        .tool(
            ToolBuilder::new("own_prefix")
                .state(Prefix("mine: "))
                .handler(add_last),
        )
        .build()
        .unwrap();

    let listed = result(&server, request(1, "tools/list", json!({}))).await;
    let schemas: Vec<_> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["name"].clone(), t["inputSchema"]["required"].clone()))
        .collect();
    assert_eq!(
        schemas,
        [
            (json!("add"), json!(["by"])),
            (json!("add_last"), json!(["by"])),
            (json!("peek"), json!(null)),
            (json!("own_prefix"), json!(["by"])),
        ]
    );
    assert_eq!(
        listed["tools"][2]["inputSchema"],
        json!({"type": "object", "additionalProperties": false}),
        "no arguments parameter: the tool takes none"
    );

    let r = result(&server, call_args(2, "add", json!({"by": 2}))).await;
    assert_eq!(r["content"][0]["text"], "2");
    let r = result(&server, call_args(3, "add_last", json!({"by": 3}))).await;
    assert_eq!(r["content"][0]["text"], "total 5 for tools/call");
    let r = result(&server, call_args(4, "own_prefix", json!({"by": 1}))).await;
    assert_eq!(
        r["content"][0]["text"], "mine: 6 for tools/call",
        "the tool's own state wins over the server's"
    );
    let r = result(&server, call_args(5, "peek", json!({}))).await;
    assert_eq!(r["content"][0]["text"], "6");
    assert_eq!(counter.0.load(Ordering::SeqCst), 6, "one shared state");

    let r = result(&server, call_args(6, "peek", json!({"by": 1}))).await;
    assert_eq!(r["isError"], true, "checked against the empty schema: {r}");
    let r = result(&server, call_args(7, "add", json!({"by": "two"}))).await;
    assert_eq!(r["isError"], true, "{r}");
}

#[tokio::test]
async fn tools_added_later_get_the_servers_state() {
    let server = Server::builder("extractors", "1")
        .state(Counter::default())
        .build()
        .unwrap();
    server
        .add_tool(ToolBuilder::new("peek").handler(peek))
        .unwrap();
    let r = result(&server, call_args(1, "peek", json!({}))).await;
    assert_eq!(r["content"][0]["text"], "0");
}

#[test]
fn a_state_no_one_gave_fails_the_build_with_its_type() {
    let error = Server::builder("extractors", "1")
        .tool(ToolBuilder::new("peek").handler(peek))
        .build()
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "tool \"peek\": its handler takes State<extractors::Counter>, but no state of that type \
         was given (ServerBuilder::state or ToolBuilder::state)"
    );
    let server = Server::builder("extractors", "1").build().unwrap();
    let error = server
        .add_tool(ToolBuilder::new("peek").handler(peek))
        .unwrap_err();
    assert!(
        error.to_string().contains("State<extractors::Counter>"),
        "{error}"
    );
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Other {
    #[allow(dead_code)]
    name: String,
}

#[test]
fn two_arguments_types_fail_the_build() {
    let error = Server::builder("extractors", "1")
        .tool(ToolBuilder::new("both").handler(|_: Add, _: Other| async { "x" }))
        .build()
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "tool \"both\": its handler takes 2 arguments parameters (extractors::Add, \
         extractors::Other): at most one"
    );
}

#[tokio::test]
async fn a_closure_with_no_parameters_is_a_handler() {
    let server = Server::builder("extractors", "1")
        .tool(ToolBuilder::new("ping").handler(|| async { Ok::<_, ToolError>("pong") }))
        .build()
        .unwrap();
    let r = result(&server, call_args(1, "ping", json!({}))).await;
    assert_eq!(r["content"][0]["text"], "pong");
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Lookup {
    region: String,
}

#[tokio::test]
async fn header_marks_a_parameter_before_or_after_the_handler() {
    let lookup = |args: Lookup| async move { args.region };
    let server = Server::builder("headers", "1")
        .tool(
            ToolBuilder::new("after")
                .handler(lookup)
                .header("region", "Region"),
        )
        .tool(
            ToolBuilder::new("before")
                .header("region", "Zone")
                .handler(lookup),
        )
        .build()
        .unwrap();
    let listed = result(&server, request(1, "tools/list", json!({}))).await;
    let headers: Vec<_> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["inputSchema"]["properties"]["region"]["x-mcp-header"].clone())
        .collect();
    assert_eq!(headers, [json!("Region"), json!("Zone")]);
}

#[test]
fn a_header_on_a_missing_parameter_fails_the_build() {
    let error = Server::builder("headers", "1")
        .tool(
            ToolBuilder::new("lookup")
                .handler(|args: Lookup| async move { args.region })
                .header("zone", "Zone"),
        )
        .build()
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "tool \"lookup\": header(\"zone\", ..) names no property of the input schema"
    );
    let error = Server::builder("headers", "1")
        .tool(
            ToolBuilder::new("lookup")
                .handler(|args: Lookup| async move { args.region })
                .header("region", "Bad Header"),
        )
        .build()
        .unwrap_err();
    assert!(
        matches!(error, toolwire_server::RegistrationError::Header { .. }),
        "{error}"
    );
}
