//! What the dispatcher hands a transport: an [`Answer`] kept apart from its
//! encoding until it is written, inside a [`Reply`].

use std::sync::Arc;

use serde_json::Value;
use serde_json::value::RawValue;
use toolwire_protocol::{CallToolResult, JsonObject, Message, RequestId, ResultResponse, keys};

use super::listen::Listening;
use crate::context::encode::{
    SERVER_INFO_MEMBER, SERVER_INFO_META, encode_message, encode_result, write_json,
};
use crate::features::listing::Listing;
use crate::security::sanitize::{Invisible, SanitizeReport, scrub_json_tail, scrub_value};
use crate::telemetry;
use toolwire_telemetry::Outcome;

/// What the dispatcher produced for a request that succeeded.
pub(crate) enum Answer {
    Object(JsonObject),
    /// A list page: its entries are written from the JSON made when they
    /// were registered, then the invisible-text rule runs over what was
    /// written (names, titles, descriptions and schemas reach the model).
    Listing(Listing, Invisible),
    /// A tool's finished result (sanitised), written without building a
    /// JSON tree of it first, and the server's info, which is written as
    /// the last member of its `_meta` (a `_meta` of just `serverInfo` when
    /// it has none). [`crate::Server::finish_tool`] has taken out any
    /// `serverInfo` the tool put there.
    ToolResult(CallToolResult, Arc<RawValue>),
}

impl Answer {
    /// The result as one JSON object.
    pub(crate) fn into_object(self) -> JsonObject {
        match self {
            Answer::Object(result) => result,
            Answer::Listing(listing, mode) => {
                let mut object = Value::Object(listing.into_object());
                scrub_value(&mut object, mode, &mut SanitizeReport::default());
                match object {
                    Value::Object(object) => object,
                    _ => JsonObject::new(),
                }
            }
            Answer::ToolResult(result, server_info) => {
                let mut object = match serde_json::to_value(result) {
                    Ok(Value::Object(result)) => result,
                    _ => JsonObject::new(),
                };
                let info = serde_json::from_str(server_info.get()).unwrap_or_default();
                let meta = object
                    .entry("_meta")
                    .or_insert_with(|| Value::Object(JsonObject::new()));
                if let Value::Object(meta) = meta {
                    meta.insert(keys::SERVER_INFO.to_owned(), info);
                }
                object
            }
        }
    }

    /// Appends the result object, encoded: the same bytes as serialising
    /// [`Answer::into_object`].
    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Answer::Object(result) => write_json(out, result),
            Answer::Listing(listing, mode) => {
                let start = out.len();
                if !listing.write(out) {
                    scrub_json_tail(out, start, *mode);
                }
            }
            Answer::ToolResult(result, server_info) => {
                write_json(out, result);
                append_server_info(out, result.meta.is_some(), server_info.get());
            }
        }
    }
}

/// Puts `serverInfo` into the tool result just written at the end of
/// `out`: as the last member of its `_meta`, which is the last member a
/// result writes, or, when it has none, as a `_meta` of its own where that
/// would have been.
fn append_server_info(out: &mut Vec<u8>, has_meta: bool, info: &str) {
    // The braces that close the result (and its `_meta` before it).
    let closing = if has_meta { 2 } else { 1 };
    if !out.ends_with(&b"}}"[..closing]) {
        return;
    }
    out.truncate(out.len() - closing);
    if has_meta {
        if out.last() != Some(&b'{') {
            out.push(b',');
        }
        out.extend_from_slice(SERVER_INFO_MEMBER.as_bytes());
    } else {
        out.extend_from_slice(SERVER_INFO_META.as_bytes());
    }
    out.extend_from_slice(info.as_bytes());
    out.extend_from_slice(b"}}");
}

/// A response, as a transport that writes bytes receives it.
pub(crate) enum Reply {
    Message(Message),
    /// A successful response to the request with this id, not yet a message.
    Answer(RequestId, Answer),
    /// An admitted `subscriptions/listen`, for a transport that streams it
    /// itself ([`crate::Server::reply_streaming`]).
    Listening(Box<Listening>),
}

impl Reply {
    /// The response as a message.
    pub fn into_message(self) -> Message {
        match self {
            Reply::Message(message) => message,
            Reply::Answer(id, answer) => {
                Message::Result(ResultResponse::new(id, answer.into_object()))
            }
            Reply::Listening(listening) => listening.not_streamed(),
        }
    }

    /// How the reply ends its request, for telemetry.
    pub(crate) fn outcome(&self) -> Outcome {
        match self {
            Reply::Message(message) => telemetry::message_outcome(message),
            Reply::Answer(_, Answer::ToolResult(result, _)) if result.is_error == Some(true) => {
                Outcome::ToolError
            }
            Reply::Answer(_, Answer::Object(object))
                if telemetry::is_error(object.get("isError")) =>
            {
                Outcome::ToolError
            }
            Reply::Answer(..) | Reply::Listening(_) => Outcome::Ok,
        }
    }

    /// Appends the response as JSON: byte for byte the serialised
    /// [`Reply::into_message`], without building it first.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Reply::Message(message) => encode_message(out, message),
            Reply::Answer(id, answer) => encode_result(out, id, |out| answer.write(out)),
            Reply::Listening(listening) => encode_message(out, &listening.not_streamed()),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use toolwire_protocol::Meta;

    use super::*;

    /// A tool result is written as the message made of it would be: the
    /// server's info as a `_meta` of its own, or as the last member of the
    /// result's `_meta` (an empty one too).
    #[test]
    fn a_tool_result_is_written_as_its_message() {
        let info: Arc<RawValue> = Arc::from(
            serde_json::value::to_raw_value(&json!({"name": "s", "version": "1"})).unwrap(),
        );
        let with_meta = |members: Value, text: &str| CallToolResult {
            structured_content: Some(json!({"n": 1})),
            is_error: Some(false),
            meta: Some(Meta(serde_json::from_value(members).unwrap())),
            ..CallToolResult::text(text)
        };
        let cases = [
            (
                CallToolResult::text("hi"),
                r#"{"resultType":"complete","content":[{"type":"text","text":"hi"}],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}}"#,
            ),
            (
                with_meta(json!({"a": 1, "z": [2]}), "own"),
                r#"{"resultType":"complete","content":[{"type":"text","text":"own"}],"structuredContent":{"n":1},"isError":false,"_meta":{"a":1,"z":[2],"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}}"#,
            ),
            (
                with_meta(json!({}), "empty"),
                r#"{"resultType":"complete","content":[{"type":"text","text":"empty"}],"structuredContent":{"n":1},"isError":false,"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}}"#,
            ),
        ];
        for (result, expected) in cases {
            let reply = Reply::Answer(
                RequestId::Number(3),
                Answer::ToolResult(result.clone(), info.clone()),
            );
            let mut written = Vec::new();
            reply.encode(&mut written);
            let written = String::from_utf8(written).unwrap();
            assert_eq!(
                written,
                format!(r#"{{"jsonrpc":"2.0","id":3,"result":{expected}}}"#)
            );
            let message = serde_json::to_string(&reply.into_message()).unwrap();
            assert_eq!(written, message);
        }
    }

    #[test]
    fn the_server_info_texts_name_its_key() {
        assert_eq!(SERVER_INFO_MEMBER, format!("\"{}\":", keys::SERVER_INFO));
        assert_eq!(
            SERVER_INFO_META,
            format!(",\"_meta\":{{{SERVER_INFO_MEMBER}")
        );
    }
}
