//! `sampling/createMessage`: asking the client's model for a completion.
//!
//! Like elicitation, sampling travels inside an `InputRequiredResult`; the
//! client answers with a [`CreateMessageResult`] in `inputResponses`.

use serde::de::{DeserializeOwned, Deserializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::JsonObject;
use crate::content::{Role, SamplingContent};
use crate::meta::Meta;
use crate::tool::Tool;

/// Method name of `sampling/createMessage`.
pub const METHOD_CREATE_MESSAGE: &str = "sampling/createMessage";

/// Common values of [`CreateMessageResult::stop_reason`] (others are allowed).
pub mod stop_reason {
    /// The model yielded the turn.
    pub const END_TURN: &str = "endTurn";
    /// A requested stop sequence was produced.
    pub const STOP_SEQUENCE: &str = "stopSequence";
    /// `maxTokens` was reached.
    pub const MAX_TOKENS: &str = "maxTokens";
    /// The model wants to use tools.
    pub const TOOL_USE: &str = "toolUse";
}

/// One content block in a sampling message (the schema's `SamplingMessageContentBlock`).
pub type SamplingMessageContentBlock = SamplingContent;

/// A value the schema allows either alone or as an array, kept in the form it came in.
///
/// ```
/// use toolwire_protocol::OneOrMany;
/// let one: OneOrMany<u32> = serde_json::from_str("7").unwrap();
/// let many: OneOrMany<u32> = serde_json::from_str("[7,8]").unwrap();
/// assert_eq!(one.as_slice(), &[7]);
/// assert_eq!(many.len(), 2);
/// assert_eq!(serde_json::to_string(&one).unwrap(), "7");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum OneOrMany<T> {
    /// A single value.
    One(T),
    /// An array of values.
    Many(Vec<T>),
}

impl<T> OneOrMany<T> {
    /// The values as a slice (one element for [`OneOrMany::One`]).
    pub fn as_slice(&self) -> &[T] {
        match self {
            OneOrMany::One(v) => std::slice::from_ref(v),
            OneOrMany::Many(v) => v,
        }
    }

    /// The values as a vector.
    pub fn into_vec(self) -> Vec<T> {
        match self {
            OneOrMany::One(v) => vec![v],
            OneOrMany::Many(v) => v,
        }
    }

    /// Iterates over the values.
    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.as_slice().iter()
    }

    /// How many values there are.
    pub fn len(&self) -> usize {
        self.as_slice().len()
    }

    /// True when this is an empty array.
    pub fn is_empty(&self) -> bool {
        self.as_slice().is_empty()
    }
}

impl<T> From<T> for OneOrMany<T> {
    fn from(value: T) -> Self {
        OneOrMany::One(value)
    }
}

impl<T> From<Vec<T>> for OneOrMany<T> {
    fn from(value: Vec<T>) -> Self {
        OneOrMany::Many(value)
    }
}

impl<'a, T> IntoIterator for &'a OneOrMany<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for OneOrMany<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match Value::deserialize(deserializer)? {
            Value::Array(items) => items
                .into_iter()
                .map(T::deserialize)
                .collect::<Result<Vec<T>, _>>()
                .map(OneOrMany::Many)
                .map_err(D::Error::custom),
            other => T::deserialize(other)
                .map(OneOrMany::One)
                .map_err(D::Error::custom),
        }
    }
}

/// A message in a sampling conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SamplingMessage {
    /// Who said it.
    pub role: Role,
    /// One content block or several.
    pub content: OneOrMany<SamplingContent>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl SamplingMessage {
    /// A message with one content block.
    pub fn new(role: Role, content: SamplingContent) -> Self {
        SamplingMessage {
            role,
            content: OneOrMany::One(content),
            meta: None,
        }
    }
}

/// Which MCP servers' context the client should include (deprecated).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum IncludeContext {
    /// No context.
    None,
    /// Context from the requesting server.
    ThisServer,
    /// Context from all connected servers.
    AllServers,
}

/// How the model may use the offered tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolChoiceMode {
    /// The model decides.
    Auto,
    /// The model must use at least one tool.
    Required,
    /// The model must not use tools.
    None,
}

/// Tool-use constraints for sampling.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolChoice {
    /// The mode (`auto` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<ToolChoiceMode>,
}

/// A hint for model selection.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelHint {
    /// A full or partial model name, e.g. `claude-3-5-sonnet` or `sonnet`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// The server's preferences for model selection; the client may ignore them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelPreferences {
    /// Model name hints, in order of preference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hints: Option<Vec<ModelHint>>,
    /// How much cost matters, 0 to 1.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::number::opt_f64"
    )]
    pub cost_priority: Option<f64>,
    /// How much speed matters, 0 to 1.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::number::opt_f64"
    )]
    pub speed_priority: Option<f64>,
    /// How much capability matters, 0 to 1.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::number::opt_f64"
    )]
    pub intelligence_priority: Option<f64>,
}

/// Parameters of `sampling/createMessage`.
///
/// ```
/// use toolwire_protocol::{CreateMessageRequestParams, Role, SamplingContent, SamplingMessage, TextContent};
/// let p = CreateMessageRequestParams::new(
///     vec![SamplingMessage::new(Role::User, SamplingContent::Text(TextContent { text: "Hi".into(), ..Default::default() }))],
///     100,
/// );
/// assert_eq!(serde_json::to_value(&p).unwrap()["maxTokens"], 100);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageRequestParams {
    /// The conversation so far.
    pub messages: Vec<SamplingMessage>,
    /// Model selection preferences.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_preferences: Option<ModelPreferences>,
    /// A system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Which servers' context to include (deprecated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_context: Option<IncludeContext>,
    /// Sampling temperature.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::number::opt_f64"
    )]
    pub temperature: Option<f64>,
    /// The maximum number of tokens to generate.
    pub max_tokens: u64,
    /// Sequences that stop generation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Vec<String>>,
    /// Provider-specific metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
    /// Tools the model may use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
    /// How the model may use `tools`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
}

impl CreateMessageRequestParams {
    /// Parameters with the given messages and token limit.
    pub fn new(messages: Vec<SamplingMessage>, max_tokens: u64) -> Self {
        CreateMessageRequestParams {
            messages,
            max_tokens,
            ..Default::default()
        }
    }
}

/// The client's answer to `sampling/createMessage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageResult {
    /// Who produced the message (normally `assistant`).
    pub role: Role,
    /// One content block or several.
    pub content: OneOrMany<SamplingContent>,
    /// The model that produced it.
    pub model: String,
    /// Why generation stopped; see [`stop_reason`] for common values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}
