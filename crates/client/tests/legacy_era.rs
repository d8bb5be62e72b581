//! The 2025-11-25 era ("legacy") end to end over real transports: the
//! dual-era demo server forced to each era, a strictly legacy fake found by
//! auto mode (stdio probe, HTTP 4xx), the probe timeout, expired sessions,
//! SSE resumption, elicitation in both eras, listen() and DELETE on close.

mod support;

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};
use toolwire_client::handlers::{BoxError, InputContext};
use toolwire_client::transport::{Era, HttpTransport, ProtocolMode};
use toolwire_client::{Client, ClientBuilder, Error, ListenEvent, RequestNotification};
use toolwire_client::{RequestOptions, transport::TransportError};
use toolwire_protocol::{ElicitRequestParams, ElicitResult, ElicitValue, Root, SubscriptionFilter};

use support::legacy_fake::{FakeOptions, LegacyFake, Seen, eventually, session_id};
use support::{both_in, demo_server, pipe_builder};

/// Every wait in these tests is bounded by this.
const LIMIT: Duration = Duration::from_secs(15);

async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, future)
        .await
        .unwrap_or_else(|_| panic!("{what}: no outcome within {LIMIT:?}"))
}

fn text_of(result: &toolwire_protocol::CallToolResult) -> &str {
    result.content[0].as_text().expect("a text block")
}

fn tool_names(list: &toolwire_client::ToolList) -> Vec<String> {
    list.tools.iter().map(|t| t.name().to_owned()).collect()
}

/// True when `_meta` of the message has a `io.modelcontextprotocol/*` key.
fn has_modern_meta(body: &Value) -> bool {
    body["params"]["_meta"]
        .as_object()
        .is_some_and(|m| m.keys().any(|k| k.starts_with("io.modelcontextprotocol/")))
}

const DEMO_TOOLS: [&str; 9] = [
    "echo", "add", "fail", "sleep", "progress", "region", "confirm", "ask_all", "nag",
];

#[tokio::test]
async fn the_dual_era_demo_server_speaks_the_era_it_is_told_over_both_transports() {
    let cases = [
        (ProtocolMode::Legacy, Era::Legacy, "2025-11-25"),
        (ProtocolMode::Modern, Era::Modern, "2026-07-28"),
        (ProtocolMode::Auto, Era::Modern, "2026-07-28"),
    ];
    for (mode, era, version) in cases {
        for (transport, client) in both_in(demo_server(), mode).await {
            let case = format!("{transport} {mode:?}");
            let discovered = within(&case, client.discover()).await.unwrap().value;
            assert_eq!(client.era(), Some(era), "{case}");
            assert!(
                discovered.supported_versions.iter().any(|v| v == version),
                "{case}: {:?}",
                discovered.supported_versions
            );
            if era == Era::Legacy {
                assert_eq!(discovered.supported_versions, [version], "{case}");
            }
            let info = discovered
                .meta
                .as_ref()
                .and_then(|m| m.server_info())
                .and_then(Result::ok)
                .expect("server info");
            assert_eq!(
                (info.name.as_str(), info.version.as_str()),
                ("demo", "1.0.0")
            );

            let tools = within(&case, client.list_tools()).await.unwrap();
            assert_eq!(tool_names(&tools), DEMO_TOOLS, "{case}");
            let echoed = within(&case, client.call_tool("echo", json!({"text": "hi"})))
                .await
                .unwrap();
            assert_eq!(text_of(&echoed), "hi", "{case}");
            let sum = within(&case, client.call_tool("add", json!({"a": 2, "b": 3})))
                .await
                .unwrap();
            assert_eq!(sum.structured_content, Some(json!({"total": 5})), "{case}");
            let failed = within(&case, client.call_tool("fail", json!({}))).await;
            assert!(
                matches!(failed, Err(Error::ToolExecution { ref tool, .. }) if tool == "fail"),
                "{case}: {failed:?}"
            );

            assert_eq!(client.era(), Some(era), "{case}");
            assert_eq!(client.protocol_version(), version, "{case}");
            within(&case, client.close()).await;
        }
    }
}

fn legacy_client(builder: ClientBuilder) -> Client {
    builder
        .name("legacy-fake")
        .client_info("legacy-test", "9.9.9")
        .elicitation(|_: ElicitRequestParams, _: InputContext| async {
            Ok::<_, BoxError>(ElicitResult::decline())
        })
        .roots(vec![Root::new("file:///work")])
        .build()
}

/// The exact `initialize` params `legacy_client` implies.
fn expected_initialize_params() -> Value {
    json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {"elicitation": {"form": {}}, "roots": {}},
        "clientInfo": {"name": "legacy-test", "version": "9.9.9"}
    })
}

/// Lists and calls through `client` on the fake, checking the results.
async fn list_and_call(case: &str, client: &Client) {
    let tools = within(case, client.list_tools()).await.unwrap();
    assert_eq!(tool_names(&tools), ["echo", "resume"], "{case}");
    let echoed = within(case, client.call_tool("echo", json!({"text": "hello"})))
        .await
        .unwrap();
    assert_eq!(text_of(&echoed), "hello", "{case}");
    assert_eq!(client.era(), Some(Era::Legacy), "{case}");
    assert_eq!(client.protocol_version(), "2025-11-25", "{case}");
}

#[tokio::test]
async fn auto_mode_finds_a_strictly_legacy_stdio_server_and_initializes() {
    for discover_invalid_request in [false, true] {
        let case =
            format!("stdio, discover refused with invalid request: {discover_invalid_request}");
        let fake = LegacyFake::new(FakeOptions {
            discover_invalid_request,
            ..Default::default()
        });
        let client = legacy_client(Client::builder(fake.stdio().build()));
        assert_eq!(
            client.era(),
            None,
            "{case}: nothing known before first contact"
        );
        list_and_call(&case, &client).await;

        let seen = fake.seen();
        let trail = fake.trail();
        assert_eq!(
            trail,
            [
                "STDIO server/discover",
                "STDIO initialize",
                "STDIO notifications/initialized",
                "STDIO tools/list",
                "STDIO tools/call"
            ],
            "{case}"
        );
        // The probe carried the modern _meta; initialize is the legacy shape.
        assert!(has_modern_meta(&seen[0].body), "{case}: {:?}", seen[0].body);
        assert_eq!(
            seen[1].body["params"],
            expected_initialize_params(),
            "{case}"
        );
        assert_eq!(seen[2].body.get("params"), None, "{case}");
        for s in &seen[2..] {
            assert!(
                !has_modern_meta(&s.body),
                "{case}: modern _meta in {:?}",
                s.body
            );
        }
        let call = fake.with_method("tools/call").pop().unwrap();
        assert_eq!(
            call.body["params"],
            json!({"name": "echo", "arguments": {"text": "hello"}}),
            "{case}"
        );

        // server/discover is answered from the InitializeResult, locally.
        let discovered = within(&case, client.discover()).await.unwrap().value;
        assert_eq!(discovered.supported_versions, ["2025-11-25"]);
        assert_eq!(
            discovered.instructions.as_deref(),
            Some("a strictly legacy fake")
        );
        assert_eq!(fake.with_method("server/discover").len(), 1, "{case}");
        within(&case, client.close()).await;
    }
}

#[tokio::test]
async fn auto_mode_finds_a_strictly_legacy_http_server_and_uses_its_session() {
    let fake = LegacyFake::new(FakeOptions::default());
    let url = fake.http().await;
    let client = legacy_client(Client::builder(HttpTransport::new(url).unwrap()));
    list_and_call("http", &client).await;

    let seen = fake.seen();
    let trail = fake.trail();
    assert_eq!(
        trail,
        [
            "POST tools/list",
            "POST initialize",
            "POST notifications/initialized",
            "GET",
            "POST tools/list",
            "POST tools/call"
        ]
    );
    // The modern attempt: no session, the modern version and _meta; refused with 400.
    assert_eq!(seen[0].header("mcp-session-id"), None);
    assert_eq!(seen[0].header("mcp-protocol-version"), Some("2026-07-28"));
    assert!(has_modern_meta(&seen[0].body), "{:?}", seen[0].body);
    // initialize: the exact legacy params, no session yet.
    assert_eq!(seen[1].body["params"], expected_initialize_params());
    assert_eq!(seen[1].header("mcp-session-id"), None);
    // Everything after carries the session and the negotiated version.
    let session = session_id(1);
    for s in &seen[2..] {
        assert_eq!(
            s.header("mcp-session-id"),
            Some(session.as_str()),
            "{} {:?}",
            s.verb,
            s.body
        );
        assert_eq!(
            s.header("mcp-protocol-version"),
            Some("2025-11-25"),
            "{:?}",
            s.body
        );
        assert!(!has_modern_meta(&s.body), "modern _meta in {:?}", s.body);
    }
    assert!(
        seen.iter().any(|s| s.verb == "GET"),
        "the standalone GET stream was opened: {trail:?}"
    );
    let get = seen.iter().find(|s| s.verb == "GET").unwrap();
    assert_eq!(get.header("accept"), Some("text/event-stream"));
    assert_eq!(get.header("last-event-id"), None);
    let call = fake.with_method("tools/call").pop().unwrap();
    assert_eq!(call.header("mcp-method"), Some("tools/call"));
    assert_eq!(call.header("mcp-name"), Some("echo"));
    assert_eq!(
        call.body["params"],
        json!({"name": "echo", "arguments": {"text": "hello"}})
    );
    assert_eq!(fake.initializes(), 1);
    within("close", client.close()).await;
}

#[tokio::test]
async fn a_stdio_server_silent_on_discover_is_taken_for_legacy_after_the_probe_timeout() {
    let fake = LegacyFake::new(FakeOptions {
        silent_discover: true,
        ..Default::default()
    });
    let probe = Duration::from_millis(300);
    let client = legacy_client(Client::builder(fake.stdio().probe_timeout(probe).build()));
    let started = Instant::now();
    let tools = within("list", client.list_tools()).await.unwrap();
    let took = started.elapsed();
    assert_eq!(tool_names(&tools), ["echo", "resume"]);
    assert!(
        took >= probe,
        "fell back after {took:?}, before the probe timeout"
    );
    assert!(
        took < probe + Duration::from_millis(1500),
        "fell back only after {took:?}"
    );
    assert_eq!(
        fake.trail()[..4],
        [
            "STDIO server/discover",
            "STDIO initialize",
            "STDIO notifications/initialized",
            "STDIO tools/list"
        ]
    );
    // The probe is given up silently: nothing but initialize may come first.
    assert!(fake.with_method("notifications/cancelled").is_empty());
    let init = fake.with_method("initialize");
    let discover = fake.with_method("server/discover");
    // (The fake's clock starts when it reads the probe, a little after
    // the client's: allow for that.)
    let waited = init[0].at - discover[0].at;
    assert!(
        waited >= probe - Duration::from_millis(50),
        "initialize {waited:?} after the probe"
    );

    let echoed = within("call", client.call_tool("echo", json!({"text": "late"})))
        .await
        .unwrap();
    assert_eq!(text_of(&echoed), "late");
    assert_eq!(client.era(), Some(Era::Legacy));
    assert_eq!(client.protocol_version(), "2025-11-25");
    // No second probe on the same connection.
    assert_eq!(fake.with_method("server/discover").len(), 1);
    assert_eq!(fake.initializes(), 1);
    within("close", client.close()).await;
}

#[tokio::test]
async fn an_expired_http_session_is_initialised_again_once_and_the_call_retried() {
    for mode in [ProtocolMode::Auto, ProtocolMode::Legacy] {
        let fake = LegacyFake::new(FakeOptions::default());
        let url = fake.http().await;
        let transport = HttpTransport::builder(url).protocol(mode).build().unwrap();
        let client = legacy_client(Client::builder(transport));
        let one = within(
            "first call",
            client.call_tool("echo", json!({"text": "one"})),
        )
        .await
        .unwrap();
        assert_eq!(text_of(&one), "one");
        assert_eq!(fake.initializes(), 1, "{mode:?}");

        fake.expire_sessions();
        let two = within(
            "after expiry",
            client.call_tool("echo", json!({"text": "two"})),
        )
        .await
        .unwrap();
        assert_eq!(text_of(&two), "two", "{mode:?}");
        assert_eq!(fake.initializes(), 2, "{mode:?}: {:?}", fake.trail());
        let mut expected = vec![
            "POST initialize",
            "POST notifications/initialized",
            "GET",
            "POST tools/list",
            "POST tools/call",
            "POST tools/call",
            "POST initialize",
            "POST notifications/initialized",
            "GET",
            "POST tools/call",
        ];
        if mode == ProtocolMode::Auto {
            // The modern attempt, refused with 400.
            expected.insert(0, "POST tools/list");
        }
        assert_eq!(fake.trail(), expected, "{mode:?}");

        // The request refused with 404 went out again on the new session.
        let (first, second) = (session_id(1), session_id(2));
        let after: Vec<Seen> = fake
            .seen()
            .into_iter()
            .skip_while(|s| s.body["params"]["arguments"]["text"] != "one")
            .skip(1)
            .filter(|s| s.verb == "POST")
            .collect();
        let summary: Vec<(String, Option<String>)> = after
            .iter()
            .map(|s| {
                (
                    s.method().unwrap_or("response").to_owned(),
                    s.header("mcp-session-id").map(str::to_owned),
                )
            })
            .collect();
        let refused = summary[0].clone();
        assert_eq!(refused.1.as_deref(), Some(first.as_str()), "{summary:?}");
        assert_eq!(
            summary[1..3],
            [
                ("initialize".to_owned(), None),
                ("notifications/initialized".to_owned(), Some(second.clone())),
            ],
            "{mode:?}: {summary:?}"
        );
        assert_eq!(
            summary[3],
            (refused.0.clone(), Some(second.clone())),
            "{summary:?}"
        );
        assert_eq!(
            summary.last(),
            Some(&("tools/call".to_owned(), Some(second.clone()))),
            "{summary:?}"
        );

        // The new session stays: no more initializes.
        let three = within(
            "third call",
            client.call_tool("echo", json!({"text": "three"})),
        )
        .await
        .unwrap();
        assert_eq!(text_of(&three), "three");
        assert_eq!(fake.initializes(), 2, "{mode:?}");
        within("close", client.close()).await;
    }
}

#[tokio::test]
async fn a_session_that_expires_again_at_once_is_initialised_again_only_once() {
    let fake = LegacyFake::new(FakeOptions {
        expire_at_once: true,
        ..Default::default()
    });
    let url = fake.http().await;
    let transport = HttpTransport::builder(url)
        .protocol(ProtocolMode::Legacy)
        .build()
        .unwrap();
    let client = legacy_client(Client::builder(transport));
    let failed = within("list", client.list_tools()).await;
    assert!(
        matches!(
            &failed,
            Err(Error::Transport(TransportError::Http { status: 404, body })) if body == "Session not found"
        ),
        "{failed:?}"
    );
    assert_eq!(fake.initializes(), 2, "{:?}", fake.trail());
    assert_eq!(
        fake.with_method("tools/list").len(),
        2,
        "{:?}",
        fake.trail()
    );
}

#[tokio::test]
async fn a_post_stream_that_ends_early_is_resumed_with_last_event_id_after_the_retry_delay() {
    let fake = LegacyFake::new(FakeOptions::default());
    let url = fake.http().await;
    let client = legacy_client(Client::builder(HttpTransport::new(url).unwrap()));
    let progress = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&progress);
    let options = RequestOptions::new().on_notification(move |n| {
        if let RequestNotification::Progress(p) = n {
            sink.lock().unwrap().push((p.progress, p.message.clone()));
        }
    });
    let result = within(
        "resumed call",
        client.call_tool_with("resume", json!({}), &options),
    )
    .await
    .unwrap();
    assert_eq!(text_of(&result), "resumed");
    assert_eq!(
        fake.trail(),
        [
            "POST tools/list",
            "POST initialize",
            "POST notifications/initialized",
            "GET",
            "POST tools/list",
            "POST tools/call",
            "GET"
        ]
    );
    assert_eq!(
        *progress.lock().unwrap(),
        [
            (1.0, Some("before the break".to_owned())),
            (2.0, Some("after the break".to_owned())),
        ]
    );

    let resumes: Vec<Seen> = fake
        .seen()
        .into_iter()
        .filter(|s| s.verb == "GET" && s.header("last-event-id").is_some())
        .collect();
    assert_eq!(resumes.len(), 1, "{:?}", fake.trail());
    let resume = &resumes[0];
    assert_eq!(resume.header("last-event-id"), Some("e1"));
    assert_eq!(
        resume.header("mcp-session-id"),
        Some(session_id(1).as_str())
    );
    assert_eq!(resume.header("mcp-protocol-version"), Some("2025-11-25"));
    let closed = fake
        .resume_closed_at
        .lock()
        .unwrap()
        .expect("the POST stream was sent");
    let waited = resume.at - closed;
    assert!(
        waited >= Duration::from_millis(200),
        "resumed after {waited:?}"
    );
    assert!(
        waited < Duration::from_secs(2),
        "resumed only after {waited:?}"
    );
    // The call was POSTed once: resuming is not retrying.
    let calls = fake.with_method("tools/call");
    assert_eq!(calls.len(), 1);
    let token = &calls[0].body["params"]["_meta"]["progressToken"];
    assert!(token.is_number() || token.is_string(), "{token}");
    within("close", client.close()).await;
}

/// A client answering `confirm` forms: accepts "Really yes?", declines the rest.
fn confirming(builder: ClientBuilder, asked: Arc<Mutex<Vec<(String, InputContext)>>>) -> Client {
    builder
        .name("demo")
        .elicitation(move |params: ElicitRequestParams, cx: InputContext| {
            asked
                .lock()
                .unwrap()
                .push((params.message().to_owned(), cx));
            let yes = params.message() == "Really yes?";
            async move {
                Ok::<_, BoxError>(if yes {
                    let ok: ElicitValue = serde_json::from_value(json!(true)).unwrap();
                    ElicitResult::accept([("ok".to_owned(), ok)].into())
                } else {
                    ElicitResult::decline()
                })
            }
        })
        .build()
}

#[tokio::test]
async fn elicitation_is_answered_by_the_same_handler_in_both_eras_over_both_transports() {
    for mode in [ProtocolMode::Modern, ProtocolMode::Legacy] {
        let server = demo_server();
        let url = support::http_server(server.clone()).await;
        let transports: [(&str, ClientBuilder); 2] = [
            (
                "stdio",
                Client::builder(pipe_builder(server).protocol(mode).build()),
            ),
            (
                "http",
                Client::builder(HttpTransport::builder(url).protocol(mode).build().unwrap()),
            ),
        ];
        for (transport, builder) in transports {
            let case = format!("{transport} {mode:?}");
            let asked = Arc::new(Mutex::new(Vec::new()));
            let client = confirming(builder, Arc::clone(&asked));
            let yes = within(&case, client.call_tool("confirm", json!({"text": "yes"})))
                .await
                .unwrap();
            assert_eq!(text_of(&yes), "yes: confirmed", "{case}");
            assert_eq!(asked.lock().unwrap().len(), 1, "{case}: once per call");
            let no = within(&case, client.call_tool("confirm", json!({"text": "no"})))
                .await
                .unwrap();
            assert_eq!(text_of(&no), "no: refused", "{case}");
            let asked = asked.lock().unwrap().clone();
            let messages: Vec<&str> = asked.iter().map(|(m, _)| m.as_str()).collect();
            assert_eq!(messages, ["Really yes?", "Really no?"], "{case}");
            for (_, cx) in &asked {
                assert_eq!(cx.server, "demo", "{case}");
                assert_eq!(cx.method, "tools/call", "{case}");
                assert_eq!(cx.target, "confirm", "{case}");
            }
            assert_eq!(
                client.era(),
                Some(if mode == ProtocolMode::Legacy {
                    Era::Legacy
                } else {
                    Era::Modern
                }),
                "{case}"
            );
            within(&case, client.close()).await;
        }
    }
}

#[tokio::test]
async fn listen_on_a_legacy_session_reports_tools_list_changed() {
    for transport in ["stdio", "http"] {
        let fake = LegacyFake::new(FakeOptions::default());
        let client = match transport {
            "stdio" => legacy_client(Client::builder(fake.stdio().build())),
            _ => legacy_client(Client::builder(
                HttpTransport::new(fake.http().await).unwrap(),
            )),
        };
        let filter = SubscriptionFilter {
            tools_list_changed: Some(true),
            prompts_list_changed: Some(true),
            ..Default::default()
        };
        let mut events = within(transport, client.listen(filter)).await.unwrap();
        assert_eq!(client.era(), Some(Era::Legacy), "{transport}");
        // The fake offers tools.listChanged only.
        assert_eq!(
            *events.acknowledged(),
            SubscriptionFilter {
                tools_list_changed: Some(true),
                ..Default::default()
            },
            "{transport}"
        );
        assert!(
            eventually(LIMIT, || fake.listeners() == 1).await,
            "{transport}: no stream to push on"
        );
        // Not asked for (not granted), then asked for.
        fake.push(json!({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"}));
        fake.push(json!({"jsonrpc": "2.0", "method": "notifications/resources/list_changed"}));
        fake.push(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}));
        let event = within(transport, events.next())
            .await
            .expect("the stream is open")
            .unwrap();
        assert_eq!(event, ListenEvent::ToolsListChanged, "{transport}");
        // And again: the subscription keeps going.
        fake.push(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}));
        let event = within(transport, events.next())
            .await
            .expect("the stream is open")
            .unwrap();
        assert_eq!(event, ListenEvent::ToolsListChanged, "{transport}");
        // listen() was served by the transport: only HTTP's first, modern
        // attempt (refused with 400) reached the server.
        let sent = fake.with_method("subscriptions/listen").len();
        let expected = if transport == "http" { 1 } else { 0 };
        assert_eq!(sent, expected, "{transport}: {:?}", fake.trail());
        drop(events);
        within(transport, client.close()).await;
    }
}

#[tokio::test]
async fn close_ends_an_http_legacy_session_with_delete() {
    let fake = LegacyFake::new(FakeOptions::default());
    let url = fake.http().await;
    let client = legacy_client(Client::builder(HttpTransport::new(url).unwrap()));
    list_and_call("http", &client).await;
    assert!(fake.seen().iter().all(|s| s.verb != "DELETE"));
    within("close", client.close()).await;
    let deletes: Vec<Seen> = fake
        .seen()
        .into_iter()
        .filter(|s| s.verb == "DELETE")
        .collect();
    assert_eq!(deletes.len(), 1, "{:?}", fake.trail());
    assert_eq!(
        deletes[0].header("mcp-session-id"),
        Some(session_id(1).as_str())
    );
    assert_eq!(
        deletes[0].header("mcp-protocol-version"),
        Some("2025-11-25")
    );
    assert_eq!(fake.trail().last().map(String::as_str), Some("DELETE"));
    // The GET stream went with the session.
    assert!(
        eventually(LIMIT, || fake.listeners() == 0).await,
        "the GET stream is still open"
    );
}

/// The fake's record of the response to its request `id`.
fn response_to(fake: &LegacyFake, id: &str) -> Option<Seen> {
    fake.seen()
        .into_iter()
        .find(|s| s.method().is_none() && s.body["id"] == id)
}

#[tokio::test]
async fn requests_a_legacy_server_sends_on_its_own_are_answered_through_the_handlers() {
    for transport in ["stdio", "http"] {
        let fake = LegacyFake::new(FakeOptions::default());
        let client = match transport {
            "stdio" => legacy_client(Client::builder(fake.stdio().build())),
            _ => legacy_client(Client::builder(
                HttpTransport::new(fake.http().await).unwrap(),
            )),
        };
        within(transport, client.list_tools()).await.unwrap();
        assert!(
            eventually(LIMIT, || fake.listeners() == 1).await,
            "{transport}: no stream to push on"
        );
        fake.push(json!({"jsonrpc": "2.0", "id": "s-ping", "method": "ping"}));
        fake.push(json!({"jsonrpc": "2.0", "id": "s-elicit", "method": "elicitation/create",
            "params": {"mode": "form", "message": "Name?",
                       "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}}));
        fake.push(json!({"jsonrpc": "2.0", "id": "s-roots", "method": "roots/list"}));
        fake.push(
            json!({"jsonrpc": "2.0", "id": "s-sample", "method": "sampling/createMessage",
            "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                       "maxTokens": 5}}),
        );
        let ids = ["s-ping", "s-elicit", "s-roots", "s-sample"];
        let all = eventually(LIMIT, || {
            ids.iter().all(|id| response_to(&fake, id).is_some())
        })
        .await;
        assert!(all, "{transport}: {:?}", fake.trail());
        let body = |id: &str| response_to(&fake, id).unwrap().body;
        assert_eq!(
            body("s-ping"),
            json!({"jsonrpc": "2.0", "id": "s-ping", "result": {}})
        );
        assert_eq!(
            body("s-elicit")["result"]["action"],
            "decline",
            "{transport}"
        );
        assert_eq!(
            body("s-roots"),
            json!({"jsonrpc": "2.0", "id": "s-roots", "result": {"roots": [{"uri": "file:///work"}]}}),
            "{transport}"
        );
        // No sampling handler: the capability was never declared.
        assert_eq!(body("s-sample")["error"]["code"], -32601, "{transport}");
        if transport == "http" {
            for id in ids {
                let seen = response_to(&fake, id).unwrap();
                assert_eq!(seen.verb, "POST");
                assert_eq!(seen.header("mcp-session-id"), Some(session_id(1).as_str()));
                assert_eq!(seen.header("mcp-protocol-version"), Some("2025-11-25"));
            }
        }
        within(transport, client.close()).await;
    }
}

#[tokio::test]
async fn a_legacy_era_hint_skips_the_probe_and_the_modern_attempt() {
    let fake = LegacyFake::new(FakeOptions::default());
    let stdio = fake.stdio().era_hint(Some(Era::Legacy)).build();
    let client = legacy_client(Client::builder(stdio));
    list_and_call("stdio", &client).await;
    assert_eq!(
        fake.trail(),
        [
            "STDIO initialize",
            "STDIO notifications/initialized",
            "STDIO tools/list",
            "STDIO tools/call"
        ]
    );
    within("close", client.close()).await;

    let fake = LegacyFake::new(FakeOptions::default());
    let http = HttpTransport::builder(fake.http().await)
        .era_hint(Some(Era::Legacy))
        .build()
        .unwrap();
    let client = legacy_client(Client::builder(http));
    list_and_call("http", &client).await;
    assert_eq!(
        fake.trail(),
        [
            "POST initialize",
            "POST notifications/initialized",
            "GET",
            "POST tools/list",
            "POST tools/call"
        ]
    );
    within("close", client.close()).await;
}

#[tokio::test]
async fn a_wrong_legacy_hint_is_corrected_against_a_modern_only_server() {
    let server = support::demo_builder().modern_only().build().unwrap();
    let url = support::http_server(server.clone()).await;
    let transports: [(&str, ClientBuilder); 2] = [
        (
            "stdio",
            Client::builder(pipe_builder(server).era_hint(Some(Era::Legacy)).build()),
        ),
        (
            "http",
            Client::builder(
                HttpTransport::builder(url)
                    .era_hint(Some(Era::Legacy))
                    .build()
                    .unwrap(),
            ),
        ),
    ];
    for (transport, builder) in transports {
        let client = builder.build();
        assert_eq!(client.era(), Some(Era::Legacy), "{transport}: the hint");
        let echoed = within(transport, client.call_tool("echo", json!({"text": "hi"})))
            .await
            .unwrap();
        assert_eq!(text_of(&echoed), "hi", "{transport}");
        assert_eq!(client.era(), Some(Era::Modern), "{transport}");
        assert_eq!(client.protocol_version(), "2026-07-28", "{transport}");
        within(transport, client.close()).await;
    }
}

#[tokio::test]
async fn a_sessionless_legacy_http_server_is_found_by_its_answer_to_discover() {
    let fake = LegacyFake::new(FakeOptions {
        sessionless: true,
        ..Default::default()
    });
    let client = legacy_client(Client::builder(
        HttpTransport::new(fake.http().await).unwrap(),
    ));
    let discovered = within("discover", client.discover()).await.unwrap().value;
    assert_eq!(client.era(), Some(Era::Legacy));
    assert_eq!(discovered.supported_versions, ["2025-11-25"]);
    list_and_call("http", &client).await;
    let seen = fake.seen();
    assert_eq!(
        fake.trail(),
        [
            "POST server/discover",
            "POST initialize",
            "POST notifications/initialized",
            "GET",
            "POST tools/list",
            "POST tools/call"
        ]
    );
    assert_eq!(seen[1].body["params"], expected_initialize_params());
    for s in &seen[2..] {
        assert_eq!(s.header("mcp-session-id"), None, "{:?}", s.body);
        assert_eq!(s.header("mcp-protocol-version"), Some("2025-11-25"));
        assert!(!has_modern_meta(&s.body), "modern _meta in {:?}", s.body);
    }
    within("close", client.close()).await;
    assert!(
        fake.seen().iter().all(|s| s.verb != "DELETE"),
        "no session, so nothing to delete"
    );
}

/// A call that times out on a legacy stdio session is cancelled with
/// `notifications/cancelled` naming it, and the session goes on serving.
#[tokio::test]
async fn a_timed_out_call_on_a_legacy_session_is_cancelled_and_the_session_goes_on() {
    let fake = LegacyFake::new(FakeOptions::default());
    let transport = fake.stdio().protocol(ProtocolMode::Legacy).build();
    let client = Client::builder(transport).build();
    let options = RequestOptions::new().timeout(Duration::from_millis(200));
    let error = client
        .call_tool_with("hang", json!({}), &options)
        .await
        .unwrap_err();
    assert!(matches!(error, Error::Timeout(_)), "{error:?}");
    let call = fake.with_method("tools/call");
    let hung = call.last().expect("the call was sent").body["id"].clone();
    let arrived = eventually(Duration::from_secs(5), || {
        !fake.with_method("notifications/cancelled").is_empty()
    })
    .await;
    assert!(arrived, "no notifications/cancelled: {:?}", fake.trail());
    assert_eq!(
        fake.with_method("notifications/cancelled")[0].body["params"],
        json!({"requestId": hung, "reason": "cancelled by the client"})
    );
    let echoed = client
        .call_tool("echo", json!({"text": "still here"}))
        .await
        .unwrap();
    assert_eq!(echoed.content[0].as_text(), Some("still here"));
    assert_eq!(fake.initializes(), 1);
}

/// A group aggregates servers of both eras the same way: a strictly legacy
/// one found by auto mode beside our server speaking 2026-07-28.
#[tokio::test]
async fn a_group_aggregates_a_legacy_and_a_modern_server() {
    let fake = LegacyFake::new(FakeOptions::default());
    let legacy = Client::builder(fake.stdio().build()).build();
    let modern = Client::builder(pipe_builder(demo_server()).build()).build();
    let group = toolwire_client::ClientGroup::builder()
        .client("old", legacy.clone())
        .client("new", modern.clone())
        .build();
    let list = group.list_tools().await;
    assert!(list.failures.is_empty(), "{:?}", list.failures);
    let names: Vec<&str> = list.tools.iter().map(|t| t.name.as_str()).collect();
    assert!(
        names.contains(&"old_echo") && names.contains(&"new_echo"),
        "{names:?}"
    );
    for (tool, text) in [
        ("old_echo", "to the legacy one"),
        ("new_echo", "to the modern one"),
    ] {
        let result = group.call_tool(tool, json!({"text": text})).await.unwrap();
        assert_eq!(result.content[0].as_text(), Some(text), "{tool}");
    }
    assert_eq!(legacy.era(), Some(Era::Legacy));
    assert_eq!(modern.era(), Some(Era::Modern));
}
