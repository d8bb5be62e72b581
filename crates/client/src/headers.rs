//! `x-mcp-header`: which tool definitions the HTTP transport must reject, and
//! which `Mcp-Param-{Name}` headers a call carries.
//!
//! The rules themselves live in `toolwire_schema` (shared with the server);
//! this module applies them on the client's side.

use serde_json::Value;
use toolwire_protocol::{JsonObject, Tool};
use toolwire_schema::header_value::encode_header_value;
use toolwire_schema::{HeaderParam, HeaderRuleError, header_params};

/// The parameters a tool mirrors into headers, or the rule its definition breaks.
pub(crate) fn tool_header_params(tool: &Tool) -> Result<Vec<HeaderParam>, HeaderRuleError> {
    header_params(&Value::Object(tool.input_schema.clone()))
}

/// The `Mcp-Param-{Name}` headers for a call with `arguments`: one per
/// annotated parameter whose value is present and not `null`.
pub(crate) fn param_headers(
    tool: &str,
    params: &[HeaderParam],
    arguments: &JsonObject,
) -> Vec<(String, String)> {
    // Most tools declare no `x-mcp-header`: no copy of their arguments.
    if params.is_empty() {
        return Vec::new();
    }
    let arguments = Value::Object(arguments.clone());
    params
        .iter()
        .filter_map(|param| {
            let value = param.value_in(&arguments).filter(|v| !v.is_null())?;
            let encoded = encode_header_value(value, param.kind);
            if encoded.is_none() {
                tracing::warn!(
                    tool,
                    header = %param.field_name(),
                    "argument does not fit its x-mcp-header type; header omitted (the server will reject the call)"
                );
            }
            Some((param.field_name(), encoded?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(schema: Value) -> Tool {
        Tool {
            name: "t".into(),
            input_schema: schema.as_object().unwrap().clone(),
            ..Default::default()
        }
    }

    #[test]
    fn values_are_encoded_and_null_or_absent_values_omitted() {
        let t = tool(json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "n": {"type": "integer", "x-mcp-header": "N"},
            "flag": {"type": "boolean", "x-mcp-header": "Flag"},
            "where": {"type": "object", "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}}}
        }}));
        let params = tool_header_params(&t).unwrap();
        let args = json!({"region": "Hello, 世界", "n": -7, "flag": null, "where": {"zone": "z1"}});
        let headers = param_headers("t", &params, args.as_object().unwrap());
        assert_eq!(
            headers,
            [
                (
                    "Mcp-Param-Region".to_owned(),
                    "=?base64?SGVsbG8sIOS4lueVjA==?=".to_owned()
                ),
                ("Mcp-Param-N".to_owned(), "-7".to_owned()),
                ("Mcp-Param-Zone".to_owned(), "z1".to_owned()),
            ]
        );
    }

    #[test]
    fn a_broken_annotation_is_reported() {
        let t = tool(json!({"type": "object", "properties": {
            "x": {"type": "number", "x-mcp-header": "X"}
        }}));
        let err = tool_header_params(&t).unwrap_err();
        assert!(
            matches!(err, HeaderRuleError::UnsupportedType { .. }),
            "{err}"
        );
    }
}
