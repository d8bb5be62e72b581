//! Safety hooks: approval, trusted annotations, output validation, timeouts,
//! cancellation and audit records.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolwire_client::{Approval, ApprovalRequest, AuditRecord, Client, Error, RequestOptions};
use toolwire_protocol::{JsonObject, Request};

use support::{both, demo_server, fake_stdio, pipe_transport, reply};

#[tokio::test]
async fn a_denied_call_is_never_sent() {
    let (transport, received) = fake_stdio(Arc::new(|request: &Request| {
        vec![reply(
            request,
            json!({"tools": [{"name": "rm", "inputSchema": {"type": "object"}}]}),
        )]
    }));
    let client = Client::builder(transport)
        .approval(|req: ApprovalRequest<'_>| {
            let deny = req.tool == "rm";
            async move {
                if deny {
                    Approval::Deny("deleting needs a human".into())
                } else {
                    Approval::Allow
                }
            }
        })
        .build();
    let err = client
        .call_tool("rm", json!({"path": "/"}))
        .await
        .unwrap_err();
    match &err {
        Error::Denied { tool, reason } => {
            assert_eq!(tool, "rm");
            assert_eq!(reason, "deleting needs a human");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        err.to_string(),
        "call to tool rm denied: deleting needs a human"
    );
    assert_eq!(received.methods(), ["tools/list"], "no tools/call went out");
}

#[tokio::test]
async fn the_hook_sees_server_tool_annotations_and_exact_arguments() {
    type Seen = (String, String, Option<bool>, Option<bool>, bool, JsonObject);
    for trusted in [false, true] {
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let log = seen.clone();
        let client = Client::builder(pipe_transport(demo_server()))
            .name("calc")
            .trust_annotations(trusted)
            .approval(move |req: ApprovalRequest<'_>| {
                let info = req.info.unwrap();
                log.lock().unwrap().push((
                    req.server.to_owned(),
                    req.tool.to_owned(),
                    info.claims_read_only(),
                    info.trusted_annotations().and_then(|a| a.read_only_hint),
                    info.annotations_trusted,
                    req.arguments.clone(),
                ));
                async { Approval::Allow }
            })
            .build();
        client
            .call_tool("add", json!({"a": 1, "b": 2}))
            .await
            .unwrap();
        let seen = seen.lock().unwrap().clone();
        let expected_trusted = if trusted { Some(true) } else { None };
        assert_eq!(
            seen,
            [(
                "calc".to_owned(),
                "add".to_owned(),
                Some(true),
                expected_trusted,
                trusted,
                json!({"a": 1, "b": 2}).as_object().unwrap().clone()
            )]
        );
    }
}

#[tokio::test]
async fn list_tools_flags_annotations_untrusted_by_default() {
    let client = Client::builder(pipe_transport(demo_server())).build();
    let list = client.list_tools().await.unwrap();
    let add = list.tools.iter().find(|t| t.name() == "add").unwrap();
    assert!(!add.annotations_trusted);
    assert!(!add.is_read_only());
    assert!(add.trusted_annotations().is_none());
}

/// A fake server whose one tool has an output schema and returns `structured`.
fn output_server(structured: Value, is_error: bool, output_schema: Value) -> support::Script {
    Arc::new(move |request: &Request| match request.method.as_str() {
        "tools/list" => vec![reply(
            request,
            json!({"tools": [{
                "name": "weather",
                "inputSchema": {"type": "object"},
                "outputSchema": output_schema
            }]}),
        )],
        _ => {
            let mut result =
                json!({"content": [{"type": "text", "text": "22"}], "isError": is_error});
            if !structured.is_null() {
                result["structuredContent"] = structured.clone();
            }
            vec![reply(request, result)]
        }
    })
}

fn temperature_schema() -> Value {
    json!({"type": "object", "properties": {"temperature": {"type": "number"}}, "required": ["temperature"]})
}

#[tokio::test]
async fn invalid_structured_content_is_an_error_not_a_result() {
    let (transport, _) = fake_stdio(output_server(
        json!({"temperature": "hot"}),
        false,
        temperature_schema(),
    ));
    let client = Client::builder(transport).build();
    let err = client.call_tool("weather", json!({})).await.unwrap_err();
    match err {
        Error::OutputSchema { tool, reason } => {
            assert_eq!(tool, "weather");
            assert_eq!(reason, "/temperature: \"hot\" is not of type \"number\"");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn missing_structured_content_is_an_error_too() {
    let (transport, _) = fake_stdio(output_server(Value::Null, false, temperature_schema()));
    let client = Client::builder(transport).build();
    let err = client.call_tool("weather", json!({})).await.unwrap_err();
    assert!(
        matches!(err, Error::OutputSchema { ref reason, .. } if reason.contains("no structuredContent")),
        "{err:?}"
    );
}

#[tokio::test]
async fn valid_structured_content_passes() {
    let (transport, _) = fake_stdio(output_server(
        json!({"temperature": 21.5}),
        false,
        temperature_schema(),
    ));
    let client = Client::builder(transport).build();
    let result = client.call_tool("weather", json!({})).await.unwrap();
    assert_eq!(
        result.structured_content,
        Some(json!({"temperature": 21.5}))
    );
}

#[tokio::test]
async fn error_results_are_not_validated() {
    let (transport, _) = fake_stdio(output_server(
        json!({"oops": 1}),
        true,
        temperature_schema(),
    ));
    let client = Client::builder(transport).build();
    let err = client.call_tool("weather", json!({})).await.unwrap_err();
    assert!(matches!(err, Error::ToolExecution { .. }), "{err:?}");
}

#[tokio::test]
async fn a_remote_ref_in_the_output_schema_is_never_fetched() {
    let schema = json!({"$ref": "http://127.0.0.1:9/schema.json"});
    let (transport, _) = fake_stdio(output_server(json!({"temperature": 1}), false, schema));
    let client = Client::builder(transport).build();
    let err = client.call_tool("weather", json!({})).await.unwrap_err();
    assert!(
        matches!(err, Error::OutputSchema { ref reason, .. } if reason.starts_with("the outputSchema cannot be used")),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_slow_call_times_out_and_the_client_goes_on() {
    for (transport, client) in both(demo_server()).await {
        let options = RequestOptions::new().timeout(Duration::from_millis(100));
        let err = client
            .call_tool_with("sleep", json!({"ms": 30_000}), &options)
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Timeout(_)), "{transport}: {err:?}");
        let ok = client
            .call_tool("echo", json!({"text": "still here"}))
            .await
            .unwrap();
        assert_eq!(ok.content[0].as_text(), Some("still here"), "{transport}");
    }
}

#[tokio::test]
async fn a_call_can_be_cancelled() {
    for (transport, client) in both(demo_server()).await {
        let token = CancellationToken::new();
        let options = RequestOptions::new().cancel_on(token.clone());
        let canceller = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            token.cancel();
        });
        let err = client
            .call_tool_with("sleep", json!({"ms": 30_000}), &options)
            .await
            .unwrap_err();
        canceller.await.unwrap();
        assert!(matches!(err, Error::Cancelled), "{transport}: {err:?}");
    }
}

#[tokio::test]
async fn progress_and_logs_reach_the_request_sink() {
    for (transport, client) in both(demo_server()).await {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let options = RequestOptions::new()
            .log_level(toolwire_protocol::LoggingLevel::Info)
            .on_notification(move |n| log.lock().unwrap().push(n));
        let result = client
            .call_tool_with("progress", json!({}), &options)
            .await
            .unwrap();
        assert_eq!(result.content[0].as_text(), Some("done"));
        let seen = seen.lock().unwrap().clone();
        let progress: Vec<f64> = seen
            .iter()
            .filter_map(|n| match n {
                toolwire_client::RequestNotification::Progress(p) => Some(p.progress),
                _ => None,
            })
            .collect();
        let logs = seen
            .iter()
            .filter(|n| matches!(n, toolwire_client::RequestNotification::Log(_)))
            .count();
        assert_eq!(progress, [1.0, 2.0, 3.0], "{transport}");
        assert_eq!(logs, 3, "{transport}");
    }
}

/// A stdio server in this process that sends progress every 100 ms, `steps`
/// times, then answers.
fn ticking_server(steps: u32) -> toolwire_client::transport::StdioTransport {
    use futures::StreamExt;
    use tokio::io::AsyncWriteExt;
    use tokio_util::codec::{FramedRead, LinesCodec};
    toolwire_client::transport::StdioTransport::from_fn("ticking", move || async move {
        let (client_end, server_end) = tokio::io::duplex(1 << 16);
        let (read, mut write) = tokio::io::split(server_end);
        tokio::spawn(async move {
            let mut lines = FramedRead::new(read, LinesCodec::new());
            while let Some(Ok(line)) = lines.next().await {
                let Ok(toolwire_protocol::Message::Request(request)) =
                    toolwire_protocol::Message::from_slice(line.as_bytes())
                else {
                    continue;
                };
                let token = support::meta_of(&request)["progressToken"].clone();
                for step in 1..=steps {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    let note = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                        "params": {"progressToken": token, "progress": step}});
                    write
                        .write_all(format!("{note}\n").as_bytes())
                        .await
                        .unwrap();
                }
                let done = reply(&request, json!({"tools": []}));
                write
                    .write_all(format!("{}\n", serde_json::to_string(&done).unwrap()).as_bytes())
                    .await
                    .unwrap();
            }
        });
        let (r, w) = tokio::io::split(client_end);
        Ok(toolwire_client::transport::Connection::new(r, w))
    })
    .protocol(toolwire_client::transport::ProtocolMode::Modern)
    .build()
}

#[tokio::test(start_paused = true)]
async fn progress_restarts_the_timeout_but_the_hard_maximum_holds() {
    let quiet = RequestOptions::new().on_notification(|_| {});
    // 10 ticks of 100 ms: each restarts a 250 ms timeout, so the call completes.
    let client = Client::builder(ticking_server(10))
        .timeout(Duration::from_millis(250))
        .build();
    client.list_tools_with(&quiet).await.unwrap();
    // Without the reset, the same call times out.
    let client = Client::builder(ticking_server(10))
        .timeout(Duration::from_millis(250))
        .reset_timeout_on_progress(false)
        .build();
    let err = client.list_tools_with(&quiet).await.unwrap_err();
    assert!(matches!(err, Error::Timeout(_)), "{err:?}");
    // With the reset but a 500 ms hard maximum, it times out as well.
    let client = Client::builder(ticking_server(10))
        .timeout(Duration::from_millis(250))
        .build();
    let hard = quiet.clone().max_timeout(Duration::from_millis(500));
    let err = client.list_tools_with(&hard).await.unwrap_err();
    match err {
        Error::Timeout(after) => assert!(
            after >= Duration::from_millis(500) && after < Duration::from_millis(600),
            "{after:?}"
        ),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn every_call_gets_an_audit_record() {
    let records: Arc<Mutex<Vec<AuditRecord>>> = Arc::default();
    let log = records.clone();
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let client = Client::builder(pipe_transport(demo_server()))
        .name("demo")
        .roots(vec![])
        .approval(move |req: ApprovalRequest<'_>| {
            counter.fetch_add(1, Ordering::SeqCst);
            let deny = req.tool == "echo" && req.arguments.get("text") == Some(&json!("no"));
            async move {
                if deny {
                    Approval::Deny("no".into())
                } else {
                    Approval::Allow
                }
            }
        })
        .audit(move |r: &AuditRecord| log.lock().unwrap().push(r.clone()))
        .build();
    let logs = support::capture_logs();
    client
        .call_tool("echo", json!({"text": "audited-call"}))
        .await
        .unwrap();
    client.call_tool("fail", json!({})).await.unwrap_err();
    client
        .call_tool("echo", json!({"text": "no"}))
        .await
        .unwrap_err();
    client.call_tool("missing", json!({})).await.unwrap_err();
    client
        .call_tool("echo", json!("not an object"))
        .await
        .unwrap_err();
    client
        .call_tool_with(
            "sleep",
            json!({"ms": 10_000}),
            &RequestOptions::new().timeout(Duration::from_millis(50)),
        )
        .await
        .unwrap_err();
    let records = records.lock().unwrap().clone();
    let outcomes: Vec<&str> = records.iter().map(|r| r.outcome).collect();
    assert_eq!(
        outcomes,
        [
            "ok",
            "tool_error",
            "denied",
            "protocol_error",
            "invalid_arguments",
            "timeout"
        ]
    );
    assert_eq!(records[0].server, "demo");
    assert_eq!(records[0].tool, "echo");
    assert_eq!(
        records[0].arguments_sha256,
        sha256_hex(br#"{"text":"audited-call"}"#)
    );
    assert_eq!(records[0].rounds, 1);
    assert_eq!(records[2].rounds, 0, "a denied call sends nothing");
    assert_eq!(calls.load(Ordering::SeqCst), 5);
    let text = logs.text();
    assert!(text.contains("toolwire::audit"), "{text}");
    assert!(
        text.contains(&sha256_hex(br#"{"text":"audited-call"}"#)),
        "{text}"
    );
}

#[tokio::test]
async fn audit_events_false_keeps_the_hook_and_drops_the_tracing_event() {
    let records: Arc<Mutex<Vec<AuditRecord>>> = Arc::default();
    let log = records.clone();
    let quiet = Client::builder(pipe_transport(demo_server()))
        .name("quiet-client")
        .roots(vec![])
        .audit_events(false)
        .audit(move |r: &AuditRecord| log.lock().unwrap().push(r.clone()))
        .build();
    let loud = Client::builder(pipe_transport(demo_server()))
        .name("loud-client")
        .roots(vec![])
        .build();
    let logs = support::capture_logs();
    quiet.call_tool("echo", json!({"text": "q"})).await.unwrap();
    loud.call_tool("echo", json!({"text": "l"})).await.unwrap();
    let records = records.lock().unwrap().clone();
    assert_eq!(records.len(), 1);
    assert_eq!(
        (records[0].server.as_str(), records[0].outcome),
        ("quiet-client", "ok")
    );
    assert_eq!(records[0].arguments_sha256, sha256_hex(br#"{"text":"q"}"#));
    let text = logs.text();
    let client_events = |name: &str| {
        text.lines()
            .filter(|l| l.contains("toolwire::audit") && l.contains(&format!("server={name}")))
            .count()
    };
    assert_eq!(client_events("loud-client"), 1, "{text}");
    assert_eq!(client_events("quiet-client"), 0, "{text}");
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[tokio::test]
async fn giving_up_on_a_request_cancels_it_on_the_server() {
    use std::sync::atomic::AtomicBool;
    let cancelled = Arc::new(AtomicBool::new(false));
    let flag = cancelled.clone();
    let server = support::demo_builder()
        .tool(toolwire_server::ToolBuilder::new("watch").handler(
            move |_: toolwire_server::NoArgs, cx: toolwire_server::RequestContext| {
                // Set when the server stops the handler: by cancelling it
                // or by dropping its future.
                let stopped = SetOnDrop(flag.clone());
                async move {
                    cx.cancellation().cancelled().await;
                    drop(stopped);
                    "cancelled"
                }
            },
        ))
        .build()
        .unwrap();
    for (transport, client) in both(server).await {
        cancelled.store(false, Ordering::SeqCst);
        let options = RequestOptions::new().timeout(Duration::from_millis(100));
        let err = client
            .call_tool_with("watch", json!({}), &options)
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Timeout(_)), "{transport}: {err:?}");
        let mut seen = false;
        for _ in 0..500 {
            if cancelled.load(Ordering::SeqCst) {
                seen = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(seen, "{transport}: the server never saw the cancellation");
    }
}

struct SetOnDrop(Arc<std::sync::atomic::AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}
