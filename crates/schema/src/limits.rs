//! Resource bounds applied to a schema before it is compiled.
//!
//! Composition keywords and deep nesting can make a schema expensive to compile
//! and to validate against; these bounds keep a hostile schema from becoming a
//! denial-of-service vector.

use std::io;

use serde_json::Value;

use crate::error::SchemaError;
use crate::walk::children;

/// Bounds on the size and shape of a schema accepted by
/// [`CompiledSchema::compile_with`](crate::CompiledSchema::compile_with).
///
/// ```
/// use toolwire_schema::SchemaLimits;
/// let strict = SchemaLimits { max_depth: 8, ..SchemaLimits::default() };
/// assert_eq!(strict.max_subschemas, 2000);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchemaLimits {
    /// Deepest allowed nesting of subschemas; the root schema is at depth 1,
    /// a schema under its `properties` at depth 2, and so on. Default 32.
    pub max_depth: usize,
    /// Most subschemas (objects or booleans in schema positions, the root
    /// included) allowed in one document. Default 2000.
    pub max_subschemas: usize,
    /// Largest allowed size of the schema serialized as compact JSON, in bytes.
    /// Default 256 KiB.
    pub max_bytes: usize,
}

impl Default for SchemaLimits {
    fn default() -> Self {
        Self {
            max_depth: 32,
            max_subschemas: 2000,
            max_bytes: 256 * 1024,
        }
    }
}

impl SchemaLimits {
    /// Checks `schema` against these bounds.
    ///
    /// # Errors
    ///
    /// [`SchemaError::TooComplex`] naming the first bound exceeded.
    pub fn check(&self, schema: &Value) -> Result<(), SchemaError> {
        self.check_bytes(schema)?;
        let mut count = 0;
        self.check_shape(schema, 1, &mut count)
    }

    fn check_bytes(&self, schema: &Value) -> Result<(), SchemaError> {
        let mut counter = ByteCounter {
            written: 0,
            limit: self.max_bytes,
        };
        serde_json::to_writer(&mut counter, schema).map_err(|_| SchemaError::TooComplex {
            what: "serialized size in bytes",
            limit: self.max_bytes,
        })
    }

    fn check_shape(
        &self,
        schema: &Value,
        depth: usize,
        count: &mut usize,
    ) -> Result<(), SchemaError> {
        if depth > self.max_depth {
            return Err(SchemaError::TooComplex {
                what: "subschema nesting depth",
                limit: self.max_depth,
            });
        }
        *count += 1;
        if *count > self.max_subschemas {
            return Err(SchemaError::TooComplex {
                what: "number of subschemas",
                limit: self.max_subschemas,
            });
        }
        children(schema)
            .iter()
            .try_for_each(|child| self.check_shape(child.schema, depth + 1, count))
    }
}

/// An `io::Write` that only counts, and fails once more than `limit` bytes arrive,
/// so an oversized schema is never serialized in full.
struct ByteCounter {
    written: usize,
    limit: usize,
}

impl io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.written += buf.len();
        if self.written > self.limit {
            return Err(io::Error::other("schema exceeds the byte limit"));
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A schema whose subschemas are nested `levels` deep (root = 1).
    fn nested(levels: usize) -> Value {
        (1..levels).fold(
            json!({"type": "string"}),
            |inner, _| json!({"type": "object", "properties": {"a": inner}}),
        )
    }

    fn too_complex(err: SchemaError) -> (&'static str, usize) {
        match err {
            SchemaError::TooComplex { what, limit } => (what, limit),
            other => panic!("expected TooComplex, got {other:?}"),
        }
    }

    #[test]
    fn defaults() {
        let limits = SchemaLimits::default();
        assert_eq!(
            (limits.max_depth, limits.max_subschemas, limits.max_bytes),
            (32, 2000, 262_144)
        );
    }

    #[test]
    fn depth_at_limit_is_accepted() {
        assert!(SchemaLimits::default().check(&nested(32)).is_ok());
    }

    #[test]
    fn depth_over_limit_is_rejected() {
        let err = SchemaLimits::default().check(&nested(33)).unwrap_err();
        assert_eq!(too_complex(err), ("subschema nesting depth", 32));
    }

    #[test]
    fn depth_counts_composition_and_defs() {
        let schema = json!({"anyOf": [{"$defs": {"x": {"not": {}}}}]});
        let limits = SchemaLimits {
            max_depth: 3,
            ..SchemaLimits::default()
        };
        let err = limits.check(&schema).unwrap_err();
        assert_eq!(too_complex(err), ("subschema nesting depth", 3));
        let limits = SchemaLimits {
            max_depth: 4,
            ..SchemaLimits::default()
        };
        assert!(limits.check(&schema).is_ok());
    }

    #[test]
    fn subschema_count_at_and_over_limit() {
        // root + 9 properties = 10 subschemas
        let props: serde_json::Map<String, Value> = (0..9)
            .map(|i| (format!("p{i}"), json!({"type": "string"})))
            .collect();
        let schema = json!({"type": "object", "properties": props});
        let at = SchemaLimits {
            max_subschemas: 10,
            ..SchemaLimits::default()
        };
        assert!(at.check(&schema).is_ok());
        let over = SchemaLimits {
            max_subschemas: 9,
            ..SchemaLimits::default()
        };
        assert_eq!(
            too_complex(over.check(&schema).unwrap_err()),
            ("number of subschemas", 9)
        );
    }

    #[test]
    fn boolean_subschemas_count() {
        let schema = json!({"allOf": [true, false, true]});
        let limits = SchemaLimits {
            max_subschemas: 3,
            ..SchemaLimits::default()
        };
        assert_eq!(
            too_complex(limits.check(&schema).unwrap_err()),
            ("number of subschemas", 3)
        );
    }

    #[test]
    fn byte_size_at_and_over_limit() {
        let schema = json!({"description": "x".repeat(100)});
        let size = serde_json::to_vec(&schema).unwrap().len();
        let at = SchemaLimits {
            max_bytes: size,
            ..SchemaLimits::default()
        };
        assert!(at.check(&schema).is_ok());
        let over = SchemaLimits {
            max_bytes: size - 1,
            ..SchemaLimits::default()
        };
        assert_eq!(
            too_complex(over.check(&schema).unwrap_err()),
            ("serialized size in bytes", size - 1)
        );
    }
}
