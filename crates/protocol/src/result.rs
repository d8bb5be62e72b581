//! `resultType` and the caching hints shared by several results.

use serde::{Deserialize, Serialize};

use crate::JsonObject;
use crate::meta::Meta;

/// What kind of result a response carries. Absent reads as `complete`;
/// any value other than the three below is rejected.
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
    /// The request is served as a task (the Tasks extension): the result
    /// is a `CreateTaskResult`.
    Task,
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

impl ResultType {
    /// Reads `resultType` from a raw result object: absent reads as
    /// [`ResultType::Complete`], an unknown value is an error.
    ///
    /// ```
    /// use toolwire_protocol::{JsonObject, ResultType};
    /// let r: JsonObject = serde_json::from_str(r#"{"resultType":"input_required"}"#).unwrap();
    /// assert_eq!(ResultType::of(&r).unwrap(), ResultType::InputRequired);
    /// assert_eq!(ResultType::of(&JsonObject::new()).unwrap(), ResultType::Complete);
    /// ```
    pub fn of(result: &JsonObject) -> Result<ResultType, serde_json::Error> {
        match result.get("resultType") {
            None => Ok(ResultType::Complete),
            Some(v) => ResultType::deserialize(v),
        }
    }
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
