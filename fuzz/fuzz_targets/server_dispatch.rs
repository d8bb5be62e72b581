//! The server's dispatcher and its `_meta` checks.
//!
//! Input: a selector byte, then bytes. Selector even: the bytes are a whole
//! JSON-RPC message handed to `Server::handle_message`. Selector odd: the
//! bytes are the `params` (any JSON) of a request whose method the selector
//! picks; selector bit 1 adds good `_meta` when the params have none, so both
//! the `_meta` checks and what lies behind them are reached.
//! `subscriptions/listen` is left out: it is meant to stay open.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use toolwire_fuzz::{handle, handle_message, request};
use toolwire_protocol::{JsonObject, Message, Request};

const METHODS: &[&str] = &[
    "tools/list",
    "tools/call",
    "server/discover",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "completion/complete",
    "initialize",
    "ping",
    "no/such/method",
];

fn is_listen(message: &Message) -> bool {
    message.method() == Some("subscriptions/listen")
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    if selector % 2 == 0 {
        if let Ok(message) = Message::from_slice(rest) {
            if !is_listen(&message) {
                let _ = handle_message(message);
            }
        }
        return;
    }
    let method = METHODS[usize::from(selector / 4) % METHODS.len()];
    let params: Value = serde_json::from_slice(rest).unwrap_or(Value::Null);
    let reply = if selector & 2 != 0 {
        handle(request(1, method, params))
    } else {
        let params = match params {
            Value::Object(object) => Some(object),
            Value::Null => None,
            other => Some(JsonObject::from_iter([("value".to_owned(), other)])),
        };
        handle(Request::new(1, method, params))
    };
    assert!(
        reply.get("result").is_some() != reply.get("error").is_some(),
        "a reply has exactly one of result and error: {reply}"
    );
});
