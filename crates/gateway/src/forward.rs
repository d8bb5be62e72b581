//! The call path of one exposed tool: its downstream definition (the
//! upstream's, renamed) and the handler forwarding each call.
//!
//! The server's own duties apply to every forwarded call: arguments are
//! checked against the upstream's input schema before anything is sent,
//! `structuredContent` against its output schema, results are sanitised,
//! scopes and rate limits enforced, and a downstream cancellation cancels
//! the upstream request.

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use tokio::sync::mpsc;
use toolwire_client::{Client, Error as ClientError, RequestNotification, RequestOptions};
use toolwire_server::audit::arguments_digest;
use toolwire_server::protocol::{CallToolResult, JsonObject, Prompt, Resource, Tool};
use toolwire_server::{
    Principal, PromptBuilder, ReadRequest, RequestContext, ResourceBuilder, ToolBuilder, ToolError,
};

use crate::audit::{AuditLog, AuditRecord};
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
    pub(crate) upstream: String,
    pub(crate) exposed: String,
    pub(crate) upstream_tool: String,
    pub(crate) audit: Option<Arc<AuditLog>>,
}

impl Route {
    /// Forwards one call and records it.
    async fn call(&self, args: JsonObject, cx: RequestContext) -> CallToolResult {
        let started = Instant::now();
        // Only the audit log needs the digest.
        let digest = self.audit.as_ref().map(|_| arguments_digest(&args));
        let mut options = RequestOptions::new().cancel_on(cx.cancellation().clone());
        let (progress_tx, mut progress) = mpsc::unbounded_channel();
        if cx.wants_progress() {
            options = options.on_notification(move |notification| {
                if let RequestNotification::Progress(p) = notification {
                    let _ = progress_tx.send(p);
                }
            });
        }
        let call = self
            .client
            .call_tool_with(&self.upstream_tool, Value::Object(args), &options);
        tokio::pin!(call);
        // The upstream's progress is passed on as it comes.
        let outcome = loop {
            tokio::select! {
                outcome = &mut call => break outcome,
                Some(p) = progress.recv() => {
                    cx.progress(p.progress, p.total, p.message.as_deref()).await;
                }
            }
        };
        // Progress that arrived just before the result is still queued.
        while let Ok(p) = progress.try_recv() {
            cx.progress(p.progress, p.total, p.message.as_deref()).await;
        }
        let (result, label) = self.answer(outcome);
        if let (Some(audit), Some(digest)) = (&self.audit, digest) {
            audit.write(&AuditRecord {
                event: "call",
                time_ms: AuditRecord::now_ms(),
                principal: principal_name(cx.principal()),
                upstream: self.upstream.clone(),
                tool: self.exposed.clone(),
                upstream_tool: self.upstream_tool.clone(),
                arguments_sha256: digest,
                outcome: label,
                duration_ms: AuditRecord::millis(started.elapsed()),
            });
        }
        result
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
    let upstream = upstream.to_owned();
    builder.handler(move |request: ReadRequest, _cx| {
        let (client, upstream) = (Arc::clone(&client), upstream.clone());
        async move {
            match client.read_resource(&request.uri).await {
                Ok(read) => Ok(read.value.contents),
                Err(error) => Err(ToolError::new(format!(
                    "upstream {upstream:?} failed: {error}"
                ))),
            }
        }
    })
}
