//! The caching hints shared by several results (`resultType` is in `result_type`).

use serde::{Deserialize, Serialize};

use crate::meta::Meta;

pub use crate::result_type::ResultType;

/// Who may cache a result.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    /// Holds no user-specific data; any cache may store and share it.
    Public,
    /// Holds data for one authorization context only. The default when a peer omits it.
    #[default]
    Private,
}

/// A result with no content: just `resultType` and `_meta`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EmptyResult {
    /// Always `complete`.
    #[serde(default)]
    pub result_type: ResultType,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}
