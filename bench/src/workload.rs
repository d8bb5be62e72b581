//! What the load generator sends and how it checks each reply.
//!
//! Every request is exactly what a 2026-07-28 client sends over Streamable
//! HTTP: `POST /mcp` with `Content-Type: application/json`, an `Accept`
//! listing both `application/json` and `text/event-stream`, the request
//! metadata headers (`MCP-Protocol-Version`, `Mcp-Method`, and `Mcp-Name` for
//! `tools/call`), and `params._meta` carrying the protocol version, the
//! client's capabilities and its `clientInfo`.

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::IgnoredAny;

/// The protocol revision every request speaks (but [`Workload::LegacyEcho`]).
pub const PROTOCOL_VERSION: &str = "2026-07-28";

/// The revision a legacy (session) client speaks: [`Workload::LegacyEcho`]
/// and the `sessions` scenario.
pub const LEGACY_PROTOCOL_VERSION: &str = "2025-11-25";

/// The endpoint path of every HTTP server under test.
pub const PATH: &str = "/mcp";

/// Tools in the `tools/list` scenario.
pub const LIST_TOOLS: usize = 100;

/// The text the `order` and `order_loose` tools answer for [`order_arguments`].
pub const ORDER_REPLY: &str = "accepted cus_12345678AB: 3 x 19.99 EUR to US";

/// The `params._meta` of every request (before the closing brace, so a
/// `progressToken` can be appended).
const META_OPEN: &str = concat!(
    r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","#,
    r#""io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}},"roots":{}},"#,
    r#""io.modelcontextprotocol/clientInfo":{"name":"toolwire-bench","version":"0.1.0"}"#
);

/// What one run sends, and what counts as a correct reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// `tools/call` of `echo` with a `text` that differs per request; the
    /// reply must be JSON whose one text block is that text.
    Echo,
    /// `tools/call` of `echo_progress` with a `progressToken`: the tool sends
    /// one progress notification, so the reply must be an SSE stream holding
    /// it and then the result.
    EchoProgress,
    /// `tools/list`: the reply must list [`LIST_TOOLS`] tools.
    ToolsList,
    /// `tools/call` of `order`: ten arguments checked against a realistic
    /// input schema (nested object, enum, patterns, bounds).
    Order,
    /// The same call of `order_loose`: the same handler behind the schema
    /// `{"type":"object"}`, so the difference to [`Workload::Order`] is the
    /// cost of validation.
    OrderLoose,
    /// What a 2025-11-25 client sends: `tools/call` of `echo` in the session
    /// the connection opened with `initialize` (headers `Mcp-Session-Id` and
    /// `MCP-Protocol-Version: 2025-11-25`, no `_meta` protocol keys, no
    /// `Mcp-Method`/`Mcp-Name`). The reply may be JSON or an SSE stream; either
    /// way it must carry the one result, with the text sent.
    LegacyEcho,
    /// `tools/call` of `bump` on the connection's own counter handle (opened
    /// first with `new_counter`, see [`new_counter_body`]): one handle
    /// read-modify-write per call. The reply must be one text block holding
    /// the new count (the load generator also checks it is one more than the
    /// last).
    Bump,
}

impl Workload {
    /// A short name for tables.
    pub fn label(self) -> &'static str {
        match self {
            Workload::Echo => "tools/call echo",
            Workload::EchoProgress => "tools/call echo_progress (SSE)",
            Workload::ToolsList => "tools/list (100 tools)",
            Workload::Order => "tools/call order (validated)",
            Workload::OrderLoose => "tools/call order_loose (not validated)",
            Workload::LegacyEcho => "tools/call echo (2025-11-25 session)",
            Workload::Bump => "tools/call bump (handle read-modify-write)",
        }
    }

    /// True for the workloads of a 2025-11-25 client (a session per
    /// connection, opened before the first call).
    pub fn is_legacy(self) -> bool {
        self == Workload::LegacyEcho
    }

    /// The `MCP-Protocol-Version` header of every request.
    pub fn protocol_version(self) -> &'static str {
        if self.is_legacy() {
            LEGACY_PROTOCOL_VERSION
        } else {
            PROTOCOL_VERSION
        }
    }

    /// The JSON-RPC method.
    pub fn method(self) -> &'static str {
        match self {
            Workload::ToolsList => "tools/list",
            _ => "tools/call",
        }
    }

    /// The tool called (the `Mcp-Name` header), if any.
    pub fn tool(self) -> Option<&'static str> {
        match self {
            Workload::Echo | Workload::LegacyEcho => Some("echo"),
            Workload::EchoProgress => Some("echo_progress"),
            Workload::ToolsList => None,
            Workload::Order => Some("order"),
            Workload::OrderLoose => Some("order_loose"),
            Workload::Bump => Some("bump"),
        }
    }

    /// The body of request number `id`.
    pub fn body(self, id: u64) -> String {
        self.body_with(id, None)
    }

    /// The body of request number `id`; [`Workload::Bump`] names `counter`
    /// (an empty id without one: the server then answers "not found").
    pub fn body_with(self, id: u64, counter: Option<&str>) -> String {
        match self {
            Workload::Echo => call_body(id, "echo", &echo_arguments(id), ""),
            Workload::EchoProgress => call_body(
                id,
                "echo_progress",
                &echo_arguments(id),
                &format!(r#","progressToken":"p{id}""#),
            ),
            Workload::ToolsList => format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list","params":{{{META_OPEN}}}}}}}"#
            ),
            Workload::Order => call_body(id, "order", order_arguments(), ""),
            Workload::OrderLoose => call_body(id, "order_loose", order_arguments(), ""),
            Workload::LegacyEcho => format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{}}}}}"#,
                echo_arguments(id)
            ),
            Workload::Bump => call_body(
                id,
                "bump",
                &format!(r#"{{"counter_id":"{}"}}"#, counter.unwrap_or("")),
                "",
            ),
        }
    }

    /// The text the reply to request `id` must carry.
    pub fn expected_text(self, id: u64) -> Option<String> {
        match self {
            Workload::Echo | Workload::EchoProgress | Workload::LegacyEcho => Some(echo_text(id)),
            Workload::ToolsList | Workload::Bump => None,
            Workload::Order | Workload::OrderLoose => Some(ORDER_REPLY.to_owned()),
        }
    }

    /// Checks the reply to request `id`: status 200, the right content type,
    /// and a JSON-RPC result with the expected content.
    pub fn check(
        self,
        id: u64,
        status: u16,
        content_type: Option<&str>,
        body: &[u8],
    ) -> Result<(), String> {
        if status != 200 {
            return Err(format!("HTTP {status}: {}", snippet(body)));
        }
        let media = content_type
            .and_then(|v| v.split(';').next())
            .map(str::trim)
            .unwrap_or("");
        match self {
            Workload::EchoProgress => {
                if !media.eq_ignore_ascii_case("text/event-stream") {
                    return Err(format!("expected an SSE stream, got {media:?}"));
                }
                self.check_sse(id, body)
            }
            Workload::LegacyEcho if media.eq_ignore_ascii_case("text/event-stream") => {
                let message = single_sse_message(body)?;
                self.check_message(id, message.as_bytes())
            }
            _ => {
                if !media.eq_ignore_ascii_case("application/json") {
                    return Err(format!("expected application/json, got {media:?}"));
                }
                self.check_message(id, body)
            }
        }
    }

    /// Checks one JSON-RPC response.
    pub fn check_message(self, id: u64, body: &[u8]) -> Result<(), String> {
        let reply: Reply<'_> = serde_json::from_slice(body)
            .map_err(|e| format!("not a JSON-RPC response ({e}): {}", snippet(body)))?;
        if reply.jsonrpc != "2.0" {
            return Err(format!("jsonrpc is {:?}", reply.jsonrpc));
        }
        if reply.id != Some(id) {
            return Err(format!("id {:?}, expected {id}", reply.id));
        }
        if reply.error.is_some() {
            return Err(format!("error reply: {}", snippet(body)));
        }
        let Some(result) = reply.result else {
            return Err(format!("no result: {}", snippet(body)));
        };
        if result.is_error == Some(true) {
            return Err(format!("isError result: {}", snippet(body)));
        }
        match self {
            Workload::ToolsList => match result.tools {
                Some(tools) if tools.len() == LIST_TOOLS => Ok(()),
                Some(tools) => Err(format!(
                    "{} tools listed, expected {LIST_TOOLS}",
                    tools.len()
                )),
                None => Err(format!("no tools in the result: {}", snippet(body))),
            },
            Workload::Bump => match result.content.as_deref() {
                Some([block]) if block.kind == "text" && count_of(block).is_some() => Ok(()),
                _ => Err(format!(
                    "expected one text block, a count: {}",
                    snippet(body)
                )),
            },
            _ => {
                let expected = self.expected_text(id).unwrap_or_default();
                match result.content.as_deref() {
                    Some([block])
                        if block.kind == "text" && block.text.as_deref() == Some(&expected) =>
                    {
                        Ok(())
                    }
                    _ => Err(format!(
                        "expected one text block {expected:?}: {}",
                        snippet(body)
                    )),
                }
            }
        }
    }

    /// Checks an SSE reply: at least one progress notification, then the
    /// final response, and nothing after it.
    fn check_sse(self, id: u64, body: &[u8]) -> Result<(), String> {
        let text = std::str::from_utf8(body).map_err(|_| "SSE body is not UTF-8".to_owned())?;
        let mut progress = 0;
        let mut last: Option<String> = None;
        for event in text.split("\n\n") {
            let mut data = String::new();
            for line in event.lines() {
                if let Some(rest) = line.strip_prefix("data:") {
                    if !data.is_empty() {
                        data.push('\n');
                    }
                    data.push_str(rest.strip_prefix(' ').unwrap_or(rest));
                }
            }
            if data.is_empty() {
                continue; // a comment, a keep-alive or a priming event
            }
            if let Some(previous) = last.take() {
                if previous.contains(r#""notifications/progress""#) {
                    progress += 1;
                } else {
                    return Err(format!(
                        "a message other than progress before the result: {previous}"
                    ));
                }
            }
            last = Some(data);
        }
        if progress == 0 {
            return Err("no progress notification in the stream".to_owned());
        }
        match last {
            Some(final_message) => self.check_message(id, final_message.as_bytes()),
            None => Err("empty SSE stream".to_owned()),
        }
    }
}

/// The one JSON-RPC message of an SSE reply that must carry nothing else
/// (priming events, comments and keep-alives have no data and are skipped).
pub fn single_sse_message(body: &[u8]) -> Result<String, String> {
    let text = std::str::from_utf8(body).map_err(|_| "SSE body is not UTF-8".to_owned())?;
    let mut found: Option<String> = None;
    for event in text.split("\n\n") {
        let mut data = String::new();
        for line in event.lines() {
            if let Some(rest) = line.strip_prefix("data:") {
                if !data.is_empty() {
                    data.push('\n');
                }
                data.push_str(rest.strip_prefix(' ').unwrap_or(rest));
            }
        }
        if data.trim().is_empty() {
            continue;
        }
        if let Some(previous) = found.replace(data) {
            return Err(format!(
                "more than one message in the SSE reply; first: {}",
                snippet(previous.as_bytes())
            ));
        }
    }
    found.ok_or_else(|| "no message in the SSE reply".to_owned())
}

/// The body of a `tools/call` of `new_counter` (request `id`).
pub fn new_counter_body(id: u64) -> String {
    call_body(id, "new_counter", "{}", "")
}

/// The one text block of a successful `tools/call` reply (JSON): the id
/// `new_counter` answers, or the count `bump` answers.
pub fn result_text(body: &[u8]) -> Result<String, String> {
    let reply: Reply<'_> = serde_json::from_slice(body)
        .map_err(|e| format!("not a JSON-RPC response ({e}): {}", snippet(body)))?;
    match reply.result {
        Some(ReplyResult {
            content: Some(blocks),
            is_error: None | Some(false),
            ..
        }) => match blocks.as_slice() {
            [block] if block.kind == "text" => Ok(block.text.as_deref().unwrap_or("").to_owned()),
            _ => Err(format!("expected one text block: {}", snippet(body))),
        },
        _ => Err(format!("not a successful tool result: {}", snippet(body))),
    }
}

fn count_of(block: &Block<'_>) -> Option<u64> {
    block.text.as_deref()?.parse().ok().filter(|n| *n > 0)
}

/// The body of a 2025-11-25 `initialize` request number `id`.
pub fn initialize_body(id: u64) -> String {
    format!(
        concat!(
            r#"{{"jsonrpc":"2.0","id":{},"method":"initialize","params":{{"protocolVersion":"2025-11-25","#,
            r#""capabilities":{{}},"clientInfo":{{"name":"toolwire-bench","version":"0.1.0"}}}}}}"#
        ),
        id
    )
}

/// The body of `notifications/initialized`.
pub const INITIALIZED_BODY: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// Checks the reply to `initialize` request `id` (JSON or a one-message SSE
/// stream): a result naming protocol version 2025-11-25.
pub fn check_initialize(
    id: u64,
    status: u16,
    content_type: Option<&str>,
    body: &[u8],
) -> Result<(), String> {
    if status != 200 {
        return Err(format!("initialize: HTTP {status}: {}", snippet(body)));
    }
    let media = content_type
        .and_then(|v| v.split(';').next())
        .map(str::trim)
        .unwrap_or("");
    let message = if media.eq_ignore_ascii_case("text/event-stream") {
        single_sse_message(body)?
    } else if media.eq_ignore_ascii_case("application/json") {
        String::from_utf8_lossy(body).into_owned()
    } else {
        return Err(format!("initialize: unexpected content type {media:?}"));
    };
    let reply: serde_json::Value = serde_json::from_str(&message).map_err(|e| {
        format!(
            "initialize: not JSON ({e}): {}",
            snippet(message.as_bytes())
        )
    })?;
    if reply["id"] != id || reply.get("error").is_some() {
        return Err(format!(
            "initialize: not the result for id {id}: {}",
            snippet(message.as_bytes())
        ));
    }
    match reply["result"]["protocolVersion"].as_str() {
        Some(LEGACY_PROTOCOL_VERSION) => Ok(()),
        other => Err(format!(
            "initialize: protocolVersion {other:?}, expected {LEGACY_PROTOCOL_VERSION}"
        )),
    }
}

/// The text `echo` is sent (and must return) in request `id`.
pub fn echo_text(id: u64) -> String {
    format!("hello from request {id}")
}

fn echo_arguments(id: u64) -> String {
    format!(r#"{{"text":"{}"}}"#, echo_text(id))
}

/// The arguments of every `order` call: valid against [`order_schema`].
pub fn order_arguments() -> &'static str {
    concat!(
        r#"{"customer_id":"cus_12345678AB","email":"ada@example.com","currency":"EUR","#,
        r#""priority":"high","quantity":3,"unit_price":19.99,"gift":false,"#,
        r#""tags":["books","sale"],"notes":"leave it at the door","#,
        r#""shipping_address":{"line1":"1 Main Street","city":"Springfield","#,
        r#""postal_code":"12345","country":"US"}}"#
    )
}

/// A realistic input schema: ten properties, a nested object, enums,
/// patterns, bounds, a unique-items array, closed objects.
pub fn order_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "customer_id": {"type": "string", "pattern": "^cus_[A-Za-z0-9]{8,24}$",
                            "description": "The customer placing the order"},
            "email": {"type": "string", "maxLength": 254, "pattern": "^[^@\\s]+@[^@\\s]+\\.[^@\\s]+$"},
            "currency": {"type": "string", "enum": ["USD", "EUR", "GBP", "JPY"]},
            "priority": {"type": "string", "enum": ["low", "normal", "high"], "default": "normal"},
            "quantity": {"type": "integer", "minimum": 1, "maximum": 1000},
            "unit_price": {"type": "number", "exclusiveMinimum": 0},
            "gift": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 32},
                     "maxItems": 10, "uniqueItems": true},
            "notes": {"type": "string", "maxLength": 2000},
            "shipping_address": {
                "type": "object",
                "properties": {
                    "line1": {"type": "string", "minLength": 1},
                    "city": {"type": "string", "minLength": 1},
                    "postal_code": {"type": "string", "pattern": "^[0-9A-Z -]{3,10}$"},
                    "country": {"type": "string", "pattern": "^[A-Z]{2}$"}
                },
                "required": ["line1", "city", "country"],
                "additionalProperties": false
            }
        },
        "required": ["customer_id", "email", "currency", "quantity", "unit_price", "shipping_address"],
        "additionalProperties": false
    })
}

/// The typed arguments of `order`, as a handler would take them.
#[derive(Debug, Deserialize)]
pub struct Order {
    pub customer_id: String,
    pub email: String,
    pub currency: String,
    #[serde(default)]
    pub priority: Option<String>,
    pub quantity: u32,
    pub unit_price: f64,
    #[serde(default)]
    pub gift: Option<bool>,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub notes: Option<String>,
    pub shipping_address: Address,
}

/// The nested object of [`Order`].
#[derive(Debug, Deserialize)]
pub struct Address {
    pub line1: String,
    pub city: String,
    #[serde(default)]
    pub postal_code: Option<String>,
    pub country: String,
}

impl Order {
    /// What the `order` tools answer.
    pub fn reply(&self) -> String {
        format!(
            "accepted {}: {} x {} {} to {}",
            self.customer_id,
            self.quantity,
            self.unit_price,
            self.currency,
            self.shipping_address.country
        )
    }
}

fn call_body(id: u64, tool: &str, arguments: &str, extra_meta: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments},{META_OPEN}{extra_meta}}}}}}}"#
    )
}

fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    match text.char_indices().nth(300) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.into_owned(),
    }
}

#[derive(Deserialize)]
struct Reply<'a> {
    #[serde(borrow)]
    jsonrpc: Cow<'a, str>,
    #[serde(default)]
    id: Option<u64>,
    #[serde(default, borrow)]
    result: Option<ReplyResult<'a>>,
    #[serde(default)]
    error: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct ReplyResult<'a> {
    #[serde(default, borrow)]
    content: Option<Vec<Block<'a>>>,
    #[serde(default, rename = "isError")]
    is_error: Option<bool>,
    #[serde(default)]
    tools: Option<Vec<IgnoredAny>>,
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_json_with_meta() {
        for workload in [
            Workload::Echo,
            Workload::EchoProgress,
            Workload::ToolsList,
            Workload::Order,
            Workload::OrderLoose,
        ] {
            let body: serde_json::Value = serde_json::from_str(&workload.body(7)).unwrap();
            assert_eq!(body["id"], 7);
            assert_eq!(body["method"], workload.method());
            assert_eq!(
                body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
                PROTOCOL_VERSION
            );
            if let Some(tool) = workload.tool() {
                assert_eq!(body["params"]["name"], tool);
            }
        }
        let body: serde_json::Value =
            serde_json::from_str(&Workload::EchoProgress.body(3)).unwrap();
        assert_eq!(body["params"]["_meta"]["progressToken"], "p3");
    }

    #[test]
    fn order_arguments_fit_the_schema_and_the_reply() {
        let args: serde_json::Value = serde_json::from_str(order_arguments()).unwrap();
        let schema = toolwire_schema::CompiledSchema::compile(&order_schema()).unwrap();
        schema.validate(&args).unwrap();
        let order: Order = serde_json::from_value(args).unwrap();
        assert_eq!(order.reply(), ORDER_REPLY);
    }

    #[test]
    fn checks() {
        let ok = br#"{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"hello from request 5"}]}}"#;
        Workload::Echo
            .check(5, 200, Some("application/json"), ok)
            .unwrap();
        assert!(
            Workload::Echo
                .check(6, 200, Some("application/json"), ok)
                .is_err()
        );
        assert!(
            Workload::Echo
                .check(5, 400, Some("application/json"), ok)
                .is_err()
        );
        let sse = concat!(
            "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n",
            "data: {\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"hello from request 5\"}]}}\n\n"
        );
        Workload::EchoProgress
            .check(5, 200, Some("text/event-stream"), sse.as_bytes())
            .unwrap();
        assert!(
            Workload::EchoProgress
                .check(5, 200, Some("application/json"), ok)
                .is_err()
        );
    }
    #[test]
    fn bump_requests_and_replies() {
        let body: serde_json::Value =
            serde_json::from_str(&Workload::Bump.body_with(4, Some("cnt_x"))).unwrap();
        assert_eq!(body["params"]["name"], "bump");
        assert_eq!(body["params"]["arguments"]["counter_id"], "cnt_x");
        let body: serde_json::Value = serde_json::from_str(&new_counter_body(0)).unwrap();
        assert_eq!(body["params"]["name"], "new_counter");

        let ok = br#"{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"17"}]}}"#;
        Workload::Bump
            .check(4, 200, Some("application/json"), ok)
            .unwrap();
        assert_eq!(result_text(ok).unwrap(), "17");
        let not_a_count =
            br#"{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"x"}]}}"#;
        assert!(
            Workload::Bump
                .check(4, 200, Some("application/json"), not_a_count)
                .is_err()
        );
        let failed = br#"{"jsonrpc":"2.0","id":4,"result":{"isError":true,"content":[{"type":"text","text":"1"}]}}"#;
        assert!(result_text(failed).is_err());
    }

    #[test]
    fn legacy_requests_and_replies() {
        let body: serde_json::Value = serde_json::from_str(&Workload::LegacyEcho.body(9)).unwrap();
        assert_eq!(body["params"]["name"], "echo");
        assert_eq!(body["params"]["arguments"]["text"], echo_text(9));
        assert!(body["params"].get("_meta").is_none());
        let init: serde_json::Value = serde_json::from_str(&initialize_body(1)).unwrap();
        assert_eq!(init["params"]["protocolVersion"], LEGACY_PROTOCOL_VERSION);
        let _: serde_json::Value = serde_json::from_str(INITIALIZED_BODY).unwrap();

        let ok = br#"{"jsonrpc":"2.0","id":9,"result":{"content":[{"type":"text","text":"hello from request 9"}]}}"#;
        Workload::LegacyEcho
            .check(9, 200, Some("application/json"), ok)
            .unwrap();
        let sse = format!(
            "id: 0\nretry: 3000\ndata: \n\nid: 1\ndata: {}\n\n",
            std::str::from_utf8(ok).unwrap()
        );
        Workload::LegacyEcho
            .check(9, 200, Some("text/event-stream"), sse.as_bytes())
            .unwrap();
        assert!(
            Workload::LegacyEcho
                .check(8, 200, Some("text/event-stream"), sse.as_bytes())
                .is_err()
        );
        let two = format!("{sse}data: {}\n\n", std::str::from_utf8(ok).unwrap());
        assert!(
            Workload::LegacyEcho
                .check(9, 200, Some("text/event-stream"), two.as_bytes())
                .is_err()
        );
        let init_ok = br#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{}}}"#;
        check_initialize(1, 200, Some("application/json"), init_ok).unwrap();
        assert!(check_initialize(2, 200, Some("application/json"), init_ok).is_err());
    }
}
