//! The built-in demo server of `toolwire serve`: one tool per idea of the
//! protocol (plain text, structured output, progress and logs, confirmation
//! through a multi round-trip request, sampling, roots), plus a resource and
//! a prompt.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use toolwire::protocol::{
    CreateMessageRequestParams, ElicitAction, LoggingLevel, PromptMessage, Role, SamplingContent,
    SamplingMessage, TextContent, ToolAnnotations,
};
use toolwire::server::{
    NoArgs, PromptBuilder, RequestContext, ResourceBuilder, ServerBuilder, Structured, ToolBuilder,
    ToolError, text_contents,
};

/// The URI of the demo's one resource.
pub const ABOUT_URI: &str = "toolwire://demo/about";

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// The text to send back.
    text: String,
}

#[derive(Deserialize, JsonSchema)]
struct StatsArgs {
    /// The numbers to summarise (at least one).
    numbers: Vec<f64>,
}

#[derive(Serialize, JsonSchema)]
struct Stats {
    /// How many numbers there are.
    count: usize,
    /// Their arithmetic mean.
    mean: f64,
    /// The smallest.
    min: f64,
    /// The largest.
    max: f64,
}

#[derive(Deserialize, JsonSchema)]
struct CountdownArgs {
    /// Seconds to count down from (1 to 60).
    seconds: u32,
    /// Milliseconds per step (10 to 5000, default 1000).
    #[serde(default)]
    step_ms: Option<u64>,
}

#[derive(Deserialize, JsonSchema)]
struct DeleteArgs {
    /// The file to delete (nothing is really deleted: this is a demo).
    path: String,
}

#[derive(Deserialize, JsonSchema)]
struct SummarizeArgs {
    /// The text to summarise.
    text: String,
}

/// Logs a call on the server's stderr, so the person running `toolwire
/// serve` sees calls arrive.
fn called(tool: &str, cx: &RequestContext) {
    let principal = cx.principal().subject.as_deref().unwrap_or("anonymous");
    tracing::info!(target: "toolwire::demo", tool, principal, "tools/call");
}

fn read_only() -> ToolAnnotations {
    ToolAnnotations {
        read_only_hint: Some(true),
        open_world_hint: Some(false),
        ..Default::default()
    }
}

async fn echo(args: EchoArgs, cx: RequestContext) -> String {
    called("echo", &cx);
    args.text
}

async fn stats(args: StatsArgs, cx: RequestContext) -> Result<Structured<Stats>, ToolError> {
    called("stats", &cx);
    let numbers = args.numbers;
    if numbers.is_empty() {
        return Err(ToolError::new(
            "numbers must contain at least one number, e.g. [1, 2, 3]",
        ));
    }
    let count = numbers.len();
    let min = numbers.iter().copied().fold(f64::INFINITY, f64::min);
    let max = numbers.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mean = numbers.iter().sum::<f64>() / count as f64;
    Ok(Structured(Stats {
        count,
        mean,
        min,
        max,
    }))
}

async fn countdown(args: CountdownArgs, cx: RequestContext) -> Result<String, ToolError> {
    called("countdown", &cx);
    if !(1..=60).contains(&args.seconds) {
        return Err(ToolError::new("seconds must be between 1 and 60"));
    }
    let step_ms = args.step_ms.unwrap_or(1000);
    if !(10..=5000).contains(&step_ms) {
        return Err(ToolError::new("step_ms must be between 10 and 5000"));
    }
    cx.log(
        LoggingLevel::Info,
        Some("countdown"),
        format!("counting down from {}", args.seconds),
    )
    .await;
    let total = f64::from(args.seconds);
    for done in 1..=args.seconds {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(step_ms)) => {}
            _ = cx.cancellation().cancelled() => return Err(ToolError::new("cancelled")),
        }
        let left = args.seconds - done;
        cx.progress(f64::from(done), Some(total), Some(&format!("{left} left")))
            .await;
    }
    Ok("Lift-off!".to_owned())
}

/// Asks for confirmation in a form; the answer arrives with the retry.
async fn delete_file(args: DeleteArgs, cx: RequestContext) -> Result<String, ToolError> {
    called("delete_file", &cx);
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
            .and_then(|v| v.as_bool())
            == Some(true);
    Ok(match (answer.action, confirmed) {
        (_, true) => format!(
            "Deleted {} (pretend: the demo never touches your files)",
            args.path
        ),
        (ElicitAction::Cancel, _) => format!("Cancelled: kept {}", args.path),
        _ => format!("Kept {}", args.path),
    })
}

/// Asks the client's model for a one-sentence summary.
async fn summarize(args: SummarizeArgs, cx: RequestContext) -> Result<String, ToolError> {
    called("summarize", &cx);
    let question = SamplingMessage::new(
        Role::User,
        SamplingContent::Text(TextContent {
            text: format!("Summarise in one sentence:\n\n{}", args.text),
            ..Default::default()
        }),
    );
    let mut params = CreateMessageRequestParams::new(vec![question], 200);
    params.system_prompt = Some("You write short, plain summaries.".to_owned());
    let answer = cx.sample("summary", params)?;
    let text: Vec<String> = answer
        .content
        .as_slice()
        .iter()
        .filter_map(|c| match c {
            SamplingContent::Text(t) => Some(t.text.clone()),
            _ => None,
        })
        .collect();
    Ok(format!("Summary (by {}): {}", answer.model, text.join(" ")))
}

/// Asks the client where it lets the server work.
async fn show_roots(_: NoArgs, cx: RequestContext) -> Result<String, ToolError> {
    called("show_roots", &cx);
    let roots = cx.list_roots("roots")?;
    if roots.roots.is_empty() {
        return Ok("The client shares no roots.".to_owned());
    }
    let lines: Vec<String> = roots
        .roots
        .iter()
        .map(|r| match &r.name {
            Some(name) => format!("{} ({name})", r.uri),
            None => r.uri.clone(),
        })
        .collect();
    Ok(format!("The client's roots:\n{}", lines.join("\n")))
}

const ABOUT: &str = "# The toolwire demo server\n\n\
Tools: echo (text), stats (structured output), countdown (progress and logs), \
delete_file (asks for confirmation), summarize (sampling), show_roots (roots).\n";

/// The demo server's tools, resource and prompt.
pub fn builder() -> ServerBuilder {
    toolwire::server::Server::builder("toolwire-demo", env!("CARGO_PKG_VERSION"))
        .title("toolwire demo")
        .instructions(
            "A demo of MCP 2026-07-28. echo repeats text; stats summarises numbers \
             (structured output); countdown reports progress; delete_file asks the user \
             to confirm (nothing is really deleted); summarize asks the client's model; \
             show_roots lists the client's roots.",
        )
        .tool(
            ToolBuilder::new("echo")
                .description("Echoes the text back")
                .annotations(ToolAnnotations {
                    idempotent_hint: Some(true),
                    ..read_only()
                })
                .handler(echo),
        )
        .tool(
            ToolBuilder::new("stats")
                .description("Count, mean, min and max of a list of numbers (structured output)")
                .annotations(read_only())
                .handler(stats),
        )
        .tool(
            ToolBuilder::new("countdown")
                .description("Counts down, reporting progress each step")
                .annotations(read_only())
                .handler(countdown),
        )
        .tool(
            ToolBuilder::new("delete_file")
                .description(
                    "Deletes a file after asking the user to confirm (pretend: nothing is deleted)",
                )
                .annotations(ToolAnnotations {
                    read_only_hint: Some(false),
                    destructive_hint: Some(true),
                    idempotent_hint: Some(true),
                    open_world_hint: Some(false),
                    ..Default::default()
                })
                .handler(delete_file),
        )
        .tool(
            ToolBuilder::new("summarize")
                .description("Summarises text with the client's model (sampling)")
                .annotations(read_only())
                .handler(summarize),
        )
        .tool(
            ToolBuilder::new("show_roots")
                .description("Lists the roots the client shares")
                .annotations(read_only())
                .handler(show_roots),
        )
        .resource(
            ResourceBuilder::new(ABOUT_URI, "about")
                .description("What this demo server offers")
                .mime_type("text/markdown")
                .handler(|_request, _cx| async {
                    Ok(vec![text_contents(ABOUT_URI, "text/markdown", ABOUT)])
                }),
        )
        .prompt(
            PromptBuilder::new("greet")
                .description("A friendly greeting")
                .argument("name", "Who to greet", true)
                .handler(|args, _cx| async move {
                    let name = args.get("name").cloned().unwrap_or_default();
                    Ok(vec![PromptMessage::text(
                        Role::User,
                        format!("Say hello to {name} in one friendly sentence."),
                    )])
                }),
        )
}
