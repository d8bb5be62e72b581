//! What a tool handler returns, and how it becomes a `tools/call` result.

use std::future::Future;
use std::pin::Pin;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;
use toolwire_protocol::{CallToolResult, ContentBlock, ErrorObject, JsonObject};

use crate::context::mrtr::InputRequired;

/// A boxed, sendable future.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// A round's outcome: a complete result, or a request for more input.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutput {
    /// The call completed (successfully or as a tool execution error).
    Complete(CallToolResult),
    /// The handler needs input from the client before it can finish.
    InputRequired(InputRequired),
}

/// Why a handler failed.
///
/// An [`ToolError::Execution`] becomes an `isError: true` result whose text
/// helps the model correct its call; a [`ToolError::Protocol`] becomes a
/// JSON-RPC error.
///
/// ```
/// use toolwire_server::ToolError;
/// let e = ToolError::new("date must be in the future");
/// assert_eq!(e.to_string(), "date must be in the future");
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolError {
    /// A tool execution error, reported to the model.
    #[error("{0}")]
    Execution(String),
    /// A protocol error, answered as a JSON-RPC error.
    #[error("{0}")]
    Protocol(ErrorObject),
    /// The handler needs input first; lets `?` end the round from deep inside a handler.
    #[error("input required: {}", .0.keys().collect::<Vec<_>>().join(", "))]
    InputRequired(Box<InputRequired>),
}

impl ToolError {
    /// A tool execution error with a message for the model.
    pub fn new(message: impl Into<String>) -> Self {
        ToolError::Execution(message.into())
    }

    /// Wraps any error as a tool execution error.
    pub fn from_error(error: impl std::fmt::Display) -> Self {
        ToolError::Execution(error.to_string())
    }
}

impl From<InputRequired> for ToolError {
    fn from(value: InputRequired) -> Self {
        ToolError::InputRequired(Box::new(value))
    }
}

impl From<ErrorObject> for ToolError {
    fn from(value: ErrorObject) -> Self {
        ToolError::Protocol(value)
    }
}

/// A structured result: serialized into `structuredContent` and, for older
/// clients, as JSON text in one text block. When a handler returns it, the
/// type's JSON Schema becomes the tool's `outputSchema`.
///
/// ```
/// use toolwire_server::{IntoToolOutput, Structured, ToolOutput};
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct Sum { total: i64 }
/// let ToolOutput::Complete(r) = Structured(Sum { total: 3 }).into_tool_output().unwrap() else { panic!() };
/// assert_eq!(r.structured_content.unwrap()["total"], 3);
/// assert_eq!(r.content[0].as_text(), Some(r#"{"total":3}"#));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Structured<T>(pub T);

/// Conversion of a handler's return value into a round's outcome.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool's result",
    note = "return a String, content blocks, Structured<T> (T: Serialize + JsonSchema), a \
            ToolOutput, or a Result of one of these with an error that converts into ToolError"
)]
pub trait IntoToolOutput {
    /// The outcome, or an error.
    fn into_tool_output(self) -> Result<ToolOutput, ToolError>;

    /// The `outputSchema` implied by the return type, if any.
    fn output_schema() -> Option<JsonObject> {
        None
    }
}

impl IntoToolOutput for ToolOutput {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        Ok(self)
    }
}

impl IntoToolOutput for CallToolResult {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::Complete(self))
    }
}

impl IntoToolOutput for String {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::Complete(CallToolResult::text(self)))
    }
}

impl IntoToolOutput for &'static str {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::Complete(CallToolResult::text(self)))
    }
}

impl IntoToolOutput for ContentBlock {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::Complete(CallToolResult::new(vec![self])))
    }
}

impl IntoToolOutput for Vec<ContentBlock> {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::Complete(CallToolResult::new(self)))
    }
}

impl IntoToolOutput for InputRequired {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::InputRequired(self))
    }
}

impl IntoToolOutput for ToolError {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        Err(self)
    }
}

impl<T: Serialize + schemars::JsonSchema> IntoToolOutput for Structured<T> {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        let value = serde_json::to_value(&self.0).map_err(|e| {
            ToolError::Protocol(ErrorObject::internal(format!(
                "cannot serialize result: {e}"
            )))
        })?;
        Ok(ToolOutput::Complete(structured_result(value)))
    }

    fn output_schema() -> Option<JsonObject> {
        Some(schema_object_for::<T>())
    }
}

impl<T: IntoToolOutput, E: Into<ToolError>> IntoToolOutput for Result<T, E> {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        self.map_err(Into::into)?.into_tool_output()
    }

    fn output_schema() -> Option<JsonObject> {
        T::output_schema()
    }
}

/// A result carrying `value` as `structuredContent` plus the same JSON as text.
pub fn structured_result(value: Value) -> CallToolResult {
    let text = value.to_string();
    CallToolResult {
        structured_content: Some(value),
        ..CallToolResult::text(text)
    }
}

/// The JSON Schema (2020-12) of `T` as a plain object, without `$schema` and `title`.
pub fn schema_object_for<T: JsonSchema>() -> JsonObject {
    let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let schema = generator.into_root_schema_for::<T>();
    let mut object = match schema.to_value() {
        Value::Object(object) => object,
        // A `true` schema accepts anything: say so with an empty object.
        _ => JsonObject::new(),
    };
    object.remove("$schema");
    object.remove("title");
    object
}
