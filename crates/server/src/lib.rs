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

mod context;
mod dispatch;
mod mrtr;
mod output;
mod pagination;
mod registry;
mod seal;
mod server;
pub mod stdio;
mod tool;

pub use context::{Outbox, Principal, RequestContext, RequestEnv, wants_notifications};
pub use mrtr::InputRequired;
pub use output::{IntoToolOutput, Structured, ToolError, ToolOutput, structured_result};
pub use registry::RegistrationError;
pub use seal::StateKey;
pub use server::{CacheHint, Server, ServerBuilder, ServerConfig};
pub use tool::{BoxFuture, NoArgs, ToolBuilder, schema_object_for};
pub use toolwire_protocol as protocol;
