//! The toolwire client SDK: call tools on any MCP server, 2026-07-28 or the
//! initialization-based 2025 revisions, safely.
//!
//! A [`Client`] talks to one server over a [`transport`]: Streamable HTTP
//! ([`transport::HttpTransport`]) or stdio to a child process
//! ([`transport::StdioTransport`]). Every request carries the `_meta` the
//! protocol requires (version, the capabilities of the handlers installed,
//! client info); an unsupported version is retried once with one both sides
//! speak.
//!
//! **Both eras.** By default the transports find out on first contact what
//! the server speaks ([`transport::ProtocolMode::Auto`]): a 2026-07-28
//! server is spoken to statelessly; a 2025-11-25, 2025-06-18 or 2025-03-26
//! one gets a session (`initialize`, `Mcp-Session-Id`, SSE resumption; over
//! HTTP even the 2024-11-05 HTTP+SSE transport). The API below is the same
//! for both; [`Client::era`] and [`Client::protocol_version`] say which is
//! spoken, and the same handlers answer a legacy server's requests.
//!
//! What the client does for the application:
//!
//! - **Typed calls**: [`Client::list_tools`] (every page), [`Client::call_tool`],
//!   resources, prompts, completion, and [`Client::listen`] as a stream of
//!   [`ListenEvent`]s. Errors tell apart protocol errors, tool execution
//!   errors (`isError`), transport failures, timeouts and cancellation
//!   ([`Error`]).
//! - **Caching** of lists, reads and discovery by `ttlMs` and `cacheScope`,
//!   each page on its own, `private` entries per credentials, invalidated by
//!   list-changed notifications, stale results served (and flagged
//!   [`Freshness::Stale`]) when a refetch fails.
//! - **Multi round-trip requests**: `input_required` results are answered by
//!   the application's elicitation, sampling and roots [`handlers`] and
//!   retried, up to a bounded number of rounds.
//! - **Tasks** (the `io.modelcontextprotocol/tasks` extension): a call the
//!   server answers with a task is polled to its end by `call_tool`, its
//!   input requests answered by the same handlers; [`Client::start_tool_task`]
//!   and [`Client::task`] keep the task's id to resume it later, elsewhere.
//! - **Safety**: an [`ApprovalHook`] before every `tools/call`, annotations
//!   untrusted unless the server is trusted ([`ToolInfo`]), `structuredContent`
//!   checked against the tool's `outputSchema`, timeouts with a hard maximum,
//!   and an [`AuditRecord`] for every call (also a `toolwire::audit` tracing event).
//! - **`x-mcp-header`** on HTTP: arguments mirrored into `Mcp-Param-*`
//!   headers; tools whose annotations break the rules are left out.
//! - **Aggregation**: a [`ClientGroup`] lists many servers' tools under
//!   prefixed, unique names and routes calls back.
//! - **Authorization**: OAuth 2.1 for remote servers ([`auth`]): on `401` the
//!   HTTP transport discovers the authorization server, registers, runs the
//!   authorization code flow with PKCE through a [`auth::RedirectHandler`],
//!   stores tokens per issuer, refreshes them, and steps up on
//!   `insufficient_scope`.
//!
//! ```no_run
//! use serde_json::json;
//! use toolwire_client::{Approval, ApprovalRequest, Client, Error};
//! use toolwire_client::transport::StdioTransport;
//! use toolwire_protocol::{ElicitRequestParams, ElicitResult};
//!
//! # async fn run() -> Result<(), Error> {
//! let client = Client::builder(StdioTransport::command("my-mcp-server").build())
//!     .name("files")
//!     .elicitation(|params: ElicitRequestParams, _cx| async move {
//!         println!("server asks: {}", params.message());
//!         Ok(ElicitResult::decline())
//!     })
//!     .approval(|req: ApprovalRequest<'_>| {
//!         let read_only = req.info.is_some_and(|t| t.is_read_only());
//!         async move { if read_only { Approval::Allow } else { Approval::Deny("ask the user first".into()) } }
//!     })
//!     .build();
//! for tool in client.list_tools().await?.tools {
//!     println!("{}: {:?}", tool.name(), tool.tool.description);
//! }
//! match client.call_tool("read_file", json!({"path": "README.md"})).await {
//!     Ok(result) => println!("{:?}", result.content),
//!     Err(Error::ToolExecution { result, .. }) => println!("tool failed: {:?}", result.content),
//!     Err(other) => return Err(other),
//! }
//! client.close().await;
//! # Ok(()) }
//! ```
//!
//! The same client against a toolwire server in this process, on an
//! in-memory pipe instead of a child's stdio:
//!
//! ```
//! use serde_json::json;
//! use toolwire_client::Client;
//! use toolwire_client::transport::{Connection, StdioTransport};
//! use toolwire_server::{Server, ToolBuilder, stdio};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Echo { text: String }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), toolwire_client::Error> {
//! let transport = StdioTransport::from_fn("in-process echo", || async {
//!     let server = Server::builder("echo", "1.0.0")
//!         .tool(ToolBuilder::new("echo").handler(|args: Echo| async move { args.text }))
//!         .build()
//!         .expect("valid tools");
//!     let (client_end, server_end) = tokio::io::duplex(1 << 16);
//!     let (reader, writer) = tokio::io::split(server_end);
//!     tokio::spawn(stdio::serve(server, reader, writer, Default::default()));
//!     let (reader, writer) = tokio::io::split(client_end);
//!     Ok(Connection::new(reader, writer))
//! })
//! .build();
//! let client = Client::builder(transport).build();
//! let result = client.call_tool("echo", json!({"text": "hi"})).await?;
//! assert_eq!(result.content[0].as_text(), Some("hi"));
//! client.close().await;
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

mod arguments;
pub mod auth;
mod builder;
mod cache;
mod cached;
mod client;
mod digest;
pub mod error;
mod features;
mod future;
mod group;
pub mod handlers;
mod headers;
mod listen;
mod mrtr;
mod options;
mod request_text;
mod safety;
mod task_follow;
mod tasks;
mod telemetry;
mod tool_book;
mod tools;
pub mod transport;
mod watch;

pub use builder::ClientBuilder;
pub use cache::{Cache, CacheHints, Freshness};
pub use client::{Client, Fetched};
pub use error::{Error, Result, TransportError};
pub use group::{ClientGroup, ClientGroupBuilder, GroupTool, GroupToolList, MAX_NAME_LEN};
pub use listen::{ListenEvent, Subscription};
pub use options::{NotificationSink, RequestNotification, RequestOptions};
pub use safety::{
    AllowAll, Approval, ApprovalHook, ApprovalRequest, AuditHook, AuditRecord, ToolInfo,
};
pub use tasks::{TaskHandle, ToolCallStart};
pub use tools::{RejectedTool, ToolList};
