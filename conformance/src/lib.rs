//! Conformance fixtures: the server the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`) runs its server scenarios against,
//! built only from toolwire's public API.
//!
//! Every tool, resource, prompt and behaviour the suite looks for is here, by
//! the literal names it uses (see `../shared/conformance/FIXTURES.md`, Part A).
//! The fixture client, for the client scenarios, is in [`client`].

pub mod client;
mod tasks;

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::{Value, json};
use toolwire::protocol::{
    BlobResourceContents, CallToolResult, ClientCapabilities, ContentBlock,
    CreateMessageRequestParams, ElicitResult, ElicitValue, EmbeddedResource, ErrorObject,
    JsonObject, ListRootsResult, OneOrMany, PromptMessage, ResourceContents, Role,
    SamplingCapability, SamplingContent, SamplingMessage, TextContent,
};
use toolwire::server::{
    InputRequired, NoArgs, PromptBuilder, PromptResult, ReadRequest, ReadResult, RequestContext,
    ResourceBuilder, ResourceTemplateBuilder, Server, StateKey, ToolBuilder, ToolError, ToolOutput,
    text_contents,
};

/// The name in `serverInfo`.
pub const SERVER_NAME: &str = "toolwire-conformance-server";

/// A 1x1 PNG, base64.
pub const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg==";

/// A tiny WAV file, base64.
pub const WAV: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

/// The text of the `test://static-text` resource.
pub const STATIC_TEXT: &str = "This is the content of the static text resource.";

/// The text of the `test://watched-resource` resource.
pub const WATCHED_TEXT: &str = "This resource can be subscribed to.";

/// The input schema of `json_schema_2020_12_tool`, kept verbatim.
pub fn json_schema_2020_12() -> JsonObject {
    object(json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"}
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false
    }))
}

/// Builds the fixture server: every tool, resource, template and prompt the
/// suite's server scenarios use.
pub fn fixture_server() -> Server {
    // The trigger tools tell listeners about list changes; they need the
    // server they belong to, which exists only after `build`.
    let this: Arc<OnceLock<Server>> = Arc::default();
    let mut builder = Server::builder(SERVER_NAME, env!("CARGO_PKG_VERSION"))
        .instructions("Fixture server for the official MCP conformance suite.")
        // One process: a key made at start-up is all requestState needs.
        .state_key(StateKey::random())
        // input-required-result-ignore-extra-params answers without requestState.
        .answers_without_state(true);
    for tool in tools(&this) {
        builder = builder.tool(tool);
    }
    // The tasks-* scenarios (the Tasks extension).
    builder = builder
        .tools(tasks::task_tools())
        .task_poll_interval(Duration::from_millis(200));
    for resource in resources() {
        builder = builder.resource(resource);
    }
    builder = builder.resource_template(template());
    for prompt in prompts() {
        builder = builder.prompt(prompt);
    }
    let server = builder
        .build()
        .expect("the fixture's definitions are valid");
    let _ = this.set(server.clone());
    server
}

// ---------------------------------------------------------------------------
// Tools

fn tools(this: &Arc<OnceLock<Server>>) -> Vec<ToolBuilder> {
    let mut tools = vec![
        // First: http-header-validation calls tools[0] with `{}`.
        ToolBuilder::new("test_simple_text")
            .description("Returns a simple text result")
            .handler(|_: NoArgs, _cx: RequestContext| async {
                "This is a simple text response for testing."
            }),
        ToolBuilder::new("test_image_content")
            .description("Returns an image")
            .handler(|_: NoArgs, _cx: RequestContext| async {
                ContentBlock::image(PNG, "image/png")
            }),
        ToolBuilder::new("test_audio_content")
            .description("Returns audio")
            .handler(|_: NoArgs, _cx: RequestContext| async {
                ContentBlock::audio(WAV, "audio/wav")
            }),
        ToolBuilder::new("test_embedded_resource")
            .description("Returns an embedded resource")
            .handler(|_: NoArgs, _cx: RequestContext| async {
                embedded(text_contents(
                    "test://embedded-resource",
                    "text/plain",
                    "This is an embedded resource content.",
                ))
            }),
        ToolBuilder::new("test_multiple_content_types")
            .description("Returns text, an image and an embedded resource")
            .handler(|_: NoArgs, _cx: RequestContext| async {
                vec![
                    ContentBlock::text("Multiple content types test:"),
                    ContentBlock::image(PNG, "image/png"),
                    embedded(text_contents(
                        "test://mixed-content-resource",
                        "application/json",
                        r#"{"test":"data","value":123}"#,
                    )),
                ]
            }),
        ToolBuilder::new("test_error_handling")
            .description("Always fails with a tool execution error")
            .handler(|_: NoArgs, _cx: RequestContext| async {
                ToolError::new("This tool intentionally returns an error for testing")
            }),
        ToolBuilder::new("test_tool_with_progress")
            .description("Reports progress 0, 50, 100 before its result")
            .handler(|_: NoArgs, cx: RequestContext| async move {
                for done in [0.0, 50.0, 100.0] {
                    cx.progress(done, Some(100.0), None).await;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                "Progress test completed"
            }),
        ToolBuilder::new("test_missing_capability")
            .description("Needs the client's sampling capability")
            .handler(|_: NoArgs, cx: RequestContext| async move {
                if cx.client_capabilities().sampling.is_none() {
                    let required = ClientCapabilities {
                        sampling: Some(SamplingCapability::default()),
                        ..Default::default()
                    };
                    return Err(ToolError::from(ErrorObject::missing_client_capability(
                        &required,
                    )));
                }
                Ok("The client declared sampling")
            }),
        ToolBuilder::new("test_streaming_elicitation")
            .description("Answers on its response stream without server-to-client requests")
            .handler(|_: NoArgs, _cx: RequestContext| async { "Streamed" }),
        ToolBuilder::new("test_logging_tool")
            .description("Logs only when the request asks for a log level")
            .handler(|_: NoArgs, cx: RequestContext| async move {
                cx.log(
                    toolwire::protocol::LoggingLevel::Info,
                    Some("conformance"),
                    "test_logging_tool ran",
                )
                .await;
                "Logging test completed"
            }),
    ];
    let server = Arc::clone(this);
    tools.push(
        ToolBuilder::new("test_trigger_tool_change")
            .description("Tells listeners that the tool list changed (without changing it)")
            .handler(move |_: NoArgs, _cx: RequestContext| {
                if let Some(server) = server.get() {
                    server.notify_tools_list_changed();
                }
                async { "Sent notifications/tools/list_changed" }
            }),
    );
    let server = Arc::clone(this);
    tools.push(
        ToolBuilder::new("test_trigger_prompt_change")
            .description("Tells listeners that the prompt list changed (without changing it)")
            .handler(move |_: NoArgs, _cx: RequestContext| {
                if let Some(server) = server.get() {
                    server.notify_prompts_list_changed();
                }
                async { "Sent notifications/prompts/list_changed" }
            }),
    );
    tools.extend(mrtr_tools());
    tools.extend(legacy_tools());
    tools.push(
        ToolBuilder::new("json_schema_2020_12_tool")
            .description("Tool with JSON Schema 2020-12 features")
            .raw_handler(json_schema_2020_12(), |args: JsonObject, _cx| async move {
                format!("Received: {}", Value::Object(args))
            }),
    );
    tools.push(
        ToolBuilder::new("test_x_mcp_header")
            .description("Echoes a region that the client mirrors in Mcp-Param-Region")
            .raw_handler(
                object(json!({
                    "type": "object",
                    "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
                    "required": ["region"]
                })),
                |args: JsonObject, _cx| async move {
                    let region = args.get("region").and_then(Value::as_str).unwrap_or("");
                    format!("region={region}")
                },
            ),
    );
    tools
}

fn embedded(resource: ResourceContents) -> ContentBlock {
    ContentBlock::Resource(EmbeddedResource {
        resource,
        annotations: None,
        meta: None,
    })
}

// ---------------------------------------------------------------------------
// Multi round-trip requests (SEP-2322)

/// `{"type":"object","properties":{field:{"type":"string"}},"required":[field]}`.
fn string_form(field: &str) -> Value {
    json!({"type": "object", "properties": {field: {"type": "string"}}, "required": [field]})
}

fn confirm_form() -> Value {
    json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]})
}

fn sampling(text: &str, max_tokens: u64) -> CreateMessageRequestParams {
    CreateMessageRequestParams {
        messages: vec![SamplingMessage::new(
            Role::User,
            SamplingContent::Text(TextContent {
                text: text.to_owned(),
                ..Default::default()
            }),
        )],
        max_tokens,
        ..Default::default()
    }
}

/// A string field of an accepted form.
fn field(answer: &ElicitResult, name: &str) -> String {
    match answer.content.as_ref().and_then(|c| c.get(name)) {
        Some(ElicitValue::String(s)) => s.clone(),
        Some(other) => serde_json::to_value(other)
            .map(|v| v.to_string())
            .unwrap_or_default(),
        None => String::new(),
    }
}

fn sampled_text(answer: &toolwire::protocol::CreateMessageResult) -> String {
    let blocks = match &answer.content {
        OneOrMany::One(block) => std::slice::from_ref(block),
        OneOrMany::Many(blocks) => blocks.as_slice(),
    };
    blocks
        .iter()
        .filter_map(|b| match b {
            SamplingContent::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn root_uris(roots: &ListRootsResult) -> String {
    roots
        .roots
        .iter()
        .map(|r| r.uri.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn mrtr_tools() -> Vec<ToolBuilder> {
    vec![
        ToolBuilder::new("test_input_required_result_elicitation")
            .description("Asks for the user's name by elicitation, then greets them")
            .handler(|_: NoArgs, cx: RequestContext| async move {
                let answer =
                    cx.elicit_form("user_name", "What is your name?", string_form("name"))?;
                Ok::<_, ToolError>(format!("Hello, {}!", field(&answer, "name")))
            }),
        ToolBuilder::new("test_input_required_result_sampling")
            .description("Asks the client's model a question by sampling")
            .handler(|_: NoArgs, cx: RequestContext| async move {
                let answer = cx.sample(
                    "capital_question",
                    sampling("What is the capital of France?", 100),
                )?;
                Ok::<_, ToolError>(format!("Sampled: {}", sampled_text(&answer)))
            }),
        ToolBuilder::new("test_input_required_result_list_roots")
            .description("Asks for the client's roots")
            .handler(|_: NoArgs, cx: RequestContext| async move {
                let roots = cx.list_roots("client_roots")?;
                Ok::<_, ToolError>(format!("Roots: {}", root_uris(&roots)))
            }),
        ToolBuilder::new("test_input_required_result_request_state")
            .description("Asks for a confirmation and carries requestState")
            .handler(|_: NoArgs, cx: RequestContext| async move {
                if cx.state::<String>().as_deref() == Some("confirm-asked")
                    && cx.answer::<ElicitResult>("confirm")?.is_some()
                {
                    return Ok(ToolOutput::Complete(CallToolResult::text(
                        "state-ok: the requestState came back intact",
                    )));
                }
                Ok::<_, ToolError>(ToolOutput::InputRequired(
                    InputRequired::new()
                        .elicit_form("confirm", "Please confirm", confirm_form())
                        .with_state("confirm-asked"),
                ))
            }),
        ToolBuilder::new("test_input_required_result_multiple_inputs")
            .description("Asks for elicitation, sampling and roots in one round")
            .handler(|_: NoArgs, cx: RequestContext| async move {
                let name = cx.answer::<ElicitResult>("user_name")?;
                let greeting = cx.answer::<toolwire::protocol::CreateMessageResult>("greeting")?;
                let roots = cx.answer::<ListRootsResult>("client_roots")?;
                match (name, greeting, roots) {
                    (Some(name), Some(greeting), Some(roots)) => {
                        Ok::<_, ToolError>(ToolOutput::Complete(CallToolResult::text(format!(
                            "All inputs received: name={}, greeting={}, roots={}",
                            field(&name, "name"),
                            sampled_text(&greeting),
                            root_uris(&roots)
                        ))))
                    }
                    _ => Ok(ToolOutput::InputRequired(
                        InputRequired::new()
                            .elicit_form("user_name", "What is your name?", string_form("name"))
                            .sample("greeting", sampling("Generate a greeting", 50))
                            .list_roots("client_roots")
                            .with_state("all-asked"),
                    )),
                }
            }),
        ToolBuilder::new("test_input_required_result_multi_round")
            .description("Asks two questions in two rounds")
            .handler(|_: NoArgs, cx: RequestContext| async move {
                let name =
                    cx.elicit_form("step1", "Step 1: What is your name?", string_form("name"))?;
                let color = cx.elicit_form(
                    "step2",
                    "Step 2: What is your favorite color?",
                    string_form("color"),
                )?;
                Ok::<_, ToolError>(format!(
                    "Multi-round complete: {} likes {}",
                    field(&name, "name"),
                    field(&color, "color")
                ))
            }),
        ToolBuilder::new("test_input_required_result_tampered_state")
            .description("Carries an integrity-protected requestState; a modified one is refused")
            .handler(|_: NoArgs, cx: RequestContext| async move {
                cx.elicit_form("confirm", "Please confirm", confirm_form())?;
                Ok::<_, ToolError>("State verified")
            }),
        ToolBuilder::new("test_input_required_result_capabilities")
            .description("Asks only for what the client declared it can do")
            .handler(|_: NoArgs, cx: RequestContext| async move {
                let caps = cx.client_capabilities().clone();
                if caps.elicitation.is_some() {
                    let answer =
                        cx.elicit_form("user_name", "What is your name?", string_form("name"))?;
                    return Ok(format!("Hello, {}!", field(&answer, "name")));
                }
                if caps.sampling.is_some() {
                    let answer = cx.sample(
                        "capital_question",
                        sampling("What is the capital of France?", 100),
                    )?;
                    return Ok(format!("Sampled: {}", sampled_text(&answer)));
                }
                if caps.roots.is_some() {
                    let roots = cx.list_roots("client_roots")?;
                    return Ok(format!("Roots: {}", root_uris(&roots)));
                }
                let required = ClientCapabilities {
                    sampling: Some(SamplingCapability::default()),
                    ..Default::default()
                };
                Err(ToolError::from(ErrorObject::missing_client_capability(
                    &required,
                )))
            }),
    ]
}

// ---------------------------------------------------------------------------
// Legacy-era scenarios (2025-11-25: server-to-client requests, session logging,
// SSE polling)
//
// These tools ask for input the same way the multi round-trip tools above do
// (`cx.elicit_form(..)?`, `cx.sample(..)?`): in the 2026-07-28 era the call
// ends with an `input_required` result, in the legacy era the SDK sends a real
// `elicitation/create` / `sampling/createMessage` request and runs the handler
// again with the answer. The SDK also refuses, with an error, an input request
// the client has no capability for, so the handlers do not check that.

/// `{"type":"object","properties":{field:{"type":"string"}},"required":[field]}`
/// for one required string argument of a tool.
fn one_string_argument(field: &str, description: &str) -> JsonObject {
    object(json!({
        "type": "object",
        "properties": {field: {"type": "string", "description": description}},
        "required": [field]
    }))
}

/// The schema test_elicitation asks with (tools-call-elicitation).
fn user_info_form() -> Value {
    json!({
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"}
        },
        "required": ["username", "email"]
    })
}

/// A default for every primitive type (elicitation-sep1034-defaults, SEP-1034).
fn sep1034_defaults_form() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {
                "type": "string",
                "description": "User status",
                "enum": ["active", "inactive", "pending"],
                "default": "active"
            },
            "verified": {"type": "boolean", "description": "Verification status", "default": true}
        }
    })
}

/// The five enum variants of SEP-1330 (elicitation-sep1330-enums).
fn sep1330_enums_form() -> Value {
    json!({
        "type": "object",
        "properties": {
            "untitledSingle": {
                "type": "string",
                "description": "Select one option",
                "enum": ["option1", "option2", "option3"]
            },
            "titledSingle": {
                "type": "string",
                "description": "Select one option with titles",
                "oneOf": [
                    {"const": "value1", "title": "First Option"},
                    {"const": "value2", "title": "Second Option"},
                    {"const": "value3", "title": "Third Option"}
                ]
            },
            "legacyEnum": {
                "type": "string",
                "description": "Select one option (legacy titled enum)",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"]
            },
            "untitledMulti": {
                "type": "array",
                "description": "Select one or more options",
                "minItems": 1,
                "maxItems": 3,
                "items": {"type": "string", "enum": ["option1", "option2", "option3"]}
            },
            "titledMulti": {
                "type": "array",
                "description": "Select one or more options with titles",
                "minItems": 1,
                "maxItems": 3,
                "items": {
                    "anyOf": [
                        {"const": "value1", "title": "First Choice"},
                        {"const": "value2", "title": "Second Choice"},
                        {"const": "value3", "title": "Third Choice"}
                    ]
                }
            }
        }
    })
}

/// `action=<action>, content=<content as JSON>` of an elicitation answer.
fn elicit_summary(answer: &ElicitResult) -> String {
    let value = serde_json::to_value(answer).unwrap_or_default();
    let action = value.get("action").and_then(Value::as_str).unwrap_or("");
    let content = value.get("content").cloned().unwrap_or_else(|| json!({}));
    format!("action={action}, content={content}")
}

fn legacy_tools() -> Vec<ToolBuilder> {
    vec![
        ToolBuilder::new("test_tool_with_logging")
            .description("Sends three info log messages about 50 ms apart, then its result")
            .handler(|_: NoArgs, cx: RequestContext| async move {
                let info = toolwire::protocol::LoggingLevel::Info;
                cx.log(info, Some("conformance"), "Tool execution started")
                    .await;
                tokio::time::sleep(Duration::from_millis(50)).await;
                cx.log(info, Some("conformance"), "Tool processing data")
                    .await;
                tokio::time::sleep(Duration::from_millis(50)).await;
                cx.log(info, Some("conformance"), "Tool execution completed")
                    .await;
                "Tool with logging executed successfully"
            }),
        ToolBuilder::new("test_sampling")
            .description("Asks the client's model to answer a prompt (sampling/createMessage)")
            .raw_handler(
                one_string_argument("prompt", "The prompt to send to the LLM"),
                |args: JsonObject, cx: RequestContext| async move {
                    let prompt = args.get("prompt").and_then(Value::as_str).unwrap_or("");
                    let answer = cx.sample("llm_response", sampling(prompt, 100))?;
                    Ok::<_, ToolError>(format!("LLM response: {}", sampled_text(&answer)))
                },
            ),
        ToolBuilder::new("test_elicitation")
            .description("Asks the user for a username and an email (elicitation/create)")
            .raw_handler(
                one_string_argument("message", "The message to show the user"),
                |args: JsonObject, cx: RequestContext| async move {
                    let message = args.get("message").and_then(Value::as_str).unwrap_or("");
                    let answer = cx.elicit_form("user_info", message, user_info_form())?;
                    Ok::<_, ToolError>(format!("User response: {}", elicit_summary(&answer)))
                },
            ),
        ToolBuilder::new("test_elicitation_sep1034_defaults")
            .description("Elicits a form with a default for every primitive type (SEP-1034)")
            .handler(|_: NoArgs, cx: RequestContext| async move {
                let answer = cx.elicit_form(
                    "defaults",
                    "Please review and update the form fields with defaults",
                    sep1034_defaults_form(),
                )?;
                Ok::<_, ToolError>(format!(
                    "Elicitation completed: {}",
                    elicit_summary(&answer)
                ))
            }),
        ToolBuilder::new("test_elicitation_sep1330_enums")
            .description("Elicits a form with all five enum variants (SEP-1330)")
            .handler(|_: NoArgs, cx: RequestContext| async move {
                let answer = cx.elicit_form(
                    "enums",
                    "Please select options from the enum fields",
                    sep1330_enums_form(),
                )?;
                Ok::<_, ToolError>(format!(
                    "Elicitation completed: {}",
                    elicit_summary(&answer)
                ))
            }),
        ToolBuilder::new("test_reconnection")
            .description(
                "Closes its SSE stream mid-call; the result comes after the client reconnects",
            )
            .handler(|_: NoArgs, cx: RequestContext| async move {
                // A message before the result makes the legacy HTTP transport answer
                // with an SSE stream (a lone result is sent as plain JSON). Legacy
                // sessions log at every level until logging/setLevel; in the
                // 2026-07-28 era this is sent only when the request asks for logs.
                cx.log(
                    toolwire::protocol::LoggingLevel::Info,
                    Some("conformance"),
                    "test_reconnection: closing the stream",
                )
                .await;
                // Ends this HTTP connection: the client resumes with
                // Last-Event-ID and reads the result on the new one.
                cx.close_stream();
                tokio::time::sleep(Duration::from_millis(200)).await;
                "Reconnection test completed"
            }),
    ]
}

// ---------------------------------------------------------------------------
// Resources

fn resources() -> Vec<ResourceBuilder> {
    vec![
        ResourceBuilder::new("test://static-text", "static-text")
            .description("A static text resource")
            .mime_type("text/plain")
            .handler(|req: ReadRequest, _cx: RequestContext| async move {
                Ok(vec![text_contents(req.uri, "text/plain", STATIC_TEXT)])
            }),
        ResourceBuilder::new("test://static-binary", "static-binary")
            .description("A static binary resource (a PNG image)")
            .mime_type("image/png")
            .handler(|req: ReadRequest, _cx: RequestContext| async move {
                let blob = BlobResourceContents {
                    uri: req.uri,
                    mime_type: Some("image/png".to_owned()),
                    blob: PNG.to_owned(),
                    meta: None,
                };
                ReadResult::Ok(vec![ResourceContents::Blob(blob)])
            }),
        // resources-subscribe and resources-unsubscribe (re)subscribe to this URI.
        ResourceBuilder::new("test://watched-resource", "watched-resource")
            .description("A resource clients can subscribe to")
            .mime_type("text/plain")
            .handler(|req: ReadRequest, _cx: RequestContext| async move {
                Ok(vec![text_contents(req.uri, "text/plain", WATCHED_TEXT)])
            }),
    ]
}

fn template() -> ResourceTemplateBuilder {
    ResourceTemplateBuilder::new("test://template/{id}/data", "template")
        .description("A resource template with one variable")
        .mime_type("application/json")
        .handler(|req: ReadRequest, _cx: RequestContext| async move {
            let id = req.variables.get("id").cloned().unwrap_or_default();
            let text =
                json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
            Ok(vec![text_contents(
                req.uri,
                "application/json",
                text.to_string(),
            )])
        })
}

// ---------------------------------------------------------------------------
// Prompts

fn user(content: ContentBlock) -> PromptMessage {
    PromptMessage {
        role: Role::User,
        content,
    }
}

fn prompts() -> Vec<PromptBuilder> {
    vec![
        PromptBuilder::new("test_simple_prompt")
            .description("A prompt without arguments")
            .handler(|_args, _cx| async {
                PromptResult::Ok(vec![user(ContentBlock::text(
                    "This is a simple prompt for testing.",
                ))])
            }),
        PromptBuilder::new("test_prompt_with_arguments")
            .description("A prompt with two required arguments")
            .argument("arg1", "First test argument", true)
            .argument("arg2", "Second test argument", true)
            .complete("arg1", |value: String, _others| async move {
                ["testValue1", "testValue2"]
                    .into_iter()
                    .filter(|v| v.starts_with(&value))
                    .map(str::to_owned)
                    .collect()
            })
            .handler(|args: BTreeMap<String, String>, _cx| async move {
                let get = |k: &str| args.get(k).cloned().unwrap_or_default();
                Ok(vec![user(ContentBlock::text(format!(
                    "Prompt with arguments: arg1='{}', arg2='{}'",
                    get("arg1"),
                    get("arg2")
                )))])
            }),
        PromptBuilder::new("test_prompt_with_embedded_resource")
            .description("A prompt that embeds a resource")
            .argument("resourceUri", "URI of the resource to embed", true)
            .handler(|args: BTreeMap<String, String>, _cx| async move {
                let uri = args.get("resourceUri").cloned().unwrap_or_default();
                Ok(vec![
                    user(embedded(text_contents(
                        uri,
                        "text/plain",
                        "Embedded resource content for testing.",
                    ))),
                    user(ContentBlock::text(
                        "Please process the embedded resource above.",
                    )),
                ])
            }),
        PromptBuilder::new("test_prompt_with_image")
            .description("A prompt with an image")
            .handler(|_args, _cx| async {
                PromptResult::Ok(vec![
                    user(ContentBlock::image(PNG, "image/png")),
                    user(ContentBlock::text("Please analyze the image above.")),
                ])
            }),
        PromptBuilder::new("test_input_required_result_prompt")
            .description("A prompt that asks the user for context first")
            .handler(|_args, cx: RequestContext| async move {
                let answer = cx.elicit_form(
                    "user_context",
                    "What context should the prompt use?",
                    string_form("context"),
                )?;
                Ok(vec![user(ContentBlock::text(format!(
                    "Context: {}",
                    field(&answer, "context")
                )))])
            }),
    ]
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(object) => object,
        _ => JsonObject::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fixture_builds_with_test_simple_text_first() {
        let server = fixture_server();
        let names = server.tool_names();
        assert_eq!(names[0], "test_simple_text");
        for name in [
            "test_trigger_tool_change",
            "test_trigger_prompt_change",
            "test_input_required_result_capabilities",
            "json_schema_2020_12_tool",
            "test_x_mcp_header",
            "test_tool_with_logging",
            "test_sampling",
            "test_elicitation",
            "test_elicitation_sep1034_defaults",
            "test_elicitation_sep1330_enums",
            "test_reconnection",
        ] {
            assert!(names.iter().any(|n| n == name), "{name} is missing");
        }
    }
}
