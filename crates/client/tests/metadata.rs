//! What every request carries (`_meta`, HTTP headers), version negotiation,
//! and how results are read.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use toolwire_client::transport::HttpTransport;
use toolwire_client::{Client, Error};
use toolwire_protocol::{
    ElicitRequestParams, ElicitResult, ErrorObject, ErrorResponse, Message, Request, Root, code,
};

use support::{Script, fake_http, fake_stdio, meta_of, reply};

fn tools_page(request: &Request) -> Message {
    reply(
        request,
        json!({"resultType": "complete", "tools": [
        {"name": "echo", "inputSchema": {"type": "object"}}
    ], "ttlMs": 0}),
    )
}

fn answer_everything() -> Script {
    Arc::new(|request: &Request| match request.method.as_str() {
        "tools/list" => vec![tools_page(request)],
        // No resultType at all: reads as complete.
        "tools/call" => vec![reply(
            request,
            json!({"content": [{"type": "text", "text": "ok"}]}),
        )],
        _ => vec![reply(request, json!({}))],
    })
}

#[tokio::test]
async fn every_request_carries_version_capabilities_and_client_info() {
    let (transport, received) = fake_stdio(answer_everything());
    let client = Client::builder(transport)
        .client_info("test-app", "9.9")
        .elicitation(|_: ElicitRequestParams, _| async { Ok(ElicitResult::decline()) })
        .roots(vec![Root::new("file:///tmp")])
        .build();
    let result = client.call_tool("echo", json!({})).await.unwrap();
    assert_eq!(
        result.content[0].as_text(),
        Some("ok"),
        "a result without resultType is complete"
    );
    let requests = received.requests();
    assert_eq!(received.methods(), ["tools/list", "tools/call"]);
    // tools/call also declares the Tasks extension (the server may answer
    // it with a task, which call_tool follows).
    for (request, extensions) in requests.iter().zip([None, Some(())]) {
        let mut capabilities = json!({"elicitation": {"form": {}}, "roots": {}});
        if extensions.is_some() {
            capabilities["extensions"] = json!({"io.modelcontextprotocol/tasks": {}});
        }
        assert_eq!(
            meta_of(request),
            json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": capabilities,
                "io.modelcontextprotocol/clientInfo": {"name": "test-app", "version": "9.9"}
            })
        );
    }
    assert_ne!(requests[0].id, requests[1].id);
}

#[tokio::test]
async fn without_handlers_no_capability_is_declared() {
    let (transport, received) = fake_stdio(answer_everything());
    let client = Client::builder(transport).build();
    client.list_tools().await.unwrap();
    let meta = meta_of(&received.requests()[0]);
    assert_eq!(
        meta["io.modelcontextprotocol/clientCapabilities"],
        json!({})
    );
    assert_eq!(
        meta["io.modelcontextprotocol/clientInfo"]["name"],
        "toolwire-client"
    );
}

/// A server that speaks only `2025-99-99`, and says so with -32022.
fn old_server(calls: Arc<AtomicUsize>) -> Script {
    Arc::new(move |request: &Request| {
        calls.fetch_add(1, Ordering::SeqCst);
        let version = meta_of(request)["io.modelcontextprotocol/protocolVersion"].clone();
        if version != "2025-99-99" {
            let error = ErrorObject::unsupported_protocol_version(
                &["2025-99-99", "2024-01-01"],
                version.as_str().unwrap_or(""),
            );
            return vec![Message::Error(ErrorResponse::new(
                Some(request.id.clone()),
                error,
            ))];
        }
        vec![tools_page(request)]
    })
}

#[tokio::test]
async fn unsupported_version_is_retried_once_with_a_common_version() {
    let calls = Arc::new(AtomicUsize::new(0));
    let (transport, received) = fake_stdio(old_server(calls.clone()));
    let client = Client::builder(transport)
        .protocol_versions(["2026-07-28", "2025-99-99"])
        .build();
    client.list_tools().await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(client.protocol_version(), "2025-99-99");
    let versions: Vec<_> = received
        .requests()
        .iter()
        .map(|r| meta_of(r)["io.modelcontextprotocol/protocolVersion"].clone())
        .collect();
    assert_eq!(versions, [json!("2026-07-28"), json!("2025-99-99")]);
    // Later requests use the negotiated version straight away.
    client.invalidate_tools();
    client.list_tools().await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn no_common_version_is_its_own_error() {
    let calls = Arc::new(AtomicUsize::new(0));
    let (transport, _) = fake_stdio(old_server(calls.clone()));
    let client = Client::builder(transport).build();
    let err = client.list_tools().await.unwrap_err();
    match err {
        Error::NoCommonVersion { ours, theirs } => {
            assert_eq!(ours, ["2026-07-28"]);
            assert_eq!(theirs, ["2025-99-99", "2024-01-01"]);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1, "nothing to retry with");
}

#[tokio::test]
async fn a_second_unsupported_version_error_is_not_retried_again() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let (transport, _) = fake_stdio(Arc::new(move |request: &Request| {
        counter.fetch_add(1, Ordering::SeqCst);
        let error = ErrorObject::unsupported_protocol_version(&["2025-99-99"], "x");
        vec![Message::Error(ErrorResponse::new(
            Some(request.id.clone()),
            error,
        ))]
    }));
    let client = Client::builder(transport)
        .protocol_versions(["2026-07-28", "2025-99-99"])
        .build();
    let err = client.list_tools().await.unwrap_err();
    assert_eq!(err.code(), Some(code::UNSUPPORTED_PROTOCOL_VERSION));
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn discover_picks_the_preferred_common_version() {
    let (transport, _) = fake_stdio(Arc::new(|request: &Request| {
        vec![reply(
            request,
            json!({
                "supportedVersions": ["2025-99-99", "2026-07-28"],
                "capabilities": {"tools": {}}, "ttlMs": 1000, "cacheScope": "public"
            }),
        )]
    }));
    let client = Client::builder(transport)
        .protocol_versions(["2026-07-28", "2025-99-99"])
        .build();
    client.discover().await.unwrap();
    assert_eq!(client.protocol_version(), "2026-07-28");
}

#[tokio::test]
async fn an_unknown_result_type_is_an_invalid_reply() {
    let (transport, _) = fake_stdio(Arc::new(|request: &Request| {
        match request.method.as_str() {
            "tools/list" => vec![tools_page(request)],
            _ => vec![reply(
                request,
                json!({"resultType": "later", "content": []}),
            )],
        }
    }));
    let client = Client::builder(transport).build();
    let err = client.call_tool("echo", json!({})).await.unwrap_err();
    assert!(
        matches!(err, Error::InvalidReply(ref m) if m.contains("resultType")),
        "{err:?}"
    );
}

/// A reply to `request` whose result is `result_text` as written.
fn reply_text(request: &Request, result_text: &str) -> Message {
    let id = serde_json::to_string(&request.id).unwrap();
    let text = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result_text}}}"#);
    Message::from_slice(text.as_bytes()).unwrap()
}

/// A client whose `tools/call` of `echo` is answered with `result_text`.
fn client_answering_calls_with(result_text: &'static str) -> Client {
    let (transport, _) = fake_stdio(Arc::new(move |request: &Request| {
        match request.method.as_str() {
            "tools/list" => vec![tools_page(request)],
            _ => vec![reply_text(request, result_text)],
        }
    }));
    Client::builder(transport).build()
}

#[tokio::test]
async fn a_call_result_is_read_whatever_the_order_of_its_members() {
    use toolwire_protocol::CallToolResult;
    for (text, expected) in [
        (
            r#"{"resultType":"complete","content":[{"type":"text","text":"first"}]}"#,
            CallToolResult::text("first"),
        ),
        (
            r#"{"content":[{"type":"text","text":"last"}],"resultType":"complete"}"#,
            CallToolResult::text("last"),
        ),
        (
            r#"{ "content" : [ {"text":"none","type":"text"} ], "isError" : false }"#,
            CallToolResult {
                is_error: Some(false),
                ..CallToolResult::text("none")
            },
        ),
    ] {
        let client = client_answering_calls_with(text);
        let result = client.call_tool("echo", json!({})).await.unwrap();
        assert_eq!(result, expected, "{text}");
    }
}

#[tokio::test]
async fn a_call_result_that_cannot_be_read_is_an_invalid_reply_saying_why() {
    for (text, why) in [
        (
            r#"{"resultType":"complete","content":[],"resultType":"input_required"}"#,
            "duplicate field `resultType` at line 1 column 50",
        ),
        (
            r#"{"resultType":"complete","content":[],"structuredContent":{"n":1e400}}"#,
            "number out of range at line 1 column 68",
        ),
    ] {
        let client = client_answering_calls_with(text);
        let err = client.call_tool("echo", json!({})).await.unwrap_err();
        assert!(
            matches!(err, Error::InvalidReply(ref m) if m == why),
            "{text}: {err:?}"
        );
    }
}

#[tokio::test]
async fn http_posts_carry_the_standard_headers() {
    let (url, received) = fake_http(Arc::new(|request: &Request| {
        match request.method.as_str() {
            "tools/list" => vec![reply(
                request,
                json!({"tools": [
                    {"name": "héllo wörld", "inputSchema": {"type": "object"}}
                ]}),
            )],
            _ => vec![reply(request, json!({"content": []}))],
        }
    }))
    .await;
    let client = Client::builder(
        HttpTransport::builder(url)
            .bearer_token("tok")
            .build()
            .unwrap(),
    )
    .build();
    client.call_tool("héllo wörld", json!({})).await.unwrap();
    client.read_resource("file:///ü").await.unwrap_err(); // no contents: invalid reply, headers still sent
    let headers = received.headers();
    let get = |i: usize, name: &str| {
        headers[i]
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    for i in 0..headers.len() {
        assert_eq!(
            get(i, "accept").as_deref(),
            Some("application/json, text/event-stream")
        );
        assert_eq!(get(i, "content-type").as_deref(), Some("application/json"));
        assert_eq!(
            get(i, "mcp-protocol-version").as_deref(),
            Some("2026-07-28")
        );
        assert_eq!(get(i, "authorization").as_deref(), Some("Bearer tok"));
    }
    assert_eq!(get(0, "mcp-method").as_deref(), Some("tools/list"));
    assert_eq!(get(0, "mcp-name"), None);
    assert_eq!(get(1, "mcp-method").as_deref(), Some("tools/call"));
    assert_eq!(
        get(1, "mcp-name").as_deref(),
        Some("=?base64?aMOpbGxvIHfDtnJsZA==?=")
    );
    assert_eq!(get(2, "mcp-method").as_deref(), Some("resources/read"));
    assert_eq!(
        get(2, "mcp-name").as_deref(),
        Some("=?base64?ZmlsZTovLy/DvA==?=")
    );
}

#[tokio::test]
async fn an_sse_reply_with_notifications_then_the_response_is_read() {
    let (url, _) = fake_http(Arc::new(|request: &Request| {
        match request.method.as_str() {
            "tools/list" => vec![tools_page(request)],
            _ => {
                let token = meta_of(request)["progressToken"].clone();
                let progress = serde_json::from_value(json!({
                    "jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": 1}
                }))
                .unwrap();
                vec![
                    progress,
                    reply(
                        request,
                        json!({"content": [{"type": "text", "text": "streamed"}]}),
                    ),
                ]
            }
        }
    }))
    .await;
    let client = Client::builder(HttpTransport::new(url).unwrap()).build();
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    let options = toolwire_client::RequestOptions::new().on_notification(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    let result = client
        .call_tool_with("echo", json!({}), &options)
        .await
        .unwrap();
    assert_eq!(result.content[0].as_text(), Some("streamed"));
    assert_eq!(seen.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn an_http_error_status_without_json_rpc_is_a_transport_error() {
    let app = axum::Router::new().route(
        "/mcp",
        axum::routing::post(|| async { (axum::http::StatusCode::BAD_GATEWAY, "upstream down") }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let client = Client::builder(HttpTransport::new(url).unwrap()).build();
    let err = client.list_tools().await.unwrap_err();
    match err {
        Error::Transport(toolwire_client::TransportError::Http { status, body }) => {
            assert_eq!(status, 502);
            assert_eq!(body, "upstream down");
        }
        other => panic!("{other:?}"),
    }
}
