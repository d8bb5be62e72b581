//! Output sanitising, one test per rule, through the dispatcher (the rules
//! do not depend on the transport) plus one pass over HTTP; after each bad
//! result the server answers the next call.

mod common;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use common::{request, result};
use serde_json::{Value, json};
use toolwire_protocol::{
    BlobResourceContents, CallToolResult, ContentBlock, EmbeddedResource, Icon, ResourceContents,
    ResourceLink, TextResourceContents,
};
use toolwire_server::{
    NoArgs, RequestContext, ResourceTemplateBuilder, SanitizePolicy, Server, ServerBuilder,
    ToolBuilder, ToolError, text_contents,
};

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
const GIF: &[u8] = b"GIF89a\x01\0\x01\0";
const JPEG: &[u8] = b"\xff\xd8\xff\xe0\0\x10JFIF";
const WEBP: &[u8] = b"RIFF\x24\0\0\0WEBPVP8 ";
const WAV: &[u8] = b"RIFF\x24\0\0\0WAVEfmt ";
const MP3: &[u8] = b"ID3\x04\0\0\0\0\0\0";
const OGG: &[u8] = b"OggS\0\x02\0\0";

fn b64(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// A tool that returns exactly `result`.
fn returning(name: &str, result: CallToolResult) -> ToolBuilder {
    ToolBuilder::new(name).handler(move |_: NoArgs, _cx: RequestContext| {
        let result = result.clone();
        async move { result }
    })
}

fn link(uri: &str) -> ContentBlock {
    ContentBlock::ResourceLink(ResourceLink {
        uri: uri.to_owned(),
        name: "link".to_owned(),
        ..Default::default()
    })
}

fn builder() -> ServerBuilder {
    Server::builder("sanitize-test", "1")
        .resource_template(
            ResourceTemplateBuilder::new("notes://{id}", "note").handler(|req, _cx| async move {
                Ok(vec![text_contents(req.uri, "text/plain", "note")])
            }),
        )
        .tool(returning(
            "ansi",
            CallToolResult::text(
                "\u{1b}[31mred\u{1b}[0m \u{1b}]8;;https://evil.example\u{7}link\u{1b}]8;;\u{7} \
                 \u{1b}]0;title\u{1b}\\bell\u{7} cr\r\nnext\ttab \u{9b}2Jc1 del\u{7f} nul\u{0} ok",
            ),
        ))
        .tool(
            ToolBuilder::new("fails").handler(|_: NoArgs, _cx: RequestContext| async {
                Err::<String, _>(ToolError::new("bad \u{1b}[2Jthing\u{7}"))
            }),
        )
        .tool(returning(
            "big",
            CallToolResult::text("é".repeat(600 * 1024)),
        ))
        .tool(returning(
            "blocks",
            CallToolResult::new(vec![
                ContentBlock::text("a".repeat(700 * 1024)),
                ContentBlock::text("b".repeat(700 * 1024)),
                ContentBlock::text("c".repeat(10)),
            ]),
        ))
        .tool(returning(
            "media_last",
            CallToolResult::new(vec![
                ContentBlock::text("x".repeat(1024 * 1024 - 4)),
                ContentBlock::image(b64(PNG), "image/png"),
            ]),
        ))
        .tool(returning(
            "structured_big",
            CallToolResult {
                structured_content: Some(json!({"data": "y".repeat(1024 * 1024)})),
                ..CallToolResult::text("short")
            },
        ))
        .tool(returning(
            "media_ok",
            CallToolResult::new(vec![
                ContentBlock::image(b64(PNG), "image/png"),
                ContentBlock::image(b64(GIF), "image/gif"),
                ContentBlock::image(b64(JPEG), "image/jpeg"),
                ContentBlock::image(b64(WEBP), "image/webp"),
                ContentBlock::audio(b64(WAV), "audio/wav"),
                ContentBlock::audio(b64(MP3), "audio/mpeg"),
                ContentBlock::audio(b64(OGG), "audio/ogg; codecs=opus"),
                ContentBlock::image(b64(b"anything"), "image/x-custom"),
                ContentBlock::image(b64(PNG).trim_end_matches('=').to_owned(), "image/png"),
            ]),
        ))
        .tool(returning(
            "media_bad",
            CallToolResult::new(vec![
                ContentBlock::image("not base64!".to_owned(), "image/png"),
                ContentBlock::image(b64(GIF), "image/png"),
                ContentBlock::image(b64(PNG), "text/html"),
                ContentBlock::audio(b64(PNG), "audio/wav"),
                ContentBlock::audio(b64(WAV), "image/png"),
                ContentBlock::image(format!("{}\n", b64(PNG)), "image/png"),
                ContentBlock::text("still here"),
            ]),
        ))
        .tool(returning(
            "links",
            CallToolResult::new(vec![
                link("https://example.com/a"),
                link("http://example.com/a"),
                link("file:///tmp/a"),
                link("git://example.com/repo"),
                link("notes://7"),
                link("javascript:alert(1)"),
                link("JavaScript:alert(1)"),
                link("vbscript:msgbox"),
                link("data:text/html,<script>alert(1)</script>"),
                link("unknown-scheme://x"),
                link("no scheme"),
            ]),
        ))
        .tool(returning(
            "icons",
            CallToolResult::new(vec![ContentBlock::ResourceLink(ResourceLink {
                uri: "https://example.com/a".to_owned(),
                name: "na\u{1b}[1mme".to_owned(),
                title: Some("ti\u{7}tle".to_owned()),
                description: Some("de\u{1b}]0;x\u{7}sc".to_owned()),
                icons: Some(vec![
                    icon("https://example.com/i.png"),
                    icon("http://example.com/i.png"),
                    icon("data:image/png;base64,AAAA"),
                    icon("data:text/html;base64,AAAA"),
                    icon("javascript:alert(1)"),
                ]),
                ..Default::default()
            })]),
        ))
        .tool(returning(
            "embedded",
            CallToolResult::new(vec![
                embedded(ResourceContents::Text(TextResourceContents {
                    uri: "notes://1".to_owned(),
                    mime_type: Some("text/plain".to_owned()),
                    text: "emb\u{1b}[0medded\r".to_owned(),
                    meta: None,
                })),
                embedded(ResourceContents::Blob(BlobResourceContents {
                    uri: "notes://2".to_owned(),
                    mime_type: Some("image/png".to_owned()),
                    blob: b64(PNG),
                    meta: None,
                })),
                embedded(ResourceContents::Blob(BlobResourceContents {
                    uri: "notes://3".to_owned(),
                    mime_type: Some("image/png".to_owned()),
                    blob: b64(GIF),
                    meta: None,
                })),
                embedded(ResourceContents::Blob(BlobResourceContents {
                    uri: "notes://4".to_owned(),
                    mime_type: None,
                    blob: "%%%".to_owned(),
                    meta: None,
                })),
                embedded(ResourceContents::Text(TextResourceContents {
                    uri: "javascript:alert(1)".to_owned(),
                    mime_type: None,
                    text: "x".to_owned(),
                    meta: None,
                })),
            ]),
        ))
        .tool(ToolBuilder::new("good").handler(|_: NoArgs, _cx: RequestContext| async { "good" }))
}

fn icon(src: &str) -> Icon {
    Icon {
        src: src.to_owned(),
        mime_type: None,
        sizes: None,
        theme: None,
    }
}

fn embedded(resource: ResourceContents) -> ContentBlock {
    ContentBlock::Resource(EmbeddedResource {
        resource,
        annotations: None,
        meta: None,
    })
}

async fn call(server: &Server, tool: &str) -> Value {
    let r = result(
        server,
        request(1, "tools/call", json!({"name": tool, "arguments": {}})),
    )
    .await;
    // The server answers the next call after every bad result.
    let next = result(
        server,
        request(2, "tools/call", json!({"name": "good", "arguments": {}})),
    )
    .await;
    assert_eq!(next["content"][0]["text"], "good");
    r
}

fn texts(result: &Value) -> Vec<String> {
    result["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["text"].as_str().unwrap_or("<not text>").to_owned())
        .collect()
}

fn withheld(kind: &str, reason: &str) -> String {
    format!("[{kind} withheld by toolwire: {reason}]")
}

#[tokio::test]
async fn terminal_escapes_and_control_characters_are_stripped() {
    let s = builder().build().unwrap();
    let r = call(&s, "ansi").await;
    assert_eq!(
        r["content"],
        json!([{"type": "text", "text": "red link bell cr\nnext\ttab c1 del nul ok"}])
    );
    // Tool execution errors too.
    let r = call(&s, "fails").await;
    assert_eq!(r["isError"], true);
    assert_eq!(texts(&r), ["bad thing"]);
}

#[tokio::test]
async fn oversized_text_is_cut_with_a_marker() {
    let s = builder().build().unwrap();
    let r = call(&s, "big").await;
    let text = &texts(&r)[0];
    // 600 Ki "é" is 1.2 MiB; cut at 1 MiB on a character boundary.
    let kept = 1024 * 1024;
    let dropped = 600 * 1024 * 2 - kept;
    assert_eq!(
        *text,
        format!(
            "{}\n[... truncated {dropped} bytes by toolwire]",
            "é".repeat(kept / 2)
        )
    );

    let r = call(&s, "blocks").await;
    let t = texts(&r);
    assert_eq!(t.len(), 2, "later blocks are dropped");
    assert_eq!(t[0], "a".repeat(700 * 1024));
    let room = 1024 * 1024 - 700 * 1024;
    let dropped = 700 * 1024 - room + 10;
    assert_eq!(
        t[1],
        format!(
            "{}\n[... truncated {dropped} bytes by toolwire]",
            "b".repeat(room)
        )
    );

    let r = call(&s, "media_last").await;
    let t = texts(&r);
    assert_eq!(t.len(), 2);
    assert_eq!(
        t[1],
        format!("[... truncated {} bytes by toolwire]", b64(PNG).len())
    );

    let r = call(&s, "structured_big").await;
    assert_eq!(r["isError"], true);
    assert!(r.get("structuredContent").is_none());
    let size = json!({"data": "y".repeat(1024 * 1024)}).to_string().len();
    assert_eq!(
        texts(&r),
        [format!(
            "The result of tool structured_big was withheld: its structuredContent is {size} bytes, \
             more than the limit of 1048576 bytes. Ask for less data, for example with a narrower query."
        )]
    );
}

#[tokio::test]
async fn media_must_be_base64_of_the_declared_type() {
    let s = builder().build().unwrap();
    let ok = call(&s, "media_ok").await;
    let blocks = ok["content"].as_array().unwrap();
    assert_eq!(blocks.len(), 9);
    assert!(
        blocks
            .iter()
            .all(|b| b["type"] == "image" || b["type"] == "audio"),
        "{ok}"
    );

    let bad = call(&s, "media_bad").await;
    assert_eq!(
        texts(&bad),
        [
            withheld("image", "its data is not valid base64"),
            withheld(
                "image",
                "its data is not PNG data although its mimeType is image/png"
            ),
            withheld("image", "its mimeType \"text/html\" is not an image type"),
            withheld(
                "audio",
                "its data is not WAV data although its mimeType is audio/wav"
            ),
            withheld("audio", "its mimeType \"image/png\" is not an audio type"),
            withheld("image", "its data is not valid base64"),
            "still here".to_owned(),
        ]
    );
}

#[tokio::test]
async fn only_safe_uri_schemes_are_linked() {
    let s = builder().build().unwrap();
    let r = call(&s, "links").await;
    let blocks = r["content"].as_array().unwrap();
    let kept: Vec<&str> = blocks
        .iter()
        .filter(|b| b["type"] == "resource_link")
        .map(|b| b["uri"].as_str().unwrap())
        .collect();
    // https, http, file, git and the server's own notes:// are allowed.
    assert_eq!(
        kept,
        [
            "https://example.com/a",
            "http://example.com/a",
            "file:///tmp/a",
            "git://example.com/repo",
            "notes://7"
        ]
    );
    assert_eq!(
        texts(&r)[5..],
        [
            withheld("resource link", "the javascript: scheme is not allowed"),
            withheld("resource link", "the javascript: scheme is not allowed"),
            withheld("resource link", "the vbscript: scheme is not allowed"),
            withheld("resource link", "the data: scheme is not allowed"),
            withheld("resource link", "the unknown-scheme: scheme is not allowed"),
            withheld("resource link", "its URI has no valid scheme"),
        ]
    );

    let r = call(&s, "icons").await;
    let link = &r["content"][0];
    assert_eq!(link["name"], "name");
    assert_eq!(link["title"], "title");
    assert_eq!(link["description"], "desc");
    assert_eq!(
        link["icons"],
        json!([{"src": "https://example.com/i.png"}, {"src": "data:image/png;base64,AAAA"}])
    );

    // A scheme can be allowed explicitly (never javascript:).
    let s = builder()
        .sanitize(
            SanitizePolicy::default()
                .allow_link_scheme("unknown-scheme")
                .allow_link_scheme("javascript")
                .allow_http_icons(true),
        )
        .build()
        .unwrap();
    let r = call(&s, "links").await;
    assert_eq!(r["content"][9]["uri"], "unknown-scheme://x");
    assert_eq!(r["content"][5]["type"], "text");
    let r = call(&s, "icons").await;
    assert_eq!(r["content"][0]["icons"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn embedded_resources_are_checked_too() {
    let s = builder().build().unwrap();
    let r = call(&s, "embedded").await;
    let blocks = r["content"].as_array().unwrap();
    assert_eq!(blocks[0]["resource"]["text"], "embedded");
    assert_eq!(blocks[1]["resource"]["blob"], b64(PNG));
    assert_eq!(
        texts(&r)[2..],
        [
            withheld(
                "embedded resource",
                "its data is not PNG data although its mimeType is image/png"
            ),
            withheld("embedded resource", "its blob is not valid base64"),
            withheld("embedded resource", "the javascript: scheme is not allowed"),
        ]
    );
}

#[tokio::test]
async fn sanitising_can_be_tuned_or_turned_off() {
    let s = builder()
        .sanitize(SanitizePolicy::default().max_result_bytes(Some(16)))
        .build()
        .unwrap();
    let r = call(&s, "blocks").await;
    assert_eq!(
        texts(&r),
        [format!(
            "{}\n[... truncated {} bytes by toolwire]",
            "a".repeat(16),
            1400 * 1024 + 10 - 16
        )]
    );

    let s = builder().no_sanitizing().build().unwrap();
    let r = call(&s, "ansi").await;
    assert!(texts(&r)[0].contains('\u{1b}'));
    let r = call(&s, "big").await;
    assert_eq!(texts(&r)[0].len(), 600 * 1024 * 2);
    let r = call(&s, "media_bad").await;
    assert_eq!(r["content"][0]["type"], "image");
    let r = call(&s, "links").await;
    assert_eq!(r["content"][5]["uri"], "javascript:alert(1)");
}

#[tokio::test]
async fn sanitising_applies_over_http() {
    let server = builder().build().unwrap();
    let http = common::ServedHttp::start(server).await;
    let reply = http
        .post_json(&request(
            1,
            "tools/call",
            json!({"name": "ansi", "arguments": {}}),
        ))
        .await;
    assert_eq!(
        reply["result"]["content"][0]["text"],
        "red link bell cr\nnext\ttab c1 del nul ok"
    );
    http.stop().await;
}
