//! The legacy era over Streamable HTTP, on a real server on 127.0.0.1:0:
//! sessions (minting, expiry, cap, DELETE, principal binding), server→client
//! requests on the POST's SSE stream, the standalone GET stream, resumption,
//! and both eras on one endpoint at once.

mod common;

use std::time::Duration;

use common::legacy_http::{Endpoint, Events, builder, initialize, legacy};
use common::request;
use serde_json::{Value, json};
use toolwire_server::Principal;
use toolwire_server::auth::{AuthConfig, StaticTokens};
use toolwire_server::http::HttpConfig;

#[tokio::test]
async fn initialize_mints_a_128_bit_session_id_and_results_are_legacy_shaped() {
    let endpoint = Endpoint::start(builder().build().unwrap(), HttpConfig::new()).await;
    let response = endpoint.post(None, &initialize(1)).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let id = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(id.len(), 32);
    assert!(id.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body,
        json!({"jsonrpc": "2.0", "id": 1, "result": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {"listChanged": true}, "logging": {},
                "resources": {"subscribe": true, "listChanged": true}},
            "serverInfo": {"name": "legacy-http", "version": "1.0.0"}
        }})
    );
    let (status, reply) = endpoint
        .call(
            &id,
            &legacy(
                2,
                "tools/call",
                json!({"name": "echo", "arguments": {"text": "hi"}}),
            ),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        reply,
        json!({"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "hi"}]}})
    );
    let (_, ping) = endpoint.call(&id, &legacy(3, "ping", json!({}))).await;
    assert_eq!(ping, json!({"jsonrpc": "2.0", "id": 3, "result": {}}));
    assert_eq!(endpoint.sessions.len(), 1);
    endpoint.stop().await;
}

#[tokio::test]
async fn both_eras_are_served_on_one_endpoint_at_the_same_time() {
    let endpoint = Endpoint::start(builder().build().unwrap(), HttpConfig::new()).await;
    let id = endpoint.open(None).await;
    let legacy_calls = (0..20).map(|n| {
        let body = legacy(
            100 + n,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": format!("old {n}")}}),
        );
        let endpoint = &endpoint;
        let id = &id;
        async move { endpoint.call(id, &body).await }
    });
    let modern_calls = (0..20).map(|n| {
        let body = request(
            200 + n,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": format!("new {n}")}}),
        );
        let endpoint = &endpoint;
        async move {
            let response = endpoint
                .client
                .post(&endpoint.url)
                .header("Content-Type", "application/json")
                .header("Accept", "application/json, text/event-stream")
                .header("MCP-Protocol-Version", "2026-07-28")
                .header("Mcp-Method", "tools/call")
                .header("Mcp-Name", "echo")
                .json(&body)
                .send()
                .await
                .unwrap();
            assert!(response.headers().get("mcp-session-id").is_none());
            (
                response.status().as_u16(),
                response.json::<Value>().await.unwrap(),
            )
        }
    });
    let (old, new) = tokio::join!(
        futures::future::join_all(legacy_calls),
        futures::future::join_all(modern_calls)
    );
    for (n, (status, reply)) in old.into_iter().enumerate() {
        assert_eq!(status, 200);
        assert_eq!(
            reply["result"],
            json!({"content": [{"type": "text", "text": format!("old {n}")}]})
        );
    }
    for (n, (status, reply)) in new.into_iter().enumerate() {
        assert_eq!(status, 200);
        assert_eq!(
            reply["result"]["content"],
            json!([{"type": "text", "text": format!("new {n}")}])
        );
        assert_eq!(reply["result"]["resultType"], "complete");
        assert_eq!(
            reply["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
            "legacy-http"
        );
    }
    endpoint.stop().await;
}

#[tokio::test]
async fn requests_without_a_session_unknown_sessions_and_bad_versions_are_refused() {
    let endpoint = Endpoint::start(builder().build().unwrap(), HttpConfig::new()).await;
    let response = endpoint
        .post(None, &legacy(5, "tools/list", json!({})))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    assert_eq!(
        response.json::<Value>().await.unwrap(),
        json!({"jsonrpc": "2.0", "id": 5, "error": {"code": -32600, "message":
            "Invalid request: this request has no Mcp-Session-Id; a 2025-11-25 client sends initialize \
             first and then the session id it got, a 2026-07-28 client puts _meta \
             (io.modelcontextprotocol/protocolVersion, clientCapabilities) on every request"}})
    );
    let (status, reply) = endpoint
        .call(
            "0123456789abcdef0123456789abcdef",
            &legacy(6, "tools/list", json!({})),
        )
        .await;
    assert_eq!(status, 404);
    assert_eq!(
        reply,
        json!({"jsonrpc": "2.0", "id": 6, "error": {"code": -32001, "message":
            "Session not found: it ended, expired or never existed; send initialize to start a new one"}})
    );
    let id = endpoint.open(None).await;
    let response = endpoint
        .post(Some(&id), &legacy(7, "tools/list", json!({})))
        .header("MCP-Protocol-Version", "2031-01-01")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    assert_eq!(
        response.json::<Value>().await.unwrap()["error"]["message"],
        "Invalid request: Unsupported MCP-Protocol-Version \"2031-01-01\" for this session (it negotiated \
         2025-11-25; supported: 2025-11-25, 2025-06-18, 2025-03-26)"
    );
    // No MCP-Protocol-Version header at all is taken as 2025-03-26 and served.
    let response = endpoint
        .client
        .post(&endpoint.url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("Mcp-Session-Id", &id)
        .json(&legacy(8, "ping", json!({})))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    endpoint.stop().await;
}

#[tokio::test]
async fn elicitation_goes_to_the_client_on_the_posts_stream_and_the_answer_comes_as_its_own_post() {
    let endpoint = Endpoint::start(builder().build().unwrap(), HttpConfig::new()).await;
    let id = endpoint.open(None).await;
    let response = endpoint
        .post(
            Some(&id),
            &legacy(9, "tools/call", json!({"name": "confirm", "arguments": {}})),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut events = Events::new(response);
    let priming = events.next().await.unwrap();
    let stream = priming.id.clone().unwrap();
    assert_eq!(priming.retry.as_deref(), Some("1000"));
    assert_eq!(priming.data, "");
    let ask_event = events.next().await.unwrap();
    let ask: Value = serde_json::from_str(&ask_event.data).unwrap();
    assert_eq!(ask["method"], "elicitation/create");
    assert_eq!(ask["params"]["message"], "Go ahead?");
    assert_ne!(
        ask_event.id, priming.id,
        "each event has its own id ({stream})"
    );
    let answer = json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"ok": true}}});
    let posted = endpoint.post(Some(&id), &answer).send().await.unwrap();
    assert_eq!(posted.status(), 202);
    assert_eq!(
        events.message().await,
        json!({"jsonrpc": "2.0", "id": 9, "result": {"content": [{"type": "text", "text": "accepted {\"ok\":true}"}]}})
    );
    assert!(
        events.next().await.is_none(),
        "the stream ends after the response"
    );
    endpoint.stop().await;
}

#[tokio::test]
async fn cancelling_over_http_withdraws_the_elicitation_and_a_silent_client_times_out() {
    let server = builder()
        .client_request_timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let endpoint = Endpoint::start(server, HttpConfig::new()).await;
    let id = endpoint.open(None).await;
    // Cancelled by the client.
    let response = endpoint
        .post(
            Some(&id),
            &legacy(
                10,
                "tools/call",
                json!({"name": "confirm", "arguments": {}}),
            ),
        )
        .send()
        .await
        .unwrap();
    let mut events = Events::new(response);
    events.next().await.unwrap();
    let ask = events.message().await;
    let cancel =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 10}});
    assert_eq!(
        endpoint
            .post(Some(&id), &cancel)
            .send()
            .await
            .unwrap()
            .status(),
        202
    );
    assert_eq!(
        events.message().await,
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {
            "requestId": ask["id"], "reason": "the server no longer needs the answer"}})
    );
    assert!(
        events.next().await.is_none(),
        "no response to a cancelled request"
    );
    // Never answered.
    let response = endpoint
        .post(
            Some(&id),
            &legacy(
                11,
                "tools/call",
                json!({"name": "confirm", "arguments": {}}),
            ),
        )
        .send()
        .await
        .unwrap();
    let mut events = Events::new(response);
    events.next().await.unwrap();
    let ask = events.message().await;
    let mut rest = [events.message().await, events.message().await];
    rest.sort_by_key(|m| m.get("id").is_some());
    assert_eq!(rest[0]["params"]["requestId"], ask["id"]);
    assert_eq!(
        rest[1],
        json!({"jsonrpc": "2.0", "id": 11, "result": {"isError": true, "content": [{"type": "text",
            "text": "the client did not answer elicitation/create within 0.3 s"}]}})
    );
    endpoint.stop().await;
}

#[tokio::test]
async fn a_closed_stream_is_resumed_with_last_event_id() {
    let endpoint = Endpoint::start(builder().build().unwrap(), HttpConfig::new()).await;
    let id = endpoint.open(None).await;
    let response = endpoint
        .post(
            Some(&id),
            &legacy(
                12,
                "tools/call",
                json!({"name": "reconnect", "arguments": {}}),
            ),
        )
        .send()
        .await
        .unwrap();
    let mut events = Events::new(response);
    assert_eq!(events.next().await.unwrap().retry.as_deref(), Some("1000"));
    let log = events.next().await.unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&log.data).unwrap(),
        json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "closing"}})
    );
    assert!(
        events.next().await.is_none(),
        "the server closed the stream"
    );
    let resumed = endpoint
        .client
        .get(&endpoint.url)
        .header("Accept", "text/event-stream")
        .header("Mcp-Session-Id", &id)
        .header("MCP-Protocol-Version", "2025-11-25")
        .header("Last-Event-ID", log.id.unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(resumed.status(), 200);
    let mut events = Events::new(resumed);
    assert_eq!(
        events.message().await,
        json!({"jsonrpc": "2.0", "id": 12, "result": {"content": [{"type": "text", "text": "resumed"}]}})
    );
    endpoint.stop().await;
}

#[tokio::test]
async fn the_standalone_stream_carries_list_changes_and_resource_updates() {
    let server = builder().build().unwrap();
    let endpoint = Endpoint::start(server.clone(), HttpConfig::new()).await;
    let id = endpoint.open(None).await;
    let get = || {
        endpoint
            .client
            .get(&endpoint.url)
            .header("Accept", "text/event-stream")
            .header("Mcp-Session-Id", &id)
            .header("MCP-Protocol-Version", "2025-11-25")
    };
    let mut events = Events::new(get().send().await.unwrap());
    assert_eq!(events.next().await.unwrap().data, "", "priming event");
    let second = get().send().await.unwrap();
    assert_eq!(second.status(), 409);
    let (_, reply) = endpoint
        .call(
            &id,
            &legacy(13, "resources/subscribe", json!({"uri": "test://watched"})),
        )
        .await;
    assert_eq!(reply, json!({"jsonrpc": "2.0", "id": 13, "result": {}}));
    server.notify_resource_updated("test://watched");
    assert_eq!(
        events.message().await,
        json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "test://watched"}})
    );
    server.remove_tool("echo").unwrap();
    assert_eq!(
        events.message().await,
        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    );
    endpoint.stop().await;
}

#[tokio::test]
async fn delete_ends_a_session_and_its_id_answers_404_afterwards() {
    let endpoint = Endpoint::start(builder().build().unwrap(), HttpConfig::new()).await;
    let id = endpoint.open(None).await;
    let delete = || {
        endpoint
            .client
            .delete(&endpoint.url)
            .header("Mcp-Session-Id", &id)
            .header("MCP-Protocol-Version", "2025-11-25")
            .send()
    };
    assert_eq!(delete().await.unwrap().status(), 204);
    assert_eq!(endpoint.sessions.len(), 0);
    let (status, _) = endpoint.call(&id, &legacy(14, "ping", json!({}))).await;
    assert_eq!(status, 404);
    assert_eq!(delete().await.unwrap().status(), 404);
    endpoint.stop().await;
}

#[tokio::test]
async fn a_session_is_bound_to_the_principal_that_opened_it() {
    let tokens = StaticTokens::new()
        .token("alice-token", Principal::new("alice"))
        .token("bob-token", Principal::new("bob"));
    let auth = AuthConfig::new("http://127.0.0.1/mcp", tokens)
        .unwrap()
        .authorization_server("https://auth.example.com");
    let config = HttpConfig::new().auth(auth);
    let endpoint = Endpoint::start(builder().build().unwrap(), config).await;
    let id = endpoint.open(Some("alice-token")).await;
    let as_bob = endpoint
        .post(Some(&id), &legacy(15, "tools/list", json!({})))
        .bearer_auth("bob-token")
        .send()
        .await
        .unwrap();
    assert_eq!(
        as_bob.status(),
        404,
        "another principal sees no such session"
    );
    let as_alice = endpoint
        .post(Some(&id), &legacy(16, "tools/list", json!({})))
        .bearer_auth("alice-token")
        .send()
        .await
        .unwrap();
    assert_eq!(as_alice.status(), 200);
    let deleted_by_bob = endpoint
        .client
        .delete(&endpoint.url)
        .header("Mcp-Session-Id", &id)
        .bearer_auth("bob-token")
        .send()
        .await
        .unwrap();
    assert_eq!(deleted_by_bob.status(), 404);
    assert_eq!(endpoint.sessions.len(), 1);
    endpoint.stop().await;
}

#[tokio::test]
async fn the_cap_refuses_initialize_with_503_until_a_session_ends() {
    let config = HttpConfig::new().max_sessions(2);
    let endpoint = Endpoint::start(builder().build().unwrap(), config).await;
    let first = endpoint.open(None).await;
    endpoint.open(None).await;
    let refused = endpoint.post(None, &initialize(3)).send().await.unwrap();
    assert_eq!(refused.status(), 503);
    assert_eq!(
        refused.json::<Value>().await.unwrap(),
        json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32000, "message":
            "Server busy: it holds its limit of 2 sessions; try again later (sessions end after an idle \
             timeout or with DELETE)"}})
    );
    endpoint
        .client
        .delete(&endpoint.url)
        .header("Mcp-Session-Id", &first)
        .send()
        .await
        .unwrap();
    endpoint.open(None).await;
    endpoint.stop().await;
}

#[tokio::test]
async fn abandoned_sessions_expire_and_leave_the_table_empty() {
    // Long enough that none expires while 200 open on a busy 2-core CI
    // machine (a 1 s timeout once lost 47 of them before the count).
    let config = HttpConfig::new().session_idle_timeout(Duration::from_secs(5));
    let endpoint = Endpoint::start(builder().build().unwrap(), config).await;
    let mut ids = Vec::new();
    for _ in 0..200 {
        ids.push(endpoint.open(None).await);
    }
    assert_eq!(endpoint.sessions.len(), 200);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !endpoint.sessions.is_empty() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(endpoint.sessions.len(), 0, "every idle session expired");
    let (status, _) = endpoint.call(&ids[0], &legacy(17, "ping", json!({}))).await;
    assert_eq!(status, 404);
    endpoint.stop().await;
}

#[tokio::test]
async fn a_modern_only_server_refuses_initialize_naming_its_versions() {
    let endpoint =
        Endpoint::start(builder().modern_only().build().unwrap(), HttpConfig::new()).await;
    let response = endpoint.post(None, &initialize(1)).send().await.unwrap();
    assert_eq!(response.status(), 400);
    assert!(response.headers().get("mcp-session-id").is_none());
    assert_eq!(
        response.json::<Value>().await.unwrap(),
        json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message":
            "Method not found: initialize (this server speaks the stateless protocol, versions 2026-07-28: \
             no initialize handshake; send server/discover and put _meta on every request)"}})
    );
    endpoint.stop().await;
}

#[tokio::test]
async fn host_and_origin_checks_guard_the_legacy_era_too() {
    let endpoint = Endpoint::start(builder().build().unwrap(), HttpConfig::new()).await;
    let response = endpoint
        .post(None, &initialize(1))
        .header("Origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    assert!(response.headers().get("mcp-session-id").is_none());
    assert_eq!(endpoint.sessions.len(), 0);
    let id = endpoint.open(None).await;
    let response = endpoint
        .post(Some(&id), &legacy(2, "ping", json!({})))
        .header("Origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    endpoint.stop().await;
}

#[tokio::test]
async fn a_call_whose_client_drops_the_connection_runs_to_its_end() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use toolwire_server::{NoArgs, RequestContext, ToolBuilder};
    let finished = Arc::new(AtomicBool::new(false));
    let mark = Arc::clone(&finished);
    let server = builder()
        .tool(
            ToolBuilder::new("slow").handler(move |_: NoArgs, _cx: RequestContext| {
                let mark = Arc::clone(&mark);
                async move {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    mark.store(true, std::sync::atomic::Ordering::SeqCst);
                    "done"
                }
            }),
        )
        .build()
        .unwrap();
    let endpoint = Endpoint::start(server, HttpConfig::new()).await;
    let id = endpoint.open(None).await;
    let call = legacy(5, "tools/call", json!({"name": "slow", "arguments": {}}));
    // The client gives up before the answer and closes its connection.
    let gave_up = tokio::time::timeout(
        Duration::from_millis(100),
        endpoint.post(Some(&id), &call).send(),
    )
    .await;
    assert!(gave_up.is_err(), "answered before the client gave up");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !finished.load(Ordering::SeqCst) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the call was cancelled with its connection (2025-11-25: it must not be)"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    endpoint.stop().await;
}
