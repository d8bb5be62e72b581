//! Wire types for the Model Context Protocol, revision 2026-07-28.
//!
//! Serde models only: no I/O, no validation logic (the optional `lines`
//! feature adds the stdio line framing). Field names follow the
//! specification's schema; optional fields are `Option`s and are omitted when
//! `None`; `_meta` maps keep unknown keys.
//!
//! ```
//! use toolwire_protocol::{Message, CallToolRequestParams};
//! let msg = Message::from_slice(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}"#).unwrap();
//! let Message::Request(req) = msg else { panic!() };
//! let params: CallToolRequestParams = req.params.unwrap().parse().unwrap();
//! assert_eq!(params.name, "echo");
//! ```

#![warn(missing_docs)]

#[macro_use]
mod macros;
mod level;
mod number;
mod tool;

pub mod capabilities;
mod checked_text;
pub mod completion;
pub mod content;
pub mod discover;
pub mod elicitation;
pub mod error;
pub mod hex;
pub mod jsonrpc;
pub mod legacy;
#[cfg(feature = "lines")]
pub mod lines;
pub mod logging;
pub mod meta;
pub mod mrtr;
pub mod notifications;
pub mod params;
pub mod prompts;
pub mod request_meta;
pub mod resources;
pub mod result;
mod result_body;
mod result_type;
pub mod roots;
pub mod sampling;
pub mod subscriptions;
pub mod tasks;
mod text_memo;
pub mod time;
pub mod tools;

pub use capabilities::*;
pub use checked_text::string_value;
pub use completion::*;
pub use content::*;
pub use discover::*;
pub use elicitation::*;
pub use error::{ErrorObject, code};
pub use jsonrpc::*;
pub use legacy::*;
pub use logging::*;
pub use meta::{Meta, ProgressToken, keys};
pub use mrtr::*;
pub use notifications::*;
pub use params::{MaybeObject, NotAnObject, Params, RawObject, object_member};
pub use prompts::*;
pub use request_meta::{RequestMeta, revision_text};
pub use resources::*;
pub use result::*;
pub use result_body::ResultBody;
pub use roots::*;
pub use sampling::*;
pub use subscriptions::*;
pub use tasks::*;
pub use tools::*;

/// A JSON object (keys keep their order).
pub type JsonObject = serde_json::Map<String, serde_json::Value>;

/// The protocol revision this crate models.
pub const LATEST_PROTOCOL_VERSION: &str = "2026-07-28";

/// Keeps an explicit `null` as `Some(Value::Null)`, for fields where `null` is a value.
pub(crate) fn present<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<serde_json::Value>, D::Error> {
    <serde_json::Value as serde::Deserialize>::deserialize(deserializer).map(Some)
}
