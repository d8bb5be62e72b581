//! hyper-echo's answers to everything but a `tools/call` echo, so that SDK
//! clients can be pointed at it (`client-load`): `server/discover` (a
//! 2026-07-28 `DiscoverResult`), `initialize` (a 2025-11-25
//! `InitializeResult`), `tools/list` (the one `echo` tool), 202 for a
//! notification or a response, and 404 with a JSON-RPC `-32601` error for
//! any other request.
//!
//! In this crate rather than in the binary: hyper-echo's echo path is then
//! compiled as it was before these existed (added to the binary, they
//! changed how LLVM split and inlined its reply serialisation, 2 % more
//! instructions per echo under callgrind).

use std::borrow::Cow;

use bytes::Bytes;
use http::header::{CONTENT_TYPE, HeaderValue};
use http::{Response, StatusCode};
use http_body_util::Full;
use serde::Deserialize;
use serde_json::value::RawValue;

/// Any message but a `tools/call` echo: a request, a notification (no
/// `id`) or a response (no `method`).
#[derive(Deserialize)]
struct Other<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
}

// The fixed results: a 2026-07-28 `DiscoverResult`, a 2025-11-25
// `InitializeResult`, a `ListToolsResult` with the `echo` tool, and the
// error for any other request.
const DISCOVER_RESULT: &str = r#"{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"resultType":"complete","ttlMs":0,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"hyper-echo","version":"0.1.0"}}}"#;
const INITIALIZE_RESULT: &str = r#"{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"hyper-echo","version":"0.1.0"}}"#;
const TOOLS_LIST_RESULT: &str = r#"{"tools":[{"name":"echo","description":"Echoes the text back","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}],"resultType":"complete","ttlMs":0,"cacheScope":"private"}"#;
const METHOD_NOT_FOUND: &str = r#"{"code":-32601,"message":"Method not found"}"#;

/// The reply to a body that is not a `tools/call` echo.
pub fn other_message(body: &[u8]) -> Response<Full<Bytes>> {
    let Ok(message) = serde_json::from_slice::<Other<'_>>(body) else {
        return status(StatusCode::BAD_REQUEST);
    };
    let (id, method) = match (message.id, message.method) {
        (Some(id), Some(method)) => (id, method),
        // A notification or a response: accepted, nothing to say.
        (None, Some(_)) | (Some(_), None) => return status(StatusCode::ACCEPTED),
        (None, None) => return status(StatusCode::BAD_REQUEST),
    };
    let (code, member, value) = match method.as_ref() {
        "server/discover" => (StatusCode::OK, "result", DISCOVER_RESULT),
        "initialize" => (StatusCode::OK, "result", INITIALIZE_RESULT),
        "tools/list" => (StatusCode::OK, "result", TOOLS_LIST_RESULT),
        // Includes a tools/call whose arguments are not `{"text": ...}`.
        _ => (StatusCode::NOT_FOUND, "error", METHOD_NOT_FOUND),
    };
    let id = id.get();
    let text = format!(r#"{{"jsonrpc":"2.0","id":{id},"{member}":{value}}}"#);
    let mut response = Response::new(Full::new(Bytes::from(text)));
    *response.status_mut() = code;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn status(code: StatusCode) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = code;
    response
}
