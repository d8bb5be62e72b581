//! Why a schema could not be compiled.

/// Why a schema could not be compiled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// `$schema` names a dialect this crate does not support.
    #[error(
        "unsupported JSON Schema dialect {0:?}: supported are draft-04, draft-06, draft-07, \
         2019-09 and 2020-12 (the default when $schema is absent)"
    )]
    UnsupportedDialect(String),
    /// A reference points outside the schema document; such references are never fetched.
    #[error(
        "reference {reference:?} points outside this schema document; remote references are \
         never fetched; embed the target under $defs and refer to it with \"#/$defs/...\""
    )]
    RemoteRef {
        /// The reference as written in the schema.
        reference: String,
    },
    /// The schema exceeds one of the [`SchemaLimits`](crate::SchemaLimits).
    #[error("schema too complex: {what} exceeds the limit of {limit}")]
    TooComplex {
        /// Which bound was exceeded, e.g. `"subschema nesting depth"`.
        what: &'static str,
        /// The bound's value.
        limit: usize,
    },
    /// The schema is not valid under its dialect.
    #[error("invalid schema: {0}")]
    Invalid(String),
}
