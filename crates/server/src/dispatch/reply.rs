//! What the dispatcher hands a transport: an [`Answer`] kept apart from its
//! encoding until it is written, inside a [`Reply`].

use serde_json::Value;
use toolwire_protocol::{CallToolResult, JsonObject, Message, RequestId, ResultResponse};

use super::listen::Listening;
use crate::context::encode::{encode_message, encode_result, write_json};
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
    /// A tool's finished result (sanitised, `_meta` filled in), written
    /// without building a JSON tree of it first.
    ToolResult(CallToolResult),
}

impl Answer {
    /// The result as one JSON object.
    fn into_object(self) -> JsonObject {
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
            Answer::ToolResult(result) => match serde_json::to_value(result) {
                Ok(Value::Object(result)) => result,
                _ => JsonObject::new(),
            },
        }
    }

    /// Appends the result object, encoded: the same bytes as serialising
    /// [`Answer::into_object`].
    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Answer::Object(result) => write_json(out, result),
            Answer::Listing(listing, mode) => {
                let start = out.len();
                listing.write(out);
                scrub_json_tail(out, start, *mode);
            }
            Answer::ToolResult(result) => write_json(out, result),
        }
    }
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
            Reply::Answer(_, Answer::ToolResult(result)) if result.is_error == Some(true) => {
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
