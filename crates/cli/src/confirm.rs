//! The confirmation `toolwire call` asks before a call: the tool, its
//! annotations (marked untrusted unless trusted), what the arguments break
//! of its input schema, and the exact arguments.

use std::sync::Arc;

use serde_json::{Map, Value};
use toolwire::client::transport::BoxFuture;
use toolwire::client::{Approval, ApprovalHook, ApprovalRequest};

use crate::render;
use crate::safe_text;
use crate::terminal::Ui;

/// The confirmation before every call: shows the tool, its annotations
/// (marked untrusted unless trusted) and the exact arguments, then asks.
#[derive(Debug, Clone)]
pub struct Confirm {
    pub(crate) ui: Arc<Ui>,
    pub(crate) settings: ConfirmSettings,
}

/// Whether to ask, and whether to say anything when not asking.
#[derive(Debug, Clone, Copy)]
pub struct ConfirmSettings {
    /// `--yes`: call without asking.
    pub(crate) yes: bool,
    /// `--json`: print nothing but the result.
    pub(crate) quiet: bool,
}

impl ApprovalHook for Confirm {
    fn approve(&self, request: ApprovalRequest<'_>) -> BoxFuture<'static, Approval> {
        let ui = Arc::clone(&self.ui);
        let arguments = serde_json::to_string_pretty(request.arguments).unwrap_or_default();
        if self.settings.yes {
            if !self.settings.quiet {
                let compact = serde_json::to_string(request.arguments).unwrap_or_default();
                ui.say(&ui.dim(&format!(
                    "calling `{}` on {} with {compact}",
                    request.tool, request.server
                )));
            }
            return Box::pin(async { Approval::Allow });
        }
        let mut lines = Vec::new();
        let mut destructive = false;
        lines.push(format!(
            "Tool {} on {}",
            ui.bold(request.tool),
            request.server
        ));
        if let Some(info) = request.info {
            if let Some(title) = &info.tool.title {
                lines.push(format!("  title: {}", safe_text::line(title)));
            }
            if let Some(description) = &info.tool.description {
                for line in description.lines() {
                    lines.push(format!("  {}", safe_text::line(line)));
                }
            }
            if let Some(annotations) = render::annotations_line(info) {
                lines.push(format!("  {annotations}"));
            }
            destructive = render::claims_destructive(info);
            if destructive {
                lines.push(ui.danger(
                    "  DESTRUCTIVE: the server says this tool may delete or overwrite data",
                ));
            } else if info.untrusted_annotations().is_none() {
                lines.push(ui.dim("  no annotations: nothing is claimed about what it changes"));
            }
            if let Some(problem) = schema_problem(&info.tool.input_schema, request.arguments) {
                lines.push(ui.warn(&format!(
                    "  these arguments do not match the tool's inputSchema; the server will likely refuse them:\n{problem}"
                )));
            }
        }
        lines.push("Arguments (exactly as sent):".to_owned());
        for line in arguments.lines() {
            lines.push(format!("  {line}"));
        }
        for line in &lines {
            ui.say(line);
        }
        let question = if destructive {
            ui.danger(&format!("Call the destructive tool {}?", request.tool))
        } else {
            format!("Call {}?", request.tool)
        };
        Box::pin(async move {
            if ui.confirm(&question).await {
                Approval::Allow
            } else {
                Approval::Deny("you answered no at the confirmation prompt".to_owned())
            }
        })
    }
}

/// The violations of the input schema, indented, if any.
fn schema_problem(schema: &Map<String, Value>, arguments: &Map<String, Value>) -> Option<String> {
    let compiled =
        toolwire::schema::CompiledSchema::compile(&Value::Object(schema.clone())).ok()?;
    let errors = compiled.validate(&Value::Object(arguments.clone())).err()?;
    Some(
        errors
            .to_string()
            .lines()
            .map(|l| format!("    {l}"))
            .collect::<Vec<_>>()
            .join("\n"),
    )
}
