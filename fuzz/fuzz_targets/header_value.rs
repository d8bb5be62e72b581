//! `Mcp-Param-*` header values: decoding, matching against the argument, and
//! the encode → decode → match round trip.
//!
//! Input: one byte picking the kind (string, integer, boolean), then the raw
//! header value, then `\n`, then the argument as JSON.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use toolwire_schema::HeaderKind;
use toolwire_schema::header_value::{
    decode_header_value, encode_header_value, encode_text, header_matches, is_plain_safe,
};

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let kind = match selector % 3 {
        0 => HeaderKind::String,
        1 => HeaderKind::Integer,
        _ => HeaderKind::Boolean,
    };
    let text = String::from_utf8_lossy(rest);
    let (raw, arg) = text.split_once('\n').unwrap_or((&text, "null"));

    let _ = decode_header_value(raw);
    let _ = is_plain_safe(raw);
    let arg: Value = serde_json::from_str(arg).unwrap_or(Value::String(arg.to_owned()));
    let _ = header_matches(raw, &arg, kind);

    // Any text survives encode_text → decode_header_value unchanged.
    let encoded = encode_text(raw);
    assert_eq!(
        decode_header_value(&encoded).as_deref(),
        Ok(raw),
        "encode_text({raw:?}) = {encoded:?} does not decode back"
    );

    // What the client encodes for an argument, the server matches.
    if let Some(header) = encode_header_value(&arg, kind) {
        assert_eq!(
            header_matches(&header, &arg, kind),
            Ok(true),
            "encoded {arg} as {header:?} ({kind:?}) but it does not match"
        );
    }
});
