//! Pagination cursors and sealed `requestState`, through the public API.
//!
//! Selector byte, then bytes:
//! - 0: the bytes as a `tools/list` cursor;
//! - 1: the bytes as the `requestState` of a `tools/call` retry;
//! - 2: a real sealed state with the bytes XORed into its decoded form: any
//!   change must be refused, never reach the handler;
//! - 3: a real `nextCursor` tampered the same way (must not panic).
#![no_main]

use std::sync::LazyLock;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use toolwire_fuzz::{handle, request};

fn answers() -> Value {
    json!({"confirm": {"action": "accept", "content": {"ok": true}}})
}

fn retry(state: &str) -> Value {
    handle(request(
        2,
        "tools/call",
        json!({"name": "confirm", "arguments": {}, "requestState": state, "inputResponses": answers()}),
    ))
}

/// A state this server sealed, and the call it belongs to.
static REAL_STATE: LazyLock<String> = LazyLock::new(|| {
    let first = handle(request(1, "tools/call", json!({"name": "confirm", "arguments": {}})));
    let state = first["result"]["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("confirm asks for input: {first}"))
        .to_owned();
    let answered = retry(&state);
    assert!(
        answered["result"]["content"].is_array(),
        "the untampered retry works: {answered}"
    );
    state
});

static REAL_CURSOR: LazyLock<String> = LazyLock::new(|| {
    let page = handle(request(1, "tools/list", json!({})));
    page["result"]["nextCursor"]
        .as_str()
        .unwrap_or_else(|| panic!("tools/list pages: {page}"))
        .to_owned()
});

fn tamper(real: &str, mask: &[u8]) -> Option<String> {
    let mut bytes = URL_SAFE_NO_PAD.decode(real).ok()?;
    if mask.is_empty() {
        return None;
    }
    let mut changed = false;
    for (i, m) in mask.iter().enumerate() {
        if i < bytes.len() {
            bytes[i] ^= m;
            changed |= *m != 0;
        } else {
            bytes.push(*m);
            changed = true;
        }
    }
    changed.then(|| URL_SAFE_NO_PAD.encode(bytes))
}

fn list(cursor: &str) -> Value {
    handle(request(3, "tools/list", json!({"cursor": cursor})))
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    match selector % 4 {
        0 => {
            let _ = list(&text);
        }
        1 => {
            let reply = retry(&text);
            assert!(
                reply.get("error").is_some() || reply["result"]["content"].is_null(),
                "a forged requestState {text:?} reached the handler: {reply}"
            );
        }
        2 => {
            if let Some(forged) = tamper(&REAL_STATE, rest) {
                let reply = retry(&forged);
                assert!(
                    reply.get("error").is_some(),
                    "a tampered requestState {forged:?} was accepted: {reply}"
                );
            }
        }
        _ => {
            if let Some(forged) = tamper(&REAL_CURSOR, rest) {
                let _ = list(&forged);
            }
        }
    }
});
