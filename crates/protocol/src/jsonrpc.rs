//! JSON-RPC 2.0 envelopes as MCP 2026-07-28 uses them.

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::JsonObject;
use crate::error::ErrorObject;
use crate::params::{MaybeObject, Params};
use crate::result_body::ResultBody;

/// The only JSON-RPC version MCP speaks.
pub const JSONRPC_VERSION: &str = "2.0";

/// The `"jsonrpc": "2.0"` marker: serializes as `"2.0"` and accepts nothing else.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct JsonRpcVersion;

impl Serialize for JsonRpcVersion {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(JSONRPC_VERSION)
    }
}

impl<'de> Deserialize<'de> for JsonRpcVersion {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let version = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        if version == JSONRPC_VERSION {
            Ok(JsonRpcVersion)
        } else {
            Err(de::Error::custom(format!(
                "unsupported jsonrpc version {version:?}, expected \"2.0\""
            )))
        }
    }
}

/// A request id: a string or an integer, never `null`.
///
/// ```
/// use toolwire_protocol::RequestId;
/// let id: RequestId = serde_json::from_str("7").unwrap();
/// assert_eq!(id, RequestId::Number(7));
/// assert!(serde_json::from_str::<RequestId>("null").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// An integer id.
    Number(i64),
    /// A string id.
    String(String),
}

impl RequestId {
    /// The id as plain text: a number's digits, a string without quotes
    /// (as telemetry's `jsonrpc.request.id` wants it).
    ///
    /// ```
    /// use toolwire_protocol::RequestId;
    /// assert_eq!(RequestId::Number(7).plain_text(), "7");
    /// assert_eq!(RequestId::String("a-1".into()).plain_text(), "a-1");
    /// ```
    pub fn plain_text(&self) -> String {
        match self {
            RequestId::Number(n) => n.to_string(),
            RequestId::String(s) => s.clone(),
        }
    }
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl From<i64> for RequestId {
    fn from(value: i64) -> Self {
        RequestId::Number(value)
    }
}

impl From<&str> for RequestId {
    fn from(value: &str) -> Self {
        RequestId::String(value.to_owned())
    }
}

impl From<String> for RequestId {
    fn from(value: String) -> Self {
        RequestId::String(value)
    }
}

/// A request: has an id and expects exactly one response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// Always `"2.0"`.
    pub jsonrpc: JsonRpcVersion,
    /// The request id, echoed by the response.
    pub id: RequestId,
    /// The method name, e.g. `tools/call`.
    pub method: String,
    /// The parameters object, if any, as it arrived (read on demand).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Params>,
}

impl Request {
    /// A request with the given id, method and parameters.
    pub fn new(
        id: impl Into<RequestId>,
        method: impl Into<String>,
        params: Option<JsonObject>,
    ) -> Self {
        Request::with_params(id, method, params.map(Params::from_object))
    }

    /// A request with the given id, method and [`Params`].
    pub fn with_params(
        id: impl Into<RequestId>,
        method: impl Into<String>,
        params: Option<Params>,
    ) -> Self {
        Request {
            jsonrpc: JsonRpcVersion,
            id: id.into(),
            method: method.into(),
            params,
        }
    }

    /// The parameters object, parsed (empty when there are none).
    pub fn params_object(&self) -> Option<&JsonObject> {
        self.params.as_ref().map(Params::object)
    }
}

/// A notification: no id, no response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Notification {
    /// Always `"2.0"`.
    pub jsonrpc: JsonRpcVersion,
    /// The method name, e.g. `notifications/progress`.
    pub method: String,
    /// The parameters object, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<JsonObject>,
}

impl Notification {
    /// A notification with the given method and parameters.
    pub fn new(method: impl Into<String>, params: Option<JsonObject>) -> Self {
        Notification {
            jsonrpc: JsonRpcVersion,
            method: method.into(),
            params,
        }
    }
}

/// A successful response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultResponse {
    /// Always `"2.0"`.
    pub jsonrpc: JsonRpcVersion,
    /// The id of the request this answers.
    pub id: RequestId,
    /// The result object (it carries `resultType`); kept as its text when
    /// the response was read from bytes.
    pub result: ResultBody,
}

impl ResultResponse {
    /// A result response for `id`.
    pub fn new(id: RequestId, result: impl Into<ResultBody>) -> Self {
        ResultResponse {
            jsonrpc: JsonRpcVersion,
            id,
            result: result.into(),
        }
    }
}

/// A failed response. The id is absent only when the request's id could not be read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorResponse {
    /// Always `"2.0"`.
    pub jsonrpc: JsonRpcVersion,
    /// The id of the request this answers, when it could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<RequestId>,
    /// The error.
    pub error: ErrorObject,
}

impl ErrorResponse {
    /// An error response for `id`.
    pub fn new(id: Option<RequestId>, error: ErrorObject) -> Self {
        ErrorResponse {
            jsonrpc: JsonRpcVersion,
            id,
            error,
        }
    }
}

/// Any JSON-RPC message, classified.
///
/// ```
/// use toolwire_protocol::Message;
/// let m = Message::from_slice(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#).unwrap();
/// assert!(matches!(m, Message::Request(_)));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Message {
    /// A request.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A result response.
    Result(ResultResponse),
    /// An error response.
    Error(ErrorResponse),
}

/// Why bytes could not be classified as a message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MessageError {
    /// Not JSON at all (answer with -32700 and no id).
    #[error("parse error: {0}")]
    Parse(String),
    /// JSON, but not a valid JSON-RPC message (answer with -32600; `id` when it could be read).
    #[error("invalid request: {reason}")]
    Invalid {
        /// The id, when it could be read.
        id: Option<RequestId>,
        /// What is wrong.
        reason: String,
    },
}

impl MessageError {
    /// The JSON-RPC error object to answer this failure with.
    pub fn to_error_object(&self) -> ErrorObject {
        match self {
            MessageError::Parse(detail) => ErrorObject::parse_error(detail.clone()),
            MessageError::Invalid { reason, .. } => ErrorObject::invalid_request(reason.clone()),
        }
    }

    /// The id to answer with, if any.
    pub fn id(&self) -> Option<&RequestId> {
        match self {
            MessageError::Parse(_) => None,
            MessageError::Invalid { id, .. } => id.as_ref(),
        }
    }

    /// The complete error response to send back.
    pub fn to_response(&self) -> ErrorResponse {
        ErrorResponse::new(self.id().cloned(), self.to_error_object())
    }
}

/// The fields of any JSON-RPC message, each optional, used to classify it.
/// The envelope's members are read as text and interpreted one by one (no
/// value tree is built for them).
#[derive(Deserialize)]
struct RawMessage<'a> {
    #[serde(default, borrow, deserialize_with = "present_text")]
    jsonrpc: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present_text")]
    id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present_text")]
    method: Option<&'a RawValue>,
    /// Kept as the text of its members: a request's params are read on
    /// demand.
    #[serde(default, deserialize_with = "present_params")]
    params: Option<MaybeObject>,
    /// Kept as text: a client reads it straight into the type it expects.
    #[serde(default, borrow, deserialize_with = "present_text")]
    result: Option<&'a RawValue>,
    #[serde(default, deserialize_with = "crate::present")]
    error: Option<Value>,
}

impl Message {
    /// Parses and classifies one message from bytes.
    pub fn from_slice(bytes: &[u8]) -> Result<Message, MessageError> {
        // Fast path: an object read straight into its fields, so `params`
        // is built once instead of as a whole-message tree that is then
        // converted. Anything it does not take (not an object, not JSON,
        // duplicate members, ...) goes the slow way, which alone decides
        // errors, so both ways classify every input identically.
        let object = bytes
            .iter()
            .find(|b| !b.is_ascii_whitespace())
            .is_some_and(|b| *b == b'{');
        // Params are kept as text, whose nesting the fast path does not
        // bound: a message nested deeper than a JSON value may be goes the
        // slow way, which refuses it as a value would be refused.
        // The bytes are checked as UTF-8 once, whole, and read as text: read
        // as bytes, serde_json checks each string and member on its own.
        if object && !nested_deeper_than(bytes, MAX_DEPTH) {
            if let Ok(text) = std::str::from_utf8(bytes) {
                if let Ok(raw) = serde_json::from_str::<RawMessage>(text) {
                    return raw.classify();
                }
            }
        }
        let value: Value =
            serde_json::from_slice(bytes).map_err(|e| MessageError::Parse(e.to_string()))?;
        Message::from_value(value)
    }

    /// Classifies an already-parsed JSON value.
    pub fn from_value(value: Value) -> Result<Message, MessageError> {
        if !value.is_object() {
            return Err(MessageError::Invalid {
                id: None,
                reason: "a JSON-RPC message must be a JSON object".into(),
            });
        }
        // Written out again: a request keeps its params as text.
        let text = serde_json::to_vec(&value).map_err(|e| MessageError::Parse(e.to_string()))?;
        let raw: RawMessage = serde_json::from_slice(&text).map_err(|e| MessageError::Invalid {
            id: None,
            reason: e.to_string(),
        })?;
        raw.classify()
    }

    /// The method of a request or notification.
    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Request(r) => Some(&r.method),
            Message::Notification(n) => Some(&n.method),
            _ => None,
        }
    }
}

impl RawMessage<'_> {
    fn classify(self) -> Result<Message, MessageError> {
        let id = match self.id.map(RawValue::get) {
            None => None,
            Some("null") => {
                return Err(invalid(None, "id must be a string or an integer, not null"));
            }
            Some(text) => Some(
                request_id(text)
                    .ok_or_else(|| invalid(None, "id must be a string or an integer"))?,
            ),
        };
        match self.jsonrpc.map(string_of) {
            Some(Some(version)) if version == JSONRPC_VERSION => {}
            Some(_) => return Err(invalid(id, "jsonrpc must be \"2.0\"")),
            None => return Err(invalid(id, "missing jsonrpc member (must be \"2.0\")")),
        }
        let params = match self.params {
            None => None,
            Some(MaybeObject::Object(members)) => Some(Params::from_raw_object(members)),
            Some(MaybeObject::Other) => return Err(invalid(id, "params must be an object")),
        };
        match (self.method, self.result, self.error) {
            (Some(method), None, None) => {
                let Some(method) = string_of(method) else {
                    return Err(invalid(id, "method must be a string"));
                };
                let method = method.into_owned();
                Ok(match id {
                    Some(id) => Message::Request(Request::with_params(id, method, params)),
                    None => {
                        let params = params.map(Params::into_object);
                        Message::Notification(Notification::new(method, params))
                    }
                })
            }
            (None, Some(result), None) => {
                let id = id.ok_or_else(|| invalid(None, "a result response must have an id"))?;
                let Some(result) = ResultBody::from_object_text(result.to_owned()) else {
                    return Err(invalid(Some(id), "result must be an object"));
                };
                Ok(Message::Result(ResultResponse::new(id, result)))
            }
            (None, None, Some(error)) => {
                let error: ErrorObject = serde_json::from_value(error)
                    .map_err(|e| invalid(id.clone(), &format!("malformed error object: {e}")))?;
                Ok(Message::Error(ErrorResponse::new(id, error)))
            }
            (None, Some(_), Some(_)) => Err(invalid(
                id,
                "a response must not carry both result and error",
            )),
            (None, None, None) => Err(invalid(
                id,
                "a message needs a method, a result or an error",
            )),
            (Some(_), _, _) => Err(invalid(id, "a request must not carry result or error")),
        }
    }
}

/// How deeply `serde_json` lets arrays and objects nest in a value.
const MAX_DEPTH: usize = 128;

/// True when arrays and objects in the JSON text `bytes` nest deeper than
/// `limit` (brackets inside strings do not count).
/// The number of `[` and `{` in `bytes`: the two differ only in bit 0x20,
/// which no other byte shares with them, so one comparison finds both; the
/// sum over 64 bytes at a time fits a byte, which lets it be vectorised.
fn count_opening(bytes: &[u8]) -> usize {
    bytes
        .chunks(64)
        .map(|chunk| {
            let n = chunk
                .iter()
                .fold(0u8, |n, &b| n.wrapping_add(u8::from(b | 0x20 == b'{')));
            usize::from(n)
        })
        .sum()
}

fn nested_deeper_than(bytes: &[u8], limit: usize) -> bool {
    // Fewer opening brackets than the limit cannot nest deeper: the usual
    // case, counted without following strings.
    let opening = count_opening(bytes);
    if opening <= limit {
        return false;
    }
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &byte in bytes {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// A member's text, with an explicit `null` kept as `Some("null")`.
fn present_text<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<&'de RawValue>, D::Error> {
    <&'de RawValue>::deserialize(deserializer).map(Some)
}

/// The string a JSON text holds, when it is a string.
fn string_of(text: &RawValue) -> Option<std::borrow::Cow<'_, str>> {
    crate::string_value(text.get())
}

/// A request id from its text: an integer or a string without escapes read
/// directly, anything else as the derived (untagged) reading does.
fn request_id(text: &str) -> Option<RequestId> {
    if text.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
        // Valid JSON: digits alone parse as Rust parses them; a fraction,
        // an exponent, a number out of range and `-0` (which serde_json
        // reads as a float) go the long way.
        if let Ok(n) = text.parse::<i64>().map_err(drop).and_then(|n| {
            if text.starts_with("-0") {
                Err(())
            } else {
                Ok(n)
            }
        }) {
            return Some(RequestId::Number(n));
        }
    } else if let Some(inner) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        if !inner.contains('\\') {
            return Some(RequestId::String(inner.to_owned()));
        }
    }
    serde_json::from_str::<RequestId>(text).ok()
}

/// Keeps an explicit `null` as a value that is not an object, so that it is
/// refused as params rather than taken as absent.
fn present_params<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<MaybeObject>, D::Error> {
    MaybeObject::deserialize(deserializer).map(Some)
}

fn invalid(id: Option<RequestId>, reason: &str) -> MessageError {
    MessageError::Invalid {
        id,
        reason: reason.to_owned(),
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Message::from_value(value).map_err(de::Error::custom)
    }
}

impl From<Request> for Message {
    fn from(value: Request) -> Self {
        Message::Request(value)
    }
}

impl From<Notification> for Message {
    fn from(value: Notification) -> Self {
        Message::Notification(value)
    }
}

impl From<ResultResponse> for Message {
    fn from(value: ResultResponse) -> Self {
        Message::Result(value)
    }
}

impl From<ErrorResponse> for Message {
    fn from(value: ErrorResponse) -> Self {
        Message::Error(value)
    }
}

#[cfg(test)]
mod tests {
    use super::{RequestId, count_opening, request_id};

    #[test]
    fn opening_brackets_are_counted_as_one_by_one() {
        let every_byte: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        let brackets = [b'{'; 200];
        for bytes in [&every_byte[..], &brackets[..], b"", b"[{]}"] {
            let naive = bytes.iter().filter(|b| matches!(b, b'[' | b'{')).count();
            assert_eq!(count_opening(bytes), naive);
        }
    }

    #[test]
    fn request_ids_read_directly_read_as_the_derived_reading() {
        for text in [
            "0",
            "-0",
            "-00",
            "7",
            "-12",
            "9223372036854775807",
            "-9223372036854775808",
            "9223372036854775808",
            "1.0",
            "1e3",
            "-1.5E-2",
            r#""a""#,
            r#""""#,
            r#""a\"b""#,
            r#""\u00e9""#,
            "true",
            "null",
            "{}",
            "[]",
        ] {
            let derived = serde_json::from_str::<RequestId>(text).ok();
            assert_eq!(request_id(text), derived, "{text}");
        }
    }
}
