//! JSON Schema handling for toolwire, shared by server and client.
//!
//! - [`CompiledSchema`]: compile a schema once (JSON Schema 2020-12 unless
//!   `$schema` names draft-04, draft-06, draft-07 or 2019-09), validate many
//!   times, with every violation reported. Compilation is bounded by
//!   [`SchemaLimits`] and never fetches anything: a `$ref` that leaves the
//!   document is rejected.
//! - [`check_tool_name`]: the tool name rules.
//! - [`header_params`]: the `x-mcp-header` rules, and [`header_value`] for
//!   encoding and checking the `Mcp-Param-*` / `Mcp-Name` header values.
//!
//! ```
//! use serde_json::json;
//! use toolwire_schema::CompiledSchema;
//! let schema = CompiledSchema::compile(&json!({
//!     "type": "object",
//!     "properties": {"age": {"type": "integer", "minimum": 0}}
//! })).unwrap();
//! let errors = schema.validate(&json!({"age": -1})).unwrap_err();
//! assert_eq!(errors.to_string(), "/age: -1 is less than the minimum of 0");
//! ```

#![warn(missing_docs)]

mod compile;
mod dialect;
mod error;
pub mod header_value;
mod headers;
mod limits;
mod names;
mod refs;
mod violations;
mod walk;

pub use compile::CompiledSchema;
pub use dialect::Dialect;
pub use error::SchemaError;
pub use header_value::HeaderValueError;
pub use headers::{
    HEADER_KEYWORD, HEADER_PREFIX, HeaderKind, HeaderParam, HeaderRuleError, header_params,
    looks_sensitive,
};
pub use limits::SchemaLimits;
pub use names::{MAX_TOOL_NAME_LEN, NameError, check_tool_name};
pub use violations::{ValidationErrors, Violation};
