//! Input requests through `toolwire gateway`, in every pairing of eras: a
//! 2026-07-28 upstream's `input_required` round and a 2025-11-25 upstream's
//! real `elicitation/create` reach a 2026-07-28 client as `input_required`
//! and a 2025-11-25 client as a real request; the answer goes back to the
//! upstream call that waits for it. And a 2025-11-25 upstream's resource
//! templates and resource updates, served to a 2026-07-28 client.

#[allow(dead_code)]
#[path = "../../server/tests/common/legacy_http.rs"]
mod legacy_http;
mod support;

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use support::{Served, bin, fresh_dir};
use toolwire::client::handlers::InputContext;
use toolwire::client::transport::HttpTransport;
use toolwire::client::{Client, Error as ClientError};
use toolwire_server::protocol::{ElicitRequestParams, ElicitResult};

/// A gateway in front of the demo (`toolwire serve --stdio`, 2026-07-28)
/// and a 2025-11-25 server that asks with a real request.
async fn gateway() -> Served {
    gateway_with(&[], "").await
}

/// [`gateway`] with extra environment variables.
async fn gateway_with_env(env: &'static [(&'static str, &'static str)]) -> Served {
    gateway_with(env, "").await
}

/// [`gateway`] with extra environment variables and `[gateway]` lines.
async fn gateway_with(env: &'static [(&'static str, &'static str)], lines: &str) -> Served {
    let asker = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/legacy_asker.py");
    let config = fresh_dir("gateway-bridge").join("gateway.toml");
    let text = format!(
        "[gateway]\nhttp = \"127.0.0.1:0\"\n{lines}\n\n\
         [[upstream]]\nname = \"demo\"\ncommand = [{:?}, \"serve\", \"--stdio\"]\n\
         allow = [\"delete_file\", \"echo\", \"show_roots\", \"summarize\", \"countdown\"]\n\n\
         [[upstream]]\nname = \"old\"\ncommand = [\"python3\", {asker:?}]\n",
        bin()
    );
    std::fs::write(&config, text).unwrap();
    tokio::task::spawn_blocking(move || {
        Served::command_with_env(&["gateway", "--config", config.to_str().unwrap()], env)
    })
    .await
    .unwrap()
}

async fn stop(gateway: Served) {
    tokio::task::spawn_blocking(move || drop(gateway))
        .await
        .unwrap();
}

/// What the elicitation handler was asked: (message, method, target).
type Asked = Arc<Mutex<Vec<(String, String, String)>>>;

/// A 2026-07-28 client that accepts every form with `content`.
fn modern_client(url: &str, content: Value) -> (Client, Asked) {
    let asked = Asked::default();
    let seen = Arc::clone(&asked);
    let client = Client::builder(HttpTransport::new(url).unwrap())
        .elicitation(move |params: ElicitRequestParams, cx: InputContext| {
            let message = match &params {
                ElicitRequestParams::Form(form) => form.message.clone(),
                ElicitRequestParams::Url(url) => url.message.clone(),
            };
            seen.lock().unwrap().push((message, cx.method, cx.target));
            let answer: ElicitResult = serde_json::from_value(json!({
                "action": "accept", "content": content.clone()
            }))
            .unwrap();
            async move { Ok(answer) }
        })
        .build();
    (client, asked)
}

fn text(result: &toolwire_server::protocol::CallToolResult) -> String {
    result.content[0].as_text().unwrap_or_default().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modern_client_answers_a_modern_upstreams_round_through_the_gateway() {
    let gateway = gateway().await;
    let (client, asked) = modern_client(&gateway.url, json!({"confirm": true}));
    let result = client
        .call_tool("demo__delete_file", json!({"path": "notes.txt"}))
        .await
        .unwrap();
    assert_eq!(
        text(&result),
        "Deleted notes.txt (pretend: the demo never touches your files)"
    );
    assert_eq!(
        *asked.lock().unwrap(),
        [(
            "Delete notes.txt?".to_owned(),
            "tools/call".to_owned(),
            "demo__delete_file".to_owned()
        )]
    );
    stop(gateway).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modern_client_answers_a_legacy_upstreams_request_through_the_gateway() {
    let gateway = gateway().await;
    let (client, asked) = modern_client(&gateway.url, json!({"ok": true}));
    let result = client.call_tool("old__confirm", json!({})).await.unwrap();
    assert_eq!(
        text(&result),
        r#"answered {"action": "accept", "content": {"ok": true}}"#
    );
    assert_eq!(asked.lock().unwrap()[0].0, "Go ahead?");
    stop(gateway).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_that_asks_while_it_is_got_asks_the_client_too() {
    let gateway = gateway().await;
    let (client, asked) = modern_client(&gateway.url, json!({"ok": true}));
    let prompt = client
        .get_prompt("old__confirm", Default::default())
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&prompt.messages).unwrap(),
        json!([{"role": "user", "content": {"type": "text",
                "text": r#"answered {"action": "accept", "content": {"ok": true}}"#}}])
    );
    assert_eq!(
        *asked.lock().unwrap(),
        [(
            "Go ahead?".to_owned(),
            "prompts/get".to_owned(),
            "old__confirm".to_owned()
        )]
    );
    stop(gateway).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roots_and_sampling_are_asked_of_the_client_the_same_way() {
    use toolwire::protocol::{CreateMessageRequestParams, CreateMessageResult, Root};
    let gateway = gateway().await;
    let client = Client::builder(HttpTransport::new(&gateway.url).unwrap())
        .roots(vec![Root::new("file:///srv/project")])
        .sampling(|params: CreateMessageRequestParams, _cx: InputContext| async move {
            let answer: CreateMessageResult = serde_json::from_value(json!({
                "role": "assistant", "model": "test-model",
                "content": {"type": "text", "text": format!("{} message(s) read", params.messages.len())}
            }))
            .unwrap();
            Ok(answer)
        })
        .build();
    let roots = client
        .call_tool("demo__show_roots", json!({}))
        .await
        .unwrap();
    assert_eq!(text(&roots), "The client's roots:\nfile:///srv/project");
    let summary = client
        .call_tool("demo__summarize", json!({"text": "A long story."}))
        .await
        .unwrap();
    assert_eq!(text(&summary), "Summary (by test-model): 1 message(s) read");
    stop(gateway).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_elicitation_is_not_asked_and_the_upstreams_learn_why() {
    let gateway = gateway().await;
    let client = Client::builder(HttpTransport::new(&gateway.url).unwrap()).build();
    // The modern upstream is told what the client declared: it refuses.
    let refused = client
        .call_tool("demo__delete_file", json!({"path": "a"}))
        .await
        .unwrap_err();
    let ClientError::Protocol {
        code,
        message,
        data,
    } = refused
    else {
        panic!("{refused}");
    };
    assert_eq!(
        (code, message.as_str()),
        (-32021, "Missing required client capability: elicitation")
    );
    assert_eq!(
        data,
        Some(json!({"requiredCapabilities": {"elicitation": {"form": {}}}}))
    );
    // The legacy upstream asked anyway: its request is answered with an error.
    let result = client.call_tool("old__confirm", json!({})).await.unwrap();
    assert_eq!(
        text(&result),
        "elicitation failed: the client did not declare the capability for elicitation/create"
    );
    // The gateway keeps serving.
    let echoed = client
        .call_tool("demo__echo", json!({"text": "still here"}))
        .await
        .unwrap();
    assert_eq!(text(&echoed), "still here");
    stop(gateway).await;
}

/// Calls `tool` from a 2025-11-25 session, answers the real
/// `elicitation/create` it gets with `content`; the elicitation's message
/// and the call's response.
async fn legacy_call(url: &str, tool: &str, args: Value, content: Value) -> (Value, Value) {
    use legacy_http::{Events, LegacyClient, legacy};
    let client = LegacyClient::new(url.to_owned());
    let session = client.open(None).await;
    let call = legacy(7, "tools/call", json!({"name": tool, "arguments": args}));
    let mut events = Events::new(client.post(Some(&session), &call).send().await.unwrap());
    assert_eq!(events.next().await.unwrap().data, "", "priming event");
    let ask = events.message().await;
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    let answer = json!({"jsonrpc": "2.0", "id": ask["id"],
                        "result": {"action": "accept", "content": content}});
    let posted = client.post(Some(&session), &answer).send().await.unwrap();
    assert_eq!(posted.status(), 202);
    (ask["params"]["message"].clone(), events.message().await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_client_gets_a_real_request_for_a_modern_upstreams_round() {
    let gateway = gateway().await;
    let (message, response) = legacy_call(
        &gateway.url,
        "demo__delete_file",
        json!({"path": "b.txt"}),
        json!({"confirm": false}),
    )
    .await;
    assert_eq!(message, "Delete b.txt?");
    assert_eq!(
        response,
        json!({"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "Kept b.txt"}]}})
    );
    stop(gateway).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_client_answers_a_legacy_upstreams_request_through_the_gateway() {
    let gateway = gateway().await;
    let (message, response) = legacy_call(
        &gateway.url,
        "old__confirm",
        json!({}),
        json!({"ok": false}),
    )
    .await;
    assert_eq!(message, "Go ahead?");
    assert_eq!(
        response["result"]["content"][0]["text"],
        r#"answered {"action": "accept", "content": {"ok": false}}"#
    );
    stop(gateway).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstreams_resource_templates_are_listed_and_matching_reads_forwarded() {
    let gateway = gateway().await;
    let client = Client::builder(HttpTransport::new(&gateway.url).unwrap()).build();
    let templates = client.list_resource_templates().await.unwrap().value;
    let listed: Vec<(&str, &str)> = templates
        .iter()
        .map(|t| (t.uri_template.as_str(), t.name.as_str()))
        .collect();
    assert_eq!(listed, [("note://{id}", "note")]);
    let read = client.read_resource("note://42").await.unwrap().value;
    assert_eq!(
        serde_json::to_value(&read.contents).unwrap(),
        json!([{"uri": "note://42", "mimeType": "text/plain", "text": "note 42"}])
    );
    let unknown = client.read_resource("other://1").await.unwrap_err();
    let ClientError::Protocol {
        code,
        message,
        data,
    } = unknown
    else {
        panic!("{unknown}");
    };
    assert_eq!(
        (code, message.as_str(), data),
        (
            -32602,
            "Resource not found",
            Some(json!({"uri": "other://1"}))
        )
    );
    stop(gateway).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstreams_resource_updates_reach_the_clients_subscribed_to_them() {
    use std::time::Duration;
    use toolwire::client::ListenEvent;
    use toolwire::protocol::SubscriptionFilter;
    let gateway = gateway().await;
    let client = Client::builder(HttpTransport::new(&gateway.url).unwrap()).build();
    let filter = SubscriptionFilter {
        resource_subscriptions: Some(vec!["note://pinned".into()]),
        ..Default::default()
    };
    let mut subscription = client.listen(filter).await.unwrap();
    // The gateway follows the upstream's resources once it has listed them:
    // touch until the upstream has a subscriber (bounded).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let touched = client.call_tool("old__touch", json!({})).await.unwrap();
        if text(&touched) == "touched note://pinned" {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{}", text(&touched));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let event = tokio::time::timeout(Duration::from_secs(10), subscription.next_event())
        .await
        .expect("an update within 10 s");
    assert_eq!(
        event.unwrap().unwrap(),
        ListenEvent::ResourceUpdated {
            uri: "note://pinned".into()
        }
    );
    stop(gateway).await;
}

/// POSTs a 2026-07-28 `tools/call` of `tool` (a client that declares form
/// elicitation) to `url`; the JSON-RPC response.
async fn modern_call(url: &str, tool: &str, extra: Value) -> Value {
    let mut params = json!({"name": tool, "arguments": {"path": "c.txt"}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "raw-test", "version": "1"}
    }});
    params
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let response = reqwest::Client::new()
        .post(url)
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", tool)
        .json(&body)
        .send()
        .await
        .unwrap();
    let text = response.text().await.unwrap();
    // A JSON body, or an SSE stream whose last `data:` line is the response.
    let json = text
        .lines()
        .rev()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(str::trim)
        .find(|data| !data.is_empty())
        .unwrap_or(&text);
    serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_that_reaches_another_instance_is_refused_and_the_holder_finishes_it() {
    const KEYS: &[(&str, &str)] = &[(
        "TOOLWIRE_STATE_KEYS",
        "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
    )];
    let (first, second) = (gateway_with_env(KEYS).await, gateway_with_env(KEYS).await);
    let asked = modern_call(&first.url, "demo__delete_file", json!({})).await;
    let result = &asked["result"];
    assert_eq!(result["resultType"], "input_required", "{asked}");
    assert_eq!(
        result["inputRequests"]["input-1"]["method"],
        "elicitation/create"
    );
    let retry = json!({
        "inputResponses": {"input-1": {"action": "accept", "content": {"confirm": true}}},
        "requestState": result["requestState"],
    });
    // The second instance opens the state (same keys) but holds no such call.
    let elsewhere = modern_call(&second.url, "demo__delete_file", retry.clone()).await;
    assert_eq!(
        elsewhere["error"],
        json!({"code": -32602, "message": "the request this answer is for is no longer waiting \
            (it expired, or another gateway instance holds it); send it again"})
    );
    // The first instance still holds it, and finishes it.
    let done = modern_call(&first.url, "demo__delete_file", retry).await;
    assert_eq!(
        done["result"]["content"][0]["text"],
        "Deleted c.txt (pretend: the demo never touches your files)"
    );
    stop(first).await;
    stop(second).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_call_cancels_it_upstream() {
    use std::time::{Duration, Instant};
    use tokio_util::sync::CancellationToken;
    use toolwire::client::RequestOptions;
    let audit = fresh_dir("gateway-cancel").join("audit.jsonl");
    // The upstream's stderr reaches the gateway's log at debug level.
    let env = &[("RUST_LOG", "info,toolwire::stderr=debug")];
    let gateway = gateway_with(env, &format!("audit = {:?}", audit.display().to_string())).await;
    let client = Client::builder(HttpTransport::new(&gateway.url).unwrap()).build();
    let token = CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let call = client
        .call_tool_with(
            "demo__countdown",
            json!({"seconds": 20}),
            &RequestOptions::new().cancel_on(token),
        )
        .await;
    assert!(matches!(call, Err(ClientError::Cancelled)), "{call:?}");
    // The gateway's upstream call ended as cancelled, long before the
    // countdown's 20 s (bounded wait for its audit record).
    let deadline = Instant::now() + Duration::from_secs(10);
    let record = loop {
        let text = std::fs::read_to_string(&audit).unwrap_or_default();
        if let Some(line) = text.lines().next() {
            break serde_json::from_str::<Value>(line).unwrap();
        }
        assert!(Instant::now() < deadline, "no audit record within 10 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        (&record["tool"], &record["outcome"]),
        (&json!("demo__countdown"), &json!("cancelled"))
    );
    assert!(started.elapsed() < Duration::from_secs(10), "{record}");
    // The upstream ended the call too, long before its 20 s: its own audit
    // record says `cancelled` (the call was dropped) or `tool_error` (the
    // countdown saw its cancellation token first and returned).
    let line = gateway.wait_for_log("tool=\"countdown\"");
    assert!(
        line.contains("outcome=\"cancelled\"") || line.contains("outcome=\"tool_error\""),
        "{line}"
    );
    stop(gateway).await;
}
