//! `toolwire-gateway`: one MCP endpoint in front of many MCP servers.
//!
//! The gateway connects to every upstream named in its configuration (a
//! child process on stdio, or Streamable HTTP; either protocol era), lists
//! their tools, and serves them all from one toolwire server under exposed
//! names, `<prefix><separator><tool>`. Policy sits in one place: allow and
//! deny patterns, per-tool scopes and rate limits, argument and result
//! checks against the upstream's schemas, sanitising, timeouts and
//! cancellation, and one audit record per call. A client that declares the
//! Tasks extension (`io.modelcontextprotocol/tasks`) gets a task of the
//! gateway's own for each call, whatever the upstream does (`CONFIG.md`,
//! "Tasks"). [`Gateway::reload`] takes a new configuration while serving
//! (the CLI calls it on SIGHUP).
//!
//! What a web console shows comes from here too: [`Gateway::upstreams`]
//! (each upstream's state), [`Gateway::tool_views`] (every tool, served or
//! withheld by its pin), [`Gateway::approve`] (the one approval path, also
//! `toolwire gateway approve`'s), [`Gateway::audit`] (the latest calls and
//! a feed of new ones) and [`Gateway::rate_use`] (each principal's use of
//! the rate limits).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use toolwire_gateway::{Gateway, config::GatewayConfig};
//!
//! let config = GatewayConfig::parse(r#"
//!     [gateway]
//!     http = "127.0.0.1:8940"
//!
//!     [[upstream]]
//!     name = "demo"
//!     command = ["toolwire", "serve", "--stdio"]
//!     deny = ["delete_*"]
//! "#, "gateway.toml")?;
//! let gateway = Gateway::start(&config).await?;
//! gateway.watch_upstreams(); // follow list changes, outages and returns
//! for tool in gateway.tools() {
//!     println!("{} -> {}/{}", tool.name, tool.upstream, tool.upstream_tool);
//! }
//! # Ok(())
//! # }
//! ```
//!
//! A configuration is checked before anything starts, and a bad one is
//! refused with the line, the key and what was expected:
//!
//! ```
//! use toolwire_gateway::config::GatewayConfig;
//!
//! let text = "[gateway]\nhttp = \"127.0.0.1:8940\"\n\n\
//!             [[upstream]]\nname = \"files\"\ncommand = [\"files-server\"]\n\
//!             deny = [\"write_*\"]\n";
//! let config = GatewayConfig::parse(text, "gateway.toml").unwrap();
//! assert_eq!(config.upstreams[0].prefix, "files");
//!
//! let error = GatewayConfig::parse("[gateway]\nhttp = 8940\n", "gateway.toml").unwrap_err();
//! assert_eq!(
//!     error.to_string(),
//!     "gateway.toml:2: gateway.http: expected an IP address and port such as \
//!      \"127.0.0.1:8940\" (host names are not resolved), got 8940"
//! );
//! ```
#![warn(missing_docs)]

mod approve;
mod audit;
mod bridge;
mod catalog;
pub mod config;
mod error;
mod forward;
mod gateway;
mod glob;
mod hints;
mod names;
pub mod pin;
mod rate_use;
mod registry;
mod reload;
pub mod scan;
mod status;
mod tasks;
mod upstream;
mod views;
mod watch;

pub use approve::{Approval, ApproveError};
pub use audit::{AuditLog, AuditRecord, RECENT_CALLS};
pub use error::GatewayError;
pub use gateway::{Gateway, STATE_KEYS_ENV, SharedStores};
pub use glob::Glob;
pub use names::{Collision, NameTable, Origin, exposed_name};
pub use rate_use::{MAX_METERED_KEYS, MeteredRateLimits, RateUse};
pub use registry::{ExposedTool, WithheldTool};
pub use reload::Reloaded;
pub use status::{UpstreamKind, UpstreamState, UpstreamStatus};
pub use upstream::{UpstreamError, client_for};
pub use views::{ToolPin, ToolView};
pub use watch::POLL_EVERY;
