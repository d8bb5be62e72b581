//! `server/discover`.

use serde::{Deserialize, Serialize};

use crate::capabilities::ServerCapabilities;
use crate::meta::Meta;
use crate::result::{CacheScope, ResultType};

/// Method name of `server/discover`.
pub const METHOD_DISCOVER: &str = "server/discover";

/// Parameters of a request that takes nothing but `_meta` (e.g. `server/discover`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestParams {
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// The result of `server/discover`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    /// Always `complete`.
    #[serde(default)]
    pub result_type: ResultType,
    /// Protocol versions the server supports.
    pub supported_versions: Vec<String>,
    /// What the server offers.
    pub capabilities: ServerCapabilities,
    /// How to use the server, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// How long the result may be considered fresh.
    #[serde(default)]
    pub ttl_ms: u64,
    /// Who may cache the result.
    #[serde(default)]
    pub cache_scope: CacheScope,
    /// Result metadata (carries `serverInfo`).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}
