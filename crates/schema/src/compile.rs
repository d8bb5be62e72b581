//! Compile a schema once, validate instances against it many times.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::dialect::Dialect;
use crate::error::SchemaError;
use crate::limits::SchemaLimits;
use crate::refs::check_local_refs;
use crate::violations::{ValidationErrors, Violation};

/// A schema compiled for validation; cheap to clone and share across threads.
///
/// The root may be an object or a boolean schema (`true` accepts everything,
/// `false` nothing). MCP requires `inputSchema` to be an object; checking that
/// is the caller's job.
///
/// ```
/// use serde_json::json;
/// use toolwire_schema::CompiledSchema;
/// let schema = CompiledSchema::compile(&json!({
///     "type": "object",
///     "properties": {"name": {"type": "string"}},
///     "required": ["name"]
/// })).unwrap();
/// assert!(schema.is_valid(&json!({"name": "Ada"})));
/// assert!(schema.validate(&json!({})).is_err());
/// ```
#[derive(Clone)]
pub struct CompiledSchema {
    inner: Arc<Inner>,
}

struct Inner {
    raw: Value,
    dialect: Dialect,
    validator: jsonschema::Validator,
}

impl CompiledSchema {
    /// Compiles `schema` with the default [`SchemaLimits`].
    ///
    /// # Errors
    ///
    /// See [`CompiledSchema::compile_with`].
    pub fn compile(schema: &Value) -> Result<Self, SchemaError> {
        Self::compile_with(schema, &SchemaLimits::default())
    }

    /// Compiles `schema` after checking it against `limits`.
    ///
    /// The dialect is taken from `$schema` (2020-12 when absent). No reference
    /// is ever fetched: references that leave the document are rejected.
    ///
    /// # Errors
    ///
    /// - [`SchemaError::TooComplex`] when a limit is exceeded;
    /// - [`SchemaError::UnsupportedDialect`] for an unknown `$schema`;
    /// - [`SchemaError::RemoteRef`] for a reference outside the document;
    /// - [`SchemaError::Invalid`] when the schema is not an object or boolean,
    ///   or is invalid under its dialect (including unresolvable local references).
    pub fn compile_with(schema: &Value, limits: &SchemaLimits) -> Result<Self, SchemaError> {
        if !schema.is_object() && !schema.is_boolean() {
            return Err(SchemaError::Invalid(
                "a schema must be a JSON object or boolean".into(),
            ));
        }
        limits.check(schema)?;
        let dialect = Dialect::of(schema)?;
        check_local_refs(schema, dialect)?;
        let validator = build_validator(schema, dialect)?;
        let inner = Inner {
            raw: schema.clone(),
            dialect,
            validator,
        };
        Ok(Self {
            inner: Arc::new(inner),
        })
    }

    /// Validates `instance`, reporting every violation.
    ///
    /// # Errors
    ///
    /// [`ValidationErrors`] listing each violation with its instance and schema pointers.
    pub fn validate(&self, instance: &Value) -> Result<(), ValidationErrors> {
        // The usual answer without allocating; only an invalid instance is
        // walked again to collect what is wrong.
        if self.inner.validator.is_valid(instance) {
            return Ok(());
        }
        let violations: Vec<Violation> = self
            .inner
            .validator
            .iter_errors(instance)
            .map(|error| Violation {
                instance_path: error.instance_path().as_str().to_owned(),
                schema_path: error.schema_path().as_str().to_owned(),
                message: error.to_string(),
            })
            .collect();
        if violations.is_empty() {
            Ok(())
        } else {
            Err(ValidationErrors::new(violations))
        }
    }

    /// Whether `instance` is valid; faster than [`validate`](Self::validate).
    pub fn is_valid(&self, instance: &Value) -> bool {
        self.inner.validator.is_valid(instance)
    }

    /// The schema as given to [`compile`](Self::compile).
    pub fn raw(&self) -> &Value {
        &self.inner.raw
    }

    /// The dialect the schema is validated with.
    pub fn dialect(&self) -> Dialect {
        self.inner.dialect
    }
}

/// Builds the jsonschema validator offline: its retriever refuses every URI,
/// so even a reference the local-ref check missed is never fetched.
fn build_validator(schema: &Value, dialect: Dialect) -> Result<jsonschema::Validator, SchemaError> {
    jsonschema::options()
        .with_draft(dialect.draft())
        .offline()
        .build(schema)
        .map_err(|e| SchemaError::Invalid(e.to_string()))
}

impl fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompiledSchema")
            .field("dialect", &self.inner.dialect)
            .field("raw", &self.inner.raw)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn compile(schema: Value) -> CompiledSchema {
        CompiledSchema::compile(&schema).unwrap()
    }

    fn compile_err(schema: Value) -> SchemaError {
        CompiledSchema::compile(&schema).unwrap_err()
    }

    fn pointers(errors: &ValidationErrors) -> Vec<(&str, &str)> {
        errors
            .iter()
            .map(|v| (v.instance_path.as_str(), v.schema_path.as_str()))
            .collect()
    }

    #[test]
    fn is_send_sync_clone_debug() {
        fn assert_traits<T: Send + Sync + Clone + fmt::Debug + 'static>() {}
        assert_traits::<CompiledSchema>();
        assert_traits::<SchemaError>();
        assert_traits::<ValidationErrors>();
    }

    #[test]
    fn default_dialect_is_2020_12() {
        let schema = compile(json!({"type": "number", "exclusiveMinimum": 0}));
        assert_eq!(schema.dialect(), Dialect::Draft202012);
        assert!(schema.is_valid(&json!(1)));
        assert!(!schema.is_valid(&json!(0)));
    }

    #[test]
    fn default_dialect_rejects_boolean_exclusive_minimum() {
        // Since draft 6 exclusiveMinimum is a number; the draft-04 boolean form is invalid in 2020-12.
        let err = compile_err(json!({"type": "number", "minimum": 0, "exclusiveMinimum": true}));
        assert!(matches!(err, SchemaError::Invalid(_)), "{err:?}");
    }

    #[test]
    fn draft4_boolean_exclusive_minimum_is_honoured() {
        let schema = compile(json!({
            "$schema": "http://json-schema.org/draft-04/schema#",
            "type": "number", "minimum": 0, "exclusiveMinimum": true
        }));
        assert_eq!(schema.dialect(), Dialect::Draft4);
        assert!(!schema.is_valid(&json!(0)));
        assert!(schema.is_valid(&json!(0.5)));
    }

    #[test]
    fn draft7_is_honoured() {
        // Draft 7 has no prefixItems; array-form items does tuple validation instead.
        let schema = compile(json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "items": [{"type": "string"}],
            "prefixItems": [{"type": "integer"}]
        }));
        assert_eq!(schema.dialect(), Dialect::Draft7);
        assert!(schema.is_valid(&json!(["a"])));
        assert!(!schema.is_valid(&json!([1])));
        // In 2020-12 the same prefixItems applies and array-form items is invalid.
        let err = compile_err(json!({"items": [{"type": "string"}]}));
        assert!(matches!(err, SchemaError::Invalid(_)), "{err:?}");
    }

    #[test]
    fn unknown_dialect_is_rejected() {
        let err =
            compile_err(json!({"$schema": "https://example.com/my-dialect", "type": "object"}));
        assert_eq!(
            err,
            SchemaError::UnsupportedDialect("https://example.com/my-dialect".into())
        );
        assert!(err.to_string().contains("supported are draft-04"), "{err}");
    }

    #[test]
    fn remote_ref_is_rejected() {
        let err = compile_err(json!({"$ref": "https://example.com/x.json"}));
        assert_eq!(
            err,
            SchemaError::RemoteRef {
                reference: "https://example.com/x.json".into()
            }
        );
        assert!(err.to_string().contains("never fetched"), "{err}");
    }

    #[test]
    fn validator_never_fetches_even_without_the_ref_check() {
        let schema = json!({"$ref": "https://example.com/x.json"});
        let err = build_validator(&schema, Dialect::Draft202012).unwrap_err();
        assert!(
            matches!(err, SchemaError::Invalid(ref m) if m.contains("example.com")),
            "{err:?}"
        );
    }

    #[test]
    fn local_ref_defs_works() {
        let schema = compile(json!({
            "$defs": {"a": {"type": "integer"}},
            "properties": {"n": {"$ref": "#/$defs/a"}}
        }));
        assert!(schema.is_valid(&json!({"n": 1})));
        assert!(!schema.is_valid(&json!({"n": "x"})));
    }

    #[test]
    fn anchor_ref_works() {
        let schema = compile(json!({
            "$defs": {"a": {"$anchor": "pos", "minimum": 1}},
            "properties": {"n": {"$ref": "#pos"}}
        }));
        assert!(schema.is_valid(&json!({"n": 1})));
        assert!(!schema.is_valid(&json!({"n": 0})));
    }

    #[test]
    fn relative_ref_to_embedded_id_works() {
        let schema = compile(json!({
            "$id": "https://example.com/root.json",
            "$defs": {"s": {"$id": "short.json", "type": "string", "maxLength": 2}},
            "properties": {"a": {"$ref": "short.json"}}
        }));
        assert!(schema.is_valid(&json!({"a": "ok"})));
        assert!(!schema.is_valid(&json!({"a": "too long"})));
    }

    #[test]
    fn missing_local_ref_is_invalid() {
        let err = compile_err(json!({"$ref": "#/$defs/missing"}));
        assert!(matches!(err, SchemaError::Invalid(_)), "{err:?}");
    }

    #[test]
    fn invalid_schema_is_rejected() {
        let err = compile_err(json!({"type": "strnig"}));
        assert!(
            matches!(err, SchemaError::Invalid(ref m) if m.contains("strnig")),
            "{err:?}"
        );
        let err = compile_err(json!({"minimum": "zero"}));
        assert!(matches!(err, SchemaError::Invalid(_)), "{err:?}");
    }

    #[test]
    fn root_must_be_object_or_boolean() {
        for schema in [json!(null), json!(1), json!("s"), json!([])] {
            let err = compile_err(schema);
            assert_eq!(
                err,
                SchemaError::Invalid("a schema must be a JSON object or boolean".into())
            );
        }
    }

    #[test]
    fn boolean_root_schemas() {
        assert!(compile(json!(true)).is_valid(&json!({"any": 1})));
        let errors = compile(json!(false)).validate(&json!({})).unwrap_err();
        assert_eq!(errors.len(), 1);
    }

    #[test]
    fn limits_apply() {
        let limits = SchemaLimits {
            max_depth: 1,
            ..SchemaLimits::default()
        };
        let err = CompiledSchema::compile_with(&json!({"not": {}}), &limits).unwrap_err();
        assert_eq!(
            err,
            SchemaError::TooComplex {
                what: "subschema nesting depth",
                limit: 1
            }
        );
        assert_eq!(
            err.to_string(),
            "schema too complex: subschema nesting depth exceeds the limit of 1"
        );
    }

    #[test]
    fn every_violation_is_listed_with_pointers() {
        let schema = compile(json!({
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "age": {"type": "integer", "minimum": 0},
                "tags": {"type": "array", "items": {"type": "string"}}
            },
            "required": ["name"]
        }));
        let errors = schema
            .validate(&json!({"age": -1, "tags": ["ok", 3]}))
            .unwrap_err();
        let mut got = pointers(&errors);
        got.sort_unstable();
        assert_eq!(
            got,
            [
                ("", "/required"),
                ("/age", "/properties/age/minimum"),
                ("/tags/1", "/properties/tags/items/type"),
            ]
        );
        let text = errors.to_string();
        assert!(
            text.contains("/age: -1 is less than the minimum of 0"),
            "{text}"
        );
        assert!(
            text.contains("(root): \"name\" is a required property"),
            "{text}"
        );
        assert!(
            text.contains("/tags/1: 3 is not of type \"string\""),
            "{text}"
        );
        assert_eq!(text.lines().count(), 3);
    }

    #[test]
    fn valid_instance_passes() {
        let schema = compile(json!({"type": "object", "properties": {"a": {"type": "string"}}}));
        assert_eq!(schema.validate(&json!({"a": "x"})), Ok(()));
    }

    #[test]
    fn raw_and_clone_share_the_schema() {
        let raw = json!({"type": "string"});
        let schema = compile(raw.clone());
        let copy = schema.clone();
        assert_eq!(copy.raw(), &raw);
        assert!(Arc::ptr_eq(&schema.inner, &copy.inner));
        assert!(format!("{schema:?}").contains("Draft202012"));
    }

    #[test]
    fn formats_are_annotations_in_2020_12() {
        let schema = compile(json!({"type": "string", "format": "email"}));
        assert!(schema.is_valid(&json!("not an email")));
    }
}
