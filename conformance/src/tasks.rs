//! The tools the suite's `tasks-*` scenarios (the Tasks extension,
//! SEP-2663) call, by the names they use.

use std::time::Duration;

use serde_json::{Value, json};
use toolwire::protocol::{ElicitAction, ElicitResult, ElicitValue, ErrorObject, JsonObject};
use toolwire::server::{
    InputRequired, NoArgs, RequestContext, TaskSupport, ToolBuilder, ToolError,
};

/// An object schema with these `(name, type)` properties, the first required.
fn schema(properties: &[(&str, &str)]) -> JsonObject {
    let props: JsonObject = properties
        .iter()
        .map(|(name, kind)| ((*name).to_owned(), json!({"type": kind})))
        .collect();
    let mut schema = JsonObject::new();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), Value::Object(props));
    schema.insert("required".into(), json!([properties[0].0]));
    schema
}

fn text(args: &JsonObject, name: &str) -> String {
    args.get(name)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// Sleeps `seconds`, or less when the call is cancelled: `false` then.
async fn work(cx: &RequestContext, seconds: f64) -> bool {
    let duration = Duration::from_secs_f64(seconds.clamp(0.0, 3600.0));
    tokio::select! {
        () = cx.cancellation().cancelled() => false,
        () = tokio::time::sleep(duration) => true,
    }
}

fn accepted(answer: &ElicitResult, field: &str) -> bool {
    answer.action == ElicitAction::Accept
        && matches!(
            answer.content.as_ref().and_then(|c| c.get(field)),
            Some(ElicitValue::Boolean(true))
        )
}

fn confirm_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"confirm": {"type": "boolean"}},
        "required": ["confirm"]
    })
}

fn name_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"name": {"type": "string"}, "confirm": {"type": "boolean"}}
    })
}

/// `greet`, `slow_compute`, `failing_job`, `protocol_error_job`,
/// `confirm_delete`, `multi_input` and `test_tool_with_task`.
pub fn task_tools() -> Vec<ToolBuilder> {
    vec![
        ToolBuilder::new("greet")
            .description("Greets someone (never a task)")
            .raw_handler(schema(&[("name", "string")]), |args, _cx| async move {
                format!("Hello, {}!", text(&args, "name"))
            }),
        ToolBuilder::new("slow_compute")
            .description(
                "Works for `seconds` seconds, then reports (a task when the client supports tasks)",
            )
            .task_support(TaskSupport::Optional)
            .raw_handler(
                schema(&[("seconds", "number"), ("label", "string")]),
                |args, cx| async move {
                    let label = text(&args, "label");
                    let seconds = args.get("seconds").and_then(Value::as_f64).unwrap_or(0.0);
                    if work(&cx, seconds).await {
                        Ok(format!("Computed {label} in {seconds} s"))
                    } else {
                        Err(ToolError::new(format!("Computation {label} was cancelled")))
                    }
                },
            ),
        ToolBuilder::new("failing_job")
            .description("Always a task; fails with a tool execution error after about a second")
            .task_support(TaskSupport::Always)
            .handler(|_: NoArgs, cx: RequestContext| async move {
                work(&cx, 1.0).await;
                Err::<String, _>(ToolError::new(
                    "The job failed: the input could not be processed",
                ))
            }),
        ToolBuilder::new("protocol_error_job")
            .description(
                "Fails with a JSON-RPC internal error (a task when the client supports tasks)",
            )
            .task_support(TaskSupport::Optional)
            .handler(|_: NoArgs, cx: RequestContext| async move {
                work(&cx, 0.2).await;
                Err::<String, _>(ToolError::Protocol(ErrorObject::internal(
                    "The job crashed with an internal error",
                )))
            }),
        ToolBuilder::new("confirm_delete")
            .description("Asks for a confirmation, then deletes the file (pretend)")
            .task_support(TaskSupport::Optional)
            .raw_handler(schema(&[("filename", "string")]), |args, cx| async move {
                let filename = text(&args, "filename");
                let question = format!("Delete {filename}?");
                let answer = cx.elicit_form("confirm", &question, confirm_schema())?;
                Ok::<_, ToolError>(if accepted(&answer, "confirm") {
                    format!("Deleted {filename}")
                } else {
                    format!("Kept {filename}")
                })
            }),
        ToolBuilder::new("multi_input")
            .description("Asks two questions at once, then reports both answers")
            .task_support(TaskSupport::Optional)
            .handler(|_: NoArgs, cx: RequestContext| async move {
                let first = cx.answer::<ElicitResult>("first")?;
                let second = cx.answer::<ElicitResult>("second")?;
                let (Some(first), Some(second)) = (first, second) else {
                    let mut ask = InputRequired::new();
                    if cx.input_response("first").is_none() {
                        ask = ask.elicit_form("first", "First: your name?", name_schema());
                    }
                    if cx.input_response("second").is_none() {
                        ask = ask.elicit_form("second", "Second: your name?", name_schema());
                    }
                    return Err(ask.into());
                };
                let name = |a: &ElicitResult| match a.content.as_ref().and_then(|c| c.get("name")) {
                    Some(ElicitValue::String(s)) => s.clone(),
                    _ => String::new(),
                };
                Ok::<_, ToolError>(format!("Got {} and {}", name(&first), name(&second)))
            }),
        ToolBuilder::new("test_tool_with_task")
            .description("Asks for the user's name by MRTR, then runs as a task that greets them")
            .task_support(TaskSupport::Always)
            .ask_before_task(["user_name"])
            .handler(|_: NoArgs, cx: RequestContext| async move {
                let schema = json!({
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"]
                });
                let answer = cx.elicit_form("user_name", "What is your name?", schema)?;
                let name = match answer.content.as_ref().and_then(|c| c.get("name")) {
                    Some(ElicitValue::String(s)) => s.clone(),
                    _ => "stranger".to_owned(),
                };
                work(&cx, 0.2).await;
                Ok::<_, ToolError>(format!("Hello, {name}! (from a task)"))
            }),
    ]
}
