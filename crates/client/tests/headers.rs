//! `x-mcp-header`: values mirrored into `Mcp-Param-*` on HTTP, invalid
//! definitions rejected on HTTP (and ignored on stdio).

mod support;

use std::sync::Arc;

use serde_json::{Value, json};
use toolwire_client::transport::HttpTransport;
use toolwire_client::{Client, Error};
use toolwire_protocol::Request;

use support::{capture_logs, demo_server, fake_http, fake_stdio, http_server, reply};

#[tokio::test]
async fn our_server_accepts_the_mirrored_headers() {
    // The server checks Mcp-Param-Region against the body and answers -32020
    // if it is missing or different: success proves the client mirrored it.
    let url = http_server(demo_server()).await;
    let client = Client::builder(HttpTransport::new(url).unwrap()).build();
    let result = client
        .call_tool("region", json!({"region": "Zürich, CH", "query": "q"}))
        .await
        .unwrap();
    assert_eq!(result.content[0].as_text(), Some("ran in Zürich, CH"));
    let result = client
        .call_tool("region", json!({"query": "q"}))
        .await
        .unwrap();
    assert_eq!(result.content[0].as_text(), Some("ran in default"));
}

fn header_tools() -> Value {
    json!([
        {"name": "sql", "inputSchema": {"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "limit": {"type": "integer", "x-mcp-header": "Limit"},
            "dry": {"type": "boolean", "x-mcp-header": "Dry"},
            "query": {"type": "string"}
        }}},
        {"name": "bad_number", "inputSchema": {"type": "object", "properties": {
            "ratio": {"type": "number", "x-mcp-header": "Ratio"}
        }}},
        {"name": "bad_token", "inputSchema": {"type": "object", "properties": {
            "x": {"type": "string", "x-mcp-header": "Bad Header"}
        }}},
        {"name": "bad_nested", "inputSchema": {"type": "object", "properties": {
            "items": {"type": "array", "items": {"type": "string", "x-mcp-header": "Item"}}
        }}},
        {"name": "bad_duplicate", "inputSchema": {"type": "object", "properties": {
            "a": {"type": "string", "x-mcp-header": "Tenant"},
            "b": {"type": "string", "x-mcp-header": "tenant"}
        }}}
    ])
}

fn header_script() -> support::Script {
    Arc::new(|request: &Request| match request.method.as_str() {
        "tools/list" => vec![reply(
            request,
            json!({"tools": header_tools(), "ttlMs": 60000}),
        )],
        _ => vec![reply(
            request,
            json!({"content": [{"type": "text", "text": "ok"}]}),
        )],
    })
}

#[tokio::test]
async fn values_are_encoded_and_null_or_absent_ones_omitted() {
    let (url, received) = fake_http(header_script()).await;
    let client = Client::builder(HttpTransport::new(url).unwrap()).build();
    client
        .call_tool(
            "sql",
            json!({"region": " padded ", "limit": 42, "dry": false, "query": "q"}),
        )
        .await
        .unwrap();
    client
        .call_tool("sql", json!({"region": null, "query": "q"}))
        .await
        .unwrap();
    let headers = received.headers();
    let params = |i: usize| -> Vec<(String, String)> {
        headers[i]
            .iter()
            .filter(|(k, _)| k.starts_with("mcp-param-"))
            .cloned()
            .collect()
    };
    assert_eq!(
        params(1),
        [
            (
                "mcp-param-region".to_owned(),
                "=?base64?IHBhZGRlZCA=?=".to_owned()
            ),
            ("mcp-param-limit".to_owned(), "42".to_owned()),
            ("mcp-param-dry".to_owned(), "false".to_owned()),
        ]
    );
    assert!(
        params(2).is_empty(),
        "null and absent values send no header"
    );
}

#[tokio::test]
async fn invalid_definitions_are_excluded_on_http_with_a_warning() {
    let (url, received) = fake_http(header_script()).await;
    let client = Client::builder(HttpTransport::new(url).unwrap()).build();
    let logs = capture_logs();
    let list = client.list_tools().await.unwrap();
    let names: Vec<&str> = list.tools.iter().map(|t| t.name()).collect();
    assert_eq!(names, ["sql"]);
    let rejected: Vec<(&str, &str)> = list
        .rejected
        .iter()
        .map(|r| (r.name.as_str(), r.reason.as_str()))
        .collect();
    assert_eq!(rejected.len(), 4);
    assert_eq!(rejected[0].0, "bad_number");
    assert!(
        rejected[0].1.contains("found \"number\""),
        "{}",
        rejected[0].1
    );
    assert_eq!(rejected[1].0, "bad_token");
    assert!(
        rejected[1].1.contains("HTTP field-name token"),
        "{}",
        rejected[1].1
    );
    assert_eq!(rejected[2].0, "bad_nested");
    assert!(
        rejected[2].1.contains("not statically reachable"),
        "{}",
        rejected[2].1
    );
    assert_eq!(rejected[3].0, "bad_duplicate");
    assert!(
        rejected[3].1.contains("case-insensitively unique"),
        "{}",
        rejected[3].1
    );
    let text = logs.text();
    assert!(text.contains("WARN"), "{text}");
    assert!(text.contains("tool=bad_number"), "{text}");
    assert!(text.contains("rejecting tool definition"), "{text}");

    // A rejected tool cannot be called; nothing is sent.
    let err = client
        .call_tool("bad_token", json!({"x": "y"}))
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::InvalidTool { ref tool, .. } if tool == "bad_token"),
        "{err:?}"
    );
    assert_eq!(received.methods(), ["tools/list"]);
}

#[tokio::test]
async fn stdio_ignores_x_mcp_header() {
    let (transport, received) = fake_stdio(header_script());
    let client = Client::builder(transport).build();
    let list = client.list_tools().await.unwrap();
    assert_eq!(list.tools.len(), 5);
    assert!(list.rejected.is_empty());
    client
        .call_tool("bad_token", json!({"x": "y"}))
        .await
        .unwrap();
    assert_eq!(received.methods(), ["tools/list", "tools/call"]);
}

#[tokio::test]
async fn a_header_mismatch_refreshes_the_tool_list_and_retries_once() {
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = calls.clone();
    let (url, received) = fake_http(Arc::new(move |request: &Request| {
        match request.method.as_str() {
            "tools/list" => vec![reply(
                request,
                json!({"tools": header_tools(), "ttlMs": 60000}),
            )],
            _ => {
                if counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
                    let error =
                        toolwire_protocol::ErrorObject::header_mismatch("Mcp-Param-Region missing");
                    vec![toolwire_protocol::Message::Error(
                        toolwire_protocol::ErrorResponse::new(Some(request.id.clone()), error),
                    )]
                } else {
                    vec![reply(request, json!({"content": []}))]
                }
            }
        }
    }))
    .await;
    let client = Client::builder(HttpTransport::new(url).unwrap()).build();
    client
        .call_tool("sql", json!({"query": "q"}))
        .await
        .unwrap();
    assert_eq!(
        received.methods(),
        ["tools/list", "tools/call", "tools/list", "tools/call"]
    );
}
