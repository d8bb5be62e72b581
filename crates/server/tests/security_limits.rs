//! Input limits beyond the schema: argument size, nesting depth and string
//! length, each a tool execution error the model can act on, checked
//! before the schema; after each, the next good call is answered.

mod common;

use common::{request, result};
use serde_json::{Value, json};
use toolwire_protocol::JsonObject;
use toolwire_server::{InputLimits, RequestContext, Server, ServerBuilder, ToolBuilder};

fn any_object() -> JsonObject {
    json!({"type": "object"}).as_object().unwrap().clone()
}

fn builder() -> ServerBuilder {
    Server::builder("limits-test", "1")
        .tool(ToolBuilder::new("take").raw_handler(
            any_object(),
            |args: JsonObject, _cx: RequestContext| async move {
                format!("took {} arguments", args.len())
            },
        ))
        .tool(
            ToolBuilder::new("roomy")
                .input_limits(InputLimits::default().max_string_bytes(1024 * 1024))
                .raw_handler(
                    any_object(),
                    |_: JsonObject, _cx: RequestContext| async move { "roomy" },
                ),
        )
}

async fn call(server: &Server, tool: &str, arguments: Value) -> Value {
    let r = result(
        server,
        request(
            1,
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
        ),
    )
    .await;
    let next = result(
        server,
        request(
            2,
            "tools/call",
            json!({"name": "take", "arguments": {"a": 1}}),
        ),
    )
    .await;
    assert_eq!(next["content"][0]["text"], "took 1 arguments");
    r
}

fn tool_error(r: &Value) -> &str {
    assert_eq!(r["isError"], true, "{r}");
    r["content"][0]["text"].as_str().unwrap()
}

fn nested(depth: usize) -> Value {
    let mut value = json!(1);
    for _ in 0..depth {
        value = json!({"n": value});
    }
    value
}

#[tokio::test]
async fn defaults_are_documented_values() {
    let limits = InputLimits::default();
    assert_eq!(limits.get_max_bytes(), 1024 * 1024);
    assert_eq!(limits.get_max_depth(), 32);
    assert_eq!(limits.get_max_string_bytes(), 256 * 1024);
}

#[tokio::test]
async fn a_long_string_is_refused() {
    let s = builder().build().unwrap();
    let ok = call(&s, "take", json!({"s": "x".repeat(256 * 1024)})).await;
    assert!(ok.get("isError").is_none(), "{ok}");
    let r = call(
        &s,
        "take",
        json!({"list": ["ok", "x".repeat(256 * 1024 + 1)]}),
    )
    .await;
    assert_eq!(
        tool_error(&r),
        "Argument /list/1 of tool take is too long: 262145 bytes (limit 262144 bytes). Send a shorter value."
    );
    let long_key = "k".repeat(256 * 1024 + 1);
    let mut args = JsonObject::new();
    args.insert(long_key.clone(), json!(1));
    let r = call(&s, "take", Value::Object(args)).await;
    assert_eq!(
        tool_error(&r),
        format!(
            "An object key at /{long_key} of tool take is too long: 262145 bytes (limit 262144 bytes). Send a shorter value."
        )
    );
    // A tool may allow more.
    let r = call(&s, "roomy", json!({"s": "x".repeat(512 * 1024)})).await;
    assert_eq!(r["content"][0]["text"], "roomy");
}

#[tokio::test]
async fn deep_nesting_is_refused() {
    let s = builder().build().unwrap();
    // The arguments object is level 1: 32 nested objects in all are fine.
    let ok = call(&s, "take", nested(32)).await;
    assert!(ok.get("isError").is_none(), "{ok}");
    let r = call(&s, "take", nested(33)).await;
    let pointer = format!("/{}", ["n"; 32].join("/"));
    assert_eq!(
        tool_error(&r),
        format!(
            "Arguments for tool take are nested too deeply at {pointer}: more than 32 levels of objects and arrays. Flatten the structure."
        )
    );
    let mut arrays = json!(1);
    for _ in 0..40 {
        arrays = json!([arrays]);
    }
    let r = call(&s, "take", json!({"a": arrays})).await;
    assert!(
        tool_error(&r).starts_with("Arguments for tool take are nested too deeply at /a/0/0/"),
        "{r}"
    );
}

#[tokio::test]
async fn oversized_arguments_are_refused() {
    let s = builder()
        .input_limits(InputLimits::default().max_bytes(1000))
        .build()
        .unwrap();
    let r = call(
        &s,
        "take",
        json!({"a": "x".repeat(600), "b": "y".repeat(600)}),
    )
    .await;
    assert_eq!(
        tool_error(&r),
        "Arguments for tool take are too large: more than 1000 bytes as JSON (limit 1000 bytes). \
         Send less data, for example by splitting the work across several calls."
    );
    let ok = call(&s, "take", json!({"a": "x".repeat(900)})).await;
    assert!(ok.get("isError").is_none(), "{ok}");
}

#[tokio::test]
async fn limits_come_before_the_schema_and_apply_over_http() {
    // The schema would also refuse this (a string where an integer is
    // wanted), but the limit answers first and cheaply.
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
    let s = builder()
        .input_limits(InputLimits::default().max_string_bytes(8))
        .tool(ToolBuilder::new("typed").raw_handler(
            schema.as_object().unwrap().clone(),
            |_: JsonObject, _cx: RequestContext| async move { "typed" },
        ))
        .build()
        .unwrap();
    let http = common::ServedHttp::start(s).await;
    let post = |n: Value| {
        let request = request(
            1,
            "tools/call",
            json!({"name": "typed", "arguments": {"n": n}}),
        );
        let http = &http;
        async move { http.post_json(&request).await }
    };
    let r = post(json!("a long string")).await;
    assert_eq!(
        r["result"]["content"][0]["text"],
        "Argument /n of tool typed is too long: 13 bytes (limit 8 bytes). Send a shorter value."
    );
    let r = post(json!("short")).await;
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Invalid arguments for tool typed:"),
        "{r}"
    );
    let r = post(json!(3)).await;
    assert_eq!(r["result"]["content"][0]["text"], "typed");
    http.stop().await;
}
