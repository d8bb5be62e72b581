//! Human-readable output: tools, results, resources, prompts.

use serde_json::{Map, Value};
use toolwire::client::ToolInfo;
use toolwire::client::transport::Era;
use toolwire::protocol::{
    CallToolResult, ContentBlock, DetailedTask, DiscoverResult, GetPromptResult, Prompt,
    ReadResourceResult, Resource, ResourceContents, ResourceTemplate, Role, ToolAnnotations,
};

use crate::safe_text::{self, line as one_line, text as lines};
use crate::terminal::Ui;

/// `println!` that ends the program quietly when stdout is closed (e.g.
/// `toolwire list ... | head -n 1`) instead of panicking. What it prints
/// goes through [`safe_text::styled`]: every server text is escaped where
/// it is put in a line too, this is the backstop.
macro_rules! out {
    ($($arg:tt)*) => {
        write_line(format_args!($($arg)*))
    };
}

fn write_line(line: std::fmt::Arguments<'_>) {
    let line = line.to_string();
    write_raw(&safe_text::styled(&line, stdout_color()));
}

/// Writes a line on stdout as it is.
fn write_raw(line: &str) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    if writeln!(stdout, "{line}").is_err() {
        std::process::exit(0);
    }
}

/// Prints JSON on stdout, pretty, as serde_json writes it, with the
/// characters that could drive a terminal written as `\uXXXX` escapes
/// (see `safe_json`): the same JSON value, safe to print.
pub fn print_json(value: &impl serde::Serialize) {
    match crate::safe_json::to_safe_json(value) {
        Ok(text) => write_raw(&text),
        Err(e) => eprintln!("toolwire: cannot print JSON: {e}"),
    }
}

/// [`print_json`] for a result received in `era`: a legacy server's
/// results have no `resultType`, so none is printed for them.
pub fn print_result_json(value: &impl serde::Serialize, era: Option<Era>) {
    let mut value = match serde_json::to_value(value) {
        Ok(value) => value,
        Err(e) => return eprintln!("toolwire: cannot print JSON: {e}"),
    };
    if era == Some(Era::Legacy) {
        if let Some(object) = value.as_object_mut() {
            object.remove("resultType");
        }
    }
    print_json(&value);
}

/// What the annotations say, in words, marked untrusted unless trusted.
pub fn annotations_line(info: &ToolInfo) -> Option<String> {
    let annotations = info.untrusted_annotations()?;
    let words = annotation_words(annotations);
    if words.is_empty() {
        return None;
    }
    let trust = if info.annotations_trusted {
        "trusted"
    } else {
        "untrusted"
    };
    Some(format!("annotations ({trust}): {}", words.join(", ")))
}

fn annotation_words(a: &ToolAnnotations) -> Vec<&'static str> {
    let mut words = Vec::new();
    match a.read_only_hint {
        Some(true) => words.push("read-only"),
        Some(false) => words.push("modifies its environment"),
        None => {}
    }
    match a.destructive_hint {
        Some(true) => words.push("destructive"),
        Some(false) => words.push("not destructive"),
        None => {}
    }
    match a.idempotent_hint {
        Some(true) => words.push("idempotent"),
        Some(false) => words.push("not idempotent"),
        None => {}
    }
    match a.open_world_hint {
        Some(true) => words.push("open world"),
        Some(false) => words.push("closed world"),
        None => {}
    }
    words
}

/// True when the server itself says the tool is destructive. A claim of
/// danger is believed even from an untrusted server.
pub fn claims_destructive(info: &ToolInfo) -> bool {
    info.untrusted_annotations()
        .is_some_and(|a| a.destructive_hint == Some(true) && a.read_only_hint != Some(true))
}

/// `name (type, required)` for each property of an input schema.
pub fn arguments_line(schema: &Map<String, Value>) -> Option<String> {
    let properties = schema.get("properties")?.as_object()?;
    if properties.is_empty() {
        return None;
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let parts: Vec<String> = properties
        .iter()
        .map(|(name, property)| {
            let kind = type_name(property);
            let shown = one_line(name);
            if required.contains(&name.as_str()) {
                format!("{shown} ({}, required)", one_line(&kind))
            } else {
                format!("{shown} ({})", one_line(&kind))
            }
        })
        .collect();
    Some(parts.join(", "))
}

fn type_name(property: &Value) -> String {
    match property.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join("|"),
        _ if property.get("enum").is_some() => "enum".into(),
        _ => "any".into(),
    }
}

/// The tool list.
pub fn tools(ui: &Ui, server: &str, tools: &[ToolInfo]) {
    out!(
        "{} tool{} on {server}:",
        tools.len(),
        if tools.len() == 1 { "" } else { "s" }
    );
    for info in tools {
        let tool = &info.tool;
        let mut head = format!("  {}", ui_bold_stdout(ui, &one_line(&tool.name)));
        if let Some(title) = &tool.title {
            head.push_str(&format!(" ({})", one_line(title)));
        }
        if let Some(description) = &tool.description {
            head.push_str(&format!(" — {}", first_line(description)));
        }
        if claims_destructive(info) {
            head.push_str(&format!("  {}", ui_danger_stdout(ui, "[destructive]")));
        }
        out!("{head}");
        if let Some(arguments) = arguments_line(&tool.input_schema) {
            out!("      arguments: {arguments}");
        }
        if tool.output_schema.is_some() {
            out!("      returns structured content (has an outputSchema)");
        }
        if let Some(line) = annotations_line(info) {
            out!("      {line}");
        }
    }
}

// Colour on stdout only when stdout is a terminal too.
fn stdout_color() -> bool {
    use std::io::IsTerminal;
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

fn ui_bold_stdout(ui: &Ui, text: &str) -> String {
    if stdout_color() {
        ui.bold(text)
    } else {
        text.to_owned()
    }
}

fn ui_danger_stdout(ui: &Ui, text: &str) -> String {
    if stdout_color() {
        ui.danger(text)
    } else {
        text.to_owned()
    }
}

/// The first line of a description, escaped.
fn first_line(text: &str) -> String {
    one_line(text.lines().next().unwrap_or("")).into_owned()
}

/// A tool result: text as is, structured content as pretty JSON, other
/// content summarised.
/// `toolwire call --detach`: the task's id alone on stdout (for scripts),
/// and how to follow it on stderr.
pub fn task_started(ui: &Ui, id: &str, server: &str) {
    out!("{}", one_line(id));
    ui.say(&ui.dim(&format!(
        "the call runs as task {id}; follow it with `toolwire task wait {server} {id}`",
        id = one_line(id),
        server = one_line(server),
    )));
}

/// `toolwire task get`: the status line, then the result or the error once
/// the task has ended, or the questions it waits on.
pub fn task(ui: &Ui, task: &DetailedTask) {
    out!("{}", crate::terminal::task_line(task));
    if let Some(requests) = &task.input_requests {
        for (key, request) in requests {
            let method = request.get("method").and_then(Value::as_str).unwrap_or("?");
            out!("  waiting for {} ({})", one_line(key), one_line(method));
        }
        ui.say(&ui.dim("`toolwire task wait` answers its questions and waits for the result"));
    }
    if let Some(error) = &task.error {
        out!("  error {}: {}", error.code, one_line(&error.message));
    }
    if let Some(result) = &task.result {
        match serde_json::from_value::<CallToolResult>(Value::Object(result.clone())) {
            Ok(result) => call_result(&result),
            Err(_) => out!("{}", lines(&Value::Object(result.clone()).to_string())),
        }
    }
}

pub fn call_result(result: &CallToolResult) {
    let structured = result.structured_content.as_ref();
    for block in &result.content {
        if let (ContentBlock::Text(text), Some(structured)) = (block, structured) {
            // The text twin of structuredContent is shown once, below.
            if serde_json::from_str::<Value>(&text.text).ok().as_ref() == Some(structured) {
                continue;
            }
        }
        out!("{}", content_text(block));
    }
    if let Some(structured) = structured {
        // serde_json escapes C0 controls in strings, not DEL, C1 or bidi.
        match serde_json::to_string_pretty(structured) {
            Ok(text) => out!("{}", lines(&text)),
            Err(_) => out!("{}", lines(&structured.to_string())),
        }
    }
}

/// One content block as text.
pub fn content_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(t) => lines(&t.text).into_owned(),
        ContentBlock::Image(i) => format!(
            "[image, {}, {} bytes]",
            one_line(&i.mime_type),
            base64_len(&i.data)
        ),
        ContentBlock::Audio(a) => format!(
            "[audio, {}, {} bytes]",
            one_line(&a.mime_type),
            base64_len(&a.data)
        ),
        ContentBlock::ResourceLink(link) => {
            let mut text = format!("[resource link: {}", one_line(&link.uri));
            if let Some(description) = &link.description {
                text.push_str(&format!(" — {}", lines(description)));
            }
            text.push(']');
            text
        }
        ContentBlock::Resource(embedded) => contents_text(&embedded.resource),
    }
}

fn contents_text(contents: &ResourceContents) -> String {
    match contents {
        ResourceContents::Text(t) => lines(&t.text).into_owned(),
        ResourceContents::Blob(b) => format!(
            "[{}: {}, {} bytes; use --json to get the base64 data]",
            one_line(&b.uri),
            one_line(b.mime_type.as_deref().unwrap_or("binary")),
            base64_len(&b.blob)
        ),
    }
}

fn base64_len(data: &str) -> usize {
    let padding = data.bytes().rev().take_while(|b| *b == b'=').count();
    (data.len() / 4 * 3).saturating_sub(padding)
}

/// `server/discover`.
pub fn discover(server: &str, result: &DiscoverResult, era: Option<Era>, version: &str) {
    let info = result
        .meta
        .as_ref()
        .and_then(|m| m.server_info())
        .and_then(Result::ok);
    match info {
        Some(info) => {
            let title = info
                .title
                .as_ref()
                .map(|t| format!(" ({})", one_line(t)))
                .unwrap_or_default();
            out!(
                "Server: {} {}{title} at {server}",
                one_line(&info.name),
                one_line(&info.version)
            );
            if let Some(description) = &info.description {
                out!("  {}", lines(description));
            }
        }
        None => out!("Server at {server}"),
    }
    match era {
        Some(Era::Legacy) => out!("Protocol: {version} (legacy era: initialize and a session)"),
        _ => out!("Protocol: {version} (modern era: stateless)"),
    }
    out!(
        "Protocol versions: {}",
        one_line(&result.supported_versions.join(", "))
    );
    let caps = &result.capabilities;
    let mut offered = Vec::new();
    if let Some(tools) = &caps.tools {
        offered.push(with_list_changed("tools", tools.list_changed));
    }
    if let Some(resources) = &caps.resources {
        let mut text = "resources".to_owned();
        let mut extras = Vec::new();
        if resources.subscribe == Some(true) {
            extras.push("subscribe");
        }
        if resources.list_changed == Some(true) {
            extras.push("listChanged");
        }
        if !extras.is_empty() {
            text.push_str(&format!(" ({})", extras.join(", ")));
        }
        offered.push(text);
    }
    if let Some(prompts) = &caps.prompts {
        offered.push(with_list_changed("prompts", prompts.list_changed));
    }
    if caps.completions.is_some() {
        offered.push("completions".into());
    }
    if caps.logging.is_some() {
        offered.push("logging".into());
    }
    if let Some(extensions) = &caps.extensions {
        for name in extensions.keys() {
            offered.push(format!("extension {}", one_line(name)));
        }
    }
    out!(
        "Capabilities: {}",
        if offered.is_empty() {
            "none".to_owned()
        } else {
            offered.join(", ")
        }
    );
    if let Some(instructions) = &result.instructions {
        out!("Instructions:");
        for line in instructions.lines() {
            out!("  {}", one_line(line));
        }
    }
}

fn with_list_changed(name: &str, list_changed: Option<bool>) -> String {
    if list_changed == Some(true) {
        format!("{name} (listChanged)")
    } else {
        name.to_owned()
    }
}

pub fn resources(server: &str, resources: &[Resource], templates: &[ResourceTemplate]) {
    out!(
        "{} resource{} on {server}:",
        resources.len(),
        if resources.len() == 1 { "" } else { "s" }
    );
    for resource in resources {
        let mut line = format!(
            "  {}  {}",
            one_line(&resource.uri),
            one_line(&resource.name)
        );
        if let Some(description) = &resource.description {
            line.push_str(&format!(" — {}", first_line(description)));
        }
        out!("{line}");
    }
    if !templates.is_empty() {
        out!("{} resource template(s):", templates.len());
        for template in templates {
            let mut line = format!(
                "  {}  {}",
                one_line(&template.uri_template),
                one_line(&template.name)
            );
            if let Some(description) = &template.description {
                line.push_str(&format!(" — {}", first_line(description)));
            }
            out!("{line}");
        }
    }
}

pub fn prompts(server: &str, prompts: &[Prompt]) {
    out!(
        "{} prompt{} on {server}:",
        prompts.len(),
        if prompts.len() == 1 { "" } else { "s" }
    );
    for prompt in prompts {
        let mut line = format!("  {}", one_line(&prompt.name));
        if let Some(description) = &prompt.description {
            line.push_str(&format!(" — {}", first_line(description)));
        }
        out!("{line}");
        if let Some(arguments) = &prompt.arguments {
            let parts: Vec<String> = arguments
                .iter()
                .map(|a| {
                    if a.required == Some(true) {
                        format!("{} (required)", one_line(&a.name))
                    } else {
                        one_line(&a.name).into_owned()
                    }
                })
                .collect();
            if !parts.is_empty() {
                out!("      arguments: {}", parts.join(", "));
            }
        }
    }
}

pub fn read_result(result: &ReadResourceResult) {
    for contents in &result.contents {
        out!("{}", contents_text(contents));
    }
}

pub fn prompt_result(result: &GetPromptResult) {
    if let Some(description) = &result.description {
        out!("# {}", lines(description));
    }
    for message in &result.messages {
        let role = match message.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        out!("[{role}] {}", content_text(&message.content));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_are_summarised() {
        let schema = json!({"type": "object", "properties": {
            "text": {"type": "string"}, "n": {"type": ["integer", "null"]}
        }, "required": ["text"]});
        assert_eq!(
            arguments_line(schema.as_object().unwrap()).unwrap(),
            "text (string, required), n (integer|null)"
        );
    }

    #[test]
    fn base64_lengths() {
        assert_eq!(base64_len("aGk="), 2);
        assert_eq!(base64_len("aGVsbG8h"), 6);
    }
}
