//! toolwire: the Rust toolkit for the [Model Context Protocol](https://modelcontextprotocol.io),
//! revision 2026-07-28 (and the 2025 revisions that open with `initialize`),
//! centred on tools.
//!
//! | path | feature | what it is |
//! |---|---|---|
//! | [`server`] | `server` (default) | the server SDK: typed tools, one dispatcher, stdio and Streamable HTTP |
//! | [`tool`], [`tools`] | `macros` (default) | attributes that make `async fn`s and `impl` blocks tools |
//! | [`client`] | `client` (default) | the client SDK: both eras, cache, input rounds, safety hooks |
//! | [`protocol`] | always | the wire types |
//! | [`schema`] | always | JSON Schema compile and validate, `x-mcp-header` and name rules |
//!
//! A server with one tool, and a client calling it over an in-memory pipe
//! (a real server would use `server::stdio::serve_stdio(server)` or
//! `server::http::serve(server, ..)`):
//!
//! ```
//! use serde_json::json;
//! use toolwire::client::Client;
//! use toolwire::client::transport::{Connection, StdioTransport};
//! use toolwire::server::{Server, Structured, stdio};
//! use toolwire::tool;
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Add {
//!     /// The numbers to add.
//!     #[schemars(length(min = 1))]
//!     numbers: Vec<f64>,
//! }
//!
//! #[derive(serde::Serialize, schemars::JsonSchema)]
//! struct Sum {
//!     sum: f64,
//! }
//!
//! /// Adds numbers.
//! #[tool(read_only)]
//! async fn add(args: Add) -> Structured<Sum> {
//!     Structured(Sum { sum: args.numbers.iter().sum() })
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), toolwire::client::Error> {
//! let transport = StdioTransport::from_fn("in-process", || async {
//!     let server = Server::builder("calc", "1.0.0").tool(add_tool()).build().unwrap();
//!     let (client_end, server_end) = tokio::io::duplex(1 << 16);
//!     let (reader, writer) = tokio::io::split(server_end);
//!     tokio::spawn(stdio::serve(server, reader, writer, Default::default()));
//!     let (reader, writer) = tokio::io::split(client_end);
//!     Ok(Connection::new(reader, writer))
//! })
//! .build();
//! let client = Client::builder(transport).build();
//! let result = client.call_tool("add", json!({"numbers": [1, 2, 3.5]})).await?;
//! assert_eq!(result.structured_content, Some(json!({"sum": 6.5})));
//! client.close().await;
//! # Ok(()) }
//! ```
#![warn(missing_docs)]

#[cfg(feature = "client")]
pub use toolwire_client as client;
#[cfg(feature = "macros")]
pub use toolwire_macros::{tool, tools};
pub use toolwire_protocol as protocol;
pub use toolwire_schema as schema;
#[cfg(feature = "server")]
pub use toolwire_server as server;
