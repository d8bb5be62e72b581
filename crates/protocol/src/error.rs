//! JSON-RPC and MCP error codes, and the one error object that carries them.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::capabilities::ClientCapabilities;

/// Named error codes.
pub mod code {
    /// Invalid JSON was received.
    pub const PARSE_ERROR: i64 = -32700;
    /// The JSON sent is not a valid request object.
    pub const INVALID_REQUEST: i64 = -32600;
    /// The method does not exist or is not available.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Invalid method parameters.
    pub const INVALID_PARAMS: i64 = -32602;
    /// Internal error.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// An HTTP header does not match the request body (MCP).
    pub const HEADER_MISMATCH: i64 = -32020;
    /// The request needs a client capability it did not declare (MCP).
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
    /// The requested protocol version is not supported (MCP).
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
}

/// A JSON-RPC error object: `code`, `message` and optional `data`.
///
/// ```
/// use toolwire_protocol::ErrorObject;
/// let e = ErrorObject::unsupported_protocol_version(&["2026-07-28"], "2024-01-01");
/// assert_eq!(e.code, -32022);
/// assert_eq!(e.data.unwrap()["supported"][0], "2026-07-28");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// The error code.
    pub code: i64,
    /// A short description.
    pub message: String,
    /// Additional information (an explicit `null` is kept as `Some(Value::Null)`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::present"
    )]
    pub data: Option<Value>,
}

impl std::fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl std::error::Error for ErrorObject {}

impl ErrorObject {
    /// An error with the given code and message.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Adds `data`.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// -32700: the bytes were not JSON.
    pub fn parse_error(detail: impl Into<String>) -> Self {
        Self::new(code::PARSE_ERROR, format!("Parse error: {}", detail.into()))
    }

    /// -32600: not a valid JSON-RPC request.
    pub fn invalid_request(detail: impl Into<String>) -> Self {
        Self::new(
            code::INVALID_REQUEST,
            format!("Invalid request: {}", detail.into()),
        )
    }

    /// -32601: unknown method.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            code::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )
    }

    /// -32602: invalid parameters.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(code::INVALID_PARAMS, message)
    }

    /// -32603: internal error.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(code::INTERNAL_ERROR, message)
    }

    /// -32020: an HTTP header is missing, malformed, or does not match the body.
    pub fn header_mismatch(message: impl Into<String>) -> Self {
        Self::new(code::HEADER_MISMATCH, message)
    }

    /// -32021: the request needs client capabilities it did not declare;
    /// `data.requiredCapabilities` is a capabilities object.
    pub fn missing_client_capability(required: &ClientCapabilities) -> Self {
        let names: Vec<&str> = required.declared_names();
        Self::new(
            code::MISSING_REQUIRED_CLIENT_CAPABILITY,
            format!("Missing required client capability: {}", names.join(", ")),
        )
        .with_data(json!({ "requiredCapabilities": required }))
    }

    /// -32022: unsupported protocol version, with `data.supported` and `data.requested`.
    pub fn unsupported_protocol_version(supported: &[&str], requested: &str) -> Self {
        Self::new(
            code::UNSUPPORTED_PROTOCOL_VERSION,
            format!(
                "Unsupported protocol version {requested:?}; supported: {}",
                supported.join(", ")
            ),
        )
        .with_data(json!({ "supported": supported, "requested": requested }))
    }
}
