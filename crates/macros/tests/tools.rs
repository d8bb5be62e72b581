//! What `#[tool]` and `#[tools]` generate, served by a real dispatcher:
//! names, descriptions from doc comments, titles, annotations, headers,
//! `&self` state shared by an impl block's tools, and calls.

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};
use toolwire::protocol::Request;
use toolwire::server::{RequestContext, RequestEnv, Server, State, Structured, ToolError};
use toolwire::{tool, tools};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Echo {
    /// What to echo.
    #[schemars(length(min = 1, max = 8))]
    text: String,
}

/// Echoes the text back.
///
/// Second paragraph.
#[tool(read_only, idempotent, open_world = false)]
async fn echo(args: Echo) -> String {
    args.text
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Lookup {
    /// Where to look.
    region: String,
    /// What to look for.
    key: String,
}

/// Looks a key up in one region.
#[tool(name = "lookup-key", title = "Look up", header(region = "Region"))]
async fn r#lookup(args: Lookup, cx: RequestContext) -> Result<String, ToolError> {
    if args.key.is_empty() {
        return Err(ToolError::new("key must not be empty"));
    }
    Ok(format!("{} in {} ({})", args.key, args.region, cx.method()))
}

#[tool(description = "Says hello from the shared greeting.")]
async fn hello(State(greeting): State<&'static str>) -> String {
    greeting.to_owned()
}

struct Counter {
    hits: AtomicU64,
    step: u64,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Total {
    total: u64,
}

#[tools]
impl Counter {
    /// Adds the step to the counter.
    #[tool(destructive = false)]
    async fn hit(&self) -> Structured<Total> {
        let total = self.hits.fetch_add(self.step, Ordering::SeqCst) + self.step;
        Structured(Total { total })
    }

    /// Reads the counter.
    #[toolwire::tool(read_only)]
    async fn peek(&self, cx: RequestContext, State(greeting): State<&'static str>) -> String {
        let total = self.hits.load(Ordering::SeqCst);
        format!("{greeting} {total} ({})", cx.method())
    }

    /// Not a tool: a plain method stays as written.
    fn step(&self) -> u64 {
        self.step
    }
}

fn server() -> Server {
    let counter = Counter {
        hits: AtomicU64::new(0),
        step: 5,
    };
    assert_eq!(counter.step(), 5);
    Server::builder("macros", "1")
        .state("hi")
        .tool(echo_tool())
        .tool(lookup_tool())
        .tool(hello_tool())
        .tools(counter.tools())
        .build()
        .unwrap()
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

async fn send(server: &Server, method: &str, params: Value) -> Value {
    let mut params = params.as_object().unwrap().clone();
    params.insert("_meta".into(), meta());
    let request = Request::new(1, method, Some(params));
    let response = server.handle_request(request, RequestEnv::new()).await;
    serde_json::to_value(response).unwrap()
}

async fn call(server: &Server, name: &str, arguments: Value) -> Value {
    let response = send(
        server,
        "tools/call",
        json!({"name": name, "arguments": arguments}),
    )
    .await;
    response["result"].clone()
}

#[tokio::test]
async fn definitions_come_from_the_functions() {
    let listed = send(&server(), "tools/list", json!({})).await;
    let tools = listed["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["echo", "lookup-key", "hello", "hit", "peek"]);

    assert_eq!(
        tools[0]["description"],
        "Echoes the text back.\n\nSecond paragraph."
    );
    assert_eq!(
        tools[0]["annotations"],
        json!({"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false})
    );
    assert_eq!(
        tools[0]["inputSchema"]["properties"]["text"],
        json!({"type": "string", "description": "What to echo.", "minLength": 1, "maxLength": 8})
    );

    assert_eq!(tools[1]["title"], "Look up");
    assert_eq!(tools[1]["description"], "Looks a key up in one region.");
    assert_eq!(
        tools[1]["inputSchema"]["properties"]["region"]["x-mcp-header"],
        "Region"
    );
    assert!(tools[1].get("annotations").is_none(), "{}", tools[1]);

    assert_eq!(
        tools[2]["description"],
        "Says hello from the shared greeting."
    );
    assert_eq!(
        tools[2]["inputSchema"],
        json!({"type": "object", "additionalProperties": false})
    );

    assert_eq!(tools[3]["annotations"], json!({"destructiveHint": false}));
    assert_eq!(tools[3]["outputSchema"]["required"], json!(["total"]));
    assert_eq!(tools[4]["description"], "Reads the counter.");
}

#[tokio::test]
async fn calls_reach_the_functions_and_methods() {
    let server = server();
    let echoed = call(&server, "echo", json!({"text": "abc"})).await;
    assert_eq!(echoed["content"][0]["text"], "abc");

    let looked = call(&server, "lookup-key", json!({"region": "eu", "key": "k"})).await;
    assert_eq!(looked["content"][0]["text"], "k in eu (tools/call)");
    let empty = call(&server, "lookup-key", json!({"region": "eu", "key": ""})).await;
    assert_eq!(empty["isError"], true);
    assert_eq!(empty["content"][0]["text"], "key must not be empty");

    assert_eq!(
        call(&server, "hello", json!({})).await["content"][0]["text"],
        "hi"
    );

    // The two methods share one Counter.
    assert_eq!(
        call(&server, "hit", json!({})).await["structuredContent"],
        json!({"total": 5})
    );
    assert_eq!(
        call(&server, "hit", json!({})).await["structuredContent"],
        json!({"total": 10})
    );
    assert_eq!(
        call(&server, "peek", json!({})).await["content"][0]["text"],
        "hi 10 (tools/call)"
    );
}

#[tokio::test]
async fn schema_constraints_are_checked_before_the_handler() {
    let server = server();
    let long = call(&server, "echo", json!({"text": "123456789"})).await;
    assert_eq!(long["isError"], true);
    let text = long["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("Invalid arguments for tool echo:"),
        "{text}"
    );
}

/// Builds a report that may take minutes.
#[tool(task_support = "always")]
async fn report() -> String {
    "built".to_owned()
}

/// Builds a quick report.
#[tool(task_support = "optional", read_only)]
async fn quick_report() -> String {
    "quick".to_owned()
}

#[tokio::test]
async fn task_support_reaches_the_builder() {
    let server = Server::builder("tasks", "1")
        .tool(report_tool())
        .tool(quick_report_tool())
        .build()
        .unwrap();
    // Without the Tasks extension in the request's capabilities, an
    // `always` tool is refused naming it, and an `optional` one answers.
    let refused = send(
        &server,
        "tools/call",
        json!({"name": "report", "arguments": {}}),
    )
    .await;
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert_eq!(
        refused["error"]["data"]["requiredCapabilities"]["extensions"],
        json!({"io.modelcontextprotocol/tasks": {}}),
        "{refused}"
    );
    let answered = call(&server, "quick_report", json!({})).await;
    assert_eq!(answered["content"][0]["text"], "quick");

    // With it, the `optional` tool runs as a task.
    let mut params = json!({"name": "quick_report", "arguments": {}, "_meta": meta()});
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let request = Request::new(2, "tools/call", params.as_object().cloned());
    let response = server.handle_request(request, RequestEnv::new()).await;
    let task = serde_json::to_value(response).unwrap();
    assert_eq!(task["result"]["resultType"], "task", "{task}");
}
