//! Tool arguments from the command line: `key=value` pairs and `--args JSON`.
//!
//! A value is read as JSON when it parses (numbers, booleans, arrays,
//! objects, `null`), otherwise as a string; when the tool's `inputSchema`
//! gives the property's type, that type decides (`text=42` stays the string
//! `"42"` for a string property).

use serde_json::{Map, Value};

/// Builds the arguments object: `--args` first, then each pair on top.
pub fn arguments(
    base: Option<&str>,
    pairs: &[String],
    input_schema: Option<&Map<String, Value>>,
) -> Result<Map<String, Value>, String> {
    let mut arguments = match base {
        None => Map::new(),
        Some(text) => parse_base(text)?,
    };
    let mut seen = Vec::new();
    for pair in pairs {
        let Some((key, raw)) = pair.split_once('=') else {
            return Err(format!(
                "{pair:?} is not a KEY=VALUE pair (e.g. text=hello); use --args for a JSON object"
            ));
        };
        if key.is_empty() {
            return Err(format!("{pair:?} has an empty key"));
        }
        if seen.contains(&key) {
            return Err(format!(
                "{key:?} is given twice; for a list write {key}='[1,2]'"
            ));
        }
        seen.push(key);
        let types = input_schema
            .map(|s| property_types(s, key))
            .unwrap_or_default();
        arguments.insert(key.to_owned(), typed_value(raw, &types));
    }
    Ok(arguments)
}

fn parse_base(text: &str) -> Result<Map<String, Value>, String> {
    let text = match text.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| format!("--args @{path}: cannot read the file: {e}"))?,
        None => text.to_owned(),
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(other) => Err(format!(
            "--args must be a JSON object like '{{\"text\": \"hi\"}}', not {}",
            kind_of(&other)
        )),
        Err(e) => Err(format!("--args is not valid JSON: {e}")),
    }
}

/// The JSON types the schema allows for property `key` (empty: unknown).
fn property_types(schema: &Map<String, Value>, key: &str) -> Vec<String> {
    let Some(property) = schema
        .get("properties")
        .and_then(|p| p.get(key))
        .and_then(Value::as_object)
    else {
        return Vec::new();
    };
    match property.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => {
            // `enum` / `const` of strings imply a string.
            let strings = |v: &Value| {
                v.as_array()
                    .is_some_and(|a| !a.is_empty() && a.iter().all(Value::is_string))
            };
            if property.get("enum").is_some_and(strings)
                || property.get("const").is_some_and(Value::is_string)
            {
                vec!["string".to_owned()]
            } else {
                Vec::new()
            }
        }
    }
}

fn typed_value(raw: &str, types: &[String]) -> Value {
    let allows = |t: &str| types.iter().any(|x| x == t);
    let parsed = serde_json::from_str::<Value>(raw).ok();
    if types.is_empty() {
        return parsed.unwrap_or_else(|| Value::String(raw.to_owned()));
    }
    if let Some(value) = parsed {
        let fits = match &value {
            Value::Null => allows("null"),
            Value::Bool(_) => allows("boolean"),
            Value::Number(n) => allows("number") || (allows("integer") && is_integer(n)),
            Value::String(_) => allows("string"),
            Value::Array(_) => allows("array"),
            Value::Object(_) => allows("object"),
        };
        if fits {
            return value;
        }
        if !allows("string") {
            // Let the server's validation explain what is wrong.
            return value;
        }
    }
    Value::String(raw.to_owned())
}

fn is_integer(n: &serde_json::Number) -> bool {
    n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Map<String, Value> {
        json!({"type": "object", "properties": {
            "text": {"type": "string"},
            "count": {"type": "integer"},
            "ratio": {"type": ["number", "null"]},
            "flag": {"type": "boolean"},
            "tags": {"type": "array"},
            "color": {"enum": ["red", "green"]}
        }})
        .as_object()
        .unwrap()
        .clone()
    }

    fn pairs(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn without_a_schema_json_wins_then_strings() {
        let args = arguments(
            None,
            &pairs(&["a=1", "b=true", "c=hello", "d={\"x\":1}", "e=[1,2]", "f="]),
            None,
        )
        .unwrap();
        assert_eq!(
            Value::Object(args),
            json!({"a": 1, "b": true, "c": "hello", "d": {"x": 1}, "e": [1, 2], "f": ""})
        );
    }

    #[test]
    fn the_schema_decides_when_it_knows_the_type() {
        let s = schema();
        let args = arguments(
            None,
            &pairs(&[
                "text=42",
                "count=3",
                "ratio=null",
                "flag=false",
                "tags=[\"a\"]",
                "color=true",
                "other=7",
            ]),
            Some(&s),
        )
        .unwrap();
        assert_eq!(
            Value::Object(args),
            json!({"text": "42", "count": 3, "ratio": null, "flag": false, "tags": ["a"], "color": "true", "other": 7})
        );
    }

    #[test]
    fn a_value_keeps_everything_after_the_first_equals_sign() {
        let args = arguments(None, &pairs(&["q=a=b"]), None).unwrap();
        assert_eq!(args["q"], "a=b");
    }

    #[test]
    fn pairs_override_the_json_object() {
        let args = arguments(
            Some(r#"{"text": "a", "count": 1}"#),
            &pairs(&["text=b"]),
            Some(&schema()),
        )
        .unwrap();
        assert_eq!(Value::Object(args), json!({"text": "b", "count": 1}));
    }

    #[test]
    fn mistakes_are_explained() {
        assert!(
            arguments(None, &pairs(&["novalue"]), None)
                .unwrap_err()
                .contains("KEY=VALUE")
        );
        assert!(
            arguments(None, &pairs(&["a=1", "a=2"]), None)
                .unwrap_err()
                .contains("twice")
        );
        assert!(
            arguments(Some("[1]"), &[], None)
                .unwrap_err()
                .contains("JSON object")
        );
        assert!(
            arguments(Some("{"), &[], None)
                .unwrap_err()
                .contains("not valid JSON")
        );
    }
}
