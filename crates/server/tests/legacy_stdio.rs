//! The legacy era over stdio: `initialize` makes the pipe a 2025-11-25
//! session; handlers' input requests become real requests to the client.

mod common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use toolwire_protocol::{ElicitAction, LoggingLevel};
use toolwire_server::{NoArgs, RequestContext, Server, ServerBuilder, ToolBuilder, ToolError};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    text: String,
}

async fn confirm(_: NoArgs, cx: RequestContext) -> Result<String, ToolError> {
    let schema =
        json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]});
    let answer = cx.elicit_form("confirm", "Go ahead?", schema)?;
    Ok(match answer.action {
        ElicitAction::Accept => format!("accepted {}", json!(answer.content)),
        other => format!("{}", json!(other)),
    })
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AskArgs {
    question: String,
}

/// Asks the client `question`; says what it answered.
async fn ask(args: AskArgs, cx: RequestContext) -> Result<String, ToolError> {
    let answer = cx.elicit_form("answer", &args.question, json!({"type": "object"}))?;
    Ok(format!(
        "{} {}",
        args.question,
        json!(answer.action).as_str().unwrap_or("?")
    ))
}

fn builder() -> ServerBuilder {
    Server::builder("legacy-test", "1.0.0")
        .tool(
            ToolBuilder::new("echo")
                .handler(|args: EchoArgs, _cx: RequestContext| async move { args.text }),
        )
        .tool(ToolBuilder::new("confirm").handler(confirm))
        .tool(
            ToolBuilder::new("steps").handler(|_: NoArgs, cx: RequestContext| async move {
                cx.progress(1.0, Some(2.0), Some("half")).await;
                cx.progress(2.0, Some(2.0), None).await;
                "stepped"
            }),
        )
        .tool(
            ToolBuilder::new("chatty").handler(|_: NoArgs, cx: RequestContext| async move {
                cx.log(LoggingLevel::Debug, None, "debug line").await;
                cx.log(LoggingLevel::Warning, None, "warning line").await;
                "done"
            }),
        )
        .tool(ToolBuilder::new("ask").handler(ask))
}

fn initialize(id: i64, version: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": version,
        "capabilities": {"elicitation": {"form": {}}},
        "clientInfo": {"name": "legacy-client", "version": "1.2.3"}
    }})
}

fn legacy(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

async fn open(server: Server) -> ServedStdio {
    let mut stdio = ServedStdio::start(server);
    stdio.send(&initialize(1, "2025-11-25")).await;
    let reply = stdio.next().await;
    assert_eq!(reply["result"]["protocolVersion"], "2025-11-25", "{reply}");
    stdio
        .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    stdio
}

#[tokio::test]
async fn initialize_negotiates_and_declares_what_the_server_serves() {
    for (asked, got) in [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2024-11-05", "2025-11-25"),
        ("1999-01-01", "2025-11-25"),
    ] {
        let mut stdio = ServedStdio::start(builder().build().unwrap());
        stdio.send(&initialize(7, asked)).await;
        let reply = stdio.next().await;
        assert_eq!(
            reply,
            json!({"jsonrpc": "2.0", "id": 7, "result": {
                "protocolVersion": got,
                "capabilities": {"tools": {"listChanged": true}, "logging": {}},
                "serverInfo": {"name": "legacy-test", "version": "1.0.0"}
            }}),
            "asked {asked}"
        );
        stdio.close().await;
    }
}

#[tokio::test]
async fn a_session_lists_and_calls_without_meta_and_results_carry_no_modern_fields() {
    let mut stdio = open(builder().build().unwrap()).await;
    stdio.send(&legacy(2, "ping", json!({}))).await;
    assert_eq!(
        stdio.next().await,
        json!({"jsonrpc": "2.0", "id": 2, "result": {}})
    );
    stdio
        .send(&legacy(
            3,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "hi"}}),
        ))
        .await;
    assert_eq!(
        stdio.next().await,
        json!({"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "hi"}]}})
    );
    stdio.send(&legacy(4, "tools/list", json!({}))).await;
    let list = stdio.next().await;
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["echo", "confirm", "steps", "chatty", "ask"]);
    for field in ["resultType", "ttlMs", "cacheScope", "_meta"] {
        assert!(list["result"].get(field).is_none(), "{field} in {list}");
    }
    // A 2026-07-28 request on the same pipe is still served statelessly.
    stdio
        .send(&request(
            5,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "new"}}),
        ))
        .await;
    let modern = stdio.next().await;
    assert_eq!(modern["result"]["resultType"], "complete", "{modern}");
    // And 2026-07-28 methods are not part of a legacy session.
    stdio.send(&legacy(6, "server/discover", json!({}))).await;
    let refused = stdio.next().await;
    assert_eq!(refused["error"]["code"], -32601, "{refused}");
    assert_eq!(
        refused["error"]["message"],
        "Method not found: server/discover (a 2026-07-28 method; this session speaks 2025-11-25)"
    );
    stdio.send(&initialize(8, "2025-11-25")).await;
    let again = stdio.next().await;
    assert_eq!(again["error"]["code"], -32600, "{again}");
    stdio.close().await;
}

#[tokio::test]
async fn elicitation_is_a_real_request_to_the_client() {
    let mut stdio = open(builder().build().unwrap()).await;
    stdio
        .send(&legacy(
            10,
            "tools/call",
            json!({"name": "confirm", "arguments": {}}),
        ))
        .await;
    let ask = stdio.next().await;
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    assert_eq!(
        ask["params"],
        json!({"mode": "form", "message": "Go ahead?", "requestedSchema":
            {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}})
    );
    let answer = json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"ok": true}}});
    stdio.send(&answer).await;
    assert_eq!(
        stdio.next().await,
        json!({"jsonrpc": "2.0", "id": 10, "result": {"content": [{"type": "text", "text": "accepted {\"ok\":true}"}]}})
    );
    stdio.close().await;
}

#[tokio::test]
async fn a_client_that_never_answers_gets_a_cancellation_and_the_tool_an_error() {
    let server = builder()
        .client_request_timeout(Duration::from_millis(200))
        .build()
        .unwrap();
    let mut stdio = open(server).await;
    stdio
        .send(&legacy(
            11,
            "tools/call",
            json!({"name": "confirm", "arguments": {}}),
        ))
        .await;
    let ask = stdio.next().await;
    assert_eq!(ask["method"], "elicitation/create");
    let mut lines = [stdio.next().await, stdio.next().await];
    lines.sort_by_key(|l| l.get("id").is_some());
    assert_eq!(
        lines[0],
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {
            "requestId": ask["id"], "reason": "the server no longer needs the answer"}})
    );
    assert_eq!(
        lines[1],
        json!({"jsonrpc": "2.0", "id": 11, "result": {"isError": true, "content": [{"type": "text",
            "text": "the client did not answer elicitation/create within 0.2 s"}]}})
    );
    stdio.close().await;
}

#[tokio::test]
async fn cancelling_the_call_withdraws_the_elicitation_and_sends_no_response() {
    let mut stdio = open(builder().build().unwrap()).await;
    stdio
        .send(&legacy(
            12,
            "tools/call",
            json!({"name": "confirm", "arguments": {}}),
        ))
        .await;
    let ask = stdio.next().await;
    stdio
        .send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 12}}))
        .await;
    assert_eq!(
        stdio.next().await,
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {
            "requestId": ask["id"], "reason": "the server no longer needs the answer"}})
    );
    // The next line answers the next request: nothing was sent for id 12.
    stdio.send(&legacy(13, "ping", json!({}))).await;
    assert_eq!(
        stdio.next().await,
        json!({"jsonrpc": "2.0", "id": 13, "result": {}})
    );
    stdio.close().await;
}

#[tokio::test]
async fn logs_follow_set_level_and_list_changes_are_notified() {
    let server = builder().build().unwrap();
    let mut stdio = open(server.clone()).await;
    stdio
        .send(&legacy(
            20,
            "tools/call",
            json!({"name": "chatty", "arguments": {}}),
        ))
        .await;
    let levels = [stdio.next().await, stdio.next().await];
    assert_eq!(
        levels,
        [
            json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "debug", "data": "debug line"}}),
            json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "warning", "data": "warning line"}}),
        ]
    );
    assert_eq!(stdio.next().await["id"], 20);
    stdio
        .send(&legacy(21, "logging/setLevel", json!({"level": "warning"})))
        .await;
    assert_eq!(
        stdio.next().await,
        json!({"jsonrpc": "2.0", "id": 21, "result": {}})
    );
    stdio
        .send(&legacy(
            22,
            "tools/call",
            json!({"name": "chatty", "arguments": {}}),
        ))
        .await;
    assert_eq!(stdio.next().await["params"]["level"], "warning");
    assert_eq!(stdio.next().await["id"], 22);

    server.remove_tool("chatty").unwrap();
    assert_eq!(
        stdio.next().await,
        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    );
    stdio.close().await;
}

#[tokio::test]
async fn a_modern_only_server_refuses_initialize_naming_its_versions() {
    let mut stdio = ServedStdio::start(builder().modern_only().build().unwrap());
    stdio.send(&initialize(1, "2025-11-25")).await;
    assert_eq!(
        stdio.next().await,
        json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message":
            "Method not found: initialize (this server speaks the stateless protocol, versions 2026-07-28: \
             no initialize handshake; send server/discover and put _meta on every request)"}})
    );
    stdio.close().await;
}

#[tokio::test]
async fn progress_goes_to_the_token_of_the_legacy_request() {
    let mut stdio = open(builder().build().unwrap()).await;
    stdio
        .send(&legacy(
            30,
            "tools/call",
            json!({"name": "steps", "arguments": {}, "_meta": {"progressToken": "p-1"}}),
        ))
        .await;
    assert_eq!(
        [stdio.next().await, stdio.next().await, stdio.next().await],
        [
            json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "p-1", "progress": 1.0, "total": 2.0, "message": "half"}}),
            json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "p-1", "progress": 2.0, "total": 2.0}}),
            json!({"jsonrpc": "2.0", "id": 30, "result": {"content": [{"type": "text", "text": "stepped"}]}}),
        ]
    );
    stdio.close().await;
}

#[tokio::test]
async fn a_client_that_declared_no_elicitation_is_told_so() {
    let mut stdio = ServedStdio::start(builder().build().unwrap());
    stdio
        .send(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "plain", "version": "1"}}}),
        )
        .await;
    assert_eq!(
        stdio.next().await["result"]["protocolVersion"],
        "2025-06-18"
    );
    stdio
        .send(&legacy(
            2,
            "tools/call",
            json!({"name": "confirm", "arguments": {}}),
        ))
        .await;
    let refused = stdio.next().await;
    assert_eq!(
        refused["id"], 2,
        "no elicitation request was sent: {refused}"
    );
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    stdio.close().await;
}

/// Several calls that ask the client at once, sent in one chunk with a
/// quick call: the quick call is not held up, and answers given in reverse
/// order reach the calls that asked.
#[tokio::test]
async fn concurrent_elicitations_are_matched_to_their_calls() {
    let mut stdio = open(builder().build().unwrap()).await;
    let mut bytes = Vec::new();
    for message in [
        legacy(
            40,
            "tools/call",
            json!({"name": "ask", "arguments": {"question": "tea?"}}),
        ),
        legacy(
            41,
            "tools/call",
            json!({"name": "ask", "arguments": {"question": "cake?"}}),
        ),
        legacy(
            42,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "quick"}}),
        ),
    ] {
        serde_json::to_writer(&mut bytes, &message).unwrap();
        bytes.push(b'\n');
    }
    stdio.send_raw(&bytes).await;
    let mut asks = std::collections::HashMap::new();
    for _ in 0..3 {
        let line = stdio.next().await;
        if line["method"] == "elicitation/create" {
            asks.insert(
                line["params"]["message"].as_str().unwrap().to_owned(),
                line["id"].clone(),
            );
        } else {
            assert_eq!(
                line,
                json!({"jsonrpc": "2.0", "id": 42, "result": {"content": [{"type": "text", "text": "quick"}]}})
            );
        }
    }
    let answer = |question: &str, action: &str| json!({"jsonrpc": "2.0", "id": asks[question], "result": {"action": action}});
    stdio.send(&answer("cake?", "accept")).await;
    assert_eq!(
        stdio.next().await,
        json!({"jsonrpc": "2.0", "id": 41, "result": {"content": [{"type": "text", "text": "cake? accept"}]}})
    );
    stdio.send(&answer("tea?", "decline")).await;
    assert_eq!(
        stdio.next().await,
        json!({"jsonrpc": "2.0", "id": 40, "result": {"content": [{"type": "text", "text": "tea? decline"}]}})
    );
    stdio.close().await;
}
