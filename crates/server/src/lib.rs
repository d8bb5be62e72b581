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
#![warn(missing_docs)]

mod builder;
mod context;
mod dispatch;
mod features;
mod security;
mod server;
mod setters;
mod store;
mod telemetry;
mod transport;

pub use security::{audit, auth};
pub use transport::{http, stdio};

pub use builder::ServerBuilder;
pub use context::mrtr::InputRequired;
pub use context::output::{
    BoxFuture, IntoToolOutput, Structured, ToolError, ToolOutput, schema_object_for,
    structured_result,
};
pub use context::seal::StateKey;
pub use context::{
    MessageSink, Outbox, Principal, RequestContext, RequestEnv, response_streams,
    wants_notifications,
};
pub use dispatch::param_headers::ParamHeader;
pub use features::cache::CacheHint;
pub use features::completion::MAX_COMPLETION_VALUES;
pub use features::extract::{State, ToolHandler, ToolParam, marker};
pub use features::handles::{DEFAULT_HANDLE_IDLE, DEFAULT_HANDLES_PER_PRINCIPAL, Handles};
pub use features::prompts::{PromptBuilder, PromptResult};
pub use features::registry::RegistrationError;
pub use features::resources::{
    ReadRequest, ReadResult, ResourceBuilder, ResourceTemplateBuilder, blob_contents, text_contents,
};
pub use features::tasks::{TaskSettings, TaskSupport};
pub use features::tool::{NoArgs, ToolBuilder};
pub use security::limits::{
    DEFAULT_MAX_ARGUMENT_BYTES, DEFAULT_MAX_ARGUMENT_DEPTH, DEFAULT_MAX_STRING_BYTES, InputLimits,
};
pub use security::sanitize::{
    DEFAULT_MAX_RESULT_BYTES, INVISIBLE_FLAG_KEY, SanitizePolicy, SanitizeReport, strip_control,
};
pub use server::{Server, ServerConfig};
pub use store::change_feed::{Change, ChangeFeed, ChangeTopics, InMemoryChangeFeed};
pub use store::handles::{HandleStore, HandleStoreError, InMemoryHandles};
pub use store::rate_limit::{
    DEFAULT_TOOL_CALL_LIMIT, InMemoryRateLimits, RateLimit, RateLimitStore,
};
pub use store::sessions::{
    InMemorySessionStore, Refreshed, SessionEvent, SessionRecord, SessionStore,
    SessionStoreUnavailable,
};
pub use store::task_record::TaskRecord;
pub use store::tasks::{
    InMemoryTaskStore, TaskChange, TaskLookup, TaskStore, TaskStoreError, watch_changes,
};
pub use toolwire_protocol as protocol;
pub use toolwire_telemetry::Network;
