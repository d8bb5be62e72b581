//! The demo's run-time tool list: `toggle_extras` adds and removes
//! `extra_tool` for every client of one `toolwire serve`, and listeners are
//! told with `notifications/tools/list_changed`.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use serde_json::{Value, json};
use support::{Served, bin, toolwire};

const VERSION: &str = env!("CARGO_PKG_VERSION");

fn server_info() -> Value {
    json!({"io.modelcontextprotocol/serverInfo": {
        "name": "toolwire-demo", "title": "toolwire demo", "version": VERSION
    }})
}

fn text_result(text: &str) -> Value {
    json!({
        "resultType": "complete",
        "content": [{"type": "text", "text": text}],
        "_meta": server_info()
    })
}

/// The tool names `toolwire list --json` shows, in order.
fn tool_names(url: &str) -> Vec<String> {
    let listed = toolwire(&["list", url, "--json"], "");
    listed.expect_code(0);
    listed.json()["tools"]
        .as_array()
        .expect("a tools array")
        .iter()
        .map(|t| t["name"].as_str().expect("a name").to_owned())
        .collect()
}

const DEMO_TOOLS: [&str; 12] = [
    "echo",
    "stats",
    "countdown",
    "delete_file",
    "summarize",
    "show_roots",
    "create_basket",
    "add_item",
    "view_basket",
    "checkout",
    "toggle_extras",
    "build_report",
];

#[test]
fn toggle_extras_adds_and_removes_extra_tool_for_every_client() {
    let server = Served::start(&[]);
    assert_eq!(tool_names(&server.url), DEMO_TOOLS);

    let added = toolwire(
        &["call", &server.url, "toggle_extras", "--yes", "--json"],
        "",
    );
    added.expect_code(0);
    assert_eq!(added.json(), text_result("extra_tool added"));

    // Another process (another client) sees it, last in the list.
    let mut with_extra = DEMO_TOOLS.map(str::to_owned).to_vec();
    with_extra.push("extra_tool".to_owned());
    assert_eq!(tool_names(&server.url), with_extra);
    let listed = toolwire(&["list", &server.url], "");
    listed.expect_code(0);
    assert!(
        listed.stdout.contains(
            "  extra_tool — An extra tool that toggle_extras adds and removes; returns a fixed text\n      \
             annotations (untrusted): read-only, idempotent, closed world\n"
        ),
        "{}",
        listed.stdout
    );

    let called = toolwire(&["call", &server.url, "extra_tool", "--yes", "--json"], "");
    called.expect_code(0);
    assert_eq!(called.json(), text_result("extra tool called"));
    let human = toolwire(&["call", &server.url, "extra_tool", "--yes"], "");
    human.expect_code(0);
    assert_eq!(human.stdout, "extra tool called\n");

    let removed = toolwire(&["call", &server.url, "toggle_extras", "--yes"], "");
    removed.expect_code(0);
    assert_eq!(removed.stdout, "extra_tool removed\n");
    assert_eq!(tool_names(&server.url), DEMO_TOOLS);

    let gone = toolwire(&["call", &server.url, "extra_tool", "--yes"], "");
    gone.expect_code(2);
    assert_eq!(gone.stdout, "");
    assert!(
        gone.stderr.starts_with(&format!(
            "toolwire: {} has no tool `extra_tool`; did you mean ",
            server.url
        )),
        "{}",
        gone.stderr
    );
    assert!(
        gone.stderr
            .ends_with("\nhint: `toolwire list` shows all 12 tools; names are case-sensitive\n"),
        "{}",
        gone.stderr
    );
}

#[test]
fn toggle_extras_says_it_modifies_the_environment() {
    let server = Served::start(&[]);
    let listed = toolwire(&["list", &server.url, "--json"], "");
    listed.expect_code(0);
    let tools = listed.json()["tools"].as_array().unwrap().clone();
    let toggle = tools
        .iter()
        .find(|t| t["name"] == "toggle_extras")
        .expect("toggle_extras is listed");
    assert_eq!(
        toggle["annotations"],
        json!({
            "readOnlyHint": false,
            "destructiveHint": false,
            "idempotentHint": false,
            "openWorldHint": false
        })
    );
    assert_eq!(
        toggle["inputSchema"]["type"], "object",
        "no arguments: {toggle}"
    );
    let human = toolwire(&["list", &server.url], "");
    assert!(
        human.stdout.contains(
            "  toggle_extras — Adds the tool extra_tool, or removes it when it is there, \
             for every client (listeners get notifications/tools/list_changed)\n      \
             annotations (untrusted): modifies its environment, not destructive, not idempotent, closed world\n"
        ),
        "{}",
        human.stdout
    );
}

#[test]
fn concurrent_toggles_alternate_and_never_fail() {
    let server = Served::start(&[]);
    let url = server.url.clone();
    let runs: Vec<_> = (0..8)
        .map(|_| {
            let url = url.clone();
            thread::spawn(move || toolwire(&["call", &url, "toggle_extras", "--yes"], ""))
        })
        .collect();
    let mut added = 0;
    let mut removed = 0;
    for run in runs {
        let ran = run.join().expect("a toggle thread");
        ran.expect_code(0);
        match ran.stdout.as_str() {
            "extra_tool added\n" => added += 1,
            "extra_tool removed\n" => removed += 1,
            other => panic!("unexpected result {other:?}; stderr:\n{}", ran.stderr),
        }
    }
    // Each toggle saw the state the one before it left: as many adds as
    // removes, so the tool is gone again.
    assert_eq!((added, removed), (4, 4));
    assert_eq!(tool_names(&url), DEMO_TOOLS);
}

/// Reads a `subscriptions/listen` SSE stream: the `data:` payloads, in order.
struct Listener {
    response: reqwest::Response,
    buffer: String,
}

impl Listener {
    async fn open(url: &str) -> Listener {
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen", "params": {
            "notifications": {"toolsListChanged": true},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}
            }
        }});
        let response = reqwest::Client::new()
            .post(url)
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", "application/json")
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", "subscriptions/listen")
            .body(body.to_string())
            .send()
            .await
            .expect("POST subscriptions/listen");
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        Listener {
            response,
            buffer: String::new(),
        }
    }

    /// The next `data:` message (bounded wait).
    async fn next_message(&mut self) -> Value {
        loop {
            if let Some(end) = self.buffer.find('\n') {
                let line = self.buffer[..end].trim_end_matches('\r').to_owned();
                self.buffer.drain(..=end);
                if let Some(data) = line.strip_prefix("data:") {
                    return serde_json::from_str(data.trim()).expect("JSON data");
                }
                continue;
            }
            let chunk = tokio::time::timeout(Duration::from_secs(30), self.response.chunk())
                .await
                .expect("a message within 30 s")
                .expect("the stream reads")
                .expect("the stream stays open");
            self.buffer
                .push_str(std::str::from_utf8(&chunk).expect("UTF-8"));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_is_told_each_time_the_tool_list_changes() {
    let server = Served::start(&[]);
    let mut listener = Listener::open(&server.url).await;
    let ack = listener.next_message().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    let changed = json!({
        "jsonrpc": "2.0",
        "method": "notifications/tools/list_changed",
        "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": 7}}
    });
    for expected in ["extra_tool added\n", "extra_tool removed\n"] {
        let url = server.url.clone();
        let ran = tokio::task::spawn_blocking(move || {
            toolwire(&["call", &url, "toggle_extras", "--yes"], "")
        })
        .await
        .expect("the toggle ran");
        ran.expect_code(0);
        assert_eq!(ran.stdout, expected);
        assert_eq!(listener.next_message().await, changed);
    }
}

/// One `toolwire serve --stdio` process: requests in, one reply line each.
fn stdio_session(requests: &[Value]) -> Vec<Value> {
    let mut child = Command::new(bin())
        .args(["serve", "--stdio"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn toolwire serve --stdio");
    let mut stdin = child.stdin.take().expect("piped stdin");
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut replies = Vec::new();
    for request in requests {
        // One at a time: each reply before the next request.
        writeln!(stdin, "{request}").expect("write a request");
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("a reply within 30 s");
        replies.push(serde_json::from_str(&line).expect("a JSON reply"));
    }
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    replies
}

fn request(id: u64, method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn names(list: &Value) -> Vec<String> {
    list["result"]["tools"]
        .as_array()
        .expect("a tools array")
        .iter()
        .map(|t| t["name"].as_str().expect("a name").to_owned())
        .collect()
}

#[test]
fn toggle_extras_over_stdio() {
    let toggle = json!({"name": "toggle_extras", "arguments": {}});
    let extra = json!({"name": "extra_tool", "arguments": {}});
    let replies = stdio_session(&[
        request(1, "tools/call", toggle.clone()),
        request(2, "tools/list", json!({})),
        request(3, "tools/call", extra),
        request(4, "tools/call", toggle),
        request(5, "tools/list", json!({})),
    ]);
    let text = |reply: &Value| reply["result"]["content"].clone();
    assert_eq!(
        text(&replies[0]),
        json!([{"type": "text", "text": "extra_tool added"}])
    );
    assert_eq!(names(&replies[1]).last().unwrap(), "extra_tool");
    assert_eq!(
        text(&replies[2]),
        json!([{"type": "text", "text": "extra tool called"}])
    );
    assert_eq!(
        text(&replies[3]),
        json!([{"type": "text", "text": "extra_tool removed"}])
    );
    assert_eq!(names(&replies[4]), DEMO_TOOLS);
}
