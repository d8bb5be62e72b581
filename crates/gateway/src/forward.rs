//! The call path of one exposed tool: its downstream definition (the
//! upstream's, renamed) and the handler forwarding each call.
//!
//! The server's own duties apply to every forwarded call: arguments are
//! checked against the upstream's input schema before anything is sent,
//! `structuredContent` against its output schema, results are sanitised,
//! scopes and rate limits enforced, and a downstream cancellation cancels
//! the upstream request. Input the upstream asks for goes to the client
//! (see [`crate::bridge`]).

use std::sync::Arc;

use tokio::sync::watch;
use toolwire_client::{Client, Error as ClientError};
use toolwire_server::protocol::{
    CallToolResult, ErrorObject, JsonObject, Prompt, Resource, ResourceTemplate, Tool, code,
};
use toolwire_server::{
    BoxFuture, InputRequired, Principal, PromptBuilder, ReadRequest, ReadResult, RequestContext,
    ResourceBuilder, ResourceTemplateBuilder, ToolBuilder, ToolError, ToolOutput,
};

use crate::audit::{AuditLog, AuditRecord};
use crate::bridge::{Asked, Parked, Resume, Step, UpstreamCall, can_answer};
use crate::config::UpstreamConfig;

/// The downstream definition of an upstream tool: its name exposed, its
/// schemas kept exactly, its handler forwarding the call.
pub(crate) fn forwarding_tool(
    name: &str,
    tool: Tool,
    upstream: &UpstreamConfig,
    scope: Option<String>,
    route: Arc<Route>,
) -> ToolBuilder {
    let mut builder = ToolBuilder::new(name).raw_handler(tool.input_schema, move |args, cx| {
        let route = Arc::clone(&route);
        async move { route.call(args, cx).await }
    });
    if let Some(title) = tool.title {
        builder = builder.title(title);
    }
    if let Some(description) = tool.description {
        builder = builder.description(description);
    }
    if let Some(annotations) = tool.annotations {
        builder = builder.annotations(annotations);
    }
    if let Some(schema) = tool.output_schema {
        builder = builder.output_schema(schema);
    }
    for icon in tool.icons.into_iter().flatten() {
        builder = builder.icon(icon);
    }
    if let Some(limit) = upstream.rate_limit {
        builder = builder.rate_limit(limit);
    }
    if let Some(scope) = scope {
        builder = builder.require_scopes([scope]);
    }
    builder
}

/// The principal as audit records name it: its subject, or `anonymous`.
fn principal_name(principal: &Principal) -> String {
    principal
        .subject
        .clone()
        .unwrap_or_else(|| "anonymous".to_owned())
}

/// Where one exposed tool's calls go.
pub(crate) struct Route {
    pub(crate) client: Arc<Client>,
    /// Set on the first call: a lazy upstream starts being followed.
    pub(crate) started: Arc<watch::Sender<bool>>,
    pub(crate) upstream: String,
    pub(crate) exposed: String,
    pub(crate) upstream_tool: String,
    pub(crate) audit: Option<Arc<AuditLog>>,
    /// The gateway's calls waiting for input.
    pub(crate) parked: Arc<Parked>,
}

impl Route {
    /// Forwards one call, or resumes it when the client brings the input
    /// it was waiting for, and records it once it ends.
    async fn call(&self, args: JsonObject, cx: RequestContext) -> Result<ToolOutput, ToolError> {
        self.started
            .send_if_modified(|started| !std::mem::replace(started, true));
        let mut call = match cx.state::<Resume>() {
            None => UpstreamCall::start(
                Arc::clone(&self.client),
                self.upstream_tool.clone(),
                args,
                &cx,
            ),
            Some(resume) => self.resume(&resume, &cx)?,
        };
        loop {
            match call.next(&cx).await {
                Step::Ask(asked) if !can_answer(cx.client_capabilities(), &asked.request) => {
                    let method = asked.request.method();
                    let _ = asked.reply.send(Err(format!(
                        "the client did not declare the capability for {method}"
                    )
                    .into()));
                }
                Step::Ask(asked) => return self.ask(call, asked),
                Step::Done(Err(ClientError::Protocol {
                    code: code::MISSING_REQUIRED_CLIENT_CAPABILITY,
                    message,
                    data,
                })) => {
                    // The client's own doing: it learns which capability, as
                    // it would from the upstream directly.
                    self.record(&call, &cx, "refused");
                    let mut error =
                        ErrorObject::new(code::MISSING_REQUIRED_CLIENT_CAPABILITY, message);
                    error.data = data;
                    return Err(error.into());
                }
                Step::Done(outcome) => {
                    let (result, label) = self.answer(outcome);
                    self.record(&call, &cx, label);
                    return Ok(ToolOutput::Complete(result));
                }
                Step::Lost(reason) => {
                    self.record(&call, &cx, "upstream_error");
                    let upstream = &self.upstream;
                    let text = format!("upstream {upstream:?} failed: {reason}");
                    return Ok(ToolOutput::Complete(CallToolResult::error(text)));
                }
            }
        }
    }

    /// Parks `call` and asks the client for what the upstream asked.
    fn ask(&self, mut call: UpstreamCall, asked: Asked) -> Result<ToolOutput, ToolError> {
        let key = call.next_key();
        let request = asked.request.clone();
        match self.parked.park(call, key.clone(), asked.reply) {
            Ok(id) => Ok(ToolOutput::InputRequired(
                InputRequired::new()
                    .ask(key, &request)
                    .with_state(&Resume { call: id }),
            )),
            Err((_call, reply)) => {
                let _ = reply.send(Err("too many calls are waiting for input".into()));
                Err(ToolError::new(
                    "the gateway has too many calls waiting for input; try again later",
                ))
            }
        }
    }

    /// The parked call a retry resumes, given the client's answer.
    fn resume(&self, resume: &Resume, cx: &RequestContext) -> Result<UpstreamCall, ToolError> {
        let Some(waiting) = self.parked.resume(&resume.call) else {
            return Err(ErrorObject::invalid_params(
                "the call this answer is for is no longer waiting (it expired, or another \
                 gateway instance holds it); call the tool again",
            )
            .into());
        };
        let answer = match cx.input_response(&waiting.key) {
            Some(answer) => Ok(answer.clone()),
            None => Err(format!("the client did not answer {:?}", waiting.key).into()),
        };
        let _ = waiting.reply.send(answer);
        Ok(waiting.call)
    }

    /// Writes the call's audit record.
    fn record(&self, call: &UpstreamCall, cx: &RequestContext, outcome: &'static str) {
        if let Some(audit) = &self.audit {
            audit.write(&AuditRecord {
                event: "call",
                time_ms: AuditRecord::now_ms(),
                principal: principal_name(cx.principal()),
                upstream: self.upstream.clone(),
                tool: self.exposed.clone(),
                upstream_tool: self.upstream_tool.clone(),
                arguments_sha256: call.digest.clone(),
                outcome,
                duration_ms: AuditRecord::millis(call.started.elapsed()),
            });
        }
    }

    /// The downstream result of an upstream outcome, and its audit label.
    /// Failures of the upstream become tool execution errors: the model
    /// can read them and try something else.
    fn answer(
        &self,
        outcome: Result<CallToolResult, ClientError>,
    ) -> (CallToolResult, &'static str) {
        let upstream = &self.upstream;
        match outcome {
            Ok(result) => (result, "ok"),
            Err(ClientError::ToolExecution { result, .. }) => (*result, "tool_error"),
            Err(ClientError::Timeout(after)) => (
                CallToolResult::error(format!(
                    "upstream {upstream:?} did not answer within {} s",
                    after.as_secs_f64()
                )),
                "timeout",
            ),
            Err(ClientError::Cancelled) => {
                (CallToolResult::error("the call was cancelled"), "cancelled")
            }
            Err(error) => (
                CallToolResult::error(format!("upstream {upstream:?} failed: {error}")),
                "upstream_error",
            ),
        }
    }
}

/// The downstream definition of an upstream prompt: its name exposed, its
/// arguments as declared, `prompts/get` forwarded under its own name.
pub(crate) fn forwarding_prompt(
    name: &str,
    prompt: Prompt,
    upstream: &str,
    client: Arc<Client>,
) -> PromptBuilder {
    let mut builder = PromptBuilder::new(name);
    if let Some(title) = prompt.title {
        builder = builder.title(title);
    }
    if let Some(description) = prompt.description {
        builder = builder.description(description);
    }
    for argument in prompt.arguments.into_iter().flatten() {
        let description = argument.description.unwrap_or_default();
        let required = argument.required.unwrap_or(false);
        builder = builder.argument(argument.name, description, required);
    }
    let original = prompt.name;
    let upstream = upstream.to_owned();
    builder.handler(move |args, _cx| {
        let (client, original, upstream) =
            (Arc::clone(&client), original.clone(), upstream.clone());
        async move {
            match client.get_prompt(&original, args).await {
                Ok(result) => Ok(result.messages),
                Err(error) => Err(ToolError::new(format!(
                    "upstream {upstream:?} failed: {error}"
                ))),
            }
        }
    })
}

/// The downstream definition of an upstream resource: its URI and
/// metadata kept, reads forwarded.
pub(crate) fn forwarding_resource(
    resource: Resource,
    upstream: &str,
    client: Arc<Client>,
) -> ResourceBuilder {
    let mut builder = ResourceBuilder::new(resource.uri, resource.name);
    if let Some(title) = resource.title {
        builder = builder.title(title);
    }
    if let Some(description) = resource.description {
        builder = builder.description(description);
    }
    if let Some(mime_type) = resource.mime_type {
        builder = builder.mime_type(mime_type);
    }
    if let Some(size) = resource.size {
        builder = builder.size(size);
    }
    if let Some(annotations) = resource.annotations {
        builder = builder.annotations(annotations);
    }
    builder.handler(forwarding_read(upstream, client))
}

/// The downstream definition of an upstream resource template: its URI
/// template and metadata kept, reads of matching URIs forwarded.
pub(crate) fn forwarding_template(
    template: ResourceTemplate,
    upstream: &str,
    client: Arc<Client>,
) -> ResourceTemplateBuilder {
    let mut builder = ResourceTemplateBuilder::new(template.uri_template, template.name);
    if let Some(title) = template.title {
        builder = builder.title(title);
    }
    if let Some(description) = template.description {
        builder = builder.description(description);
    }
    if let Some(mime_type) = template.mime_type {
        builder = builder.mime_type(mime_type);
    }
    if let Some(annotations) = template.annotations {
        builder = builder.annotations(annotations);
    }
    for icon in template.icons.into_iter().flatten() {
        builder = builder.icon(icon);
    }
    builder.handler(forwarding_read(upstream, client))
}

/// The read handler of a forwarded resource or template: `resources/read`
/// of the same URI upstream.
fn forwarding_read(
    upstream: &str,
    client: Arc<Client>,
) -> impl Fn(ReadRequest, RequestContext) -> BoxFuture<ReadResult> + Send + Sync + 'static {
    let upstream = upstream.to_owned();
    move |request: ReadRequest, _cx| {
        let (client, upstream) = (Arc::clone(&client), upstream.clone());
        Box::pin(async move {
            match client.read_resource(&request.uri).await {
                Ok(read) => Ok(read.value.contents),
                Err(error) => Err(ToolError::new(format!(
                    "upstream {upstream:?} failed: {error}"
                ))),
            }
        }) as BoxFuture<ReadResult>
    }
}
