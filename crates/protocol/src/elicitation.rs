//! `elicitation/create`: asking the user for input, in a form or at a URL.
//!
//! Under the multi round-trip pattern an elicitation is never a request of its
//! own: the server puts it in an `InputRequiredResult`'s `inputRequests`, and
//! the client answers with an [`ElicitResult`] in the retry's `inputResponses`.

use std::collections::BTreeMap;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::JsonObject;

/// Method name of `elicitation/create`.
pub const METHOD_ELICIT: &str = "elicitation/create";

const_str! {
    /// The `"mode": "form"` marker of form-mode elicitation.
    FormMode = "form"
}

const_str! {
    /// The `"mode": "url"` marker of URL-mode elicitation.
    UrlMode = "url"
}

const_str! {
    /// The `"type": "string"` marker of string and single-select enum schemas.
    StringType = "string"
}

const_str! {
    /// The `"type": "boolean"` marker of [`BooleanSchema`].
    BooleanType = "boolean"
}

const_str! {
    /// The `"type": "array"` marker of multi-select enum schemas.
    ArrayType = "array"
}

/// Parameters of `elicitation/create`: form mode or URL mode, told apart by `mode`.
///
/// ```
/// use toolwire_protocol::ElicitRequestParams;
/// let p: ElicitRequestParams = serde_json::from_str(
///     r#"{"mode":"url","message":"Sign in","url":"https://example.com/login"}"#,
/// ).unwrap();
/// assert!(matches!(p, ElicitRequestParams::Url(_)));
/// assert_eq!(p.message(), "Sign in");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ElicitRequestParams {
    /// Form mode (`mode` absent or `"form"`): structured data, in band.
    Form(ElicitRequestFormParams),
    /// URL mode (`mode: "url"`): an out-of-band interaction at a URL.
    Url(ElicitRequestUrlParams),
}

impl ElicitRequestParams {
    /// Form-mode parameters with an explicit `mode: "form"`.
    pub fn form(message: impl Into<String>, requested_schema: JsonObject) -> Self {
        ElicitRequestParams::Form(ElicitRequestFormParams {
            mode: Some(FormMode),
            message: message.into(),
            requested_schema,
        })
    }

    /// URL-mode parameters.
    pub fn url(message: impl Into<String>, url: impl Into<String>) -> Self {
        ElicitRequestParams::Url(ElicitRequestUrlParams {
            mode: UrlMode,
            message: message.into(),
            url: url.into(),
        })
    }

    /// The message shown to the user.
    pub fn message(&self) -> &str {
        match self {
            ElicitRequestParams::Form(p) => &p.message,
            ElicitRequestParams::Url(p) => &p.message,
        }
    }
}

impl<'de> Deserialize<'de> for ElicitRequestParams {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        let mode = match &value {
            Value::Object(map) => map.get("mode"),
            _ => {
                return Err(de::Error::custom(
                    "elicitation parameters must be an object",
                ));
            }
        };
        match mode {
            None => serde_json::from_value(value).map(ElicitRequestParams::Form),
            Some(Value::String(m)) if m == FormMode::VALUE => {
                serde_json::from_value(value).map(ElicitRequestParams::Form)
            }
            Some(Value::String(m)) if m == UrlMode::VALUE => {
                serde_json::from_value(value).map(ElicitRequestParams::Url)
            }
            Some(other) => {
                return Err(de::Error::custom(format!(
                    "unknown elicitation mode {other}, expected \"form\" or \"url\""
                )));
            }
        }
        .map_err(de::Error::custom)
    }
}

impl From<ElicitRequestFormParams> for ElicitRequestParams {
    fn from(value: ElicitRequestFormParams) -> Self {
        ElicitRequestParams::Form(value)
    }
}

impl From<ElicitRequestUrlParams> for ElicitRequestParams {
    fn from(value: ElicitRequestUrlParams) -> Self {
        ElicitRequestParams::Url(value)
    }
}

/// Form-mode elicitation: a message and a flat JSON Schema of primitive fields.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitRequestFormParams {
    /// `"form"`, or absent (form mode is the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<FormMode>,
    /// The message shown to the user.
    pub message: String,
    /// The schema of the requested data: `type: "object"` with `properties`
    /// whose values are primitive schemas. Kept raw so no keyword is lost;
    /// see [`ElicitRequestFormParams::requested_properties`] for a typed view.
    pub requested_schema: JsonObject,
}

impl ElicitRequestFormParams {
    /// The `properties` of `requestedSchema`, typed. Absent properties read as empty.
    pub fn requested_properties(
        &self,
    ) -> Result<BTreeMap<String, PrimitiveSchemaDefinition>, serde_json::Error> {
        match self.requested_schema.get("properties") {
            None => Ok(BTreeMap::new()),
            Some(v) => BTreeMap::deserialize(v),
        }
    }

    /// The `required` list of `requestedSchema` (empty when absent or malformed).
    pub fn required_fields(&self) -> Vec<&str> {
        self.requested_schema
            .get("required")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }
}

/// URL-mode elicitation: the user is sent to a URL for an out-of-band interaction.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ElicitRequestUrlParams {
    /// Always `"url"`.
    pub mode: UrlMode,
    /// The message shown to the user.
    pub message: String,
    /// The URL to open.
    pub url: String,
}

/// The answer to an elicitation.
///
/// ```
/// use toolwire_protocol::{ElicitAction, ElicitResult, ElicitValue};
/// let r: ElicitResult = serde_json::from_str(r#"{"action":"accept","content":{"age":30}}"#).unwrap();
/// assert_eq!(r.action, ElicitAction::Accept);
/// assert_eq!(r.content.unwrap()["age"].as_i64(), Some(30));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElicitResult {
    /// What the user did.
    pub action: ElicitAction,
    /// The submitted data (form mode, `accept` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<BTreeMap<String, ElicitValue>>,
}

impl ElicitResult {
    /// An `accept` with the given content.
    pub fn accept(content: BTreeMap<String, ElicitValue>) -> Self {
        ElicitResult {
            action: ElicitAction::Accept,
            content: Some(content),
        }
    }

    /// A `decline`.
    pub fn decline() -> Self {
        ElicitResult {
            action: ElicitAction::Decline,
            content: None,
        }
    }

    /// A `cancel`.
    pub fn cancel() -> Self {
        ElicitResult {
            action: ElicitAction::Cancel,
            content: None,
        }
    }
}

/// What the user did with an elicitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// Submitted (form mode) or consented (URL mode).
    Accept,
    /// Explicitly declined.
    Decline,
    /// Dismissed without choosing.
    Cancel,
}

/// One submitted value: a string, a number, a boolean or a list of strings.
///
/// The schema says `integer`; numbers are kept as [`serde_json::Number`] so that a
/// fractional answer to a `type: "number"` field is not lost and `30` stays `30`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ElicitValue {
    /// A string.
    String(String),
    /// A number.
    Number(serde_json::Number),
    /// A boolean.
    Boolean(bool),
    /// The choices of a multi-select field.
    StringArray(Vec<String>),
}

impl ElicitValue {
    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            ElicitValue::String(s) => Some(s),
            _ => None,
        }
    }

    /// The number as an `i64`, if it is an integer that fits.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            ElicitValue::Number(n) => n.as_i64(),
            _ => None,
        }
    }

    /// The number as an `f64`.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            ElicitValue::Number(n) => n.as_f64(),
            _ => None,
        }
    }

    /// The boolean, if this is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            ElicitValue::Boolean(b) => Some(*b),
            _ => None,
        }
    }
}

impl From<String> for ElicitValue {
    fn from(value: String) -> Self {
        ElicitValue::String(value)
    }
}

impl From<&str> for ElicitValue {
    fn from(value: &str) -> Self {
        ElicitValue::String(value.to_owned())
    }
}

impl From<bool> for ElicitValue {
    fn from(value: bool) -> Self {
        ElicitValue::Boolean(value)
    }
}

impl From<i64> for ElicitValue {
    fn from(value: i64) -> Self {
        ElicitValue::Number(value.into())
    }
}

impl From<Vec<String>> for ElicitValue {
    fn from(value: Vec<String>) -> Self {
        ElicitValue::StringArray(value)
    }
}

/// The schema of one form field. Told apart by `type` and by which of
/// `oneOf`, `enum`, `enumNames` and `items.anyOf` are present.
///
/// ```
/// use toolwire_protocol::PrimitiveSchemaDefinition;
/// let s: PrimitiveSchemaDefinition = serde_json::from_str(r#"{"type":"string","enum":["a","b"]}"#).unwrap();
/// assert!(matches!(s, PrimitiveSchemaDefinition::UntitledSingleSelectEnum(_)));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum PrimitiveSchemaDefinition {
    /// `type: "string"`.
    String(StringSchema),
    /// `type: "number"` or `"integer"`.
    Number(NumberSchema),
    /// `type: "boolean"`.
    Boolean(BooleanSchema),
    /// `type: "string"` with `enum`.
    UntitledSingleSelectEnum(UntitledSingleSelectEnumSchema),
    /// `type: "string"` with `oneOf` of `{const, title}`.
    TitledSingleSelectEnum(TitledSingleSelectEnumSchema),
    /// `type: "array"` with `items.enum`.
    UntitledMultiSelectEnum(UntitledMultiSelectEnumSchema),
    /// `type: "array"` with `items.anyOf` of `{const, title}`.
    TitledMultiSelectEnum(TitledMultiSelectEnumSchema),
    /// `type: "string"` with `enum` and `enumNames` (deprecated form).
    LegacyTitledEnum(LegacyTitledEnumSchema),
}

impl<'de> Deserialize<'de> for PrimitiveSchemaDefinition {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use PrimitiveSchemaDefinition as P;
        let value = Value::deserialize(deserializer)?;
        let Value::Object(map) = &value else {
            return Err(de::Error::custom("a primitive schema must be an object"));
        };
        let has = |k: &str| map.contains_key(k);
        let result = match map.get("type").and_then(Value::as_str) {
            Some("boolean") => serde_json::from_value(value).map(P::Boolean),
            Some("number" | "integer") => serde_json::from_value(value).map(P::Number),
            Some("string") if has("oneOf") => {
                serde_json::from_value(value).map(P::TitledSingleSelectEnum)
            }
            Some("string") if has("enum") && has("enumNames") => {
                serde_json::from_value(value).map(P::LegacyTitledEnum)
            }
            Some("string") if has("enum") => {
                serde_json::from_value(value).map(P::UntitledSingleSelectEnum)
            }
            Some("string") => serde_json::from_value(value).map(P::String),
            Some("array") => {
                let titled = map
                    .get("items")
                    .and_then(Value::as_object)
                    .is_some_and(|items| items.contains_key("anyOf"));
                if titled {
                    serde_json::from_value(value).map(P::TitledMultiSelectEnum)
                } else {
                    serde_json::from_value(value).map(P::UntitledMultiSelectEnum)
                }
            }
            Some(other) => {
                return Err(de::Error::custom(format!(
                    "unsupported primitive schema type {other:?}"
                )));
            }
            None => {
                return Err(de::Error::custom(
                    "a primitive schema needs a string \"type\"",
                ));
            }
        };
        result.map_err(de::Error::custom)
    }
}

/// Formats a string field may declare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StringFormat {
    /// `email`.
    Email,
    /// `uri`.
    Uri,
    /// `date`.
    Date,
    /// `date-time`.
    DateTime,
}

/// A free-text field.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StringSchema {
    /// Always `"string"`.
    pub r#type: StringType,
    /// Field label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Field help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Minimum length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u64>,
    /// Maximum length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u64>,
    /// Expected format.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<StringFormat>,
    /// Default value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

/// `"number"` or `"integer"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NumberType {
    /// Any number.
    #[default]
    Number,
    /// Whole numbers only.
    Integer,
}

/// A numeric field.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NumberSchema {
    /// `"number"` or `"integer"`.
    pub r#type: NumberType,
    /// Field label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Field help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Inclusive minimum.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::number::opt_f64"
    )]
    pub minimum: Option<f64>,
    /// Inclusive maximum.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::number::opt_f64"
    )]
    pub maximum: Option<f64>,
    /// Default value.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::number::opt_f64"
    )]
    pub default: Option<f64>,
}

/// A yes/no field.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BooleanSchema {
    /// Always `"boolean"`.
    pub r#type: BooleanType,
    /// Field label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Field help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Default value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<bool>,
}

/// A choice with a display title: `{"const": value, "title": label}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnumOption {
    /// The value submitted when chosen.
    pub r#const: String,
    /// The label shown.
    pub title: String,
}

/// Pick one of a list of strings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UntitledSingleSelectEnumSchema {
    /// Always `"string"`.
    pub r#type: StringType,
    /// Field label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Field help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The choices.
    pub r#enum: Vec<String>,
    /// Default choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

/// Pick one of a list of titled choices.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitledSingleSelectEnumSchema {
    /// Always `"string"`.
    pub r#type: StringType,
    /// Field label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Field help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The choices.
    pub one_of: Vec<EnumOption>,
    /// Default choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

/// The `items` of an [`UntitledMultiSelectEnumSchema`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UntitledEnumItems {
    /// Always `"string"`.
    pub r#type: StringType,
    /// The choices.
    pub r#enum: Vec<String>,
}

/// The `items` of a [`TitledMultiSelectEnumSchema`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitledEnumItems {
    /// The choices.
    pub any_of: Vec<EnumOption>,
}

/// Pick any number of a list of strings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UntitledMultiSelectEnumSchema {
    /// Always `"array"`.
    pub r#type: ArrayType,
    /// Field label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Field help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Minimum number of choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// Maximum number of choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// The choices.
    pub items: UntitledEnumItems,
    /// Default choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Vec<String>>,
}

/// Pick any number of a list of titled choices.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitledMultiSelectEnumSchema {
    /// Always `"array"`.
    pub r#type: ArrayType,
    /// Field label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Field help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Minimum number of choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// Maximum number of choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// The choices.
    pub items: TitledEnumItems,
    /// Default choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Vec<String>>,
}

/// Pick one of a list of strings, labelled by a parallel `enumNames` list (deprecated).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LegacyTitledEnumSchema {
    /// Always `"string"`.
    pub r#type: StringType,
    /// Field label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Field help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The choices.
    pub r#enum: Vec<String>,
    /// Display names, parallel to `enum`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enum_names: Option<Vec<String>>,
    /// Default choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}
