//! Tools: definitions, `tools/list`, `tools/call`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::JsonObject;
use crate::content::ContentBlock;
use crate::meta::Meta;
use crate::mrtr::InputResponses;
use crate::result::ResultType;
pub use crate::tool::{Tool, ToolAnnotations};

/// Method name of `tools/list`.
pub const METHOD_LIST_TOOLS: &str = "tools/list";
/// Method name of `tools/call`.
pub const METHOD_CALL_TOOL: &str = "tools/call";

/// Parameters of a paginated list request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PaginatedRequestParams {
    /// Where to continue, from a previous `nextCursor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

list_result! {
    /// The result of `tools/list`.
    pub struct ListToolsResult {
        /// The tools on this page.
        pub tools: Vec<Tool>,
    }
}

/// Parameters of `tools/call`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolRequestParams {
    /// The tool to call.
    pub name: String,
    /// The arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<JsonObject>,
    /// Answers to the input requests of a previous round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// The opaque state of a previous round, echoed byte for byte.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// The (complete) result of `tools/call`.
///
/// ```
/// use toolwire_protocol::{CallToolResult, ContentBlock};
/// let r = CallToolResult::text("done");
/// assert_eq!(serde_json::to_value(&r).unwrap()["content"][0]["text"], "done");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// Always `complete` (an `input_required` answer is an `InputRequiredResult`).
    #[serde(default)]
    pub result_type: ResultType,
    /// Unstructured content.
    pub content: Vec<ContentBlock>,
    /// Structured content: any JSON value, conforming to the tool's `outputSchema`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::present"
    )]
    pub structured_content: Option<Value>,
    /// True when this is a tool execution error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl CallToolResult {
    /// A successful result with the given content.
    pub fn new(content: Vec<ContentBlock>) -> Self {
        CallToolResult {
            content,
            ..Default::default()
        }
    }

    /// A successful result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new(vec![ContentBlock::text(text)])
    }

    /// A tool execution error (`isError: true`) with one text block.
    pub fn error(text: impl Into<String>) -> Self {
        CallToolResult {
            is_error: Some(true),
            ..Self::text(text)
        }
    }

    /// True when `isError` is set.
    pub fn is_error(&self) -> bool {
        self.is_error == Some(true)
    }
}
