//! The one error type of the client, with each kind of failure told apart.

use std::time::Duration;

use serde_json::Value;
use toolwire_protocol::{CallToolResult, ErrorObject};

pub use crate::transport::TransportError;

/// Why a client operation failed.
///
/// Each kind of failure has its own variant, so a caller can never mistake a
/// tool execution error (the tool ran and reported a problem for the model) for
/// a protocol error (the server rejected the request) or a local refusal.
///
/// ```
/// use toolwire_client::Error;
/// use toolwire_protocol::CallToolResult;
/// let e = Error::ToolExecution { tool: "div".into(), result: Box::new(CallToolResult::error("division by zero")) };
/// assert_eq!(e.to_string(), "tool div reported an error: division by zero");
/// assert!(e.tool_result().is_some());
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The server answered with a JSON-RPC error.
    #[error("server error {code}: {message}")]
    Protocol {
        /// The error code (e.g. -32602).
        code: i64,
        /// The server's message.
        message: String,
        /// The server's `data`, if any.
        data: Option<Value>,
    },
    /// The tool ran and returned `isError: true`. The full result (whose
    /// content is meant for the model, so it can correct its call) is kept.
    #[error("tool {tool} reported an error: {}", error_text(result))]
    ToolExecution {
        /// The tool, by the name the server knows it under.
        tool: String,
        /// The result as the server sent it.
        result: Box<CallToolResult>,
    },
    /// The transport failed: the process died, the connection broke, the
    /// reply could not be read.
    #[error("transport error: {0}")]
    Transport(#[from] TransportError),
    /// No answer within the request's timeout (or its hard maximum).
    #[error("request timed out after {0:?}")]
    Timeout(Duration),
    /// The request was cancelled by the caller, or the server ended it.
    #[error("request cancelled")]
    Cancelled,
    /// The tool's `structuredContent` does not match its `outputSchema`;
    /// the result was withheld.
    #[error("tool {tool} returned structuredContent that breaks its outputSchema: {reason}")]
    OutputSchema {
        /// The tool.
        tool: String,
        /// What is wrong, one violation per line.
        reason: String,
    },
    /// The approval hook refused the call; nothing was sent.
    #[error("call to tool {tool} denied: {reason}")]
    Denied {
        /// The tool.
        tool: String,
        /// Why, as the hook said.
        reason: String,
    },
    /// The server kept asking for input beyond the configured number of rounds.
    #[error("gave up after {0} rounds of input requests")]
    TooManyRounds(usize),
    /// The client rejected the tool's definition (e.g. an invalid
    /// `x-mcp-header` on the HTTP transport), so it cannot be called.
    #[error("tool {tool} was rejected: {reason}")]
    InvalidTool {
        /// The tool.
        tool: String,
        /// The rule its definition breaks.
        reason: String,
    },
    /// The arguments are not a JSON object.
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// The tool is not offered by the server (or the group).
    #[error("unknown tool {0}")]
    UnknownTool(String),
    /// Client and server share no protocol version.
    #[error("no mutually supported protocol version: we speak {ours:?}, the server {theirs:?}")]
    NoCommonVersion {
        /// The versions this client speaks.
        ours: Vec<String>,
        /// The versions the server listed.
        theirs: Vec<String>,
    },
    /// The server asked for input this client cannot give, or a handler failed.
    #[error("cannot answer input request {key:?} ({method}): {reason}")]
    Input {
        /// The input request's key.
        key: String,
        /// Its method, e.g. `sampling/createMessage`.
        method: String,
        /// What went wrong.
        reason: String,
    },
    /// The server's reply is not what the protocol allows.
    #[error("invalid reply from server: {0}")]
    InvalidReply(String),
}

fn error_text(result: &CallToolResult) -> String {
    let texts: Vec<&str> = result.content.iter().filter_map(|c| c.as_text()).collect();
    if texts.is_empty() {
        "(no text content)".to_owned()
    } else {
        texts.join("\n")
    }
}

impl Error {
    /// The result of a tool execution error, to hand to the model.
    pub fn tool_result(&self) -> Option<&CallToolResult> {
        match self {
            Error::ToolExecution { result, .. } => Some(result),
            _ => None,
        }
    }

    /// The JSON-RPC error code, for a protocol error.
    pub fn code(&self) -> Option<i64> {
        match self {
            Error::Protocol { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// A short outcome label for audit records.
    pub(crate) fn outcome(&self) -> &'static str {
        match self {
            Error::Protocol { .. } => "protocol_error",
            Error::ToolExecution { .. } => "tool_error",
            Error::Transport(_) => "transport_error",
            Error::Timeout(_) => "timeout",
            Error::Cancelled => "cancelled",
            Error::OutputSchema { .. } => "output_schema_violation",
            Error::Denied { .. } => "denied",
            Error::TooManyRounds(_) => "too_many_rounds",
            Error::InvalidTool { .. } => "invalid_tool",
            Error::UnknownTool(_) => "unknown_tool",
            Error::InvalidArguments(_) => "invalid_arguments",
            Error::NoCommonVersion { .. } => "no_common_version",
            Error::Input { .. } => "input_error",
            Error::InvalidReply(_) => "invalid_reply",
        }
    }
}

impl From<ErrorObject> for Error {
    fn from(value: ErrorObject) -> Self {
        Error::Protocol {
            code: value.code,
            message: value.message,
            data: value.data,
        }
    }
}

/// Shorthand for results of client operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;
