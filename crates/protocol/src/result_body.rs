//! The `result` of a response, kept as its JSON text when it was read off
//! the wire and read into a type only when someone asks.

use std::borrow::Cow;
use std::fmt;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::JsonObject;
use crate::result_type::ResultType;

/// The result object of a [`ResultResponse`](crate::ResultResponse).
///
/// A result built in code is a tree ([`JsonObject`]). A result read by
/// [`Message::from_slice`](crate::Message::from_slice) is kept as its text
/// (checked as JSON, and as an object), so a client reads it once, straight
/// into the type it expects, instead of into a tree that is then converted.
///
/// ```
/// use toolwire_protocol::{CallToolResult, Message, ResultType};
/// let reply = br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}"#;
/// let Message::Result(response) = Message::from_slice(reply).unwrap() else { panic!() };
/// assert_eq!(response.result.result_type().unwrap(), ResultType::Complete);
/// let result: CallToolResult = response.result.parse().unwrap();
/// assert_eq!(result, CallToolResult::text("hi"));
/// ```
#[derive(Clone)]
pub struct ResultBody(Repr);

#[derive(Clone)]
enum Repr {
    Tree(JsonObject),
    /// The text of a JSON object.
    Text(Box<RawValue>),
}

/// The members of a result that decide what it is, read without the rest.
#[derive(Deserialize)]
struct Head {
    #[serde(rename = "resultType", default)]
    result_type: ResultType,
}

impl ResultBody {
    /// A result kept as `text`, which must be a JSON object (its syntax is
    /// checked; `RawValue` holds only valid JSON).
    pub(crate) fn from_object_text(text: Box<RawValue>) -> Option<Self> {
        text.get()
            .starts_with('{')
            .then_some(ResultBody(Repr::Text(text)))
    }

    /// The result as a tree (read from its text if it was kept as text).
    ///
    /// # Errors
    /// When the text holds a value a tree cannot (a number out of range).
    pub fn into_object(self) -> Result<JsonObject, serde_json::Error> {
        match self.0 {
            Repr::Tree(object) => Ok(object),
            Repr::Text(text) => serde_json::from_str(text.get()),
        }
    }

    /// The result as a tree, borrowed when it is one.
    ///
    /// # Errors
    /// As [`ResultBody::into_object`].
    pub fn to_object(&self) -> Result<Cow<'_, JsonObject>, serde_json::Error> {
        match &self.0 {
            Repr::Tree(object) => Ok(Cow::Borrowed(object)),
            Repr::Text(text) => serde_json::from_str(text.get()).map(Cow::Owned),
        }
    }

    /// The result as a tree to change in place (read from its text first
    /// if it was kept as text).
    ///
    /// # Errors
    /// As [`ResultBody::into_object`]; the result is left as it was.
    pub fn object_mut(&mut self) -> Result<&mut JsonObject, serde_json::Error> {
        if let Repr::Text(text) = &self.0 {
            self.0 = Repr::Tree(serde_json::from_str(text.get())?);
        }
        match &mut self.0 {
            Repr::Tree(object) => Ok(object),
            Repr::Text(_) => unreachable!("made a tree above"),
        }
    }

    /// The result read as `T`.
    ///
    /// # Errors
    /// When the result does not have `T`'s shape.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        match &self.0 {
            Repr::Tree(object) => T::deserialize(object),
            Repr::Text(text) => serde_json::from_str(text.get()),
        }
    }

    /// The result read as `T`, moving a tree's values instead of copying them.
    ///
    /// # Errors
    /// As [`ResultBody::parse`].
    pub fn into_parsed<T: DeserializeOwned>(self) -> Result<T, serde_json::Error> {
        match self.0 {
            Repr::Tree(object) => serde_json::from_value(Value::Object(object)),
            Repr::Text(text) => serde_json::from_str(text.get()),
        }
    }

    /// The result's `resultType` (absent reads as `complete`).
    ///
    /// # Errors
    /// When `resultType` is not one of the three kinds.
    pub fn result_type(&self) -> Result<ResultType, serde_json::Error> {
        match &self.0 {
            Repr::Tree(object) => ResultType::of(object),
            Repr::Text(text) => match leading_result_type(text.get()) {
                Some(kind) => Ok(kind),
                None => serde_json::from_str::<Head>(text.get()).map(|h| h.result_type),
            },
        }
    }
}

/// `resultType` when it is the object's first member, as servers usually
/// write it, with one of the three kinds as its value: found without
/// reading the rest. `None` sends the caller the long way (which also
/// reports what is wrong). A second `resultType` later in the text is an
/// error when the result is read as its type (a duplicate field).
fn leading_result_type(text: &str) -> Option<ResultType> {
    let json_space = [' ', '\t', '\n', '\r'];
    let rest = text.strip_prefix('{')?.trim_start_matches(json_space);
    let rest = rest
        .strip_prefix("\"resultType\"")?
        .trim_start_matches(json_space);
    let rest = rest.strip_prefix(':')?.trim_start_matches(json_space);
    let value = rest.strip_prefix('"')?;
    match &value[..value.find('"')?] {
        "complete" => Some(ResultType::Complete),
        "input_required" => Some(ResultType::InputRequired),
        "task" => Some(ResultType::Task),
        _ => None,
    }
}

impl From<JsonObject> for ResultBody {
    fn from(object: JsonObject) -> Self {
        ResultBody(Repr::Tree(object))
    }
}

impl Default for ResultBody {
    fn default() -> Self {
        ResultBody(Repr::Tree(JsonObject::new()))
    }
}

impl fmt::Debug for ResultBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Tree(object) => object.fmt(f),
            Repr::Text(text) => f.write_str(text.get()),
        }
    }
}

/// Equal when both read as the same tree (so a result kept as text equals
/// the tree it holds, whatever its spacing).
impl PartialEq for ResultBody {
    fn eq(&self, other: &Self) -> bool {
        match (self.to_object(), other.to_object()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
    }
}

impl Serialize for ResultBody {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Repr::Tree(object) => object.serialize(serializer),
            Repr::Text(text) => text.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ResultBody {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        JsonObject::deserialize(deserializer).map(ResultBody::from)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn text(s: &str) -> ResultBody {
        ResultBody::from_object_text(RawValue::from_string(s.to_owned()).unwrap()).unwrap()
    }

    fn tree(v: Value) -> ResultBody {
        let Value::Object(o) = v else { panic!() };
        ResultBody::from(o)
    }

    #[test]
    fn only_an_object_is_kept_as_text() {
        for s in ["[1]", "1", "\"x\"", "null"] {
            let raw = RawValue::from_string(s.to_owned()).unwrap();
            assert!(ResultBody::from_object_text(raw).is_none(), "{s}");
        }
    }

    #[test]
    fn text_and_tree_read_alike() {
        let s = r#"{ "resultType" : "input_required", "a": [1, {"b": null}] }"#;
        let v = json!({"resultType": "input_required", "a": [1, {"b": null}]});
        assert_eq!(text(s), tree(v.clone()));
        assert_eq!(
            text(s).into_object().unwrap(),
            v.as_object().unwrap().clone()
        );
        assert_eq!(text(s).result_type().unwrap(), ResultType::InputRequired);
        assert_eq!(
            tree(v.clone()).result_type().unwrap(),
            ResultType::InputRequired
        );
        assert_eq!(text(s).parse::<Value>().unwrap(), v);
        assert_eq!(tree(v.clone()).parse::<Value>().unwrap(), v);
        assert_eq!(text(s).into_parsed::<Value>().unwrap(), v);
        assert_eq!(serde_json::to_value(text(s)).unwrap(), v);
        assert_eq!(format!("{:?}", text(s)), s);
    }

    #[test]
    fn result_type_defaults_to_complete_and_refuses_unknown_kinds() {
        assert_eq!(text("{}").result_type().unwrap(), ResultType::Complete);
        assert_eq!(
            text(r#"{"resultType":"task","taskId":"t"}"#)
                .result_type()
                .unwrap(),
            ResultType::Task
        );
        let err = text(r#"{"resultType":"later"}"#).result_type().unwrap_err();
        assert!(err.to_string().contains("unknown variant `later`"), "{err}");
        assert!(tree(json!({"resultType": "later"})).result_type().is_err());
    }

    #[test]
    fn a_leading_result_type_is_read_without_the_rest() {
        let cases = [
            (
                r#"{"resultType":"complete","content":[]}"#,
                Some(ResultType::Complete),
            ),
            (
                r#"{ "resultType" :	"task" ,"taskId":"t"}"#,
                Some(ResultType::Task),
            ),
            (
                "{\n\"resultType\":\r\"input_required\"}",
                Some(ResultType::InputRequired),
            ),
            (r#"{"content":[],"resultType":"task"}"#, None),
            (r#"{"resultType":"later"}"#, None),
            (r#"{"resultType":"complete\u0020"}"#, None),
            (r#"{"resultType":null}"#, None),
            (r#"{"result\u0054ype":"task"}"#, None),
            ("{}", None),
        ];
        for (text, expected) in cases {
            assert_eq!(leading_result_type(text), expected, "{text}");
        }
        // The long way agrees where both answer.
        let long = |s: &str| serde_json::from_str::<Head>(s).map(|h| h.result_type).ok();
        assert_eq!(
            long(r#"{"content":[],"resultType":"task"}"#),
            Some(ResultType::Task)
        );
        assert_eq!(
            long(r#"{"result\u0054ype":"task"}"#),
            Some(ResultType::Task)
        );
        assert_eq!(long(r#"{"resultType":null}"#), None);
    }

    #[test]
    fn a_number_a_tree_cannot_hold_is_an_error_not_a_panic() {
        let mut body = text(r#"{"n":1e400}"#);
        let why = "number out of range at line 1 column 10";
        assert_eq!(body.to_object().unwrap_err().to_string(), why);
        assert_eq!(body.clone().into_object().unwrap_err().to_string(), why);
        assert_eq!(body.parse::<Value>().unwrap_err().to_string(), why);
        assert_eq!(body.object_mut().unwrap_err().to_string(), why);
        // Left as it was, and unequal even to itself (no tree to compare).
        assert_eq!(format!("{body:?}"), r#"{"n":1e400}"#);
        assert_ne!(body, text(r#"{"n":1e400}"#));
    }

    #[test]
    fn object_mut_turns_text_into_a_tree_once() {
        let mut body = text(r#"{"a":1}"#);
        body.object_mut().unwrap().insert("b".into(), json!(2));
        assert_eq!(serde_json::to_string(&body).unwrap(), r#"{"a":1,"b":2}"#);
    }
}
