//! The invisible-text rule on the paths that are not results: completion
//! values, the messages of input requests (elicitation shown to the user,
//! sampling sent to the client's model), over MRTR and over a 2025-11-25
//! session's server→client requests, and progress and log notifications.

mod common;

use common::*;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use toolwire_protocol::{
    CreateMessageRequestParams, LoggingLevel, Message, Role, SamplingContent, SamplingMessage,
    TextContent,
};
use toolwire_server::{
    NoArgs, Outbox, PromptBuilder, RequestContext, RequestEnv, SanitizePolicy, Server,
    ServerBuilder, ToolBuilder, ToolError,
};

/// A right-to-left override, "HI" in tag characters and a zero-width space.
const HIDDEN: &str = "x\u{202E}y\u{E0048}\u{E0049}z\u{200B}!";
const STRIPPED: &str = "xyz!";

fn builder() -> ServerBuilder {
    Server::builder("invisible-paths", "1")
        .prompt(
            PromptBuilder::new("pick")
                .argument("city", "A city", true)
                .complete("city", |_, _| async move {
                    vec![
                        format!("Paris{HIDDEN}"),
                        "Tehran \u{0645}\u{06CC}\u{200C}\u{062E}".into(),
                    ]
                })
                .handler(|_, _cx| async move { Ok(vec![]) }),
        )
        .tool(
            ToolBuilder::new("asks").handler(|_: NoArgs, cx: RequestContext| async move {
                let schema = json!({"type": "object", "properties": {
                "ok": {"type": "boolean", "description": format!("ok? {HIDDEN}")}}});
                cx.elicit_form("confirm", &format!("Really? {HIDDEN}"), schema)?;
                Ok::<_, ToolError>("answered")
            }),
        )
        .tool(
            ToolBuilder::new("samples").handler(|_: NoArgs, cx: RequestContext| async move {
                let mut params = CreateMessageRequestParams::new(
                    vec![SamplingMessage::new(
                        Role::User,
                        SamplingContent::Text(TextContent {
                            text: format!("Summarise {HIDDEN}"),
                            ..Default::default()
                        }),
                    )],
                    100,
                );
                params.system_prompt = Some(format!("Be brief {HIDDEN}"));
                cx.sample("summary", params)?;
                Ok::<_, ToolError>("sampled")
            }),
        )
        .tool(
            ToolBuilder::new("chatty").handler(|_: NoArgs, cx: RequestContext| async move {
                cx.progress(1.0, Some(2.0), Some(&format!("half {HIDDEN}")))
                    .await;
                cx.log(
                    LoggingLevel::Warning,
                    Some(&format!("lg{HIDDEN}")),
                    json!({"note": HIDDEN, "n": 1}),
                )
                .await;
                "done"
            }),
        )
}

fn meta_with(extra: Value) -> Value {
    let mut meta = meta();
    meta["io.modelcontextprotocol/clientCapabilities"] =
        json!({"elicitation": {"form": {}}, "sampling": {}});
    for (key, value) in extra.as_object().unwrap() {
        meta[key] = value.clone();
    }
    meta
}

async fn answer(server: &Server, method: &str, params: Value) -> (Value, Vec<Value>) {
    let (tx, mut rx) = mpsc::channel(16);
    let mut params = params;
    if params.get("_meta").is_none() {
        params["_meta"] = meta_with(json!({}));
    }
    let request = serde_json::from_value(
        json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
    )
    .unwrap();
    let reply = server
        .handle_request(request, RequestEnv::new().with_outbox(Outbox::new(tx)))
        .await;
    let mut notes = Vec::new();
    while let Ok(message) = rx.try_recv() {
        assert!(matches!(message, Message::Notification(_)));
        notes.push(json_of(&message));
    }
    (json_of(&reply), notes)
}

#[tokio::test]
async fn completion_values_are_stripped_and_persian_joiners_kept() {
    let server = builder().build().unwrap();
    let (reply, _) = answer(
        &server,
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "pick"}, "argument": {"name": "city", "value": ""}}),
    )
    .await;
    assert_eq!(
        reply["result"]["completion"]["values"],
        json!([
            format!("Paris{STRIPPED}"),
            "Tehran \u{0645}\u{06CC}\u{200C}\u{062E}"
        ])
    );
}

#[tokio::test]
async fn elicitation_and_sampling_requests_are_stripped() {
    let server = builder().build().unwrap();
    let (reply, _) = answer(&server, "tools/call", json!({"name": "asks"})).await;
    let ask = &reply["result"]["inputRequests"]["confirm"];
    assert_eq!(reply["result"]["resultType"], "input_required", "{reply}");
    assert_eq!(ask["params"]["message"], format!("Really? {STRIPPED}"));
    assert_eq!(
        ask["params"]["requestedSchema"]["properties"]["ok"]["description"],
        format!("ok? {STRIPPED}")
    );

    let (reply, _) = answer(&server, "tools/call", json!({"name": "samples"})).await;
    let ask = &reply["result"]["inputRequests"]["summary"]["params"];
    assert_eq!(
        ask["messages"][0]["content"]["text"],
        format!("Summarise {STRIPPED}")
    );
    assert_eq!(ask["systemPrompt"], format!("Be brief {STRIPPED}"));
    // The sealed state is opaque and left alone: the retry still works.
    assert!(
        reply["result"]["requestState"]
            .as_str()
            .is_some_and(|s| !s.is_empty())
    );
}

#[tokio::test]
async fn progress_and_log_notifications_are_stripped_and_the_token_kept() {
    let server = builder().build().unwrap();
    let token = format!("tok{HIDDEN}");
    let meta =
        meta_with(json!({"progressToken": token, "io.modelcontextprotocol/logLevel": "debug"}));
    let (reply, notes) = answer(
        &server,
        "tools/call",
        json!({"name": "chatty", "_meta": meta}),
    )
    .await;
    assert_eq!(reply["result"]["content"][0]["text"], "done");
    assert_eq!(
        notes,
        [
            json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {
                "progressToken": token, "progress": 1.0, "total": 2.0,
                "message": format!("half {STRIPPED}")}}),
            json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {
                "level": "warning", "logger": format!("lg{STRIPPED}"),
                "data": {"note": STRIPPED, "n": 1}}}),
        ]
    );
}

#[tokio::test]
async fn with_the_rule_off_notifications_are_sent_as_they_are() {
    let server = builder().sanitize(SanitizePolicy::off()).build().unwrap();
    let meta = meta_with(json!({"progressToken": 1, "io.modelcontextprotocol/logLevel": "debug"}));
    let (_, notes) = answer(
        &server,
        "tools/call",
        json!({"name": "chatty", "_meta": meta}),
    )
    .await;
    assert_eq!(notes[0]["params"]["message"], format!("half {HIDDEN}"));
    assert_eq!(notes[1]["params"]["data"]["note"], HIDDEN);
}
