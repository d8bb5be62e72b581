//! Encoding of values carried in `Mcp-Param-{name}` and `Mcp-Name` headers.
//!
//! A value that is safe as a plain header value is sent as is. Anything else
//! (non-ASCII, control characters, leading or trailing whitespace, or text that
//! itself looks like the sentinel) is sent as `=?base64?{Base64 of UTF-8}?=`
//! using the standard alphabet with padding. The markers are case-sensitive.

use std::borrow::Cow;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

use crate::headers::HeaderKind;

/// Opens a Base64-encoded header value.
pub const SENTINEL_PREFIX: &str = "=?base64?";
/// Closes a Base64-encoded header value.
pub const SENTINEL_SUFFIX: &str = "?=";

/// The largest magnitude of an integer that may be mirrored into a header (2^53 - 1).
pub const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// Why a received header value cannot be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderValueError {
    /// The raw value holds a character not allowed in a header value.
    #[error(
        "header value contains {ch:?} at character {index}; only visible ASCII, space and tab \
         are allowed (encode other text as =?base64?...?=)"
    )]
    InvalidChar {
        /// The first offending character.
        ch: char,
        /// Its position in the trimmed value, counted in characters from 0.
        index: usize,
    },
    /// The value has the `=?base64?...?=` form but its payload is not strict standard Base64.
    #[error("header value is marked =?base64?...?= but is not valid padded standard Base64: {0}")]
    InvalidBase64(String),
    /// The Base64 payload does not decode to UTF-8 text.
    #[error("header value is marked =?base64?...?= but does not decode to UTF-8 text")]
    NotUtf8,
}

/// Whether `text` can be sent as a plain header value without Base64.
///
/// True when it is non-empty, consists of visible ASCII and inner spaces only,
/// and does not look like the sentinel. Tabs are legal in header values but are
/// control characters, so they are Base64-encoded too; an empty value is
/// encoded so that no intermediary drops the header.
pub fn is_plain_safe(text: &str) -> bool {
    !text.is_empty()
        && text.bytes().all(|b| b == b' ' || b.is_ascii_graphic())
        && !text.starts_with(' ')
        && !text.ends_with(' ')
        && !looks_like_sentinel(text)
}

fn looks_like_sentinel(text: &str) -> bool {
    text.starts_with(SENTINEL_PREFIX) && text.ends_with(SENTINEL_SUFFIX)
}

/// Encodes text for a header: as is when [`is_plain_safe`], else as the Base64 sentinel.
///
/// ```
/// use toolwire_schema::header_value::encode_text;
/// assert_eq!(encode_text("us-west1"), "us-west1");
/// assert_eq!(encode_text("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
/// assert_eq!(encode_text(" padded "), "=?base64?IHBhZGRlZCA=?=");
/// ```
pub fn encode_text(text: &str) -> String {
    if is_plain_safe(text) {
        text.to_owned()
    } else {
        format!(
            "{SENTINEL_PREFIX}{}{SENTINEL_SUFFIX}",
            STANDARD.encode(text)
        )
    }
}

/// Encodes an argument for its `Mcp-Param-{name}` header.
///
/// Strings go through [`encode_text`]; integers are written in decimal;
/// booleans as `true` / `false`. Returns `None` when the header must be
/// omitted (the value is `null`) and also when the value does not fit `kind`
/// (an integer outside ±(2^53 - 1), a fraction, a wrong JSON type): arguments
/// are expected to have passed schema validation first.
///
/// ```
/// use serde_json::json;
/// use toolwire_schema::HeaderKind;
/// use toolwire_schema::header_value::encode_header_value;
/// assert_eq!(encode_header_value(&json!(-7), HeaderKind::Integer).as_deref(), Some("-7"));
/// assert_eq!(encode_header_value(&json!(true), HeaderKind::Boolean).as_deref(), Some("true"));
/// assert_eq!(encode_header_value(&json!(null), HeaderKind::String), None);
/// ```
pub fn encode_header_value(value: &Value, kind: HeaderKind) -> Option<String> {
    match kind {
        HeaderKind::String => value.as_str().map(encode_text),
        HeaderKind::Integer => safe_integer(value).map(|n| n.to_string()),
        HeaderKind::Boolean => value.as_bool().map(|b| b.to_string()),
    }
}

/// The value as an integer within ±(2^53 - 1); `42.0` counts as `42`.
fn safe_integer(value: &Value) -> Option<i64> {
    let number = value.as_number()?;
    let n = match number.as_i64() {
        Some(n) => n,
        None => whole_f64(number.as_f64()?)?,
    };
    (n.abs() <= MAX_SAFE_INTEGER).then_some(n)
}

#[allow(clippy::cast_possible_truncation)] // checked: whole and within ±2^53
fn whole_f64(f: f64) -> Option<i64> {
    (f.fract() == 0.0 && f.abs() <= MAX_SAFE_INTEGER as f64).then_some(f as i64)
}

/// Decodes a received header value.
///
/// Surrounding spaces and tabs (HTTP optional whitespace) are trimmed. A value
/// that is exactly `=?base64?{payload}?=` is decoded strictly (standard
/// alphabet, canonical padding, UTF-8 result); anything else, including a value
/// that only partly looks like the sentinel, is returned literally (borrowed
/// from `raw`).
///
/// ```
/// use toolwire_schema::header_value::decode_header_value;
/// assert_eq!(decode_header_value("=?base64?SGVsbG8sIOS4lueVjA==?=").unwrap(), "Hello, 世界");
/// assert_eq!(decode_header_value(" us-west1 ").unwrap(), "us-west1");
/// assert_eq!(decode_header_value("=?base64?abc").unwrap(), "=?base64?abc");
/// ```
///
/// # Errors
///
/// [`HeaderValueError::InvalidChar`] for characters not allowed in a header value;
/// [`HeaderValueError::InvalidBase64`] or [`HeaderValueError::NotUtf8`] for a bad payload.
pub fn decode_header_value(raw: &str) -> Result<Cow<'_, str>, HeaderValueError> {
    let value = raw.trim_matches([' ', '\t']);
    if let Some((index, ch)) = value.chars().enumerate().find(|(_, c)| !is_field_char(*c)) {
        return Err(HeaderValueError::InvalidChar { ch, index });
    }
    match sentinel_payload(value) {
        Some(payload) => decode_base64(payload).map(Cow::Owned),
        None => Ok(Cow::Borrowed(value)),
    }
}

/// RFC 9110 field-content characters, without obs-text.
fn is_field_char(ch: char) -> bool {
    ch == ' ' || ch == '\t' || ch.is_ascii_graphic()
}

/// The payload between the markers, when `value` is exactly of sentinel form.
fn sentinel_payload(value: &str) -> Option<&str> {
    value
        .strip_prefix(SENTINEL_PREFIX)?
        .strip_suffix(SENTINEL_SUFFIX)
}

fn decode_base64(payload: &str) -> Result<String, HeaderValueError> {
    let bytes = STANDARD
        .decode(payload)
        .map_err(|e| HeaderValueError::InvalidBase64(e.to_string()))?;
    String::from_utf8(bytes).map_err(|_| HeaderValueError::NotUtf8)
}

/// Whether a received header value matches the argument it mirrors.
///
/// The header is decoded first ([`decode_header_value`]). Strings must be equal
/// exactly (values are case-sensitive). Integers are compared numerically, so
/// `42`, `042`, `42.0` and `-0` / `0` match as the numbers they denote; the
/// header must be a plain decimal (`-?digits[.digits]`, no `+`, no exponent).
/// Booleans must be exactly `true` or `false`. A header that does not parse
/// as `kind`, or an argument of another JSON type, does not match.
///
/// ```
/// use serde_json::json;
/// use toolwire_schema::HeaderKind;
/// use toolwire_schema::header_value::header_matches;
/// assert!(header_matches("42.0", &json!(42), HeaderKind::Integer).unwrap());
/// assert!(!header_matches("True", &json!(true), HeaderKind::Boolean).unwrap());
/// ```
///
/// # Errors
///
/// Those of [`decode_header_value`].
pub fn header_matches(
    raw_header: &str,
    arg: &Value,
    kind: HeaderKind,
) -> Result<bool, HeaderValueError> {
    let decoded = decode_header_value(raw_header)?;
    Ok(match kind {
        HeaderKind::String => arg.as_str() == Some(&*decoded),
        HeaderKind::Integer => {
            let header = parse_decimal_integer(&decoded);
            header.is_some() && header == arg_integer(arg)
        }
        HeaderKind::Boolean => arg.as_bool().is_some_and(|b| decoded == b.to_string()),
    })
}

/// Parses `-?digits[.digits]` whose fraction is all zeros, exactly.
fn parse_decimal_integer(text: &str) -> Option<i128> {
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (whole, fraction) = unsigned.split_once('.').unwrap_or((unsigned, "0"));
    let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !all_digits(whole) || !all_digits(fraction) || fraction.bytes().any(|b| b != b'0') {
        return None;
    }
    let significant = whole.trim_start_matches('0');
    if significant.len() > 30 {
        return None;
    }
    let magnitude: i128 = if significant.is_empty() {
        0
    } else {
        significant.parse().ok()?
    };
    Some(if negative { -magnitude } else { magnitude })
}

/// The argument as an exact integer: any whole JSON number (`42` or `42.0`).
#[allow(clippy::cast_possible_truncation)] // checked: whole and within i64 range
fn arg_integer(arg: &Value) -> Option<i128> {
    let number = arg.as_number()?;
    if let Some(n) = number.as_i64() {
        return Some(n.into());
    }
    if let Some(n) = number.as_u64() {
        return Some(n.into());
    }
    let f = number.as_f64()?;
    (f.fract() == 0.0 && f.abs() < 9.2e18).then_some(f as i128)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn spec_encoding_examples() {
        for (value, encoded) in [
            ("us-west1", "us-west1"),
            ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
            (" padded ", "=?base64?IHBhZGRlZCA=?="),
            ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
            ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
        ] {
            assert_eq!(encode_text(value), encoded, "{value:?}");
            assert_eq!(decode_header_value(encoded).unwrap(), value, "{encoded}");
        }
    }

    #[test]
    fn plain_safe_rules() {
        assert!(is_plain_safe("a b"));
        assert!(is_plain_safe("SELECT * FROM t WHERE x='1'"));
        for unsafe_text in [
            "",
            " a",
            "a ",
            "a\tb",
            "\ta",
            "é",
            "a\u{7f}",
            "a\rb",
            "=?base64??=",
        ] {
            assert!(!is_plain_safe(unsafe_text), "{unsafe_text:?}");
        }
        // Only a full sentinel look-alike needs encoding.
        assert!(is_plain_safe("=?base64?abc"));
        assert!(is_plain_safe("abc?="));
        assert!(is_plain_safe("=?BASE64?abc?="));
    }

    #[test]
    fn round_trips() {
        for text in [
            "",
            " ",
            "\t",
            "ascii",
            "日本語",
            "emoji 🎉",
            " lead",
            "trail ",
            "a\u{0}b",
            "=?base64?x?=",
        ] {
            let encoded = encode_text(text);
            assert!(
                encoded.bytes().all(|b| b.is_ascii_graphic() || b == b' '),
                "{encoded:?}"
            );
            assert_eq!(decode_header_value(&encoded).unwrap(), text, "{text:?}");
        }
    }

    #[test]
    fn encode_by_kind() {
        assert_eq!(
            encode_header_value(&json!("eu"), HeaderKind::String).as_deref(),
            Some("eu")
        );
        assert_eq!(
            encode_header_value(&json!(42), HeaderKind::Integer).as_deref(),
            Some("42")
        );
        assert_eq!(
            encode_header_value(&json!(-7), HeaderKind::Integer).as_deref(),
            Some("-7")
        );
        assert_eq!(
            encode_header_value(&json!(42.0), HeaderKind::Integer).as_deref(),
            Some("42")
        );
        assert_eq!(
            encode_header_value(&json!(false), HeaderKind::Boolean).as_deref(),
            Some("false")
        );
        let max = json!(MAX_SAFE_INTEGER);
        assert_eq!(
            encode_header_value(&max, HeaderKind::Integer).as_deref(),
            Some("9007199254740991")
        );
        let min = json!(-MAX_SAFE_INTEGER);
        assert_eq!(
            encode_header_value(&min, HeaderKind::Integer).as_deref(),
            Some("-9007199254740991")
        );
    }

    #[test]
    fn encode_omits_null_and_misfits() {
        for kind in [HeaderKind::String, HeaderKind::Integer, HeaderKind::Boolean] {
            assert_eq!(encode_header_value(&json!(null), kind), None);
        }
        assert_eq!(encode_header_value(&json!(1), HeaderKind::String), None);
        assert_eq!(encode_header_value(&json!("1"), HeaderKind::Integer), None);
        assert_eq!(encode_header_value(&json!(1.5), HeaderKind::Integer), None);
        assert_eq!(
            encode_header_value(&json!(MAX_SAFE_INTEGER + 1), HeaderKind::Integer),
            None
        );
        assert_eq!(
            encode_header_value(&json!(u64::MAX), HeaderKind::Integer),
            None
        );
        assert_eq!(
            encode_header_value(&json!("true"), HeaderKind::Boolean),
            None
        );
    }

    #[test]
    fn decode_trims_optional_whitespace() {
        assert_eq!(decode_header_value("  eu \t").unwrap(), "eu");
        assert_eq!(
            decode_header_value(" =?base64?IHBhZGRlZCA=?= ").unwrap(),
            " padded "
        );
        assert_eq!(decode_header_value("").unwrap(), "");
    }

    #[test]
    fn partial_sentinels_are_literal() {
        for literal in [
            "=?base64?abc",
            "abc?=",
            "=?BASE64?SGk=?=",
            "x=?base64?SGk=?=",
            "=?base64?=",
        ] {
            assert_eq!(decode_header_value(literal).unwrap(), literal);
        }
    }

    #[test]
    fn empty_sentinel_is_empty_string() {
        assert_eq!(decode_header_value("=?base64??=").unwrap(), "");
    }

    #[test]
    fn bad_padding_is_rejected() {
        for bad in ["=?base64?SGk?=", "=?base64?SGk==?=", "=?base64?SA=?="] {
            let err = decode_header_value(bad).unwrap_err();
            assert!(
                matches!(err, HeaderValueError::InvalidBase64(_)),
                "{bad}: {err:?}"
            );
        }
    }

    #[test]
    fn bad_alphabet_is_rejected() {
        for bad in [
            "=?base64?SG-_?=",
            "=?base64?SG k?=",
            "=?base64?SGk=!?=",
            "=?base64?S\tGk=?=",
        ] {
            let err = decode_header_value(bad).unwrap_err();
            assert!(
                matches!(err, HeaderValueError::InvalidBase64(_)),
                "{bad}: {err:?}"
            );
        }
        assert!(decode_header_value("=?base64?SGk=?=").is_ok());
    }

    #[test]
    fn non_utf8_payload_is_rejected() {
        assert_eq!(
            decode_header_value("=?base64?/w==?="),
            Err(HeaderValueError::NotUtf8)
        );
    }

    #[test]
    fn invalid_raw_characters_are_rejected() {
        assert_eq!(
            decode_header_value("a\r\nb"),
            Err(HeaderValueError::InvalidChar { ch: '\r', index: 1 })
        );
        assert_eq!(
            decode_header_value("日本"),
            Err(HeaderValueError::InvalidChar {
                ch: '日', index: 0
            })
        );
        assert_eq!(
            decode_header_value("a\u{0}"),
            Err(HeaderValueError::InvalidChar {
                ch: '\u{0}',
                index: 1
            })
        );
        assert_eq!(decode_header_value("a\tb").unwrap(), "a\tb");
    }

    #[test]
    fn error_messages() {
        let err = decode_header_value("=?base64?SGk?=").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("header value is marked =?base64?...?= but is not valid"),
            "{err}"
        );
        assert_eq!(
            HeaderValueError::NotUtf8.to_string(),
            "header value is marked =?base64?...?= but does not decode to UTF-8 text"
        );
    }

    #[test]
    fn string_matching_is_exact() {
        assert!(header_matches("us-west1", &json!("us-west1"), HeaderKind::String).unwrap());
        assert!(!header_matches("US-WEST1", &json!("us-west1"), HeaderKind::String).unwrap());
        assert!(header_matches("=?base64?5pel5pys?=", &json!("日本"), HeaderKind::String).unwrap());
        assert!(!header_matches("42", &json!(42), HeaderKind::String).unwrap());
        assert!(header_matches("=?base64?SGk?=", &json!("Hi"), HeaderKind::String).is_err());
    }

    #[test]
    fn integer_matching_is_numeric() {
        let matches = |h: &str, v: Value| header_matches(h, &v, HeaderKind::Integer).unwrap();
        assert!(matches("42", json!(42)));
        assert!(matches("042", json!(42)));
        assert!(matches("42.0", json!(42)));
        assert!(matches("42", json!(42.0)));
        assert!(matches("-7", json!(-7)));
        assert!(matches("-0", json!(0)));
        assert!(matches(
            "9007199254740991",
            json!(9_007_199_254_740_991_i64)
        ));
        assert!(!matches(
            "9007199254740992",
            json!(9_007_199_254_740_991_i64)
        ));
        assert!(!matches("43", json!(42)));
        assert!(!matches("42.5", json!(42)));
        for malformed in [
            "+42",
            "4e1",
            "",
            "-",
            "42.",
            ".5",
            "0x2a",
            "forty-two",
            "1 2",
        ] {
            assert!(!matches(malformed, json!(42)), "{malformed:?}");
        }
        assert!(!matches("42", json!("42")));
        assert!(matches("=?base64?NDI=?=", json!(42)));
    }

    #[test]
    fn boolean_matching_is_lowercase() {
        let matches = |h: &str, v: Value| header_matches(h, &v, HeaderKind::Boolean).unwrap();
        assert!(matches("true", json!(true)));
        assert!(matches("false", json!(false)));
        assert!(!matches("true", json!(false)));
        assert!(!matches("TRUE", json!(true)));
        assert!(!matches("1", json!(true)));
        assert!(!matches("true", json!("true")));
    }
}
