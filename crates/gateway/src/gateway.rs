//! The gateway: every upstream's tools under exposed names, served by one
//! toolwire server that forwards each call to the upstream it came from.
//!
//! The server's own duties apply to every forwarded call: arguments are
//! checked against the upstream's input schema before anything is sent,
//! `structuredContent` against its output schema, results are sanitised,
//! scopes and rate limits enforced, and a downstream cancellation cancels
//! the upstream request.

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use toolwire_client::{Client, Error as ClientError, RequestOptions};
use toolwire_server::audit::arguments_digest;
use toolwire_server::protocol::{CallToolResult, JsonObject, Tool};
use toolwire_server::{
    Principal, RegistrationError, RequestContext, Server, ServerBuilder, StateKey, ToolBuilder,
};

use crate::audit::{AuditLog, AuditRecord};
use crate::config::{GatewayConfig, UpstreamConfig};
use crate::names::{Collision, NameTable, Origin, exposed_name};
use crate::upstream::{UpstreamError, client_for};

/// A tool the gateway serves, and where it comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExposedTool {
    /// The name downstream clients call it by.
    pub name: String,
    /// The upstream's name.
    pub upstream: String,
    /// Its name on the upstream.
    pub upstream_tool: String,
    /// The scope a caller needs, when one is configured.
    pub scope: Option<String>,
}

/// Why the gateway could not start.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// Two tools would be exposed under one name.
    #[error(
        "two tools would be exposed as {name:?}: {first_tool:?} of upstream {first:?} and \
         {second_tool:?} of upstream {second:?}; give one upstream another prefix, or deny one tool"
    )]
    Collision {
        /// The exposed name.
        name: String,
        /// The upstream that had it first.
        first: String,
        /// Its tool.
        first_tool: String,
        /// The upstream that wanted it too.
        second: String,
        /// Its tool.
        second_tool: String,
    },
    /// The audit file cannot be opened.
    #[error("cannot open the audit log: {0}")]
    Audit(std::io::Error),
    /// `TOOLWIRE_STATE_KEYS` holds a key that does not parse.
    #[error("{0}")]
    StateKeys(String),
    /// The server refused a definition.
    #[error("cannot serve the upstreams' tools: {0}")]
    Build(#[from] RegistrationError),
}

/// The upstreams' tools behind one server.
#[derive(Debug)]
pub struct Gateway {
    server: Server,
    tools: Vec<ExposedTool>,
    failures: Vec<UpstreamError>,
}

impl Gateway {
    /// Connects to every upstream, lists its tools and builds the server.
    /// An upstream that cannot be reached or listed is left out (see
    /// [`Gateway::failures`]); the others are served.
    pub async fn start(config: &GatewayConfig) -> Result<Gateway, GatewayError> {
        let audit = match &config.audit {
            Some(target) => Some(Arc::new(
                AuditLog::open(target).map_err(GatewayError::Audit)?,
            )),
            None => None,
        };
        let listings = futures::future::join_all(config.upstreams.iter().map(list_upstream)).await;
        let mut assembly = Assembly {
            config,
            definitions: Vec::new(),
            names: NameTable::default(),
            tools: Vec::new(),
            audit,
        };
        let mut failures = Vec::new();
        for (index, listing) in listings.into_iter().enumerate() {
            match listing {
                Ok((client, tools)) => assembly.add_upstream(index, Arc::new(client), tools)?,
                Err(error) => {
                    tracing::warn!(%error, "upstream left out");
                    failures.push(error);
                }
            }
        }
        let builder = server_builder()?;
        let server = assembly
            .definitions
            .into_iter()
            .fold(builder, ServerBuilder::tool)
            .build()?;
        Ok(Gateway {
            server,
            tools: assembly.tools,
            failures,
        })
    }

    /// The server to put on a transport (stdio or HTTP).
    pub fn server(&self) -> &Server {
        &self.server
    }

    /// The tools served, upstream by upstream in the configuration's order.
    pub fn tools(&self) -> &[ExposedTool] {
        &self.tools
    }

    /// The upstreams left out, and why.
    pub fn failures(&self) -> &[UpstreamError] {
        &self.failures
    }
}

/// The environment variable with the keys sealing `requestState`: the same
/// value on every instance of one gateway behind a load balancer.
pub const STATE_KEYS_ENV: &str = "TOOLWIRE_STATE_KEYS";

/// The gateway's server, sealing with the keys of [`STATE_KEYS_ENV`], or
/// with a random key of its own when it is unset.
fn server_builder() -> Result<ServerBuilder, GatewayError> {
    let builder = Server::builder("toolwire-gateway", env!("CARGO_PKG_VERSION"))
        .state_keys_from_env(STATE_KEYS_ENV)
        .map_err(GatewayError::StateKeys)?;
    Ok(match std::env::var_os(STATE_KEYS_ENV) {
        Some(_) => builder,
        None => builder.state_key(StateKey::random()),
    })
}

/// Connects to `upstream` and lists its tools.
async fn list_upstream(upstream: &UpstreamConfig) -> Result<(Client, Vec<Tool>), UpstreamError> {
    let client = client_for(upstream)?;
    let listing = client.list_tools().await.map_err(|e| UpstreamError {
        name: upstream.name.clone(),
        reason: format!("cannot list its tools: {e}"),
    })?;
    let tools = listing.tools.into_iter().map(|info| info.tool).collect();
    Ok((client, tools))
}

/// The server being built, tool by tool.
struct Assembly<'a> {
    config: &'a GatewayConfig,
    definitions: Vec<ToolBuilder>,
    names: NameTable,
    tools: Vec<ExposedTool>,
    audit: Option<Arc<AuditLog>>,
}

impl Assembly<'_> {
    fn add_upstream(
        &mut self,
        index: usize,
        client: Arc<Client>,
        tools: Vec<Tool>,
    ) -> Result<(), GatewayError> {
        let upstream = &self.config.upstreams[index];
        for tool in tools.into_iter().filter(|t| serves(upstream, &t.name)) {
            let name = exposed_name(
                &upstream.prefix,
                &self.config.name_separator,
                &tool.name,
                self.config.max_name_len,
            );
            let upstream_tool = tool.name.clone();
            let origin = Origin {
                upstream: index,
                tool: upstream_tool.clone(),
            };
            self.names
                .claim(name.clone(), origin)
                .map_err(|c| self.collision(c))?;
            let scope = scope_of(upstream, &upstream_tool);
            let route = Arc::new(Route {
                client: Arc::clone(&client),
                upstream: upstream.name.clone(),
                exposed: name.clone(),
                upstream_tool: upstream_tool.clone(),
                audit: self.audit.clone(),
            });
            let definition = forwarding_tool(&name, tool, upstream, scope.clone(), route);
            self.definitions.push(definition);
            self.tools.push(ExposedTool {
                upstream_tool,
                name,
                upstream: upstream.name.clone(),
                scope,
            });
        }
        Ok(())
    }

    fn collision(&self, collision: Collision) -> GatewayError {
        let name_of = |origin: &Origin| self.config.upstreams[origin.upstream].name.clone();
        GatewayError::Collision {
            first: name_of(&collision.first),
            first_tool: collision.first.tool.clone(),
            second: name_of(&collision.second),
            second_tool: collision.second.tool,
            name: collision.name,
        }
    }
}

/// True when `upstream`'s policy serves `tool`: allowed (or no allow list)
/// and not denied.
fn serves(upstream: &UpstreamConfig, tool: &str) -> bool {
    let allowed = upstream.allow.is_empty() || upstream.allow.iter().any(|g| g.matches(tool));
    allowed && !upstream.deny.iter().any(|g| g.matches(tool))
}

/// The scope `tool` needs: the first matching entry of `scopes`.
fn scope_of(upstream: &UpstreamConfig, tool: &str) -> Option<String> {
    upstream
        .scopes
        .iter()
        .find(|(glob, _)| glob.matches(tool))
        .map(|(_, scope)| scope.clone())
}

/// The downstream definition of an upstream tool: its name exposed, its
/// schemas kept exactly, its handler forwarding the call.
fn forwarding_tool(
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
struct Route {
    client: Arc<Client>,
    upstream: String,
    exposed: String,
    upstream_tool: String,
    audit: Option<Arc<AuditLog>>,
}

impl Route {
    /// Forwards one call and records it.
    async fn call(&self, args: JsonObject, cx: RequestContext) -> CallToolResult {
        let started = Instant::now();
        let digest = arguments_digest(&args);
        let options = RequestOptions::new().cancel_on(cx.cancellation().clone());
        let outcome = self
            .client
            .call_tool_with(&self.upstream_tool, Value::Object(args), &options)
            .await;
        let (result, label) = self.answer(outcome);
        if let Some(audit) = &self.audit {
            audit.write(&AuditRecord {
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
