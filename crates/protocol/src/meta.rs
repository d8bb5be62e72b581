//! `_meta`: reserved keys and typed accessors over an open map.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::JsonObject;
use crate::capabilities::{ClientCapabilities, Implementation};
use crate::jsonrpc::RequestId;
use crate::level::LoggingLevel;

/// Reserved `_meta` key names.
pub mod keys {
    /// The protocol version of a request.
    pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
    /// The client's name and version.
    pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
    /// The client capabilities relevant to a request.
    pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
    /// The minimum log level the server should emit for a request.
    pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
    /// The server's name and version, on results.
    pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
    /// Correlates a notification with its `subscriptions/listen` request.
    pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
    /// Opts a request into progress notifications.
    pub const PROGRESS_TOKEN: &str = "progressToken";
    /// W3C trace context: `traceparent`.
    pub const TRACEPARENT: &str = "traceparent";
    /// W3C trace context: `tracestate`.
    pub const TRACESTATE: &str = "tracestate";
    /// W3C baggage.
    pub const BAGGAGE: &str = "baggage";
}

/// A progress token: a string or an integer.
pub type ProgressToken = RequestId;

/// The contents of a `_meta` field. Unknown keys are preserved as they are.
///
/// ```
/// use toolwire_protocol::Meta;
/// let mut meta = Meta::default();
/// meta.set_protocol_version("2026-07-28");
/// assert_eq!(meta.protocol_version(), Some("2026-07-28"));
/// assert_eq!(serde_json::to_value(&meta).unwrap()["io.modelcontextprotocol/protocolVersion"], "2026-07-28");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Meta(pub JsonObject);

impl Meta {
    /// An empty `_meta`.
    pub fn new() -> Self {
        Meta::default()
    }

    /// The raw value at `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }

    /// Sets the raw value at `key`.
    pub fn insert(&mut self, key: impl Into<String>, value: Value) {
        self.0.insert(key.into(), value);
    }

    /// True when no key is set.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Reads `key` as `T`: `None` when absent, `Some(Err)` when present with the wrong shape.
    pub fn get_as<T: DeserializeOwned>(&self, key: &str) -> Option<Result<T, serde_json::Error>> {
        self.0.get(key).map(|v| T::deserialize(v))
    }

    fn set_as<T: Serialize>(&mut self, key: &str, value: &T) {
        let value = serde_json::to_value(value).expect("MCP types serialize to JSON");
        self.0.insert(key.to_owned(), value);
    }

    /// `io.modelcontextprotocol/protocolVersion`, when it is a string.
    pub fn protocol_version(&self) -> Option<&str> {
        self.0.get(keys::PROTOCOL_VERSION).and_then(Value::as_str)
    }

    /// Sets `io.modelcontextprotocol/protocolVersion`.
    pub fn set_protocol_version(&mut self, version: &str) {
        self.0
            .insert(keys::PROTOCOL_VERSION.into(), Value::String(version.into()));
    }

    /// `io.modelcontextprotocol/clientCapabilities`.
    pub fn client_capabilities(&self) -> Option<Result<ClientCapabilities, serde_json::Error>> {
        self.get_as(keys::CLIENT_CAPABILITIES)
    }

    /// Sets `io.modelcontextprotocol/clientCapabilities`.
    pub fn set_client_capabilities(&mut self, caps: &ClientCapabilities) {
        self.set_as(keys::CLIENT_CAPABILITIES, caps);
    }

    /// `io.modelcontextprotocol/clientInfo`.
    pub fn client_info(&self) -> Option<Result<Implementation, serde_json::Error>> {
        self.get_as(keys::CLIENT_INFO)
    }

    /// Sets `io.modelcontextprotocol/clientInfo`.
    pub fn set_client_info(&mut self, info: &Implementation) {
        self.set_as(keys::CLIENT_INFO, info);
    }

    /// `io.modelcontextprotocol/logLevel`.
    pub fn log_level(&self) -> Option<Result<LoggingLevel, serde_json::Error>> {
        self.get_as(keys::LOG_LEVEL)
    }

    /// Sets `io.modelcontextprotocol/logLevel`.
    pub fn set_log_level(&mut self, level: LoggingLevel) {
        self.set_as(keys::LOG_LEVEL, &level);
    }

    /// `io.modelcontextprotocol/serverInfo`.
    pub fn server_info(&self) -> Option<Result<Implementation, serde_json::Error>> {
        self.get_as(keys::SERVER_INFO)
    }

    /// Sets `io.modelcontextprotocol/serverInfo`.
    pub fn set_server_info(&mut self, info: &Implementation) {
        self.set_as(keys::SERVER_INFO, info);
    }

    /// `io.modelcontextprotocol/subscriptionId`.
    pub fn subscription_id(&self) -> Option<Result<RequestId, serde_json::Error>> {
        self.get_as(keys::SUBSCRIPTION_ID)
    }

    /// Sets `io.modelcontextprotocol/subscriptionId`.
    pub fn set_subscription_id(&mut self, id: &RequestId) {
        self.set_as(keys::SUBSCRIPTION_ID, id);
    }

    /// `progressToken`.
    pub fn progress_token(&self) -> Option<Result<ProgressToken, serde_json::Error>> {
        self.get_as(keys::PROGRESS_TOKEN)
    }

    /// Sets `progressToken`.
    pub fn set_progress_token(&mut self, token: &ProgressToken) {
        self.set_as(keys::PROGRESS_TOKEN, token);
    }

    /// `traceparent`, when it is a string.
    pub fn traceparent(&self) -> Option<&str> {
        self.0.get(keys::TRACEPARENT).and_then(Value::as_str)
    }

    /// `tracestate`, when it is a string.
    pub fn tracestate(&self) -> Option<&str> {
        self.0.get(keys::TRACESTATE).and_then(Value::as_str)
    }

    /// `baggage`, when it is a string.
    pub fn baggage(&self) -> Option<&str> {
        self.0.get(keys::BAGGAGE).and_then(Value::as_str)
    }
}

impl From<JsonObject> for Meta {
    fn from(value: JsonObject) -> Self {
        Meta(value)
    }
}
