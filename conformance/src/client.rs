//! The fixture client: what the official suite's client scenarios expect a
//! 2026-07-28 client to do, built only on toolwire's public client API.
//!
//! The suite starts one mock server per scenario and runs
//! `conformance-client <url>` with the scenario's name in
//! `MCP_CONFORMANCE_SCENARIO` (see `../shared/conformance/FIXTURES.md`, Part B).
//! Each scenario is a short script of ordinary client calls; the checks are
//! made by the mock on what arrives on the wire.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use toolwire::client::auth::{AuthError, FollowRedirect, OAuth, PreRegistered};
use toolwire::client::transport::{HttpTransport, ProtocolMode};
use toolwire::client::{Client, Error, ToolInfo, TransportError};
use toolwire::protocol::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ElicitValue, JsonObject, OneOrMany, Prompt, Role, Root, SamplingContent, TextContent,
};

/// The `clientInfo` name sent on every request.
pub const CLIENT_NAME: &str = "toolwire-conformance-client";

/// The Client ID Metadata Document URL the suite's auth/basic-cimd expects.
pub const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// The redirect URI registered and sent; nothing listens there, the
/// redirect is read from the authorization endpoint's `Location`.
pub const REDIRECT_URI: &str = "http://localhost:3000/callback";

/// One run of the fixture client.
#[derive(Debug, Clone, Default)]
pub struct Run {
    /// The scenario (`MCP_CONFORMANCE_SCENARIO`); unknown names get the default script.
    pub scenario: String,
    /// The mock server's URL, used exactly as given.
    pub url: String,
    /// `MCP_CONFORMANCE_CONTEXT`, parsed (`null` when not set).
    pub context: Value,
    /// The era the suite's mock speaks, from `MCP_CONFORMANCE_PROTOCOL_VERSION`
    /// (its legacy mocks answer modern requests too, so auto detection
    /// would take them for modern servers).
    pub mode: ProtocolMode,
}

/// The era to speak for the revision the suite runs.
pub fn mode_for(version: Option<&str>) -> ProtocolMode {
    match version {
        Some(v) if toolwire::protocol::is_legacy_version(v) => ProtocolMode::Legacy,
        _ => ProtocolMode::Auto,
    }
}

/// Builds the client every scenario uses: HTTP to `url`, with handlers for
/// every kind of input request, so it declares `elicitation`, `sampling`
/// and `roots`.
pub fn fixture_client(url: &str, mode: ProtocolMode) -> Result<Client, Error> {
    Ok(client_on(
        HttpTransport::builder(url).protocol(mode).build()?,
    ))
}

/// The fixture client for the `auth/*` scenarios: the same client, over a
/// transport that authorizes with OAuth when the mock answers 401.
pub fn authorizing_client(url: &str, context: &Value, mode: ProtocolMode) -> Result<Client, Error> {
    let oauth = oauth(context).map_err(TransportError::from)?;
    let transport = HttpTransport::builder(url)
        .oauth(oauth)
        .protocol(mode)
        .build()?;
    Ok(client_on(transport))
}

/// OAuth as the suite's mock authorization servers expect it: they approve at
/// once with a redirect, which the client reads instead of a browser; a
/// Client ID Metadata Document URL where they support one; pre-registered
/// credentials from `MCP_CONFORMANCE_CONTEXT` (`client_id`, `client_secret`,
/// `issuer`) for auth/pre-registration.
pub fn oauth(context: &Value) -> Result<OAuth, AuthError> {
    let mut builder = OAuth::builder(FollowRedirect::new(REDIRECT_URI))
        .client_name(CLIENT_NAME)
        .client_metadata_url(CLIENT_METADATA_URL);
    let field = |name: &str| context.get(name).and_then(Value::as_str);
    if let (Some(issuer), Some(client_id)) = (field("issuer"), field("client_id")) {
        let mut credentials = PreRegistered::new(issuer, client_id);
        if let Some(secret) = field("client_secret") {
            credentials = credentials.secret(secret);
        }
        builder = builder.pre_registered(credentials);
    }
    builder.build()
}

fn client_on(transport: HttpTransport) -> Client {
    Client::builder(transport)
        .name("conformance")
        .client_info(CLIENT_NAME, env!("CARGO_PKG_VERSION"))
        .elicitation(|params: ElicitRequestParams, _cx| async move { Ok(accept_form(&params)) })
        .sampling(|_: CreateMessageRequestParams, _cx| async { Ok(sampled()) })
        .roots(vec![Root {
            name: Some("tmp".into()),
            ..Root::new("file:///tmp")
        }])
        .max_rounds(5)
        .build()
}

impl Run {
    /// Runs the scenario's script. Fails when a step the scenario cannot do
    /// without fails (e.g. the first `tools/list`); a failing tool call in a
    /// loop over many is reported on stderr and the loop goes on.
    pub async fn execute(&self) -> Result<(), Error> {
        let client = if self.scenario.starts_with("auth/") {
            authorizing_client(&self.url, &self.context, self.mode)?
        } else {
            fixture_client(&self.url, self.mode)?
        };
        match self.scenario.as_str() {
            "tools_call" => {
                client.list_tools().await?;
                client
                    .call_tool("add_numbers", json!({"a": 2, "b": 3}))
                    .await?;
            }
            // Every request is checked for its version header and `_meta`; the
            // first one is refused with -32022 and must be retried.
            "request-metadata" | "json-schema-ref-no-deref" => {
                client.list_tools().await?;
            }
            "http-custom-headers" => {
                client.list_tools().await?;
                for call in self.tool_calls() {
                    report(&call.0, client.call_tool(&call.0, &call.1).await);
                }
            }
            "json-schema-2020-12-preservation" => {
                let tools = client.list_tools().await?;
                let focal = tools
                    .tools
                    .iter()
                    .find(|t| t.name() == "json_schema_2020_12_tool")
                    .ok_or_else(|| Error::UnknownTool("json_schema_2020_12_tool".into()))?;
                let schema = Value::Object(focal.tool.input_schema.clone());
                client
                    .call_tool("json_schema_echo", json!({ "schema": schema }))
                    .await?;
            }
            "http-standard-headers" => {
                call_every_tool(&client).await?;
                read_every_resource(&client).await;
                get_every_prompt(&client).await;
            }
            // sep-2322-client-request-state, http-invalid-tool-headers, auth/*
            // and the rest: list the tools, call each usable one (the auth/*
            // mocks want tools/list, then tools/call, each authorized).
            _ => call_every_tool(&client).await?,
        }
        Ok(())
    }

    /// `toolCalls` from the context: `(name, arguments)` pairs.
    fn tool_calls(&self) -> Vec<(String, Value)> {
        let Some(calls) = self.context.get("toolCalls").and_then(Value::as_array) else {
            return Vec::new();
        };
        calls
            .iter()
            .filter_map(|call| {
                let name = call.get("name")?.as_str()?.to_owned();
                let arguments = call.get("arguments").cloned().unwrap_or(json!({}));
                Some((name, arguments))
            })
            .collect()
    }
}

/// Lists the tools and calls every usable one (the client has already left
/// out definitions that break the rules) with arguments fitting its schema.
async fn call_every_tool(client: &Client) -> Result<(), Error> {
    let tools = client.list_tools().await?;
    for rejected in &tools.rejected {
        eprintln!(
            "conformance-client: left out tool {:?}: {}",
            rejected.name, rejected.reason
        );
    }
    for tool in &tools.tools {
        let arguments = sample_arguments(tool);
        report(tool.name(), client.call_tool(tool.name(), arguments).await);
    }
    Ok(())
}

async fn read_every_resource(client: &Client) {
    match client.list_resources().await {
        Ok(resources) => {
            for resource in &resources.value {
                report(&resource.uri, client.read_resource(&resource.uri).await);
            }
        }
        Err(e) => eprintln!("conformance-client: resources/list: {e}"),
    }
}

async fn get_every_prompt(client: &Client) {
    match client.list_prompts().await {
        Ok(prompts) => {
            for prompt in &prompts.value {
                let arguments = prompt_arguments(prompt);
                report(
                    &prompt.name,
                    client.get_prompt(&prompt.name, arguments).await,
                );
            }
        }
        Err(e) => eprintln!("conformance-client: prompts/list: {e}"),
    }
}

fn report<T>(target: &str, outcome: Result<T, Error>) {
    if let Err(e) = outcome {
        eprintln!("conformance-client: {target}: {e}");
    }
}

/// Arguments for a tool: a plausible value for every required property.
pub fn sample_arguments(tool: &ToolInfo) -> Value {
    let schema = &tool.tool.input_schema;
    let properties = schema.get("properties").and_then(Value::as_object);
    let mut arguments = JsonObject::new();
    let required = schema.get("required").and_then(Value::as_array);
    for name in required.into_iter().flatten().filter_map(Value::as_str) {
        let property = properties.and_then(|p| p.get(name)).unwrap_or(&Value::Null);
        arguments.insert(name.to_owned(), sample_value(property));
    }
    Value::Object(arguments)
}

fn sample_value(schema: &Value) -> Value {
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|v| v.first())
    {
        return first.clone();
    }
    if let Some(constant) = schema.get("const") {
        return constant.clone();
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("number" | "integer") => json!(1),
        Some("boolean") => json!(true),
        Some("object") => json!({}),
        Some("array") => json!([]),
        _ => json!("us-west1"),
    }
}

/// A value for every required prompt argument.
fn prompt_arguments(prompt: &Prompt) -> BTreeMap<String, String> {
    prompt
        .arguments
        .iter()
        .flatten()
        .filter(|a| a.required == Some(true))
        .map(|a| (a.name.clone(), "test".to_owned()))
        .collect()
}

/// Accepts a form with a value for every field: its default when the
/// schema gives one (what a user accepting the pre-filled form sends), else
/// one of the right type; declines URL mode (nobody visits the page).
pub fn accept_form(params: &ElicitRequestParams) -> ElicitResult {
    let ElicitRequestParams::Form(form) = params else {
        return ElicitResult::decline();
    };
    let properties = form
        .requested_schema
        .get("properties")
        .and_then(Value::as_object);
    let content = properties
        .into_iter()
        .flatten()
        .map(|(name, schema)| (name.clone(), form_value(schema)))
        .collect();
    ElicitResult::accept(content)
}

fn form_value(schema: &Value) -> ElicitValue {
    let default = schema.get("default").cloned();
    if let Some(value) = default.and_then(|d| serde_json::from_value(d).ok()) {
        return value;
    }
    let first_choice = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|v| v.first())
        .and_then(Value::as_str);
    if let Some(choice) = first_choice {
        return ElicitValue::String(choice.to_owned());
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("boolean") => ElicitValue::Boolean(true),
        Some("number" | "integer") => ElicitValue::Number(1.into()),
        Some("array") => ElicitValue::StringArray(Vec::new()),
        _ => ElicitValue::String("test".into()),
    }
}

/// The fixed answer to every sampling request.
pub fn sampled() -> CreateMessageResult {
    CreateMessageResult {
        role: Role::Assistant,
        content: OneOrMany::One(SamplingContent::Text(TextContent {
            text: "sampled".into(),
            ..Default::default()
        })),
        model: "toolwire-conformance".into(),
        stop_reason: Some("endTurn".into()),
        meta: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_are_answered_by_type() {
        let params = ElicitRequestParams::form(
            "Confirm?",
            json!({"type": "object", "properties": {
                "confirmed": {"type": "boolean"},
                "n": {"type": "integer"},
                "name": {"type": "string"},
                "color": {"type": "string", "enum": ["red", "green"]}
            }})
            .as_object()
            .unwrap()
            .clone(),
        );
        let answer = serde_json::to_value(accept_form(&params)).unwrap();
        assert_eq!(
            answer,
            json!({"action": "accept", "content": {
                "color": "red", "confirmed": true, "n": 1, "name": "test"
            }})
        );
    }

    #[test]
    fn sample_arguments_fill_required_properties_only() {
        let tool: toolwire::protocol::Tool = serde_json::from_value(json!({
            "name": "t",
            "inputSchema": {"type": "object", "properties": {
                "region": {"type": "string"}, "n": {"type": "number"}, "opt": {"type": "string"}
            }, "required": ["region", "n"]}
        }))
        .unwrap();
        let info = ToolInfo {
            tool,
            annotations_trusted: false,
        };
        assert_eq!(
            sample_arguments(&info),
            json!({"region": "us-west1", "n": 1})
        );
    }
}
