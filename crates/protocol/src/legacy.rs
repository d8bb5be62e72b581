//! The messages of the initialization-based revisions (2025-11-25 and the two
//! before it) that 2026-07-28 removed: `initialize`, `ping`,
//! `logging/setLevel`, `resources/subscribe` and `resources/unsubscribe`.
//!
//! A dual-era peer speaks them to legacy counterparts; everything else a
//! legacy session carries (tools, prompts, resources, elicitation, ...) uses
//! the same types as 2026-07-28, less the fields that revision added.

use serde::{Deserialize, Serialize};

use crate::{ClientCapabilities, Implementation, LoggingLevel, Meta, ServerCapabilities};

/// The legacy revisions a dual-era peer negotiates, newest first.
pub const LEGACY_PROTOCOL_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26"];

/// The revision an HTTP server assumes when a legacy request carries no
/// `MCP-Protocol-Version` header and nothing else tells it (2025-11-25,
/// "Protocol Version Header").
pub const DEFAULT_LEGACY_HTTP_VERSION: &str = "2025-03-26";

/// `initialize`.
pub const METHOD_INITIALIZE: &str = "initialize";
/// `notifications/initialized`.
pub const METHOD_INITIALIZED: &str = "notifications/initialized";
/// `ping`.
pub const METHOD_PING: &str = "ping";
/// `logging/setLevel`.
pub const METHOD_SET_LEVEL: &str = "logging/setLevel";
/// `resources/subscribe`.
pub const METHOD_SUBSCRIBE: &str = "resources/subscribe";
/// `resources/unsubscribe`.
pub const METHOD_UNSUBSCRIBE: &str = "resources/unsubscribe";
/// `notifications/roots/list_changed` (client to server).
pub const METHOD_ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";

/// Parameters of `initialize`.
///
/// ```
/// use toolwire_protocol::InitializeRequestParams;
/// let p: InitializeRequestParams = serde_json::from_str(
///     r#"{"protocolVersion":"2025-11-25","capabilities":{"sampling":{}},
///         "clientInfo":{"name":"c","version":"1"}}"#,
/// ).unwrap();
/// assert_eq!(p.protocol_version, "2025-11-25");
/// assert!(p.capabilities.sampling.is_some());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeRequestParams {
    /// The newest revision the client supports.
    pub protocol_version: String,
    /// What the client can do, for the whole session.
    pub capabilities: ClientCapabilities,
    /// The client's name and version.
    pub client_info: Implementation,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// The result of `initialize`.
///
/// ```
/// use toolwire_protocol::{Implementation, InitializeResult, ServerCapabilities};
/// let r = InitializeResult {
///     protocol_version: "2025-11-25".into(),
///     capabilities: ServerCapabilities::default(),
///     server_info: Implementation::new("s", "1"),
///     instructions: None,
///     meta: None,
/// };
/// assert_eq!(
///     serde_json::to_string(&r).unwrap(),
///     r#"{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}"#
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// The revision the server chose.
    pub protocol_version: String,
    /// What the server offers.
    pub capabilities: ServerCapabilities,
    /// The server's name and version.
    pub server_info: Implementation,
    /// How to use the server, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Parameters of `logging/setLevel`.
///
/// ```
/// use toolwire_protocol::{LoggingLevel, SetLevelRequestParams};
/// let p: SetLevelRequestParams = serde_json::from_str(r#"{"level":"info"}"#).unwrap();
/// assert_eq!(p.level, LoggingLevel::Info);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetLevelRequestParams {
    /// The least severe level the client wants to receive.
    pub level: LoggingLevel,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Parameters of `resources/subscribe` and `resources/unsubscribe`.
///
/// ```
/// use toolwire_protocol::SubscribeRequestParams;
/// let p: SubscribeRequestParams = serde_json::from_str(r#"{"uri":"file:///a"}"#).unwrap();
/// assert_eq!(p.uri, "file:///a");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubscribeRequestParams {
    /// The resource.
    pub uri: String,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// The revision a server answers a legacy client's `initialize` with: the
/// requested one when it is among `supported`, else the newest of them
/// (2025-11-25, "Version Negotiation"). `supported` is newest first.
///
/// ```
/// use toolwire_protocol::{LEGACY_PROTOCOL_VERSIONS, negotiate_legacy_version};
/// assert_eq!(negotiate_legacy_version("2025-06-18", LEGACY_PROTOCOL_VERSIONS), Some("2025-06-18"));
/// assert_eq!(negotiate_legacy_version("2024-11-05", LEGACY_PROTOCOL_VERSIONS), Some("2025-11-25"));
/// assert_eq!(negotiate_legacy_version("2025-06-18", &[]), None);
/// ```
pub fn negotiate_legacy_version<'a>(requested: &str, supported: &[&'a str]) -> Option<&'a str> {
    supported
        .iter()
        .copied()
        .find(|v| *v == requested)
        .or_else(|| supported.first().copied())
}

/// True for a revision that opens with `initialize` (2025-11-25 and earlier).
///
/// ```
/// assert!(toolwire_protocol::is_legacy_version("2025-06-18"));
/// assert!(!toolwire_protocol::is_legacy_version("2026-07-28"));
/// ```
pub fn is_legacy_version(version: &str) -> bool {
    LEGACY_PROTOCOL_VERSIONS.contains(&version) || version == "2024-11-05"
}
