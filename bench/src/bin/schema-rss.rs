//! What compiling one tool's input schema costs in resident memory, the
//! largest part of toolwire-echo's idle RSS (bench/README, "Idle RSS").
//!
//! ```text
//! schema-rss meta       # jsonschema's draft 2020-12 meta-schema check alone
//! schema-rss compile    # toolwire_schema::CompiledSchema::compile, as a server's build does
//! schema-rss            # neither: the process itself
//! ```
//!
//! Prints `VmRSS`, `RssAnon` and `RssFile` (kB, `/proc/self/status`) before
//! and after. `CompiledSchema::compile` runs the meta-schema check inside
//! jsonschema's `build`, which its public API cannot turn off (0.61).

use serde_json::json;

fn rss() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .filter(|line| {
            ["VmRSS", "RssAnon", "RssFile"]
                .iter()
                .any(|k| line.starts_with(k))
        })
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join(", ")
}

fn main() {
    // A schema of echo's shape: one required string.
    let schema = json!({
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"]
    });
    println!("before: {}", rss());
    match std::env::args().nth(1).as_deref() {
        Some("meta") => {
            assert!(jsonschema::meta::is_valid(&schema));
            println!("after the meta-schema check: {}", rss());
        }
        Some("compile") => {
            let compiled = toolwire_schema::CompiledSchema::compile(&schema).expect("compiles");
            assert!(compiled.is_valid(&json!({"text": "a"})));
            println!("after CompiledSchema::compile: {}", rss());
        }
        None => {}
        Some(other) => {
            eprintln!("usage: schema-rss [meta|compile] (not {other})");
            std::process::exit(2);
        }
    }
}
