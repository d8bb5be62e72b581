//! Dispatcher tests: no transport, exact results and errors.

mod common;

use common::*;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use toolwire_protocol::{
    ClientCapabilities, ErrorObject, LoggingLevel, Message, SamplingCapability,
};
use toolwire_server::{
    NoArgs, Outbox, RequestContext, RequestEnv, Server, Structured, ToolBuilder, ToolError,
};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    text: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Sum {
    total: i64,
}

fn server_with_page_size(page_size: usize) -> Server {
    Server::builder("test-server", "1.2.3")
        .instructions("Use echo to test.")
        .page_size(page_size)
        .tool(
            ToolBuilder::new("echo")
                .description("Echoes text")
                .handler(|a: EchoArgs, _cx: RequestContext| async move { a.text }),
        )
        .tool(ToolBuilder::new("add").handler(|a: AddArgs, _cx: RequestContext| async move {
            Structured(Sum { total: a.a + a.b })
        }))
        .tool(ToolBuilder::new("now").handler(|_: NoArgs, _cx: RequestContext| async { "12:00" }))
        .tool(ToolBuilder::new("fails").handler(|_: NoArgs, _cx: RequestContext| async {
            Err::<String, _>(ToolError::new("the date must be in the future"))
        }))
        .tool(ToolBuilder::new("panics").handler(|_: NoArgs, _cx: RequestContext| async {
            if true {
                panic!("boom");
            }
            "unreachable"
        }))
        .tool(
            ToolBuilder::new("bad_output")
                .output_schema(as_object(json!({"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}})))
                .raw_handler(as_object(json!({"type": "object"})), |_, _cx: RequestContext| async {
                    toolwire_server::structured_result(json!({"n": "not a number"}))
                }),
        )
        .tool(ToolBuilder::new("needs_sampling").handler(|_: NoArgs, cx: RequestContext| async move {
            if cx.client_capabilities().sampling.is_none() {
                let required = ClientCapabilities {
                    sampling: Some(SamplingCapability::default()),
                    ..Default::default()
                };
                return Err(ToolError::from(ErrorObject::missing_client_capability(&required)));
            }
            Ok("sampled")
        }))
        .tool(ToolBuilder::new("slow").handler(|_: NoArgs, cx: RequestContext| async move {
            cx.progress(1.0, Some(3.0), Some("one")).await;
            cx.progress(1.0, Some(3.0), Some("repeat is dropped")).await;
            cx.log(LoggingLevel::Debug, None, "below the level").await;
            cx.log(LoggingLevel::Warning, Some("slow"), "halfway").await;
            cx.progress(2.0, Some(3.0), None).await;
            "done"
        }))
        .build()
        .unwrap()
}

fn server() -> Server {
    server_with_page_size(100)
}

#[tokio::test]
async fn discover_reports_versions_capabilities_and_cache_hints() {
    let r = result(&server(), request(1, "server/discover", json!({}))).await;
    assert_eq!(
        r,
        json!({
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {"listChanged": true}},
            "instructions": "Use echo to test.",
            "ttlMs": 3_600_000,
            "cacheScope": "public",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "test-server", "version": "1.2.3"}}
        })
    );
}

#[tokio::test]
async fn missing_meta_is_invalid_params() {
    let s = server();
    let e = error(&s, raw_request(1, "tools/list", Some(json!({})))).await;
    assert_eq!(
        e,
        json!({"code": -32602, "message": "Missing required request metadata: params._meta"})
    );
    let e = error(&s, raw_request(2, "tools/list", None)).await;
    assert_eq!(e["code"], -32602);
}

#[tokio::test]
async fn missing_protocol_version_or_capabilities_is_invalid_params() {
    let s = server();
    let no_version = json!({"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}});
    let e = error(&s, raw_request(1, "tools/list", Some(no_version))).await;
    assert_eq!(
        e,
        json!({"code": -32602, "message": "Missing required request metadata: io.modelcontextprotocol/protocolVersion"})
    );
    let no_caps = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}});
    let e = error(&s, raw_request(2, "tools/list", Some(no_caps))).await;
    assert_eq!(
        e,
        json!({"code": -32602, "message": "Missing required request metadata: io.modelcontextprotocol/clientCapabilities"})
    );
}

#[tokio::test]
async fn unsupported_version_lists_supported_and_requested() {
    let params = json!({"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2025-11-25",
        "io.modelcontextprotocol/clientCapabilities": {}
    }});
    let e = error(&server(), raw_request(1, "tools/list", Some(params))).await;
    assert_eq!(e["code"], -32022);
    assert_eq!(
        e["data"],
        json!({"supported": ["2026-07-28"], "requested": "2025-11-25"})
    );
}

#[tokio::test]
async fn removed_and_unknown_methods_are_method_not_found() {
    let s = server();
    for method in [
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "no/such/method",
    ] {
        let e = error(&s, request(1, method, json!({}))).await;
        assert_eq!(e["code"], -32601, "{method}");
        assert!(
            e["message"]
                .as_str()
                .unwrap()
                .starts_with(&format!("Method not found: {method}"))
        );
    }
    let e = error(
        &s,
        raw_request(
            1,
            "initialize",
            Some(json!({"protocolVersion": "2025-11-25"})),
        ),
    )
    .await;
    assert_eq!(e["code"], -32601);
    assert!(e["message"].as_str().unwrap().contains("2026-07-28"), "{e}");
}

#[tokio::test]
async fn list_is_ordered_and_carries_cache_hints_and_server_info() {
    let r = result(&server(), request(1, "tools/list", json!({}))).await;
    let names: Vec<&str> = r["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "echo",
            "add",
            "now",
            "fails",
            "panics",
            "bad_output",
            "needs_sampling",
            "slow"
        ]
    );
    assert_eq!(r["resultType"], "complete");
    assert_eq!(r["ttlMs"], 60_000);
    assert_eq!(r["cacheScope"], "public");
    assert!(r.get("nextCursor").is_none());
    // The fields in the order the result type declares them.
    let keys: Vec<&str> = r.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        ["resultType", "tools", "ttlMs", "cacheScope", "_meta"]
    );
    assert_eq!(
        r["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "test-server"
    );
    assert_eq!(
        r["tools"][0]["inputSchema"],
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
    );
    assert_eq!(
        r["tools"][2]["inputSchema"],
        json!({"type": "object", "additionalProperties": false})
    );
    assert_eq!(
        r["tools"][1]["outputSchema"],
        json!({"type": "object", "properties": {"total": {"type": "integer", "format": "int64"}}, "required": ["total"]})
    );
}

#[tokio::test]
async fn pagination_walks_every_tool_once_and_rejects_bad_cursors() {
    let s = server_with_page_size(3);
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    for id in 0..10 {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let r = result(&s, request(id, "tools/list", params)).await;
        assert_eq!(r["ttlMs"], 60_000, "every page carries hints");
        names.extend(
            r["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_owned()),
        );
        cursor = r["nextCursor"].as_str().map(str::to_owned);
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(names.len(), 8);
    // Another instance continues the same cursor.
    let other = server_with_page_size(3);
    let first = result(&s, request(1, "tools/list", json!({}))).await;
    let next = first["nextCursor"].clone();
    let a = result(&s, request(2, "tools/list", json!({"cursor": next}))).await;
    let b = result(&other, request(3, "tools/list", json!({"cursor": next}))).await;
    assert_eq!(a["tools"], b["tools"]);
    let e = error(
        &s,
        request(4, "tools/list", json!({"cursor": "not-a-cursor"})),
    )
    .await;
    assert_eq!(
        e,
        json!({"code": -32602, "message": "Invalid cursor: \"not-a-cursor\""})
    );
}

#[tokio::test]
async fn call_returns_text_and_structured_content() {
    let s = server();
    let r = result(
        &s,
        request(
            1,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "hi"}}),
        ),
    )
    .await;
    assert_eq!(r["content"], json!([{"type": "text", "text": "hi"}]));
    assert_eq!(r["resultType"], "complete");
    assert_eq!(
        r["_meta"]["io.modelcontextprotocol/serverInfo"]["version"],
        "1.2.3"
    );
    let r = result(
        &s,
        request(
            2,
            "tools/call",
            json!({"name": "add", "arguments": {"a": 2, "b": 3}}),
        ),
    )
    .await;
    assert_eq!(r["structuredContent"], json!({"total": 5}));
    assert_eq!(
        r["content"],
        json!([{"type": "text", "text": "{\"total\":5}"}])
    );
}

#[tokio::test]
async fn tool_without_arguments_accepts_a_call_with_no_arguments_key() {
    let r = result(&server(), request(1, "tools/call", json!({"name": "now"}))).await;
    assert_eq!(r["content"][0]["text"], "12:00");
    let r = result(
        &server(),
        request(
            2,
            "tools/call",
            json!({"name": "now", "arguments": {"x": 1}}),
        ),
    )
    .await;
    assert_eq!(r["isError"], true);
}

#[tokio::test]
async fn unknown_tool_is_invalid_params() {
    let e = error(&server(), request(1, "tools/call", json!({"name": "nope"}))).await;
    assert_eq!(e, json!({"code": -32602, "message": "Unknown tool: nope"}));
    let e = error(
        &server(),
        request(2, "tools/call", json!({"arguments": {}})),
    )
    .await;
    assert_eq!(e["code"], -32602);
}

#[tokio::test]
async fn invalid_arguments_are_a_tool_error_listing_every_violation() {
    let r = result(
        &server(),
        request(
            1,
            "tools/call",
            json!({"name": "add", "arguments": {"a": "x"}}),
        ),
    )
    .await;
    assert_eq!(r["isError"], true);
    let text = r["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("Invalid arguments for tool add:"),
        "{text}"
    );
    assert!(text.contains("/a"), "names the bad property: {text}");
    assert!(
        text.contains("\"b\" is a required property"),
        "names the missing property: {text}"
    );
}

#[tokio::test]
async fn execution_error_is_an_is_error_result() {
    let r = result(
        &server(),
        request(1, "tools/call", json!({"name": "fails"})),
    )
    .await;
    assert_eq!(r["isError"], true);
    assert_eq!(
        r["content"],
        json!([{"type": "text", "text": "the date must be in the future"}])
    );
}

#[tokio::test]
async fn panic_is_internal_error_and_the_server_keeps_serving() {
    let s = server();
    let e = error(&s, request(1, "tools/call", json!({"name": "panics"}))).await;
    assert_eq!(
        e,
        json!({"code": -32603, "message": "Tool panics failed with an internal error"})
    );
    let r = result(
        &s,
        request(
            2,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "still here"}}),
        ),
    )
    .await;
    assert_eq!(r["content"][0]["text"], "still here");
}

/// Arguments whose `Deserialize` panics: the handler's parameters are read
/// before its future runs, and a panic there is the same internal error.
struct Touchy;

impl<'de> serde::Deserialize<'de> for Touchy {
    fn deserialize<D: serde::Deserializer<'de>>(_: D) -> Result<Self, D::Error> {
        panic!("touchy arguments")
    }
}

impl schemars::JsonSchema for Touchy {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Touchy".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "object"})
    }
}

#[tokio::test]
async fn a_panic_reading_the_arguments_is_an_internal_error_too() {
    let s = Server::builder("touchy", "1")
        .tool(ToolBuilder::new("touchy").handler(|_: Touchy| async { "never" }))
        .tool(ToolBuilder::new("ok").handler(|| async { "ok" }))
        .build()
        .unwrap();
    let e = error(&s, request(1, "tools/call", json!({"name": "touchy"}))).await;
    assert_eq!(
        e,
        json!({"code": -32603, "message": "Tool touchy failed with an internal error"})
    );
    let r = result(&s, request(2, "tools/call", json!({"name": "ok"}))).await;
    assert_eq!(r["content"][0]["text"], "ok");
}

#[tokio::test]
async fn output_breaking_the_output_schema_is_never_sent() {
    let e = error(
        &server(),
        request(1, "tools/call", json!({"name": "bad_output"})),
    )
    .await;
    assert_eq!(
        e,
        json!({"code": -32603, "message": "Tool bad_output produced a result that does not match its outputSchema"})
    );
}

#[tokio::test]
async fn missing_client_capability_is_32021_with_required_capabilities() {
    let s = server();
    let e = error(
        &s,
        request(1, "tools/call", json!({"name": "needs_sampling"})),
    )
    .await;
    assert_eq!(e["code"], -32021);
    assert_eq!(e["data"], json!({"requiredCapabilities": {"sampling": {}}}));
    let mut m = meta();
    m["io.modelcontextprotocol/clientCapabilities"] = json!({"sampling": {}});
    let r = result(
        &s,
        request(
            2,
            "tools/call",
            json!({"name": "needs_sampling", "_meta": m}),
        ),
    )
    .await;
    assert_eq!(r["content"][0]["text"], "sampled");
}

/// Clients' capabilities and info are decoded once per distinct text and
/// shared: requests that alternate between clients (on one thread, so they
/// share one memo) each see their own, the unknown member and spacing
/// included.
#[tokio::test]
async fn each_request_sees_its_own_clients_capabilities_and_info() {
    let s = Server::builder("s", "1")
        .tool(
            ToolBuilder::new("who").handler(|_: NoArgs, cx: RequestContext| async move {
                let info = cx.client_info().map(|i| i.name.clone());
                format!("{info:?} {:?}", cx.client_capabilities().declared_names())
            }),
        )
        .build()
        .unwrap();
    let clients = [
        (
            json!({}),
            json!({"name": "a", "version": "1"}),
            "Some(\"a\") []",
        ),
        (
            json!({"sampling": {}}),
            json!({"name": "b", "version": "1"}),
            "Some(\"b\") [\"sampling\"]",
        ),
        (
            json!({"sampling": {}, "roots": {}, "x-later": {"deep": [1]}}),
            json!({"name": "c", "version": "2", "title": "C"}),
            "Some(\"c\") [\"sampling\", \"roots\"]",
        ),
    ];
    for round in 0..3 {
        for (n, (capabilities, info, expected)) in clients.iter().enumerate() {
            let mut m = meta();
            m["io.modelcontextprotocol/clientCapabilities"] = capabilities.clone();
            m["io.modelcontextprotocol/clientInfo"] = info.clone();
            let id = (round * 10 + n) as i64;
            let params = json!({"name": "who", "_meta": m});
            let r = result(&s, request(id, "tools/call", params)).await;
            assert_eq!(
                r["content"][0]["text"], *expected,
                "round {round}, client {n}"
            );
        }
    }
    // A request without client info has none, whatever came before.
    let mut m = meta();
    m.as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientInfo");
    let r = result(
        &s,
        request(99, "tools/call", json!({"name": "who", "_meta": m})),
    )
    .await;
    assert_eq!(r["content"][0]["text"], "None []");
}

async fn run_slow(meta_extra: Value) -> (Value, Vec<Value>) {
    let (tx, mut rx) = mpsc::channel(16);
    let mut m = meta();
    for (k, v) in meta_extra.as_object().unwrap() {
        m[k] = v.clone();
    }
    let req = request(7, "tools/call", json!({"name": "slow", "_meta": m}));
    let response = server()
        .handle_request(req, RequestEnv::new().with_outbox(Outbox::new(tx)))
        .await;
    let mut notes = Vec::new();
    while let Ok(message) = rx.try_recv() {
        assert!(matches!(message, Message::Notification(_)));
        notes.push(json_of(&message));
    }
    (json_of(&response), notes)
}

#[tokio::test]
async fn progress_and_logs_are_sent_only_when_asked_and_in_order() {
    let (_, notes) = run_slow(json!({})).await;
    assert!(
        notes.is_empty(),
        "no token, no level: nothing sent, got {notes:?}"
    );

    let (response, notes) =
        run_slow(json!({"progressToken": "p1", "io.modelcontextprotocol/logLevel": "info"})).await;
    assert_eq!(response["result"]["content"][0]["text"], "done");
    assert_eq!(
        notes,
        vec![
            json!({"jsonrpc": "2.0", "method": "notifications/progress",
                   "params": {"progressToken": "p1", "progress": 1.0, "total": 3.0, "message": "one"}}),
            json!({"jsonrpc": "2.0", "method": "notifications/message",
                   "params": {"level": "warning", "logger": "slow", "data": "halfway"}}),
            json!({"jsonrpc": "2.0", "method": "notifications/progress",
                   "params": {"progressToken": "p1", "progress": 2.0, "total": 3.0}}),
        ]
    );
}

#[test]
fn registration_names_the_tool_and_the_rule() {
    let bad_name = Server::builder("s", "1")
        .tool(ToolBuilder::new("has space").handler(|_: NoArgs, _cx: RequestContext| async { "x" }))
        .build()
        .unwrap_err();
    assert!(
        bad_name
            .to_string()
            .starts_with("tool \"has space\": invalid name"),
        "{bad_name}"
    );
    let dup = Server::builder("s", "1")
        .tool(ToolBuilder::new("a").handler(|_: NoArgs, _cx: RequestContext| async { "x" }))
        .tool(ToolBuilder::new("a").handler(|_: NoArgs, _cx: RequestContext| async { "x" }))
        .build()
        .unwrap_err();
    assert_eq!(
        dup.to_string(),
        "tool \"a\": a tool with this name is already registered (names must be unique)"
    );
    let bad_schema = Server::builder("s", "1")
        .tool(ToolBuilder::new("b").raw_handler(
            as_object(json!({"type": 12})),
            |_, _cx: RequestContext| async { "x" },
        ))
        .build()
        .unwrap_err();
    assert!(
        bad_schema
            .to_string()
            .starts_with("tool \"b\": inputSchema does not compile"),
        "{bad_schema}"
    );
    let too_long = "x".repeat(129);
    assert!(
        Server::builder("s", "1")
            .tool(
                ToolBuilder::new(too_long).handler(|_: NoArgs, _cx: RequestContext| async { "x" })
            )
            .build()
            .is_err()
    );
}

#[tokio::test]
async fn raw_schema_is_kept_exactly_as_given() {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"pos": {"$anchor": "positive", "type": "integer", "minimum": 1}},
        "properties": {"n": {"$ref": "#positive"}, "mode": {"type": "string"}},
        "allOf": [{"required": ["n"]}],
        "if": {"required": ["mode"], "properties": {"mode": {"const": "strict"}}},
        "then": {"properties": {"n": {"minimum": 10}}},
        "else": {}
    });
    let s = Server::builder("s", "1")
        .tool(ToolBuilder::new("raw").raw_handler(
            as_object(schema.clone()),
            |args, _cx: RequestContext| async move { format!("{}", Value::Object(args)) },
        ))
        .build()
        .unwrap();
    let r = result(&s, request(1, "tools/list", json!({}))).await;
    assert_eq!(r["tools"][0]["inputSchema"], schema);
    let r = result(
        &s,
        request(
            2,
            "tools/call",
            json!({"name": "raw", "arguments": {"n": 0}}),
        ),
    )
    .await;
    assert_eq!(r["isError"], true, "minimum via $anchor is enforced: {r}");
    let r = result(
        &s,
        request(
            3,
            "tools/call",
            json!({"name": "raw", "arguments": {"n": 2}}),
        ),
    )
    .await;
    assert_eq!(r["content"][0]["text"], "{\"n\":2}");
    let strict = json!({"name": "raw", "arguments": {"n": 2, "mode": "strict"}});
    let r = result(&s, request(4, "tools/call", strict)).await;
    assert_eq!(r["isError"], true, "if/then is enforced: {r}");
}

#[tokio::test]
async fn tools_change_at_run_time() {
    let s = server();
    s.add_tool(ToolBuilder::new("late").handler(|_: NoArgs, _cx: RequestContext| async { "late" }))
        .unwrap();
    s.disable_tool("echo").unwrap();
    let r = result(&s, request(1, "tools/list", json!({}))).await;
    let names: Vec<&str> = r["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.first(), Some(&"add"));
    assert_eq!(names.last(), Some(&"late"));
    let e = error(
        &s,
        request(
            2,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "x"}}),
        ),
    )
    .await;
    assert_eq!(e["code"], -32602);
    s.enable_tool("echo").unwrap();
    s.remove_tool("late").unwrap();
    assert_eq!(
        s.remove_tool("late").unwrap_err().to_string(),
        "tool \"late\": no such tool"
    );
    let r = result(
        &s,
        request(
            3,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "back"}}),
        ),
    )
    .await;
    assert_eq!(r["content"][0]["text"], "back");
}

/// `_meta` members that do not read as their types (the fast reading gives
/// up on them) are refused with -32602 naming the member and what is wrong,
/// and the server goes on serving.
#[tokio::test]
async fn malformed_meta_members_are_named_in_the_error() {
    let s = server();
    let with = |key: &str, value: Value| {
        let mut m = meta();
        m[key] = value;
        json!({"_meta": m})
    };
    let cases = [
        (
            with(
                "io.modelcontextprotocol/clientCapabilities",
                json!({"elicitation": 5}),
            ),
            "Invalid _meta[\"io.modelcontextprotocol/clientCapabilities\"]: invalid type: integer `5`, expected struct ElicitationCapability",
        ),
        (
            with("io.modelcontextprotocol/clientCapabilities", json!("all")),
            "Invalid _meta[\"io.modelcontextprotocol/clientCapabilities\"]: invalid type: string \"all\", expected struct ClientCapabilities",
        ),
        (
            with("io.modelcontextprotocol/clientInfo", json!({"name": "c"})),
            "Invalid _meta[\"io.modelcontextprotocol/clientInfo\"]: missing field `version`",
        ),
        (
            with("io.modelcontextprotocol/protocolVersion", json!(20260728)),
            "Invalid _meta[\"io.modelcontextprotocol/protocolVersion\"]: must be a string",
        ),
        (json!({"_meta": [1]}), "Invalid _meta: must be an object"),
    ];
    for (n, (params, expected)) in cases.into_iter().enumerate() {
        let e = error(&s, raw_request(n as i64, "tools/list", Some(params))).await;
        assert_eq!(e, json!({"code": -32602, "message": expected}));
    }
    let r = result(&s, request(9, "tools/list", json!({}))).await;
    assert_eq!(r["resultType"], "complete");
}

/// A tool's own `_meta` keeps its members, and the server's info comes last
/// in it, replacing any the tool wrote.
#[tokio::test]
async fn a_results_own_meta_keeps_its_members_and_ends_with_the_servers_info() {
    let server = Server::builder("test-server", "1.2.3")
        .tool(
            ToolBuilder::new("with_meta").handler(|_: NoArgs, _cx: RequestContext| async {
                let own = json!({
                    "a": 1,
                    "io.modelcontextprotocol/serverInfo": {"name": "forged", "version": "0"},
                    "z": [2]
                });
                toolwire_protocol::CallToolResult {
                    meta: Some(toolwire_protocol::Meta(as_object(own))),
                    ..toolwire_protocol::CallToolResult::text("mine")
                }
            }),
        )
        .build()
        .unwrap();
    let call = request(
        1,
        "tools/call",
        json!({"name": "with_meta", "arguments": {}}),
    );
    let r = result(&server, call).await;
    assert_eq!(
        r,
        json!({
            "resultType": "complete",
            "content": [{"type": "text", "text": "mine"}],
            "_meta": {
                "a": 1,
                "z": [2],
                "io.modelcontextprotocol/serverInfo": {"name": "test-server", "version": "1.2.3"}
            }
        })
    );
    let order: Vec<&str> = r["_meta"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(order, ["a", "z", "io.modelcontextprotocol/serverInfo"]);
}
