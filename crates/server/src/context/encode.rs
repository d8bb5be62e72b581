//! JSON encoding shared by the dispatcher, the list pages and every transport.

use serde::Serialize;
use toolwire_protocol::{ErrorObject, ErrorResponse, Message, RequestId};

/// What a result's `_meta` holding only the server's info starts with, from
/// the comma before it: the server's info as JSON text and `}` follow.
pub(crate) const SERVER_INFO_META: &str = concat!(
    r#","_meta":{""#,
    "io.modelcontextprotocol/serverInfo",
    r#"":"#
);

/// The server's info's member name in a `_meta`, and its colon: the
/// server's info as JSON text follows.
pub(crate) const SERVER_INFO_MEMBER: &str =
    concat!(r#"""#, "io.modelcontextprotocol/serverInfo", r#"":"#);

/// Appends `value` as JSON. What is written here (ids, results,
/// definitions) is plain data, whose serialisation cannot fail.
pub(crate) fn write_json(out: &mut Vec<u8>, value: &(impl Serialize + ?Sized)) {
    let _ = serde_json::to_writer(out, value);
}

/// Appends a successful response to request `id` whose result `write_result`
/// appends: the envelope written around it, no message built.
pub(crate) fn encode_result(
    out: &mut Vec<u8>,
    id: &RequestId,
    write_result: impl FnOnce(&mut Vec<u8>),
) {
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    write_json(out, id);
    out.extend_from_slice(br#","result":"#);
    write_result(out);
    out.push(b'}');
}

/// Appends `message` as JSON, for every transport. Should it not serialise,
/// the peer gets an internal error for the same request instead of half a
/// message.
pub(crate) fn encode_message(out: &mut Vec<u8>, message: &Message) {
    let start = out.len();
    if serde_json::to_writer(&mut *out, message).is_err() {
        out.truncate(start);
        let id = match message {
            Message::Result(response) => Some(response.id.clone()),
            Message::Error(response) => response.id.clone(),
            Message::Request(_) | Message::Notification(_) => None,
        };
        let error = ErrorObject::internal("the response could not be serialized");
        write_json(out, &Message::Error(ErrorResponse::new(id, error)));
    }
}
