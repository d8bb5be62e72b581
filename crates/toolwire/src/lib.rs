//! toolwire: the Rust toolkit for the Model Context Protocol (2026-07-28).
//!
//! Re-exports the protocol types, the schema layer, and (behind features) the
//! server and client SDKs.
#[cfg(feature = "client")]
pub use toolwire_client as client;
#[cfg(feature = "macros")]
pub use toolwire_macros::{tool, tools};
pub use toolwire_protocol as protocol;
pub use toolwire_schema as schema;
#[cfg(feature = "server")]
pub use toolwire_server as server;
