//! Untrusted schemas: compile arbitrary JSON as a schema under the default
//! limits (and strict ones), then validate arbitrary JSON against it, and
//! read its `x-mcp-header` parameters.
//!
//! Input: the schema as JSON, a NUL byte, the instance as JSON.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use toolwire_schema::{CompiledSchema, SchemaLimits, header_params, looks_sensitive};

fuzz_target!(|data: &[u8]| {
    let (schema, instance) = match data.iter().position(|&b| b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &b"null"[..]),
    };
    let Ok(schema) = serde_json::from_slice::<Value>(schema) else {
        return;
    };
    let instance: Value = serde_json::from_slice(instance).unwrap_or(Value::Null);

    let strict = SchemaLimits {
        max_depth: 8,
        max_subschemas: 64,
        max_bytes: 4096,
    };
    let _ = strict.check(&schema);
    let _ = CompiledSchema::compile_with(&schema, &strict);

    if let Ok(compiled) = CompiledSchema::compile_with(&schema, &SchemaLimits::default()) {
        let _ = compiled.dialect();
        let verdict = compiled.validate(&instance);
        assert_eq!(
            verdict.is_ok(),
            compiled.is_valid(&instance),
            "validate and is_valid disagree"
        );
        if let Err(errors) = verdict {
            let _ = errors.to_string();
        }
    }

    if let Ok(params) = header_params(&schema) {
        for param in &params {
            let _ = param.field_name();
            let _ = param.pointer();
            let _ = param.value_in(&instance);
            if let Some(property) = param.property_schema(&schema) {
                let _ = looks_sensitive(param, property);
            }
        }
    }
});
