//! Rejects any reference that leaves the schema document.
//!
//! A `$ref`, `$dynamicRef` or `$recursiveRef` is local when, resolved against
//! the base URI in effect where it appears, it names the document itself or a
//! resource embedded in it through `$id` (`id` in draft 4). Anchors need no
//! bookkeeping: `#name` resolves to a URI whose non-fragment part is a known
//! resource, and an anchor that does not exist fails compilation later.

use std::collections::HashSet;

use jsonschema::{Uri, uri};
use serde_json::Value;

use crate::dialect::Dialect;
use crate::error::SchemaError;
use crate::walk::children;

/// The base URI jsonschema gives a document without `$id`.
const DEFAULT_BASE: &str = "json-schema:///";

const REF_KEYWORDS: &[&str] = &["$ref", "$dynamicRef", "$recursiveRef"];

/// Checks that every reference in `schema` stays within the document.
///
/// # Errors
///
/// [`SchemaError::RemoteRef`] for the first reference that leaves the document;
/// [`SchemaError::Invalid`] when a `$id` or reference is not a URI reference.
pub(crate) fn check_local_refs(schema: &Value, dialect: Dialect) -> Result<(), SchemaError> {
    let base = uri::from_str(DEFAULT_BASE).map_err(|e| SchemaError::Invalid(e.to_string()))?;
    let mut scan = Scan {
        dialect,
        resources: HashSet::new(),
        refs: Vec::new(),
    };
    scan.resources.insert(without_fragment(&base));
    scan.visit(schema, &base)?;
    match scan
        .refs
        .into_iter()
        .find(|(_, target)| !scan.resources.contains(target))
    {
        Some((reference, _)) => Err(SchemaError::RemoteRef { reference }),
        None => Ok(()),
    }
}

/// What one walk over the document collects.
struct Scan {
    dialect: Dialect,
    /// Non-fragment URIs of the document and of every embedded resource.
    resources: HashSet<String>,
    /// Every reference as written, with its resolved non-fragment URI.
    refs: Vec<(String, String)>,
}

impl Scan {
    fn visit(&mut self, schema: &Value, base: &Uri<String>) -> Result<(), SchemaError> {
        let Some(object) = schema.as_object() else {
            return Ok(());
        };
        let own_base = match object
            .get(self.dialect.id_keyword())
            .and_then(Value::as_str)
        {
            Some(id) => {
                let resolved = resolve(base, id, "$id")?;
                self.resources.insert(without_fragment(&resolved));
                resolved
            }
            None => base.clone(),
        };
        for keyword in REF_KEYWORDS {
            if let Some(reference) = object.get(*keyword).and_then(Value::as_str) {
                let target = resolve(&own_base, reference, keyword)?;
                self.refs
                    .push((reference.to_owned(), without_fragment(&target)));
            }
        }
        children(schema)
            .iter()
            .try_for_each(|child| self.visit(child.schema, &own_base))
    }
}

fn resolve(base: &Uri<String>, reference: &str, keyword: &str) -> Result<Uri<String>, SchemaError> {
    uri::resolve_against(&base.borrow(), reference).map_err(|e| {
        SchemaError::Invalid(format!(
            "{keyword} {reference:?} is not a valid URI reference: {e}"
        ))
    })
}

fn without_fragment(uri: &Uri<String>) -> String {
    uri.strip_fragment().as_str().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(schema: Value) -> Result<(), SchemaError> {
        check_local_refs(&schema, Dialect::of(&schema).unwrap())
    }

    fn remote(schema: Value) -> String {
        match check(schema) {
            Err(SchemaError::RemoteRef { reference }) => reference,
            other => panic!("expected RemoteRef, got {other:?}"),
        }
    }

    #[test]
    fn fragment_refs_are_local() {
        check(json!({"$defs": {"a": {}}, "$ref": "#/$defs/a"})).unwrap();
        check(json!({"$ref": "#"})).unwrap();
        check(json!({"$anchor": "x", "properties": {"a": {"$ref": "#x"}}})).unwrap();
    }

    #[test]
    fn absolute_network_refs_are_remote() {
        assert_eq!(
            remote(json!({"$ref": "https://example.com/x.json"})),
            "https://example.com/x.json"
        );
        assert_eq!(
            remote(json!({"properties": {"a": {"$dynamicRef": "http://127.0.0.1/s#meta"}}})),
            "http://127.0.0.1/s#meta"
        );
    }

    #[test]
    fn other_schemes_and_relative_refs_without_resource_are_remote() {
        assert_eq!(
            remote(json!({"$ref": "file:///etc/passwd"})),
            "file:///etc/passwd"
        );
        assert_eq!(remote(json!({"$ref": "other.json"})), "other.json");
        assert_eq!(
            remote(json!({"$ref": "//evil.example/x"})),
            "//evil.example/x"
        );
    }

    #[test]
    fn relative_ref_to_embedded_resource_is_local() {
        check(
            json!({"$defs": {"item": {"$id": "item.json", "type": "string"}}, "$ref": "item.json"}),
        )
        .unwrap();
        check(json!({
            "$id": "https://example.com/root.json",
            "$defs": {"item": {"$id": "item.json"}},
            "properties": {
                "a": {"$ref": "item.json"},
                "b": {"$ref": "https://example.com/item.json#"},
                "c": {"$ref": "https://example.com/root.json#/$defs/item"}
            }
        }))
        .unwrap();
    }

    #[test]
    fn sibling_document_of_root_id_is_remote() {
        let schema = json!({"$id": "https://example.com/root.json", "$ref": "other.json"});
        assert_eq!(remote(schema), "other.json");
    }

    #[test]
    fn refs_in_instance_data_are_ignored() {
        check(json!({"const": {"$ref": "https://example.com/x"}, "default": {"$ref": "x"}}))
            .unwrap();
    }

    #[test]
    fn draft4_id_declares_resources() {
        check(json!({
            "$schema": "http://json-schema.org/draft-04/schema#",
            "definitions": {"a": {"id": "a.json"}},
            "$ref": "a.json"
        }))
        .unwrap();
    }

    #[test]
    fn invalid_reference_is_invalid() {
        let err = check(json!({"$ref": "http://[bad"})).unwrap_err();
        assert!(
            matches!(err, SchemaError::Invalid(ref m) if m.contains("$ref")),
            "{err:?}"
        );
    }
}
