//! The request metadata headers (`MCP-Protocol-Version`, `Mcp-Method`,
//! `Mcp-Name`, `Mcp-Param-{Name}`) checked against the body, and the
//! `Accept` / `Content-Type` checks.

use http::header;
use http::{HeaderMap, HeaderValue};
use serde_json::Value;
use toolwire_protocol::{ErrorObject, Request};
use toolwire_schema::HeaderKind;
use toolwire_schema::header_value::{decode_header_value, header_matches};

use super::config::QUOTE_LIMIT;
use crate::dispatch::view;
use crate::server::Server;

/// The `Mcp-*` request headers the endpoint reads on every request, found
/// in one pass over the header map.
///
/// A lookup by name hashes a name that is not one of HTTP's standard ones
/// byte by byte; a request carries a handful of headers, so one walk that
/// compares names costs less than the five lookups it replaces.
#[derive(Default)]
pub(super) struct McpHeaders<'h> {
    pub(super) session_id: Seen<'h>,
    pub(super) protocol_version: Seen<'h>,
    pub(super) method: Seen<'h>,
    pub(super) name: Seen<'h>,
}

impl<'h> McpHeaders<'h> {
    pub(super) fn read(headers: &'h HeaderMap) -> Self {
        let mut found = McpHeaders::default();
        for (name, value) in headers {
            // Names in a map are lower case.
            let slot = match name.as_str() {
                "mcp-session-id" => &mut found.session_id,
                "mcp-protocol-version" => &mut found.protocol_version,
                "mcp-method" => &mut found.method,
                "mcp-name" => &mut found.name,
                _ => continue,
            };
            slot.add(value);
        }
        found
    }
}

/// How often a header came, and its first value.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) enum Seen<'h> {
    #[default]
    Absent,
    Once(&'h HeaderValue),
    /// More than once; the first value.
    Several(&'h HeaderValue),
}

impl<'h> Seen<'h> {
    fn add(&mut self, value: &'h HeaderValue) {
        *self = match *self {
            Seen::Absent => Seen::Once(value),
            Seen::Once(first) | Seen::Several(first) => Seen::Several(first),
        };
    }

    /// The first value, however many came.
    pub(super) fn first(self) -> Option<&'h HeaderValue> {
        match self {
            Seen::Absent => None,
            Seen::Once(value) | Seen::Several(value) => Some(value),
        }
    }

    /// The value when present once; two copies or bytes outside visible
    /// ASCII, space and tab are malformed.
    fn single(self, display: &str) -> Result<Option<&'h str>, ErrorObject> {
        let value = match self {
            Seen::Absent => return Ok(None),
            Seen::Once(value) => value,
            Seen::Several(_) => {
                return Err(ErrorObject::header_mismatch(format!(
                    "Header mismatch: {display} header must appear once, found several"
                )));
            }
        };
        value.to_str().map(Some).map_err(|_| {
            ErrorObject::header_mismatch(format!(
                "Header mismatch: {display} header contains invalid characters (only visible ASCII, space and tab; \
                 encode other text as =?base64?...?=)"
            ))
        })
    }

    /// The value, which must be present exactly once; surrounding
    /// whitespace trimmed.
    fn required(self, display: &str) -> Result<&'h str, ErrorObject> {
        match self.single(display)? {
            Some(value) => Ok(value.trim_matches([' ', '\t'])),
            None => Err(ErrorObject::header_mismatch(format!(
                "Header mismatch: required header {display} is missing"
            ))),
        }
    }
}

/// Checks the request metadata headers against the body.
pub(super) fn check_headers(
    server: &Server,
    headers: &HeaderMap,
    mcp: &McpHeaders<'_>,
    request: &Request,
) -> Result<(), ErrorObject> {
    // Read from the params' text: `_meta` and the target's name only.
    let params = request.params.as_ref();

    let version = mcp.protocol_version.required("MCP-Protocol-Version")?;
    // A body without a protocol version is malformed: the dispatcher answers
    // that with -32602 (400), so only a present value is compared here.
    if let Some(body) = view::protocol_version_text(params) {
        if version != body {
            return Err(mismatch("MCP-Protocol-Version", version, &body));
        }
    }

    let method = mcp.method.required("Mcp-Method")?;
    if method != request.method {
        return Err(mismatch("Mcp-Method", method, &request.method));
    }

    if let Some(field) = name_field(&request.method) {
        let raw = mcp.name.required("Mcp-Name")?;
        let name = decode_header_value(raw).map_err(|e| malformed("Mcp-Name", &e))?;
        view::with_string_member(params, field, |body| match body {
            Some(body) if body == name => Ok(()),
            Some(body) => Err(mismatch("Mcp-Name", &name, body)),
            None => Err(ErrorObject::header_mismatch(format!(
                "Header mismatch: Mcp-Name header value {} has no body value to match (params.{field} is missing or not a string)",
                quote(&name)
            ))),
        })?;
    }

    for param in server.param_headers(request) {
        let raw = single(headers, param.name.as_str(), &param.name)?;
        match (raw, param.value) {
            (None, None) => {}
            (None, Some(_)) => {
                return Err(ErrorObject::header_mismatch(format!(
                    "Header mismatch: required header {} is missing (argument {} is present in the body)",
                    param.name, param.pointer
                )));
            }
            (Some(raw), None) => {
                return Err(ErrorObject::header_mismatch(format!(
                    "Header mismatch: {} header value {} has no body value to match (argument {} is absent or null)",
                    param.name,
                    quote(raw),
                    param.pointer
                )));
            }
            // A value of the wrong type is the arguments' fault, not the
            // header's: argument validation reports it, naming the parameter
            // and the type it must have.
            (Some(_), Some(value)) if !fits(value, param.kind) => {}
            (Some(raw), Some(value)) => match header_matches(raw, value, param.kind) {
                Ok(true) => {}
                Ok(false) => {
                    let body = match value {
                        Value::String(text) => text.clone(),
                        other => other.to_string(),
                    };
                    return Err(mismatch(&param.name, raw.trim_matches([' ', '\t']), &body));
                }
                Err(error) => return Err(malformed(&param.name, &error)),
            },
        }
    }
    Ok(())
}

/// Whether `value` has the JSON type a header of `kind` mirrors.
fn fits(value: &Value, kind: HeaderKind) -> bool {
    match kind {
        HeaderKind::String => value.is_string(),
        HeaderKind::Boolean => value.is_boolean(),
        HeaderKind::Integer => {
            value.is_i64()
                || value.is_u64()
                || value
                    .as_f64()
                    .is_some_and(|f| f.is_finite() && f.fract() == 0.0)
        }
    }
}

/// The body field `Mcp-Name` mirrors for `method`, if any.
pub(super) fn name_field(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        // The Tasks extension routes by task (SEP-2663).
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
        _ => None,
    }
}

/// A header's value when present once; two copies or bytes outside visible
/// ASCII, space and tab are malformed.
pub(super) fn single<'h, K>(
    headers: &'h HeaderMap,
    name: K,
    display: &str,
) -> Result<Option<&'h str>, ErrorObject>
where
    K: http::header::AsHeaderName,
{
    let mut seen = Seen::Absent;
    for value in headers.get_all(name).iter().take(2) {
        seen.add(value);
    }
    seen.single(display)
}

pub(super) fn mismatch(display: &str, header: &str, body: &str) -> ErrorObject {
    ErrorObject::header_mismatch(format!(
        "Header mismatch: {display} header value {} does not match body value {}",
        quote(header),
        quote(body)
    ))
}

pub(super) fn malformed(display: &str, error: &dyn std::fmt::Display) -> ErrorObject {
    ErrorObject::header_mismatch(format!(
        "Header mismatch: {display} header is malformed: {error}"
    ))
}

/// `'text'`, cut short when long.
pub(super) fn quote(text: &str) -> String {
    match text.char_indices().nth(QUOTE_LIMIT) {
        Some((end, _)) => format!("'{}…'", &text[..end]),
        None => format!("'{text}'"),
    }
}

pub(super) fn accepts_json_and_sse(headers: &HeaderMap) -> bool {
    let (json, sse) = accepted(headers);
    json && sse
}

/// True when `Accept` lists `text/event-stream` (a legacy `GET`).
pub(super) fn accepts_sse(headers: &HeaderMap) -> bool {
    accepted(headers).1
}

/// The `Accept` value the spec's wording and the common SDKs' clients send,
/// answered by one comparison (the loop below gives the same answer).
const USUAL_ACCEPT: &[u8] = b"application/json, text/event-stream";

/// Whether `Accept` lists `application/json` and `text/event-stream`.
fn accepted(headers: &HeaderMap) -> (bool, bool) {
    let mut values = headers.get_all(header::ACCEPT).iter();
    if let (Some(value), None) = (values.next(), values.next())
        && value.as_bytes() == USUAL_ACCEPT
    {
        return (true, true);
    }
    let (mut json, mut sse) = (false, false);
    for value in headers.get_all(header::ACCEPT) {
        // Only visible ASCII, space and tab: trimming bytes is trimming text.
        if value.to_str().is_err() {
            continue;
        }
        for range in value.as_bytes().split(|b| *b == b',') {
            let mut fields = range.split(|b| *b == b';');
            let media = fields.next().unwrap_or_default().trim_ascii();
            if fields.any(is_q_zero) {
                continue;
            }
            json |= media.eq_ignore_ascii_case(b"application/json");
            sse |= media.eq_ignore_ascii_case(b"text/event-stream");
        }
    }
    (json, sse)
}

/// True for a media-range parameter `q=0` (the type is refused).
fn is_q_zero(parameter: &[u8]) -> bool {
    let Some(at) = parameter.iter().position(|b| *b == b'=') else {
        return false;
    };
    let (key, value) = (&parameter[..at], &parameter[at + 1..]);
    key.trim_ascii().eq_ignore_ascii_case(b"q")
        && std::str::from_utf8(value.trim_ascii())
            .ok()
            .and_then(|v| v.parse::<f32>().ok())
            .is_some_and(|q| q == 0.0)
}

pub(super) fn is_json_content_type(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return false;
    };
    // What nearly every client sends, without splitting and trimming.
    if value.as_bytes() == b"application/json" {
        return true;
    }
    value
        .to_str()
        .ok()
        .and_then(|v| v.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    /// A header map holding `name: value` alone.
    fn one_header(name: header::HeaderName, value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(name, HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn json_content_type() {
        let is_json = |v: &str| is_json_content_type(&one_header(header::CONTENT_TYPE, v));
        assert!(is_json("application/json"));
        assert!(is_json("Application/JSON ; charset=utf-8"));
        assert!(is_json(" application/json"));
        assert!(!is_json("application/jsonl"));
        assert!(!is_json("text/plain"));
        assert!(!is_json_content_type(&HeaderMap::new()));
    }

    #[test]
    fn accept_needs_both_types() {
        let accept = |v: &str| accepts_json_and_sse(&one_header(header::ACCEPT, v));
        assert!(accept("application/json, text/event-stream"));
        // The usual value given twice is still a list of both.
        let mut twice = HeaderMap::new();
        for _ in 0..2 {
            twice.append(
                header::ACCEPT,
                HeaderValue::from_static("application/json, text/event-stream"),
            );
        }
        assert!(accepts_json_and_sse(&twice));
        assert_eq!(accepted(&twice), (true, true));
        // One byte off the usual value goes through the general reading.
        assert!(!accept("application/json, text/event-streams"));
        assert!(accept("application/json,  text/event-stream"));
        assert!(accept("text/event-stream;q=0.5,Application/JSON"));
        assert!(!accept("application/json"));
        assert!(!accept("*/*"));
        assert!(!accept("application/json, text/event-stream;q=0"));
        assert!(!accept(
            "application/json, text/event-stream; level=1 ; Q = 0.000"
        ));
        assert!(accept(
            " application/json ;level=1,\ttext/event-stream;q=0.1"
        ));
        assert!(accept("application/json, text/event-stream;q=x"));
    }

    #[test]
    fn mcp_headers_are_found_in_one_pass() {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, HeaderValue::from_static("localhost"));
        headers.insert(
            "MCP-Protocol-Version",
            HeaderValue::from_static(" 2026-07-28\t"),
        );
        headers.insert("mcp-method", HeaderValue::from_static("tools/call"));
        headers.append("Mcp-Name", HeaderValue::from_static("echo"));
        headers.append("Mcp-Name", HeaderValue::from_static("other"));
        headers.insert("mcp-names", HeaderValue::from_static("not this one"));
        let mcp = McpHeaders::read(&headers);
        assert_eq!(mcp.session_id, Seen::Absent);
        assert_eq!(mcp.protocol_version.required("V"), Ok("2026-07-28"));
        assert_eq!(
            mcp.method.first().map(HeaderValue::as_bytes),
            Some(&b"tools/call"[..])
        );
        assert_eq!(
            mcp.name.first().map(HeaderValue::as_bytes),
            Some(&b"echo"[..])
        );
        assert_eq!(
            mcp.name.required("Mcp-Name").unwrap_err().message,
            "Header mismatch: Mcp-Name header must appear once, found several"
        );
        assert_eq!(
            mcp.session_id
                .required("Mcp-Session-Id")
                .unwrap_err()
                .message,
            "Header mismatch: required header Mcp-Session-Id is missing"
        );
        // The same answers as a lookup by name.
        assert_eq!(single(&headers, "mcp-method", "M"), Ok(Some("tools/call")));
        assert_eq!(single(&headers, "mcp-name", "N"), mcp.name.single("N"));
        assert_eq!(single(&headers, "mcp-session-id", "S"), Ok(None));
        let invalid = HeaderValue::from_bytes(b"caf\xc3\xa9").unwrap();
        assert!(
            Seen::Once(&invalid)
                .single("X")
                .unwrap_err()
                .message
                .contains("invalid characters")
        );
    }

    #[test]
    fn quotes_are_bounded() {
        assert_eq!(quote("abc"), "'abc'");
        assert_eq!(quote(&"é".repeat(100)).chars().count(), QUOTE_LIMIT + 3);
    }
}
