//! An attacker's probes of a toolwire server over real HTTP on 127.0.0.1,
//! each answered exactly, with the server still serving afterwards: parser
//! differentials and bombs, side effects through notifications, session
//! fixation, path traversal through resource templates, pattern
//! backtracking, request smuggling and confusable names.

mod security_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use security_support::{Endpoint, VERSION, call, meta, request};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use toolwire_server::http::HttpConfig;
use toolwire_server::{
    NoArgs, RequestContext, ResourceTemplateBuilder, Server, ToolBuilder, text_contents,
};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    text: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct CodeArgs {
    /// Letters, then one digit.
    #[schemars(regex(pattern = r"^(a+)+[0-9]$"), length(max = 4096))]
    code: String,
}

struct Probed {
    endpoint: Endpoint,
    /// Calls of `bump`, and reads that reached the template's handler.
    bumps: Arc<AtomicUsize>,
    reads: Arc<AtomicUsize>,
}

async fn start() -> Probed {
    let bumps = Arc::new(AtomicUsize::new(0));
    let reads = Arc::new(AtomicUsize::new(0));
    let (b, r) = (Arc::clone(&bumps), Arc::clone(&reads));
    let server = Server::builder("probed", "1")
        .tool(
            ToolBuilder::new("echo")
                .handler(|args: EchoArgs, _cx: RequestContext| async move { args.text }),
        )
        .tool(
            ToolBuilder::new("bump").handler(move |_: NoArgs, _cx: RequestContext| {
                let bumps = Arc::clone(&b);
                async move { bumps.fetch_add(1, Ordering::SeqCst).to_string() }
            }),
        )
        .tool(
            ToolBuilder::new("code")
                .handler(|args: CodeArgs, _cx: RequestContext| async move { args.code }),
        )
        .resource_template(
            ResourceTemplateBuilder::new("notes://{id}", "note").handler(move |req, _cx| {
                let reads = Arc::clone(&r);
                async move {
                    reads.fetch_add(1, Ordering::SeqCst);
                    let id = req.variables["id"].clone();
                    Ok(vec![text_contents(
                        req.uri,
                        "text/plain",
                        format!("note {id}"),
                    )])
                }
            }),
        )
        .build()
        .unwrap();
    Probed {
        endpoint: Endpoint::start(server, HttpConfig::new()).await,
        bumps,
        reads,
    }
}

impl Probed {
    /// POSTs `body` as it is, with conforming headers for a tools/call of
    /// `name` (or for `method` when no name is given).
    async fn post_text(
        &self,
        method: &str,
        name: Option<&str>,
        body: String,
    ) -> (StatusCode, Value) {
        let mut request = reqwest::Client::new()
            .post(&self.endpoint.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", VERSION)
            .header("Mcp-Method", method);
        if let Some(name) = name {
            request = request.header("Mcp-Name", name);
        }
        let response = request.body(body).send().await.unwrap();
        let status = response.status();
        let text = response.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// The server still answers an ordinary call.
    async fn still_serves(&self) {
        let reply = self
            .endpoint
            .call_tool(None, "echo", json!({"text": "ok"}))
            .await;
        assert_eq!(reply.status, StatusCode::OK);
        assert_eq!(reply.text0(), "ok");
    }

    async fn stop(self) {
        self.still_serves().await;
        self.endpoint.stop().await;
    }
}

fn meta_text() -> String {
    meta().to_string()
}

#[tokio::test]
async fn a_nesting_bomb_is_a_parse_error() {
    let probed = start().await;
    let depth = 100_000;
    let arguments = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":{arguments}}},"_meta":{}}}}}"#,
        meta_text()
    );
    let (status, reply) = probed.post_text("tools/call", Some("echo"), body).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(reply["error"]["code"], -32700, "{reply}");
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Parse error: recursion limit exceeded"),
        "{reply}"
    );
    probed.stop().await;
}

/// `{"name": "echo", "name": "bump"}`: a check that read one name and a
/// handler that ran the other would be a bypass. toolwire reads the last
/// one everywhere: an `Mcp-Name: echo` (what a first-wins proxy would have
/// checked) is refused as a mismatch, and nothing runs.
#[tokio::test]
async fn duplicate_keys_cannot_make_the_checked_name_differ_from_the_run_one() {
    let probed = start().await;
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","name":"bump","arguments":{{}},"_meta":{}}}}}"#,
        meta_text()
    );
    let (status, reply) = probed.post_text("tools/call", Some("echo"), body).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{reply}");
    assert_eq!(
        reply["error"],
        json!({"code": -32020, "message":
            "Header mismatch: Mcp-Name header value 'echo' does not match body value 'bump'"})
    );
    assert_eq!(probed.bumps.load(Ordering::SeqCst), 0);
    probed.stop().await;
}

/// `Mcp-Name: echo` and `Mcp-Name: bump` on one request: a proxy that
/// routes on the first and a server that checked the second would disagree
/// on the target. A header the body is checked against must come once.
#[tokio::test]
async fn a_metadata_header_sent_twice_is_refused() {
    let probed = start().await;
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"bump","arguments":{{}},"_meta":{}}}}}"#,
        meta_text()
    );
    for (header, values) in [
        ("Mcp-Name", ["echo", "bump"]),
        ("Mcp-Method", ["tools/call", "tools/call"]),
        ("MCP-Protocol-Version", [VERSION, VERSION]),
    ] {
        let mut request = reqwest::Client::new()
            .post(&probed.endpoint.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream");
        for (name, value) in [
            ("MCP-Protocol-Version", VERSION),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "bump"),
        ] {
            if name != header {
                request = request.header(name, value);
            }
        }
        for value in values {
            request = request.header(header, value);
        }
        let response = request.body(body.clone()).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{header}");
        let reply: Value = response.json().await.unwrap();
        assert_eq!(
            reply["error"],
            json!({"code": -32020, "message":
                format!("Header mismatch: {header} header must appear once, found several")}),
            "{header}"
        );
    }
    assert_eq!(probed.bumps.load(Ordering::SeqCst), 0);
    probed.stop().await;
}

/// A tools/call sent as a notification (no id) must not run the tool: there
/// is no one to answer, and it would be a side effect with no record.
#[tokio::test]
async fn a_tools_call_notification_runs_nothing() {
    let probed = start().await;
    let body = json!({"jsonrpc": "2.0", "method": "tools/call",
        "params": {"name": "bump", "arguments": {}, "_meta": meta()}});
    let (status, reply) = probed
        .post_text("tools/call", Some("bump"), body.to_string())
        .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_eq!(reply, Value::Null);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(probed.bumps.load(Ordering::SeqCst), 0);
    probed.stop().await;
}

#[tokio::test]
async fn confusable_and_case_changed_names_are_unknown() {
    let probed = start().await;
    // "ech\u{43e}": a Cyrillic o.
    for name in ["ech\u{43e}", "Echo", "echo ", "echo\u{0}"] {
        let body = call(1, name, json!({"text": "x"}));
        let header = toolwire_schema::header_value::encode_text(name);
        let (status, reply) = probed
            .post_text("tools/call", Some(&header), body.to_string())
            .await;
        assert_eq!(status, StatusCode::OK, "{name:?}: {reply}");
        assert_eq!(reply["error"]["code"], -32602, "{name:?}: {reply}");
        assert_eq!(
            reply["error"]["message"],
            format!("Unknown tool: {name}"),
            "{name:?}"
        );
    }
    let mut body = call(2, "echo", json!({"text": "x"}));
    body["method"] = json!("Tools/Call");
    let (status, reply) = probed.post_text("Tools/Call", None, body.to_string()).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{reply}");
    assert_eq!(
        reply["error"],
        json!({"code": -32601, "message": "Method not found: Tools/Call"})
    );
    probed.stop().await;
}

#[tokio::test]
async fn a_template_variable_cannot_carry_a_path() {
    let probed = start().await;
    for uri in [
        "notes://..%2F..%2Fetc%2Fpasswd",
        "notes://..",
        "notes://%2E%2E",
        "notes://a%5Cb",
        "notes://a%00b",
        "notes://../x",
    ] {
        let body = request(1, "resources/read", json!({"uri": uri}));
        let (status, reply) = probed
            .post_text("resources/read", Some(uri), body.to_string())
            .await;
        assert_eq!(status, StatusCode::OK, "{uri}: {reply}");
        assert_eq!(
            reply["error"],
            json!({"code": -32602, "message": "Resource not found", "data": {"uri": uri}}),
            "{uri}"
        );
    }
    assert_eq!(probed.reads.load(Ordering::SeqCst), 0);
    // An ordinary id, percent-encoded or not, still works.
    let body = request(2, "resources/read", json!({"uri": "notes://a%20b"}));
    let (_, reply) = probed
        .post_text("resources/read", Some("notes://a%20b"), body.to_string())
        .await;
    assert_eq!(
        reply["result"]["contents"][0]["text"], "note a b",
        "{reply}"
    );
    probed.stop().await;
}

/// `^(a+)+[0-9]$` against 4,000 `a`s and a `!` is exponential for a
/// backtracking engine; the answer must still come at once.
#[tokio::test]
async fn a_catastrophic_pattern_does_not_stall_the_server() {
    let probed = start().await;
    let code = format!("{}!", "a".repeat(4000));
    let started = Instant::now();
    let reply = probed
        .endpoint
        .call_tool(None, "code", json!({"code": code}))
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert!(reply.is_tool_error(), "{}", reply.text);
    assert!(
        reply
            .text0()
            .starts_with("Invalid arguments for tool code:"),
        "{}",
        reply.text0()
    );
    probed.stop().await;
}

/// Content-Length and Transfer-Encoding together (a request-smuggling
/// classic): the connection is refused with 400 before anything runs.
#[tokio::test]
async fn a_smuggled_request_is_refused() {
    let probed = start().await;
    let addr = probed
        .endpoint
        .base
        .trim_start_matches("http://")
        .to_owned();
    let inner = call(9, "bump", json!({})).to_string();
    let smuggled = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: 4\r\n\
         Transfer-Encoding: chunked\r\n\r\n0\r\n\r\nPOST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\n\r\n{inner}",
        inner.len()
    );
    let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    stream.write_all(smuggled.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut answer)).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert_eq!(probed.bumps.load(Ordering::SeqCst), 0, "{answer}");
    probed.stop().await;
}

/// A 2025-11-25 client cannot choose its session id: the one it sends with
/// `initialize` is not the one it gets, and using it gets 404.
#[tokio::test]
async fn a_session_id_chosen_by_the_client_is_never_adopted() {
    let probed = start().await;
    let chosen = "attacker-chosen-session-id";
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"}}});
    let response = reqwest::Client::new()
        .post(&probed.endpoint.url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("Mcp-Session-Id", chosen)
        .body(initialize.to_string())
        .send()
        .await
        .unwrap();
    let status = response.status();
    let minted = response
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    let text = response.text().await.unwrap();
    // Either refused outright, or a fresh id of the server's own.
    if status == StatusCode::OK {
        let minted = minted.expect("a session id");
        assert_ne!(minted, chosen);
        assert!(minted.len() >= 32, "{minted}");
    } else {
        assert_eq!(status, StatusCode::NOT_FOUND, "{text}");
    }
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let response = reqwest::Client::new()
        .post(&probed.endpoint.url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("Mcp-Session-Id", chosen)
        .header("MCP-Protocol-Version", "2025-11-25")
        .body(list.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    probed.stop().await;
}
