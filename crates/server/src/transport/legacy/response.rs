//! A legacy session's response, in the form 2025-11-25 defines: no
//! `resultType`, no caching hints (`ttlMs`, `cacheScope`) and no
//! `serverInfo` in `_meta`, all of them 2026-07-28 additions.
//!
//! A tool's result, the common case, is written straight from its typed
//! form without those fields; anything else is turned into a message and
//! stripped.

use serde::Serialize;
use serde::ser::SerializeMap;
use serde_json::Value;
use toolwire_protocol::{CallToolResult, ContentBlock, JsonObject, Message, RequestId, keys};

use crate::context::encode::{encode_message, encode_result, write_json};
use crate::dispatch::{Answer, Reply};

/// What a legacy session answers to one request.
pub(crate) enum LegacyResponse {
    /// A message already in legacy form.
    Message(Message),
    /// A tool's finished result, written without its 2026-07-28 fields.
    ToolResult(RequestId, CallToolResult),
}

impl LegacyResponse {
    /// The legacy form of a dispatcher's reply.
    pub(crate) fn from_reply(reply: Reply) -> Self {
        match reply {
            Reply::Answer(id, Answer::ToolResult(result, _)) => {
                LegacyResponse::ToolResult(id, result)
            }
            other => LegacyResponse::Message(to_legacy(other.into_message())),
        }
    }

    /// Appends the response as JSON: the message [`to_legacy`] makes of
    /// it, without building that message (a tool result's members in the
    /// order its type declares them, as the 2026-07-28 path writes them).
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        match self {
            LegacyResponse::Message(message) => encode_message(out, message),
            LegacyResponse::ToolResult(id, result) => {
                encode_result(out, id, |out| {
                    write_json(out, &LegacyToolResult::of(result))
                });
            }
        }
    }

    /// How the response ends its request, for telemetry.
    pub(crate) fn outcome(&self) -> toolwire_telemetry::Outcome {
        match self {
            LegacyResponse::Message(message) => crate::telemetry::message_outcome(message),
            LegacyResponse::ToolResult(_, result) if result.is_error == Some(true) => {
                toolwire_telemetry::Outcome::ToolError
            }
            LegacyResponse::ToolResult(..) => toolwire_telemetry::Outcome::Ok,
        }
    }

    /// True for a result, false for an error.
    pub(crate) fn succeeded(&self) -> bool {
        matches!(
            self,
            LegacyResponse::Message(Message::Result(_)) | LegacyResponse::ToolResult(..)
        )
    }

    /// The response as one JSON text.
    pub(crate) fn to_json(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(256);
        self.encode(&mut out);
        out
    }
}

/// A response as the legacy revisions define it.
pub(crate) fn to_legacy(message: Message) -> Message {
    match message {
        Message::Result(mut response) => {
            // A result the server built is a tree already.
            if let Ok(result) = response.result.object_mut() {
                strip_modern_fields(result);
            }
            Message::Result(response)
        }
        other => other,
    }
}

fn strip_modern_fields(result: &mut JsonObject) {
    result.remove("resultType");
    result.remove("ttlMs");
    result.remove("cacheScope");
    if let Some(Value::Object(meta)) = result.get_mut("_meta") {
        meta.remove(keys::SERVER_INFO);
        if meta.is_empty() {
            result.remove("_meta");
        }
    }
}

/// `CallToolResult` without `resultType`, its fields in the same order.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LegacyToolResult<'a> {
    content: &'a [ContentBlock],
    #[serde(skip_serializing_if = "Option::is_none")]
    structured_content: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    is_error: Option<bool>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<MetaWithoutServerInfo<'a>>,
}

impl<'a> LegacyToolResult<'a> {
    fn of(result: &'a CallToolResult) -> Self {
        let meta = result
            .meta
            .as_ref()
            .map(|meta| &meta.0)
            .filter(|meta| meta.keys().any(|key| key != keys::SERVER_INFO))
            .map(MetaWithoutServerInfo);
        LegacyToolResult {
            content: &result.content,
            structured_content: result.structured_content.as_ref(),
            is_error: result.is_error,
            meta,
        }
    }
}

/// A result's `_meta` with every member but `serverInfo`.
struct MetaWithoutServerInfo<'a>(&'a JsonObject);

impl Serialize for MetaWithoutServerInfo<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in self.0.iter().filter(|(key, _)| *key != keys::SERVER_INFO) {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use toolwire_protocol::{Meta, ResultResponse};

    use super::*;

    /// The response as it was before it was written directly: the result
    /// as a JSON tree, stripped.
    fn through_a_tree(id: RequestId, result: &CallToolResult) -> Value {
        let Ok(Value::Object(object)) = serde_json::to_value(result) else {
            panic!("a result is an object")
        };
        let message = to_legacy(Message::Result(ResultResponse::new(id, object)));
        serde_json::to_value(message).unwrap()
    }

    fn meta(value: Value) -> Option<Meta> {
        let Value::Object(object) = value else {
            panic!("meta is an object")
        };
        Some(Meta(object))
    }

    #[test]
    fn a_tool_result_written_directly_equals_its_stripped_tree() {
        let server_info = json!({"name": "s", "version": "1"});
        let cases = [
            CallToolResult::text("hi"),
            CallToolResult {
                meta: meta(json!({keys::SERVER_INFO: server_info.clone()})),
                ..CallToolResult::text("only serverInfo")
            },
            CallToolResult {
                structured_content: Some(json!({"n": 1})),
                is_error: Some(false),
                meta: meta(json!({"a": 1, keys::SERVER_INFO: server_info, "z": [2]})),
                ..CallToolResult::text("all of it")
            },
            CallToolResult::error("failed"),
        ];
        for (n, result) in cases.into_iter().enumerate() {
            let id = RequestId::Number(n as i64);
            let direct = LegacyResponse::ToolResult(id.clone(), result.clone()).to_json();
            let direct: Value = serde_json::from_slice(&direct).unwrap();
            assert_eq!(direct, through_a_tree(id, &result), "case {n}");
        }
    }

    #[test]
    fn the_written_result_has_no_modern_fields() {
        let result = CallToolResult {
            meta: meta(json!({keys::SERVER_INFO: {"name": "s", "version": "1"}})),
            ..CallToolResult::text("hi")
        };
        let json = LegacyResponse::ToolResult(RequestId::Number(7), result).to_json();
        assert_eq!(
            serde_json::from_slice::<Value>(&json).unwrap(),
            json!({"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "hi"}]}})
        );
    }
}
