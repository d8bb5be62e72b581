//! Multi round-trip requests: a tool that asks for confirmation, and one
//! that asks two questions in two rounds. No sealing code in sight: the
//! server seals what it needs into `requestState`.
//!
//! ```sh
//! cargo run -p toolwire-examples --bin mrtr
//! ```

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use toolwire::protocol::ElicitAction;
use toolwire::server::{RequestContext, Server, ToolError};
use toolwire::tool;

#[derive(Deserialize, JsonSchema)]
struct DeleteArgs {
    /// The file to delete.
    path: String,
}

/// Deletes a file after confirmation
#[tool(destructive)]
async fn delete_file(args: DeleteArgs, cx: RequestContext) -> Result<String, ToolError> {
    // Asks "are you sure?" once; goes on when the retry brings the answer.
    let schema = json!({
        "type": "object",
        "properties": {"confirm": {"type": "boolean", "title": "Really delete?"}},
        "required": ["confirm"]
    });
    let answer = cx.elicit_form("confirm", &format!("Delete {}?", args.path), schema)?;
    let confirmed = answer.action == ElicitAction::Accept
        && answer
            .content
            .as_ref()
            .and_then(|c| c.get("confirm"))
            .is_some_and(|v| serde_json::to_value(v).ok() == Some(json!(true)));
    Ok(if confirmed {
        format!("Deleted {} (pretend)", args.path)
    } else {
        format!("Kept {}", args.path)
    })
}

/// Asks two questions, one per round
#[tool(read_only)]
async fn onboarding(cx: RequestContext) -> Result<String, ToolError> {
    // Round one asks for a name, round two for a favourite colour: earlier
    // answers travel, sealed, in `requestState`.
    let text_field = |field: &str| json!({"type": "object", "properties": {field: {"type": "string"}}, "required": [field]});
    let name = cx.elicit_form("name", "What is your name?", text_field("name"))?;
    let colour = cx.elicit_form("colour", "Favourite colour?", text_field("colour"))?;
    let get = |answer: &toolwire::protocol::ElicitResult, field: &str| {
        answer
            .content
            .as_ref()
            .and_then(|c| c.get(field))
            .and_then(|v| serde_json::to_value(v).ok())
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default()
    };
    Ok(format!(
        "Welcome, {}! Noted: {}.",
        get(&name, "name"),
        get(&colour, "colour")
    ))
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let server = Server::builder("mrtr-demo", env!("CARGO_PKG_VERSION"))
        .tool(delete_file_tool())
        .tool(onboarding_tool())
        .build()
        .expect("valid tools");
    toolwire::server::stdio::serve_stdio(server).await
}
