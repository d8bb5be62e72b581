//! The call path of one exposed tool: its downstream definition (the
//! upstream's, renamed) and the handler forwarding each call.
//!
//! The server's own duties apply to every forwarded call: arguments are
//! checked against the upstream's input schema before anything is sent,
//! `structuredContent` against its output schema, results are sanitised,
//! scopes and rate limits enforced, and a downstream cancellation cancels
//! the upstream request. Input the upstream asks for goes to the client
//! (see [`crate::bridge`]). A client that declares the Tasks extension gets
//! a task of the gateway's own for each call (see [`crate::tasks`]).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::watch;
use toolwire_client::{Client, Error as ClientError};
use toolwire_server::audit::arguments_digest;
use toolwire_server::protocol::{
    CallToolResult, ErrorObject, JsonObject, Prompt, PromptMessage, Resource, ResourceTemplate,
    Tool, code,
};
use toolwire_server::{
    BoxFuture, Principal, PromptBuilder, ReadRequest, ReadResult, RequestContext, ResourceBuilder,
    ResourceTemplateBuilder, TaskSupport, ToolBuilder, ToolError, ToolOutput,
};

use crate::audit::{AuditLog, AuditRecord};
use crate::bridge::{ParkedRequests, Round, UpstreamCall, run_round};
use crate::config::UpstreamConfig;

/// The downstream definition of an upstream tool: its name exposed, its
/// schemas kept exactly, its handler forwarding the call; run as a task of
/// the gateway's when the request declares the Tasks extension.
pub(crate) fn forwarding_tool(
    name: &str,
    tool: Tool,
    upstream: &UpstreamConfig,
    scope: Option<String>,
    route: Arc<Route>,
) -> ToolBuilder {
    let mut builder = ToolBuilder::new(name)
        .task_support(TaskSupport::Optional)
        .raw_handler(tool.input_schema, move |args, cx| {
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

/// What one call's audit record says besides its outcome and duration.
struct CallAudit {
    log: Arc<AuditLog>,
    principal: String,
    upstream: String,
    tool: String,
    upstream_tool: String,
    digest: String,
}

impl CallAudit {
    /// Writes the record of the call started at `started`.
    fn write(&self, started: Instant, outcome: &'static str) {
        self.log.write(AuditRecord {
            event: "call",
            time_ms: AuditRecord::now_ms(),
            principal: self.principal.clone(),
            upstream: self.upstream.clone(),
            tool: self.tool.clone(),
            upstream_tool: self.upstream_tool.clone(),
            arguments_sha256: self.digest.clone(),
            outcome,
            duration_ms: AuditRecord::millis(started.elapsed()),
        });
    }
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
    /// The gateway's requests waiting for input.
    pub(crate) parked: Arc<ParkedRequests>,
}

impl Route {
    /// Forwards one call, or resumes it when the client brings the input
    /// it was waiting for, and records it once it ends (as `cancelled` when
    /// it is dropped first: the client cancelled, went away or never
    /// answered).
    async fn call(&self, args: JsonObject, cx: RequestContext) -> Result<ToolOutput, ToolError> {
        self.started
            .send_if_modified(|started| !std::mem::replace(started, true));
        let audit = self.audit.as_ref().map(|log| {
            Arc::new(CallAudit {
                log: Arc::clone(log),
                principal: principal_name(cx.principal()),
                upstream: self.upstream.clone(),
                tool: self.exposed.clone(),
                upstream_tool: self.upstream_tool.clone(),
                // The server's own audit record has usually computed it.
                digest: match cx.arguments_sha256() {
                    Some(digest) => digest.to_owned(),
                    None => arguments_digest(&args),
                },
            })
        });
        let start = || {
            let (client, tool) = (Arc::clone(&self.client), self.upstream_tool.clone());
            let call = UpstreamCall::start(&cx, move |options| async move {
                client.call_tool_object_with(&tool, args, &options).await
            });
            match audit.clone() {
                Some(audit) => call.on_abandon(move |started| audit.write(started, "cancelled")),
                None => call,
            }
        };
        let (call, outcome) = match run_round(&self.parked.calls, &cx, start).await? {
            Round::Ask(ask) => return Ok(ToolOutput::InputRequired(ask)),
            Round::Done(call, outcome) => (call, outcome),
        };
        let record = |outcome| {
            if let Some(audit) = &audit {
                audit.write(call.started, outcome);
            }
        };
        match outcome {
            Err(ClientError::Protocol {
                code: code::MISSING_REQUIRED_CLIENT_CAPABILITY,
                message,
                data,
            }) => {
                // The client's own doing: it learns which capability, as it
                // would from the upstream directly.
                record("refused");
                let mut error = ErrorObject::new(code::MISSING_REQUIRED_CLIENT_CAPABILITY, message);
                error.data = data;
                Err(error.into())
            }
            outcome => {
                let (result, label) = self.answer(outcome);
                record(label);
                Ok(ToolOutput::Complete(result))
            }
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

/// What forwarding a prompt or resource needs: the upstream's name and
/// client, and where its requests wait for input.
#[derive(Clone)]
pub(crate) struct UpstreamLink {
    pub(crate) upstream: String,
    pub(crate) client: Arc<Client>,
    pub(crate) parked: Arc<ParkedRequests>,
}

impl UpstreamLink {
    /// The downstream error for an upstream failure.
    fn failed(&self, error: impl std::fmt::Display) -> ToolError {
        ToolError::new(format!("upstream {:?} failed: {error}", self.upstream))
    }

    /// `prompts/get` upstream, input rounds passed on to the client.
    async fn get_prompt(
        self,
        name: String,
        args: BTreeMap<String, String>,
        cx: RequestContext,
    ) -> Result<Vec<PromptMessage>, ToolError> {
        let client = Arc::clone(&self.client);
        let start = || {
            UpstreamCall::start(&cx, move |options| async move {
                client.get_prompt_with(&name, args, &options).await
            })
        };
        match run_round(&self.parked.prompts, &cx, start).await? {
            Round::Ask(ask) => Err(ask.into()),
            Round::Done(_, Ok(result)) => Ok(result.messages),
            Round::Done(_, Err(error)) => Err(self.failed(error)),
        }
    }

    /// `resources/read` upstream, input rounds passed on to the client.
    async fn read(self, uri: String, cx: RequestContext) -> ReadResult {
        let client = Arc::clone(&self.client);
        let start = || {
            UpstreamCall::start(&cx, move |options| async move {
                client.read_resource_with(&uri, &options).await
            })
        };
        match run_round(&self.parked.reads, &cx, start).await? {
            Round::Ask(ask) => Err(ask.into()),
            Round::Done(_, Ok(read)) => Ok(read.value.contents),
            Round::Done(_, Err(error)) => Err(self.failed(error)),
        }
    }
}

/// The downstream definition of an upstream prompt: its name exposed, its
/// arguments as declared, `prompts/get` forwarded under its own name.
pub(crate) fn forwarding_prompt(name: &str, prompt: Prompt, link: UpstreamLink) -> PromptBuilder {
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
    builder.handler(move |args, cx| link.clone().get_prompt(original.clone(), args, cx))
}

/// The downstream definition of an upstream resource: its URI and
/// metadata kept, reads forwarded.
pub(crate) fn forwarding_resource(resource: Resource, link: UpstreamLink) -> ResourceBuilder {
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
    builder.handler(forwarding_read(link))
}

/// The downstream definition of an upstream resource template: its URI
/// template and metadata kept, reads of matching URIs forwarded.
pub(crate) fn forwarding_template(
    template: ResourceTemplate,
    link: UpstreamLink,
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
    builder.handler(forwarding_read(link))
}

/// The read handler of a forwarded resource or template: `resources/read`
/// of the same URI upstream.
fn forwarding_read(
    link: UpstreamLink,
) -> impl Fn(ReadRequest, RequestContext) -> BoxFuture<ReadResult> + Send + Sync + 'static {
    move |request: ReadRequest, cx| Box::pin(link.clone().read(request.uri, cx))
}
