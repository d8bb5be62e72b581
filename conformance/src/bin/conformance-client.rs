//! The conformance fixture client.
//!
//! ```text
//! conformance-client [...] <server-url>
//! ```
//!
//! The suite appends the mock server's URL as the last argument and names the
//! scenario in `MCP_CONFORMANCE_SCENARIO`; `MCP_CONFORMANCE_CONTEXT` carries
//! scenario data as JSON (e.g. `toolCalls` for http-custom-headers). Exits 1
//! when the scenario's script cannot be carried out.

use std::process::ExitCode;

use serde_json::Value;
use toolwire_conformance::client::Run;

fn main() -> ExitCode {
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: conformance-client <server-url>");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context = match std::env::var("MCP_CONFORMANCE_CONTEXT") {
        Ok(text) => match serde_json::from_str(&text) {
            Ok(context) => context,
            Err(e) => {
                eprintln!("conformance-client: MCP_CONFORMANCE_CONTEXT is not JSON: {e}");
                return ExitCode::from(2);
            }
        },
        Err(_) => Value::Null,
    };
    let version = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").ok();
    let run = Run {
        scenario,
        url,
        context,
        mode: toolwire_conformance::client::mode_for(version.as_deref()),
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("conformance-client: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run.execute()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("conformance-client: {}: {e}", run.scenario);
            ExitCode::FAILURE
        }
    }
}
