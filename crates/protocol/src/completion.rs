//! `completion/complete`: argument autocompletion for prompts and resource templates.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::meta::Meta;
use crate::result::ResultType;

/// Method name of `completion/complete`.
pub const METHOD_COMPLETE: &str = "completion/complete";

/// What is being completed: a prompt or a resource template, tagged by `type`.
///
/// ```
/// use toolwire_protocol::CompletionReference;
/// let r: CompletionReference = serde_json::from_str(r#"{"type":"ref/resource","uri":"file:///{path}"}"#).unwrap();
/// assert!(matches!(r, CompletionReference::ResourceTemplate(_)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum CompletionReference {
    /// `ref/prompt`.
    #[serde(rename = "ref/prompt")]
    Prompt(PromptReference),
    /// `ref/resource`.
    #[serde(rename = "ref/resource")]
    ResourceTemplate(ResourceTemplateReference),
}

/// Identifies a prompt.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptReference {
    /// The prompt's name.
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// Identifies a resource template.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceTemplateReference {
    /// The URI template.
    pub uri: String,
}

/// The argument being completed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompletionArgument {
    /// The argument's name.
    pub name: String,
    /// What has been typed so far.
    pub value: String,
}

/// Context for a completion.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompletionContext {
    /// Arguments already resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<BTreeMap<String, String>>,
}

/// Parameters of `completion/complete`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompleteRequestParams {
    /// What is being completed.
    pub r#ref: CompletionReference,
    /// The argument being completed.
    pub argument: CompletionArgument,
    /// Context for the completion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<CompletionContext>,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Completion values.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    /// Up to 100 values.
    pub values: Vec<String>,
    /// The total number of matches, which may exceed `values.len()`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// True when there are more matches than `values`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
}

/// The result of `completion/complete`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompleteResult {
    /// Always `complete`.
    #[serde(default)]
    pub result_type: ResultType,
    /// The values.
    pub completion: Completion,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}
