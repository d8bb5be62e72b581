//! The toolwire server SDK: define tools as typed async functions and serve
//! them to any MCP 2026-07-28 client.
//!
//! ```
//! use toolwire_server::{Server, ToolBuilder, RequestContext};
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Echo { text: String }
//! let server = Server::builder("demo", "1.0.0")
//!     .tool(ToolBuilder::new("echo").handler(|a: Echo, _cx: RequestContext| async move { a.text }))
//!     .build()
//!     .unwrap();
//! # drop(server);
//! ```

pub mod audit;
pub mod auth;
mod completion;
mod connections;
mod context;
mod dispatch;
mod guard;
mod handles;
pub mod http;
mod limits;
mod listen;
mod listing;
mod mrtr;
mod output;
mod pagination;
mod param_headers;
mod prompts;
mod rate_limit;
mod registry;
mod resources;
mod sanitize;
mod seal;
mod server;
mod setters;
pub mod stdio;
mod tool;

pub use completion::MAX_COMPLETION_VALUES;
pub use context::{
    Outbox, Principal, RequestContext, RequestEnv, response_streams, wants_notifications,
};
pub use handles::{
    DEFAULT_HANDLE_IDLE, DEFAULT_HANDLES_PER_PRINCIPAL, HandleStore, HandleStoreError, Handles,
    InMemoryHandles,
};
pub use limits::{
    DEFAULT_MAX_ARGUMENT_BYTES, DEFAULT_MAX_ARGUMENT_DEPTH, DEFAULT_MAX_STRING_BYTES, InputLimits,
};
pub use mrtr::InputRequired;
pub use output::{IntoToolOutput, Structured, ToolError, ToolOutput, structured_result};
pub use param_headers::ParamHeader;
pub use prompts::{PromptBuilder, PromptResult};
pub use rate_limit::{DEFAULT_TOOL_CALL_LIMIT, InMemoryRateLimits, RateLimit, RateLimitStore};
pub use registry::RegistrationError;
pub use resources::{
    ReadRequest, ReadResult, ResourceBuilder, ResourceTemplateBuilder, blob_contents, text_contents,
};
pub use sanitize::{DEFAULT_MAX_RESULT_BYTES, SanitizePolicy, strip_control};
pub use seal::StateKey;
pub use server::{CacheHint, Server, ServerBuilder, ServerConfig};
pub use tool::{BoxFuture, NoArgs, ToolBuilder, schema_object_for};
pub use toolwire_protocol as protocol;
