//! What the fuzz targets share: one small server and one Tokio runtime.

use std::sync::LazyLock;
use std::time::Duration;

use serde_json::{Value, json};
use toolwire_protocol::{JsonObject, Message, Request};
use toolwire_server::{RequestContext, RequestEnv, Server, StateKey, ToolBuilder, ToolError};

/// One current-thread runtime for the whole fuzzing process.
pub static RT: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
});

/// The `_meta` a well-behaved 2026-07-28 client sends (all client capabilities).
pub fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "sampling": {}, "roots": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "fuzz", "version": "0"}
    })
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(object) => object,
        _ => unreachable!("a literal object"),
    }
}

/// A request with `params` plus good `_meta` when it has none.
pub fn request(id: i64, method: &str, params: Value) -> Request {
    let mut params = match params {
        Value::Object(object) => object,
        _ => JsonObject::new(),
    };
    params.entry("_meta").or_insert_with(meta);
    Request::new(id, method, Some(params))
}

/// A fixed key, so a sealed state is only ever opened by this process's key.
pub fn state_key() -> StateKey {
    StateKey::from_bytes([7; 32])
}

/// A server with a typed-free echo, a tool whose parameters are mirrored
/// into `Mcp-Param-*` headers, a multi round-trip tool and enough filler
/// tools (page size 2) that `tools/list` pages.
pub fn server() -> Server {
    let sql_schema = object(json!({
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "limit": {"type": "integer", "x-mcp-header": "Limit"},
            "dry_run": {"type": "boolean", "x-mcp-header": "Dry-Run"},
            "where": {"type": "object", "properties": {
                "zone": {"type": "string", "x-mcp-header": "Zone"}
            }},
            "query": {"type": "string", "maxLength": 64, "pattern": "^[a-z ]*$"}
        },
        "required": ["region"]
    }));
    let echo_schema = object(json!({
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"]
    }));
    let mut builder = Server::builder("fuzz", "1")
        .no_tool_call_limit()
        .page_size(2)
        .state_key(state_key())
        .client_request_timeout(Duration::from_millis(50))
        .tool(ToolBuilder::new("echo").raw_handler(
            echo_schema,
            |args: JsonObject, _cx: RequestContext| async move {
                args.get("text").and_then(Value::as_str).unwrap_or("").to_owned()
            },
        ))
        .tool(ToolBuilder::new("sql").raw_handler(
            sql_schema,
            |args: JsonObject, _cx: RequestContext| async move { Value::Object(args).to_string() },
        ))
        .tool(ToolBuilder::new("confirm").raw_handler(
            object(json!({"type": "object"})),
            |_: JsonObject, cx: RequestContext| async move {
                let answer = cx.elicit_form(
                    "confirm",
                    "Sure?",
                    json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}),
                )?;
                Ok::<_, ToolError>(format!("answered {:?}", answer.action))
            },
        ));
    for i in 0..5 {
        builder = builder.tool(ToolBuilder::new(format!("filler_{i}")).raw_handler(
            object(json!({"type": "object"})),
            |_: JsonObject, _cx: RequestContext| async move { "ok" },
        ));
    }
    builder.build().expect("the fuzz server builds")
}

/// The shared server (built once: building compiles every tool's schema).
pub static SERVER: LazyLock<Server> = LazyLock::new(server);

/// Handles one request on [`SERVER`]; a request that takes over 3 s (every
/// handler here answers at once) is reported as a hang.
pub fn handle(request: Request) -> Value {
    let method = request.method.clone();
    RT.block_on(async {
        let reply = tokio::time::timeout(
            Duration::from_secs(3),
            SERVER.handle_request(request, RequestEnv::new()),
        )
        .await
        .unwrap_or_else(|_| panic!("{method} did not answer within 3 s"));
        serde_json::to_value(&reply).expect("a reply serialises")
    })
}

/// Handles any message on [`SERVER`], like [`handle`].
pub fn handle_message(message: Message) -> Option<Value> {
    RT.block_on(async {
        let reply = tokio::time::timeout(
            Duration::from_secs(3),
            SERVER.handle_message(message, RequestEnv::new()),
        )
        .await
        .expect("a message did not get its answer within 3 s");
        reply.map(|m| serde_json::to_value(&m).expect("a reply serialises"))
    })
}
