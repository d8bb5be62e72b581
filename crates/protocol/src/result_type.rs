//! `resultType`: what kind of result a response carries.

use serde::{Deserialize, Serialize};

use crate::JsonObject;

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
