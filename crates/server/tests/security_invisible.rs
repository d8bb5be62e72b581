//! Invisible text (bidi controls, tag characters, zero-width characters,
//! runs of variation selectors) never reaches a model from the server:
//! tool results (text, `structuredContent`, embedded resources), prompts,
//! resource reads, descriptions and titles in the lists, `instructions`, and
//! error messages; over HTTP as well as through the dispatcher, with the
//! strip and the escape-and-flag policies, and the audit record saying what
//! was removed.

mod security_support;

use security_support::{Endpoint, capture, meta};
use serde_json::{Value, json};
use toolwire_protocol::{
    CallToolResult, ContentBlock, EmbeddedResource, PromptMessage, ResourceContents, ResourceLink,
    Role, TextResourceContents,
};
use toolwire_server::http::HttpConfig;
use toolwire_server::{
    NoArgs, PromptBuilder, RequestContext, RequestEnv, ResourceBuilder, SanitizePolicy, Server,
    ServerBuilder, ToolBuilder, ToolError, text_contents,
};

/// Right-to-left override, "IGNORE" in tag characters, a zero-width space,
/// a run of variation selectors, a word joiner: one of each class.
const HIDDEN: &str = "a\u{202E}b\u{E0049}\u{E0047}\u{E004E}\u{E004F}\u{E0052}\u{E0045}c\u{200B}d\u{FE00}\u{FE01}\u{FE02}e\u{2060}f";
/// `HIDDEN` as stripped.
const STRIPPED: &str = "abcdef";
/// `HIDDEN` as escaped.
const ESCAPED: &str = "a[U+202E]b[U+E0049][U+E0047][U+E004E][U+E004F][U+E0052][U+E0045]c[U+200B]d[U+FE00][U+FE01][U+FE02]e[U+2060]f";
/// Emoji whose joiners and selectors must stay.
const EMOJI: &str = "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467} \u{2764}\u{FE0F} \u{1F3F3}\u{FE0F}\u{200D}\u{1F308}";

fn returning(name: &str, result: CallToolResult) -> ToolBuilder {
    ToolBuilder::new(name).handler(move |_: NoArgs, _cx: RequestContext| {
        let result = result.clone();
        async move { result }
    })
}

fn builder() -> ServerBuilder {
    Server::builder("invisible-test", "1")
        .instructions(format!("Use the tools. {HIDDEN}"))
        .tool(returning(
            "text",
            CallToolResult::new(vec![
                ContentBlock::text(HIDDEN),
                ContentBlock::text(EMOJI),
                ContentBlock::Resource(EmbeddedResource {
                    resource: ResourceContents::Text(TextResourceContents {
                        uri: "https://example.com/doc".to_owned(),
                        mime_type: Some("text/plain".to_owned()),
                        text: HIDDEN.to_owned(),
                        meta: None,
                    }),
                    annotations: None,
                    meta: None,
                }),
                ContentBlock::ResourceLink(ResourceLink {
                    uri: "https://example.com/x".to_owned(),
                    name: format!("n{HIDDEN}"),
                    title: Some(format!("t{HIDDEN}")),
                    description: Some(format!("d{HIDDEN}")),
                    ..Default::default()
                }),
            ]),
        ))
        .tool(returning(
            "structured",
            CallToolResult {
                structured_content: Some(json!({
                    "note": HIDDEN,
                    "list": [HIDDEN, 7, EMOJI],
                    "ke\u{200B}y": true
                })),
                ..CallToolResult::text("see structuredContent")
            },
        ))
        .tool(
            ToolBuilder::new("fails").handler(|_: NoArgs, _cx: RequestContext| async {
                Err::<String, _>(ToolError::new(format!("failed: {HIDDEN}")))
            }),
        )
        .tool(
            ToolBuilder::new("described")
                .title(format!("T {HIDDEN}"))
                .description(format!("D {HIDDEN} {EMOJI}"))
                .handler(|_: NoArgs, _cx: RequestContext| async { "ok" }),
        )
        .prompt(
            PromptBuilder::new("hidden")
                .description(format!("P {HIDDEN}"))
                .handler(|_, _cx| async move {
                    Ok(vec![
                        PromptMessage::text(Role::User, HIDDEN),
                        PromptMessage::text(Role::Assistant, EMOJI),
                    ])
                }),
        )
        .prompt(
            PromptBuilder::new("broken")
                .handler(|_, _cx| async move { Err(ToolError::new(format!("no: {HIDDEN}"))) }),
        )
        .resource(
            ResourceBuilder::new("notes://hidden", "hidden")
                .description(format!("R {HIDDEN}"))
                .mime_type("text/plain")
                .handler(|req, _cx| async move {
                    Ok(vec![text_contents(
                        req.uri,
                        "text/plain",
                        format!("{HIDDEN}\n{EMOJI}"),
                    )])
                }),
        )
}

fn body(id: i64, method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = meta();
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn call(id: i64, tool: &str) -> Value {
    body(id, "tools/call", json!({"name": tool, "arguments": {}}))
}

/// Every request the tests send, and what each answer must be, strip policy.
async fn check_stripped(endpoint: &Endpoint) {
    let text = endpoint.post(None, &call(1, "text")).await;
    let content = &text.result()["content"];
    assert_eq!(content[0]["text"], STRIPPED);
    assert_eq!(content[1]["text"], EMOJI);
    assert_eq!(content[2]["resource"]["text"], STRIPPED);
    assert_eq!(content[3]["name"], format!("n{STRIPPED}"));
    assert_eq!(content[3]["title"], format!("t{STRIPPED}"));
    assert_eq!(content[3]["description"], format!("d{STRIPPED}"));
    assert!(
        text.result()["_meta"]
            .get("toolwire/invisibleText")
            .is_none()
    );

    let structured = endpoint.post(None, &call(2, "structured")).await;
    assert_eq!(
        structured.result()["structuredContent"],
        json!({"note": STRIPPED, "list": [STRIPPED, 7, EMOJI], "key": true})
    );

    let fails = endpoint.post(None, &call(3, "fails")).await;
    assert_eq!(fails.result()["isError"], true);
    assert_eq!(
        fails.result()["content"][0]["text"],
        format!("failed: {STRIPPED}")
    );

    let prompt = endpoint
        .post(None, &body(4, "prompts/get", json!({"name": "hidden"})))
        .await;
    assert_eq!(prompt.result()["description"], format!("P {STRIPPED}"));
    assert_eq!(
        prompt.result()["messages"],
        json!([
            {"role": "user", "content": {"type": "text", "text": STRIPPED}},
            {"role": "assistant", "content": {"type": "text", "text": EMOJI}}
        ])
    );

    let read = endpoint
        .post(
            None,
            &body(5, "resources/read", json!({"uri": "notes://hidden"})),
        )
        .await;
    assert_eq!(
        read.result()["contents"],
        json!([{"uri": "notes://hidden", "mimeType": "text/plain", "text": format!("{STRIPPED}\n{EMOJI}")}])
    );

    let tools = endpoint.post(None, &body(6, "tools/list", json!({}))).await;
    let described = tools.result()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "described")
        .unwrap()
        .clone();
    assert_eq!(described["title"], format!("T {STRIPPED}"));
    assert_eq!(described["description"], format!("D {STRIPPED} {EMOJI}"));
    let prompts = endpoint
        .post(None, &body(7, "prompts/list", json!({})))
        .await;
    let hidden = prompts.result()["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "hidden")
        .unwrap()
        .clone();
    assert_eq!(hidden["description"], format!("P {STRIPPED}"));
    let resources = endpoint
        .post(None, &body(8, "resources/list", json!({})))
        .await;
    assert_eq!(
        resources.result()["resources"][0]["description"],
        format!("R {STRIPPED}")
    );
    // Nothing invisible is left anywhere in the bytes of the list.
    assert!(!tools.text.contains('\u{202E}') && !tools.text.contains('\u{E0049}'));

    let discover = endpoint
        .post(None, &body(9, "server/discover", json!({})))
        .await;
    assert_eq!(
        discover.result()["instructions"],
        format!("Use the tools. {STRIPPED}")
    );

    let broken = endpoint
        .post(None, &body(10, "prompts/get", json!({"name": "broken"})))
        .await;
    assert_eq!(broken.body["error"]["message"], format!("no: {STRIPPED}"));
    // A name the client sent is echoed back in the error: stripped too
    // (through the dispatcher: an HTTP client cannot put it in Mcp-Name).
    let unknown = body(11, "prompts/get", json!({"name": "x\u{202E}y"}));
    let request = serde_json::from_value(unknown).unwrap();
    let reply = endpoint
        .server
        .handle_request(request, RequestEnv::new())
        .await;
    let reply = serde_json::to_value(reply).unwrap();
    assert_eq!(reply["error"]["message"], "Unknown prompt: xy");
}

#[tokio::test]
async fn everything_sent_over_http_is_stripped_by_default() {
    let (_captured, _guard) = capture();
    let endpoint = Endpoint::start(builder().build().unwrap(), HttpConfig::new()).await;
    check_stripped(&endpoint).await;
    endpoint.stop().await;
}

#[tokio::test]
async fn escape_policy_shows_and_flags() {
    let (_captured, _guard) = capture();
    let server = builder()
        .sanitize(SanitizePolicy::default().escape_invisible(true))
        .build()
        .unwrap();
    let endpoint = Endpoint::start(server, HttpConfig::new()).await;
    let flag =
        json!({"escaped": 12, "bidi": 1, "tags": 6, "zeroWidth": 2, "variationSelectors": 3});

    let text = endpoint.post(None, &call(1, "text")).await;
    assert_eq!(text.result()["content"][0]["text"], ESCAPED);
    assert_eq!(text.result()["content"][1]["text"], EMOJI);
    // Five texts of HIDDEN: block, embedded resource, link name, title, description.
    assert_eq!(
        text.result()["_meta"]["toolwire/invisibleText"],
        json!({"escaped": 60, "bidi": 5, "tags": 30, "zeroWidth": 10, "variationSelectors": 15})
    );

    let prompt = endpoint
        .post(None, &body(2, "prompts/get", json!({"name": "hidden"})))
        .await;
    assert_eq!(prompt.result()["description"], format!("P {ESCAPED}"));
    assert_eq!(prompt.result()["messages"][0]["content"]["text"], ESCAPED);
    assert_eq!(prompt.result()["messages"][1]["content"]["text"], EMOJI);
    assert_eq!(
        prompt.result()["_meta"]["toolwire/invisibleText"],
        json!({"escaped": 24, "bidi": 2, "tags": 12, "zeroWidth": 4, "variationSelectors": 6})
    );

    let read = endpoint
        .post(
            None,
            &body(3, "resources/read", json!({"uri": "notes://hidden"})),
        )
        .await;
    assert_eq!(
        read.result()["contents"][0]["text"],
        format!("{ESCAPED}\n{EMOJI}")
    );
    assert_eq!(read.result()["_meta"]["toolwire/invisibleText"], flag);
    // The server's own metadata is still there beside the flag.
    assert!(
        read.result()["_meta"]
            .get("io.modelcontextprotocol/serverInfo")
            .is_some()
    );

    let tools = endpoint.post(None, &body(4, "tools/list", json!({}))).await;
    assert!(
        tools.text.contains(&format!("D {ESCAPED} {EMOJI}")),
        "{}",
        tools.text
    );
    endpoint.stop().await;
}

#[tokio::test]
async fn off_leaves_everything() {
    let (_captured, _guard) = capture();
    let server = builder()
        .sanitize(SanitizePolicy::default().strip_invisible(false))
        .build()
        .unwrap();
    let endpoint = Endpoint::start(server, HttpConfig::new()).await;
    let text = endpoint.post(None, &call(1, "text")).await;
    assert_eq!(text.result()["content"][0]["text"], HIDDEN);
    let read = endpoint
        .post(
            None,
            &body(2, "resources/read", json!({"uri": "notes://hidden"})),
        )
        .await;
    assert_eq!(
        read.result()["contents"][0]["text"],
        format!("{HIDDEN}\n{EMOJI}")
    );
    endpoint.stop().await;
}

#[tokio::test]
async fn the_audit_record_says_what_was_removed() {
    let (captured, _guard) = capture();
    let endpoint = Endpoint::start(builder().build().unwrap(), HttpConfig::new()).await;
    endpoint.post(None, &call(1, "text")).await;
    endpoint.post(None, &call(2, "described")).await;
    endpoint
        .post(None, &body(3, "prompts/get", json!({"name": "hidden"})))
        .await;
    endpoint
        .post(
            None,
            &body(4, "resources/read", json!({"uri": "notes://hidden"})),
        )
        .await;
    endpoint.stop().await;

    let events = captured.audit();
    let calls: Vec<_> = events
        .iter()
        .filter(|e| e.field("event") == "tool_call")
        .collect();
    assert_eq!(calls.len(), 2, "{events:?}");
    assert_eq!(calls[0].field("tool"), "\"text\"");
    assert_eq!(
        calls[0].field("sanitized"),
        "bidi=5 tags=30 zero_width=10 variation_selectors=15"
    );
    assert_eq!(calls[1].field("sanitized"), "none");

    let sanitized: Vec<_> = events
        .iter()
        .filter(|e| e.field("event") == "sanitized")
        .collect();
    assert_eq!(sanitized.len(), 2, "{events:?}");
    assert_eq!(sanitized[0].field("method"), "prompts/get");
    assert_eq!(sanitized[0].field("target"), "\"hidden\"");
    assert_eq!(sanitized[0].field("principal"), "\"<anonymous>\"");
    assert_eq!(
        sanitized[0].field("sanitized"),
        "bidi=2 tags=12 zero_width=4 variation_selectors=6"
    );
    assert_eq!(sanitized[1].field("method"), "resources/read");
    assert_eq!(sanitized[1].field("target"), "\"notes://hidden\"");
    assert_eq!(
        sanitized[1].field("sanitized"),
        "bidi=1 tags=6 zero_width=2 variation_selectors=3"
    );
}

#[tokio::test]
async fn control_characters_are_counted_in_the_record_too() {
    let (captured, _guard) = capture();
    let server = Server::builder("invisible-test", "1")
        .tool(returning(
            "ansi",
            CallToolResult::text("\u{1b}[31mred\u{1b}[0m\u{7}\u{202E}"),
        ))
        .build()
        .unwrap();
    let request = toolwire_protocol::Request::new(
        1,
        "tools/call",
        Some(
            json!({"name": "ansi", "arguments": {}, "_meta": meta()})
                .as_object()
                .unwrap()
                .clone(),
        ),
    );
    let reply =
        serde_json::to_value(server.handle_request(request, RequestEnv::new()).await).unwrap();
    assert_eq!(reply["result"]["content"][0]["text"], "red");
    let events = captured.audit();
    assert_eq!(events[0].field("sanitized"), "bidi=1 controls=3");
}
