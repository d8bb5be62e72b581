//! Enumerates the subschemas of a schema object, across all supported dialects.
//!
//! Only keywords whose values are schemas are followed; values of `const`,
//! `enum`, `default`, `examples` and unknown keywords are instance data or
//! extensions, not schemas, and are never visited.

use serde_json::Value;

/// Keywords whose value is a single subschema.
const SINGLE: &[&str] = &[
    "additionalItems",
    "additionalProperties",
    "contains",
    "contentSchema",
    "else",
    "if",
    "items",
    "not",
    "propertyNames",
    "then",
    "unevaluatedItems",
    "unevaluatedProperties",
];

/// Keywords whose value is an array of subschemas (`items` too, before 2020-12).
const ARRAY: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems", "items"];

/// Keywords whose value is an object mapping names to subschemas.
const MAP: &[&str] = &[
    "$defs",
    "definitions",
    "dependentSchemas",
    "patternProperties",
    "properties",
    "dependencies",
];

/// Where a child sits below its keyword.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Member<'a> {
    /// The keyword's value is the schema itself.
    None,
    /// The schema is an element of the keyword's array.
    Index(usize),
    /// The schema is a member of the keyword's object.
    Key(&'a str),
}

/// One subschema directly below a schema object.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Child<'a> {
    pub keyword: &'a str,
    pub member: Member<'a>,
    pub schema: &'a Value,
}

impl Child<'_> {
    /// The JSON pointer from the parent schema to this child, e.g. `/properties/a`.
    pub fn pointer_suffix(&self) -> String {
        let mut out = format!("/{}", escape(self.keyword));
        match self.member {
            Member::None => {}
            Member::Index(i) => out.push_str(&format!("/{i}")),
            Member::Key(k) => out.push_str(&format!("/{}", escape(k))),
        }
        out
    }
}

/// Returns every subschema (object or boolean) directly below `schema`.
pub(crate) fn children(schema: &Value) -> Vec<Child<'_>> {
    let Some(object) = schema.as_object() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (keyword, value) in object {
        let keyword = keyword.as_str();
        if SINGLE.contains(&keyword) && is_schema(value) {
            out.push(Child {
                keyword,
                member: Member::None,
                schema: value,
            });
        } else if ARRAY.contains(&keyword) {
            push_array(&mut out, keyword, value);
        } else if MAP.contains(&keyword) {
            push_map(&mut out, keyword, value);
        }
    }
    out
}

fn push_array<'a>(out: &mut Vec<Child<'a>>, keyword: &'a str, value: &'a Value) {
    let Some(items) = value.as_array() else {
        return;
    };
    for (i, schema) in items.iter().enumerate().filter(|(_, v)| is_schema(v)) {
        out.push(Child {
            keyword,
            member: Member::Index(i),
            schema,
        });
    }
}

fn push_map<'a>(out: &mut Vec<Child<'a>>, keyword: &'a str, value: &'a Value) {
    let Some(members) = value.as_object() else {
        return;
    };
    for (key, schema) in members.iter().filter(|(_, v)| is_schema(v)) {
        out.push(Child {
            keyword,
            member: Member::Key(key),
            schema,
        });
    }
}

fn is_schema(value: &Value) -> bool {
    value.is_object() || value.is_boolean()
}

/// Escapes one JSON pointer reference token (RFC 6901).
pub(crate) fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// Builds a JSON pointer from reference tokens; `""` for no tokens.
pub(crate) fn pointer<S: AsRef<str>>(tokens: &[S]) -> String {
    tokens
        .iter()
        .map(|t| format!("/{}", escape(t.as_ref())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn suffixes(schema: &Value) -> Vec<String> {
        children(schema).iter().map(Child::pointer_suffix).collect()
    }

    #[test]
    fn follows_schema_keywords_only() {
        let schema = json!({
            "properties": {"a/b": {}, "c": true},
            "items": [{}, {"type": "string"}],
            "not": false,
            "dependencies": {"x": ["y"], "z": {}},
            "const": {"type": "object"},
            "x-ext": {"properties": {}}
        });
        assert_eq!(
            suffixes(&schema),
            [
                "/properties/a~1b",
                "/properties/c",
                "/items/0",
                "/items/1",
                "/not",
                "/dependencies/z"
            ]
        );
    }

    #[test]
    fn single_items_schema() {
        assert_eq!(suffixes(&json!({"items": {"type": "integer"}})), ["/items"]);
    }

    #[test]
    fn boolean_schema_has_no_children() {
        assert!(children(&json!(true)).is_empty());
    }

    #[test]
    fn pointer_escapes_tokens() {
        assert_eq!(pointer(&["a", "b~c/d"]), "/a/b~0c~1d");
        assert_eq!(pointer::<&str>(&[]), "");
    }
}
