//! `resultType` and the caching hints shared by several results.

use serde::{Deserialize, Serialize};

/// What kind of result a response carries. Absent reads as `complete`;
/// any value other than the two below is rejected.
///
/// ```
/// use toolwire_protocol::ResultType;
/// assert_eq!(serde_json::from_str::<ResultType>(r#""input_required""#).unwrap(), ResultType::InputRequired);
/// assert!(serde_json::from_str::<ResultType>(r#""later""#).is_err());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultType {
    /// The request completed; the result holds the final content.
    #[default]
    Complete,
    /// More input is needed; the result is an `InputRequiredResult`.
    InputRequired,
}

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
