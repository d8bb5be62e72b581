//! `x-mcp-header`: tool parameters mirrored into `Mcp-Param-{name}` HTTP headers.
//!
//! [`header_params`] finds every annotation in an `inputSchema` and checks the
//! rules of the specification:
//!
//! - the value is a non-empty string, an RFC 9110 token (`1*tchar`) without
//!   control characters;
//! - values are unique, compared case-insensitively;
//! - the annotated property has type `string`, `integer` or `boolean`;
//! - the property is *statically reachable*: reached from the root through a
//!   chain of `properties` keywords alone (never through `items`, `anyOf`,
//!   `allOf`, `oneOf`, `not`, `if`/`then`/`else`, `$defs`, `$ref`,
//!   `additionalProperties`, ...).

use std::collections::HashMap;

use serde_json::Value;

use crate::walk::{Member, children, pointer};

/// The annotation keyword.
pub const HEADER_KEYWORD: &str = "x-mcp-header";

/// The prefix of every mirrored header's field name.
pub const HEADER_PREFIX: &str = "Mcp-Param-";

/// The JSON type of an annotated parameter, which decides how it is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HeaderKind {
    /// `"type": "string"`: sent as is, or Base64 when not header-safe.
    String,
    /// `"type": "integer"`: sent in decimal.
    Integer,
    /// `"type": "boolean"`: sent as `true` or `false`.
    Boolean,
}

/// One parameter mirrored into a header.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HeaderParam {
    /// The name part of the header, as written in the schema (e.g. `Region`).
    pub header: String,
    /// Property names from the root of the arguments to the parameter.
    pub path: Vec<String>,
    /// The parameter's type.
    pub kind: HeaderKind,
}

impl HeaderParam {
    /// The full header field name, e.g. `Mcp-Param-Region`.
    pub fn field_name(&self) -> String {
        format!("{HEADER_PREFIX}{}", self.header)
    }

    /// The parameter's location in the arguments as a JSON pointer, e.g. `/region`.
    pub fn pointer(&self) -> String {
        pointer(&self.path)
    }

    /// The value at the parameter's exact property path in `arguments`, if any.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolwire_schema::{HeaderKind, HeaderParam};
    /// let param = HeaderParam { header: "Region".into(), path: vec!["where".into(), "region".into()], kind: HeaderKind::String };
    /// assert_eq!(param.value_in(&json!({"where": {"region": "eu"}})), Some(&json!("eu")));
    /// assert_eq!(param.value_in(&json!({"where": {}})), None);
    /// ```
    pub fn value_in<'a>(&self, arguments: &'a Value) -> Option<&'a Value> {
        self.path
            .iter()
            .try_fold(arguments, |value, key| value.get(key))
    }

    /// The annotated property's schema within `input_schema`.
    pub fn property_schema<'a>(&self, input_schema: &'a Value) -> Option<&'a Value> {
        self.path.iter().try_fold(input_schema, |schema, key| {
            schema.get("properties")?.get(key)
        })
    }
}

/// Why an `x-mcp-header` annotation makes a tool definition invalid.
///
/// Properties are shown as JSON pointers into the arguments (e.g. `/where/region`);
/// schema locations as JSON pointers into the `inputSchema`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderRuleError {
    /// The annotation's value is not a string.
    #[error("x-mcp-header on property {property} must be a string, found {found}")]
    NotAString {
        /// The annotated property.
        property: String,
        /// The JSON type found instead.
        found: &'static str,
    },
    /// The annotation's value is the empty string.
    #[error("x-mcp-header on property {property} must not be empty")]
    Empty {
        /// The annotated property.
        property: String,
    },
    /// The value contains a control character such as CR or LF.
    #[error(
        "x-mcp-header {header:?} on property {property} must not contain control characters (found {ch:?})"
    )]
    ControlChar {
        /// The annotated property.
        property: String,
        /// The annotation's value.
        header: String,
        /// The first control character.
        ch: char,
    },
    /// The value is not an HTTP token.
    #[error(
        "x-mcp-header {header:?} on property {property} must be an HTTP field-name token \
         (RFC 9110 tchar: letters, digits and !#$%&'*+-.^_`|~), found {ch:?}"
    )]
    NotToken {
        /// The annotated property.
        property: String,
        /// The annotation's value.
        header: String,
        /// The first character that is not a `tchar`.
        ch: char,
    },
    /// Two annotations differ only in letter case (or not at all).
    #[error(
        "x-mcp-header {header:?} on property {second} duplicates the one on property {first}; \
         header names must be case-insensitively unique"
    )]
    Duplicate {
        /// The second annotation's value.
        header: String,
        /// The property annotated first.
        first: String,
        /// The property annotated again.
        second: String,
    },
    /// The annotated property is not of type string, integer or boolean.
    #[error(
        "x-mcp-header on property {property} requires \"type\" to be \"string\", \"integer\" \
         or \"boolean\", found {found}"
    )]
    UnsupportedType {
        /// The annotated property.
        property: String,
        /// The `type` found, e.g. `"number"` or `no type`.
        found: String,
    },
    /// The annotation is not on a property reached from the root through `properties` alone.
    #[error(
        "x-mcp-header at schema location {} is not statically reachable: it may only annotate a \
         property reached from the root through \"properties\" keywords alone (not items, \
         composition or conditional keywords, $defs or $ref)",
        display_location(location)
    )]
    NotStaticallyReachable {
        /// JSON pointer to the annotated schema within the `inputSchema`.
        location: String,
    },
}

fn display_location(location: &str) -> &str {
    if location.is_empty() {
        "(root)"
    } else {
        location
    }
}

/// Finds and checks every `x-mcp-header` annotation in `input_schema`.
///
/// Returns the mirrored parameters in document order.
///
/// ```
/// use serde_json::json;
/// use toolwire_schema::{header_params, HeaderKind};
/// let schema = json!({
///     "type": "object",
///     "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}
/// });
/// let params = header_params(&schema).unwrap();
/// assert_eq!(params[0].field_name(), "Mcp-Param-Region");
/// assert_eq!(params[0].path, ["region"]);
/// assert_eq!(params[0].kind, HeaderKind::String);
/// ```
///
/// # Errors
///
/// The first rule an annotation breaks.
pub fn header_params(input_schema: &Value) -> Result<Vec<HeaderParam>, HeaderRuleError> {
    let mut params = Vec::new();
    collect(input_schema, "", Some(&[]), &mut params)?;
    check_unique(&params)?;
    Ok(params)
}

/// Walks every subschema; `path` is `Some` while the chain from the root is `properties` only.
fn collect(
    schema: &Value,
    location: &str,
    path: Option<&[String]>,
    params: &mut Vec<HeaderParam>,
) -> Result<(), HeaderRuleError> {
    if let Some(annotation) = schema.get(HEADER_KEYWORD) {
        match path {
            Some(path) if !path.is_empty() => {
                params.push(check_annotation(annotation, schema, path)?)
            }
            _ => {
                return Err(HeaderRuleError::NotStaticallyReachable {
                    location: location.to_owned(),
                });
            }
        }
    }
    for child in children(schema) {
        let child_path = match (path, child.keyword, child.member) {
            (Some(path), "properties", Member::Key(key)) => {
                Some([path, &[key.to_owned()]].concat())
            }
            _ => None,
        };
        let child_location = format!("{location}{}", child.pointer_suffix());
        collect(child.schema, &child_location, child_path.as_deref(), params)?;
    }
    Ok(())
}

fn check_annotation(
    annotation: &Value,
    schema: &Value,
    path: &[String],
) -> Result<HeaderParam, HeaderRuleError> {
    let property = pointer(path);
    let Some(header) = annotation.as_str() else {
        return Err(HeaderRuleError::NotAString {
            property,
            found: json_type(annotation),
        });
    };
    if header.is_empty() {
        return Err(HeaderRuleError::Empty { property });
    }
    if let Some(ch) = header.chars().find(|c| c.is_control()) {
        return Err(HeaderRuleError::ControlChar {
            property,
            header: header.to_owned(),
            ch,
        });
    }
    if let Some(ch) = header.chars().find(|c| !is_tchar(*c)) {
        return Err(HeaderRuleError::NotToken {
            property,
            header: header.to_owned(),
            ch,
        });
    }
    let kind =
        kind_of(schema).map_err(|found| HeaderRuleError::UnsupportedType { property, found })?;
    Ok(HeaderParam {
        header: header.to_owned(),
        path: path.to_vec(),
        kind,
    })
}

/// RFC 9110 `tchar`.
fn is_tchar(ch: char) -> bool {
    ch.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(ch)
}

/// The header kind of a property schema, or a description of its unsupported `type`.
fn kind_of(schema: &Value) -> Result<HeaderKind, String> {
    match schema.get("type") {
        None => Err("no type".to_owned()),
        Some(Value::String(name)) => primitive(name),
        Some(Value::Array(names)) if names.len() == 1 => match &names[0] {
            Value::String(name) => primitive(name),
            other => Err(other.to_string()),
        },
        Some(other) => Err(other.to_string()),
    }
}

fn primitive(name: &str) -> Result<HeaderKind, String> {
    match name {
        "string" => Ok(HeaderKind::String),
        "integer" => Ok(HeaderKind::Integer),
        "boolean" => Ok(HeaderKind::Boolean),
        other => Err(format!("{other:?}")),
    }
}

fn check_unique(params: &[HeaderParam]) -> Result<(), HeaderRuleError> {
    let mut seen: HashMap<String, &HeaderParam> = HashMap::new();
    for param in params {
        if let Some(first) = seen.insert(param.header.to_ascii_lowercase(), param) {
            return Err(HeaderRuleError::Duplicate {
                header: param.header.clone(),
                first: first.pointer(),
                second: param.pointer(),
            });
        }
    }
    Ok(())
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Words that mark a parameter as likely sensitive.
const SENSITIVE_WORDS: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "pwd",
    "secret",
    "token",
    "key",
    "apikey",
    "credential",
    "auth",
    "authorization",
    "bearer",
    "cookie",
    "session",
    "email",
    "mail",
    "ssn",
    "pin",
    "otp",
];

/// Word endings that mark a parameter as likely sensitive (`accessToken`, `APIKey`, ...).
const SENSITIVE_ENDINGS: &[&str] = &["password", "passwd", "secret", "token", "apikey"];

/// Whether a mirrored parameter looks like it carries a secret or personal data.
///
/// Header values are visible to every intermediary, so the specification says
/// sensitive parameters SHOULD NOT be mirrored; servers use this to warn. Looks
/// at the property name, the header name, `format` (`password`, `email`,
/// `idn-email`) and `writeOnly: true`. A heuristic: expect false positives and
/// negatives.
///
/// ```
/// use serde_json::json;
/// use toolwire_schema::{looks_sensitive, HeaderKind, HeaderParam};
/// let param = HeaderParam { header: "Api-Key".into(), path: vec!["key".into()], kind: HeaderKind::String };
/// assert!(looks_sensitive(&param, &json!({"type": "string"})));
/// let param = HeaderParam { header: "Region".into(), path: vec!["region".into()], kind: HeaderKind::String };
/// assert!(!looks_sensitive(&param, &json!({"type": "string"})));
/// ```
pub fn looks_sensitive(param: &HeaderParam, property_schema: &Value) -> bool {
    let format = property_schema.get("format").and_then(Value::as_str);
    let write_only = property_schema.get("writeOnly").and_then(Value::as_bool) == Some(true);
    let property = param.path.last().map_or("", String::as_str);
    write_only
        || matches!(format, Some("password" | "email" | "idn-email"))
        || has_sensitive_word(property)
        || has_sensitive_word(&param.header)
}

fn has_sensitive_word(name: &str) -> bool {
    words(name).iter().any(|word| {
        let singular = word.strip_suffix('s').unwrap_or(word);
        SENSITIVE_WORDS.contains(&word.as_str())
            || SENSITIVE_WORDS.contains(&singular)
            || SENSITIVE_ENDINGS.iter().any(|end| singular.ends_with(end))
    })
}

/// Splits `apiKey`, `api_key`, `X-Api-Key` into lowercase words.
fn words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut prev_lower = false;
    for ch in name.chars() {
        let boundary = !ch.is_alphanumeric() || (ch.is_uppercase() && prev_lower);
        if boundary && !current.is_empty() {
            words.push(std::mem::take(&mut current));
        }
        if ch.is_alphanumeric() {
            current.extend(ch.to_lowercase());
        }
        prev_lower = ch.is_lowercase() || ch.is_ascii_digit();
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(properties: Value) -> Value {
        json!({"type": "object", "properties": properties})
    }

    fn err(schema: Value) -> HeaderRuleError {
        header_params(&schema).unwrap_err()
    }

    fn string_param(header: &str, path: &[&str]) -> HeaderParam {
        HeaderParam {
            header: header.into(),
            path: path.iter().map(|s| s.to_string()).collect(),
            kind: HeaderKind::String,
        }
    }

    #[test]
    fn spec_example() {
        let schema = object(json!({
            "region": {"type": "string", "x-mcp-header": "Region"},
            "query": {"type": "string"}
        }));
        assert_eq!(
            header_params(&schema).unwrap(),
            [string_param("Region", &["region"])]
        );
    }

    #[test]
    fn no_annotations_gives_no_params() {
        assert_eq!(
            header_params(&object(json!({"a": {"type": "string"}}))).unwrap(),
            []
        );
        assert_eq!(header_params(&json!(true)).unwrap(), []);
    }

    #[test]
    fn kinds_and_nested_properties() {
        let schema = object(json!({
            "n": {"type": "integer", "x-mcp-header": "N"},
            "flag": {"type": ["boolean"], "x-mcp-header": "Flag"},
            "where": {"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"}
            }}
        }));
        let params = header_params(&schema).unwrap();
        let summary: Vec<_> = params
            .iter()
            .map(|p| (p.header.as_str(), p.pointer(), p.kind))
            .collect();
        assert_eq!(
            summary,
            [
                ("N", "/n".to_owned(), HeaderKind::Integer),
                ("Flag", "/flag".to_owned(), HeaderKind::Boolean),
                ("Region", "/where/region".to_owned(), HeaderKind::String),
            ]
        );
    }

    #[test]
    fn token_punctuation_is_allowed() {
        let schema = object(json!({"a": {"type": "string", "x-mcp-header": "A!#$%&'*+-.^_`|~9"}}));
        assert_eq!(
            header_params(&schema).unwrap()[0].header,
            "A!#$%&'*+-.^_`|~9"
        );
    }

    #[test]
    fn value_must_be_a_string() {
        let e = err(object(json!({"a": {"type": "string", "x-mcp-header": 5}})));
        assert_eq!(
            e,
            HeaderRuleError::NotAString {
                property: "/a".into(),
                found: "a number"
            }
        );
        assert_eq!(
            e.to_string(),
            "x-mcp-header on property /a must be a string, found a number"
        );
    }

    #[test]
    fn value_must_not_be_empty() {
        let e = err(object(json!({"a": {"type": "string", "x-mcp-header": ""}})));
        assert_eq!(
            e,
            HeaderRuleError::Empty {
                property: "/a".into()
            }
        );
        assert_eq!(
            e.to_string(),
            "x-mcp-header on property /a must not be empty"
        );
    }

    #[test]
    fn value_must_not_contain_control_characters() {
        for (header, ch) in [
            ("Re\r\ngion", '\r'),
            ("A\nB", '\n'),
            ("A\tB", '\t'),
            ("A\u{7f}", '\u{7f}'),
        ] {
            let e = err(object(
                json!({"a": {"type": "string", "x-mcp-header": header}}),
            ));
            assert_eq!(
                e,
                HeaderRuleError::ControlChar {
                    property: "/a".into(),
                    header: header.into(),
                    ch
                }
            );
            assert!(
                e.to_string()
                    .contains("must not contain control characters"),
                "{e}"
            );
        }
    }

    #[test]
    fn value_must_be_a_token() {
        for (header, ch) in [
            ("Re gion", ' '),
            ("A:B", ':'),
            ("A/B", '/'),
            ("Ré", 'é'),
            ("(x)", '('),
        ] {
            let e = err(object(
                json!({"a": {"type": "string", "x-mcp-header": header}}),
            ));
            assert_eq!(
                e,
                HeaderRuleError::NotToken {
                    property: "/a".into(),
                    header: header.into(),
                    ch
                }
            );
            assert!(e.to_string().contains("RFC 9110 tchar"), "{e}");
        }
    }

    #[test]
    fn values_must_be_case_insensitively_unique() {
        let e = err(object(json!({
            "a": {"type": "string", "x-mcp-header": "Region"},
            "b": {"type": "object", "properties": {"c": {"type": "string", "x-mcp-header": "REGION"}}}
        })));
        assert_eq!(
            e,
            HeaderRuleError::Duplicate {
                header: "REGION".into(),
                first: "/a".into(),
                second: "/b/c".into()
            }
        );
        assert!(e.to_string().contains("case-insensitively unique"), "{e}");
    }

    #[test]
    fn type_must_be_string_integer_or_boolean() {
        for (ty, found) in [
            (json!("number"), "\"number\""),
            (json!("object"), "\"object\""),
            (json!("array"), "\"array\""),
            (json!("null"), "\"null\""),
            (json!(["string", "null"]), "[\"string\",\"null\"]"),
            (json!(["string", "integer"]), "[\"string\",\"integer\"]"),
        ] {
            let e = err(object(json!({"a": {"type": ty, "x-mcp-header": "A"}})));
            assert_eq!(
                e,
                HeaderRuleError::UnsupportedType {
                    property: "/a".into(),
                    found: found.into()
                }
            );
        }
        let e = err(object(json!({"a": {"x-mcp-header": "A"}})));
        assert_eq!(
            e,
            HeaderRuleError::UnsupportedType {
                property: "/a".into(),
                found: "no type".into()
            }
        );
        assert_eq!(
            e.to_string(),
            "x-mcp-header on property /a requires \"type\" to be \"string\", \"integer\" or \"boolean\", found no type"
        );
    }

    fn unreachable(schema: Value) -> String {
        match err(schema) {
            HeaderRuleError::NotStaticallyReachable { location } => location,
            other => panic!("expected NotStaticallyReachable, got {other:?}"),
        }
    }

    #[test]
    fn annotation_off_the_properties_chain_is_rejected() {
        let header = json!({"type": "string", "x-mcp-header": "X"});
        let cases = [
            (json!({"items": header}), "/items"),
            (
                json!({"properties": {"l": {"type": "array", "items": header}}}),
                "/properties/l/items",
            ),
            (json!({"prefixItems": [header]}), "/prefixItems/0"),
            (
                json!({"anyOf": [{"properties": {"a": header}}]}),
                "/anyOf/0/properties/a",
            ),
            (json!({"allOf": [header]}), "/allOf/0"),
            (json!({"oneOf": [header]}), "/oneOf/0"),
            (json!({"not": header}), "/not"),
            (
                json!({"if": {}, "then": {"properties": {"a": header}}}),
                "/then/properties/a",
            ),
            (json!({"else": header}), "/else"),
            (json!({"$defs": {"d": header}}), "/$defs/d"),
            (json!({"definitions": {"d": header}}), "/definitions/d"),
            (
                json!({"additionalProperties": header}),
                "/additionalProperties",
            ),
            (
                json!({"patternProperties": {"^a": header}}),
                "/patternProperties/^a",
            ),
            (
                json!({"dependentSchemas": {"a": {"properties": {"b": header}}}}),
                "/dependentSchemas/a/properties/b",
            ),
        ];
        for (schema, location) in cases {
            assert_eq!(unreachable(schema), location);
        }
    }

    #[test]
    fn annotation_reached_via_ref_is_rejected() {
        let schema = json!({
            "properties": {"a": {"$ref": "#/$defs/r"}},
            "$defs": {"r": {"type": "string", "x-mcp-header": "R"}}
        });
        assert_eq!(unreachable(schema), "/$defs/r");
    }

    #[test]
    fn annotation_on_root_is_rejected() {
        let e = err(json!({"type": "string", "x-mcp-header": "Root"}));
        assert_eq!(
            e,
            HeaderRuleError::NotStaticallyReachable {
                location: String::new()
            }
        );
        assert!(
            e.to_string()
                .starts_with("x-mcp-header at schema location (root) is not statically reachable")
        );
    }

    #[test]
    fn keyword_as_data_or_property_name_is_not_an_annotation() {
        let schema = object(json!({
            "x-mcp-header": {"type": "string"},
            "c": {"type": "object", "const": {"x-mcp-header": "C"}, "default": {"x-mcp-header": 1}}
        }));
        assert_eq!(header_params(&schema).unwrap(), []);
    }

    #[test]
    fn value_and_schema_lookup() {
        let schema = object(
            json!({"w": {"type": "object", "properties": {"r": {"type": "string", "x-mcp-header": "R"}}}}),
        );
        let param = &header_params(&schema).unwrap()[0];
        assert_eq!(
            param.property_schema(&schema),
            Some(&json!({"type": "string", "x-mcp-header": "R"}))
        );
        assert_eq!(
            param.value_in(&json!({"w": {"r": "eu"}})),
            Some(&json!("eu"))
        );
        assert_eq!(param.value_in(&json!({"w": "flat"})), None);
        assert_eq!(param.value_in(&json!({"r": "eu"})), None);
        assert_eq!(param.field_name(), "Mcp-Param-R");
    }

    #[test]
    fn sensitive_names_are_flagged() {
        let plain = json!({"type": "string"});
        for (property, header) in [
            ("password", "P"),
            ("userPassword", "P"),
            ("apiKey", "K"),
            ("api_key", "K"),
            ("x", "X-Api-Key"),
            ("x", "APIKey"),
            ("accessToken", "T"),
            ("tokens", "T"),
            ("client_secret", "S"),
            ("credentials", "C"),
            ("email", "E"),
        ] {
            assert!(
                looks_sensitive(&string_param(header, &[property]), &plain),
                "{property} {header}"
            );
        }
        for (property, header) in [
            ("region", "Region"),
            ("tenant", "Tenant-Id"),
            ("keyword", "Kw"),
            ("monkey", "M"),
        ] {
            assert!(
                !looks_sensitive(&string_param(header, &[property]), &plain),
                "{property} {header}"
            );
        }
    }

    #[test]
    fn sensitive_formats_are_flagged() {
        let param = string_param("Contact", &["contact"]);
        assert!(looks_sensitive(
            &param,
            &json!({"type": "string", "format": "email"})
        ));
        assert!(looks_sensitive(
            &param,
            &json!({"type": "string", "format": "password"})
        ));
        assert!(looks_sensitive(
            &param,
            &json!({"type": "string", "writeOnly": true})
        ));
        assert!(!looks_sensitive(
            &param,
            &json!({"type": "string", "format": "uri"})
        ));
    }
}
