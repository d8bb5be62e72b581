//! One MCP request as telemetry sees it: a span named `{method} {target}`
//! with the conventions' attributes, and a duration measurement when it ends.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use opentelemetry::metrics::Histogram;
use opentelemetry::{Context, KeyValue, global};
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::semconv::*;
use crate::{SPAN_TARGET, enabled};

/// Which end of the request this process is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// It received the request (span kind server).
    Server,
    /// It sent the request (span kind client).
    Client,
}

impl Side {
    fn kind(self) -> &'static str {
        match self {
            Side::Server => "server",
            Side::Client => "client",
        }
    }
}

/// How the request travelled: `network.transport` and, over HTTP,
/// `network.protocol.name` / `network.protocol.version`. One byte, so that
/// carrying it with every request costs nothing.
///
/// ```
/// use toolwire_telemetry::Network;
/// assert_eq!(Network::Pipe.transport(), Some("pipe"));
/// assert_eq!(Network::Http2.protocol_version(), Some("2"));
/// assert_eq!(Network::Http.protocol_version(), None);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Network {
    /// Not stated (no attribute is recorded).
    #[default]
    Unknown,
    /// A stdio transport.
    Pipe,
    /// Streamable HTTP, the version not known (a client before it connects).
    Http,
    /// Streamable HTTP over HTTP/1.0.
    Http10,
    /// Streamable HTTP over HTTP/1.1.
    Http11,
    /// Streamable HTTP over HTTP/2.
    Http2,
}

impl Network {
    /// `network.transport`: `pipe` or `tcp`.
    pub fn transport(self) -> Option<&'static str> {
        match self {
            Network::Unknown => None,
            Network::Pipe => Some("pipe"),
            _ => Some("tcp"),
        }
    }

    /// `network.protocol.name`: `http` over Streamable HTTP.
    pub fn protocol_name(self) -> Option<&'static str> {
        match self {
            Network::Unknown | Network::Pipe => None,
            _ => Some("http"),
        }
    }

    /// `network.protocol.version`: `1.0`, `1.1` or `2`.
    pub fn protocol_version(self) -> Option<&'static str> {
        match self {
            Network::Http10 => Some("1.0"),
            Network::Http11 => Some("1.1"),
            Network::Http2 => Some("2"),
            _ => None,
        }
    }

    fn attributes(self) -> impl Iterator<Item = KeyValue> {
        [
            self.transport().map(|v| (NETWORK_TRANSPORT, v)),
            self.protocol_name().map(|v| (NETWORK_PROTOCOL_NAME, v)),
            self.protocol_version()
                .map(|v| (NETWORK_PROTOCOL_VERSION, v)),
        ]
        .into_iter()
        .flatten()
        .map(|(key, value)| KeyValue::new(key, value))
    }
}

/// How a request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A result (a tool result without `isError`).
    Ok,
    /// A tool result with `isError: true`.
    ToolError,
    /// A JSON-RPC error with this code.
    RpcError(i64),
    /// No response: the transport failed, the call timed out or was
    /// cancelled (the value is `error.type`: `timeout`, `cancelled`, ...).
    Failed(&'static str),
}

impl Outcome {
    /// The value of `error.type`, `None` for success.
    pub fn error_type(&self) -> Option<String> {
        match self {
            Outcome::Ok => None,
            Outcome::ToolError => Some(TOOL_ERROR.to_owned()),
            Outcome::RpcError(code) => Some(code.to_string()),
            Outcome::Failed(kind) => Some((*kind).to_owned()),
        }
    }
}

/// What is known of a request when it starts. Values are borrowed; only
/// [`Operation::start`] copies what the span and the measurement keep.
#[derive(Debug, Clone)]
pub struct Operation<'a> {
    side: Side,
    method: &'a str,
    target: Option<&'a str>,
    request_id: Option<String>,
    protocol_version: Option<&'a str>,
    session_id: Option<&'a str>,
    resource_uri: Option<&'a str>,
    network: Network,
}

impl<'a> Operation<'a> {
    /// A request for `method`, seen from `side`.
    pub fn new(side: Side, method: &'a str) -> Self {
        Operation {
            side,
            method,
            target: None,
            request_id: None,
            protocol_version: None,
            session_id: None,
            resource_uri: None,
            network: Network::default(),
        }
    }

    /// The tool (`tools/call`) or prompt (`prompts/get`) named: the span
    /// name's target.
    pub fn target(mut self, name: Option<&'a str>) -> Self {
        self.target = name;
        self
    }

    /// The JSON-RPC id, as a string (`None` for a notification).
    pub fn request_id(mut self, id: Option<String>) -> Self {
        self.request_id = id;
        self
    }

    /// The MCP revision of the request.
    pub fn protocol_version(mut self, version: Option<&'a str>) -> Self {
        self.protocol_version = version;
        self
    }

    /// The legacy session the request belongs to.
    pub fn session_id(mut self, id: Option<&'a str>) -> Self {
        self.session_id = id;
        self
    }

    /// The resource a `resources/*` request names.
    pub fn resource_uri(mut self, uri: Option<&'a str>) -> Self {
        self.resource_uri = uri;
        self
    }

    /// How the request travelled.
    pub fn network(mut self, network: Network) -> Self {
        self.network = network;
        self
    }

    /// The target named in the span, when the method has one.
    fn span_target(&self) -> Option<&'a str> {
        match self.method {
            "tools/call" | "prompts/get" => self.target,
            _ => None,
        }
    }

    /// Starts the span (a child of `parent` when given, of the current
    /// span otherwise) and the clock. Inert while telemetry is disabled.
    pub fn start(&self, parent: Option<Context>) -> Started {
        if !enabled() {
            return Started::inert();
        }
        let span = self.span();
        if let Some(parent) = parent {
            // Fails only without an OpenTelemetry layer: nothing to join.
            let _ = span.set_parent(parent);
        }
        Started {
            span,
            side: self.side,
            begun: Instant::now(),
            attributes: self.metric_attributes(),
        }
    }

    fn span(&self) -> tracing::Span {
        let name = match self.span_target() {
            Some(target) => format!("{} {target}", self.method),
            None => self.method.to_owned(),
        };
        let span = tracing::info_span!(
            target: SPAN_TARGET,
            "mcp",
            otel.name = %name,
            otel.kind = self.side.kind(),
            otel.status_code = Empty,
            mcp.method.name = self.method,
            mcp.protocol.version = self.protocol_version,
            mcp.session.id = self.session_id,
            mcp.resource.uri = self.resource_uri,
            gen_ai.tool.name = Empty,
            gen_ai.prompt.name = Empty,
            gen_ai.operation.name = Empty,
            jsonrpc.request.id = self.request_id.as_deref(),
            network.transport = self.network.transport(),
            network.protocol.name = self.network.protocol_name(),
            network.protocol.version = self.network.protocol_version(),
            error.type = Empty,
            rpc.response.status_code = Empty,
        );
        match (self.method, self.target) {
            ("tools/call", Some(tool)) => {
                span.record(GEN_AI_TOOL_NAME, tool);
                span.record(GEN_AI_OPERATION_NAME, EXECUTE_TOOL);
            }
            ("prompts/get", Some(prompt)) => {
                span.record(GEN_AI_PROMPT_NAME, prompt);
            }
            _ => {}
        }
        span
    }

    /// The low-cardinality attributes of the duration histograms (no ids).
    fn metric_attributes(&self) -> Vec<KeyValue> {
        let mut attributes = vec![KeyValue::new(MCP_METHOD_NAME, self.method.to_owned())];
        match (self.method, self.target) {
            ("tools/call", Some(tool)) => {
                attributes.push(KeyValue::new(GEN_AI_TOOL_NAME, tool.to_owned()));
                attributes.push(KeyValue::new(GEN_AI_OPERATION_NAME, EXECUTE_TOOL));
            }
            ("prompts/get", Some(prompt)) => {
                attributes.push(KeyValue::new(GEN_AI_PROMPT_NAME, prompt.to_owned()));
            }
            _ => {}
        }
        if let Some(version) = self.protocol_version {
            attributes.push(KeyValue::new(MCP_PROTOCOL_VERSION, version.to_owned()));
        }
        attributes.extend(self.network.attributes());
        attributes
    }
}

/// A request in flight: its span (enter it, or instrument the future that
/// serves the request with it) and its clock.
#[derive(Debug)]
pub struct Started {
    span: tracing::Span,
    side: Side,
    begun: Instant,
    attributes: Vec<KeyValue>,
}

impl Started {
    /// A request telemetry does not see.
    fn inert() -> Self {
        Started {
            span: tracing::Span::none(),
            side: Side::Server,
            begun: Instant::now(),
            attributes: Vec::new(),
        }
    }

    /// The request's span (disabled while telemetry is off).
    pub fn span(&self) -> &tracing::Span {
        &self.span
    }

    /// Records how the request ended on the span and in the duration
    /// histogram of its side; the span ends when its last handle drops.
    pub fn finish(mut self, outcome: Outcome) {
        if self.span.is_disabled() && self.attributes.is_empty() {
            return;
        }
        if let Some(error_type) = outcome.error_type() {
            self.span.record(ERROR_TYPE, error_type.as_str());
            self.span.record("otel.status_code", "error");
            if let Outcome::RpcError(code) = outcome {
                self.span.record(RPC_RESPONSE_STATUS_CODE, code.to_string());
            }
            self.attributes.push(KeyValue::new(ERROR_TYPE, error_type));
        }
        let seconds = self.begun.elapsed().as_secs_f64();
        operation_duration(self.side).record(seconds, &self.attributes);
    }
}

/// The span of a tool call's work that outlives its request (a task's
/// handler, run after `tools/call` answered with the task): named
/// `execute_tool {tool}`, kind internal, its OpenTelemetry parent the
/// current span (the `tools/call` that created the task), which it does not
/// keep open. A disabled span while telemetry is off.
///
/// ```
/// let span = toolwire_telemetry::detached_tool_span("build_report");
/// assert!(span.is_disabled()); // telemetry is off here
/// ```
pub fn detached_tool_span(tool: &str) -> tracing::Span {
    if !enabled() {
        return tracing::Span::none();
    }
    let parent = tracing::Span::current().context();
    let span = tracing::info_span!(
        target: SPAN_TARGET,
        parent: None,
        "mcp task",
        otel.name = %format!("{EXECUTE_TOOL} {tool}"),
        otel.kind = "internal",
        gen_ai.operation.name = EXECUTE_TOOL,
        gen_ai.tool.name = tool,
    );
    // Fails only without an OpenTelemetry layer: nothing to join.
    let _ = span.set_parent(parent);
    span
}

/// Records one legacy session's duration on `side`.
///
/// ```
/// use std::time::Duration;
/// use toolwire_telemetry::{Network, Side, record_session};
/// record_session(Side::Server, Duration::from_secs(3), "2025-11-25", Network::Http11, None);
/// ```
pub fn record_session(
    side: Side,
    duration: Duration,
    protocol_version: &str,
    network: Network,
    error_type: Option<&str>,
) {
    if !enabled() {
        return;
    }
    let mut attributes = vec![KeyValue::new(
        MCP_PROTOCOL_VERSION,
        protocol_version.to_owned(),
    )];
    attributes.extend(network.attributes());
    if let Some(error_type) = error_type {
        attributes.push(KeyValue::new(ERROR_TYPE, error_type.to_owned()));
    }
    session_duration(side).record(duration.as_secs_f64(), &attributes);
}

fn operation_duration(side: Side) -> &'static Histogram<f64> {
    static SERVER: OnceLock<Histogram<f64>> = OnceLock::new();
    static CLIENT: OnceLock<Histogram<f64>> = OnceLock::new();
    match side {
        Side::Server => SERVER.get_or_init(|| histogram(MCP_SERVER_OPERATION_DURATION, OPERATION)),
        Side::Client => CLIENT.get_or_init(|| histogram(MCP_CLIENT_OPERATION_DURATION, OPERATION)),
    }
}

fn session_duration(side: Side) -> &'static Histogram<f64> {
    static SERVER: OnceLock<Histogram<f64>> = OnceLock::new();
    static CLIENT: OnceLock<Histogram<f64>> = OnceLock::new();
    match side {
        Side::Server => SERVER.get_or_init(|| histogram(MCP_SERVER_SESSION_DURATION, SESSION)),
        Side::Client => CLIENT.get_or_init(|| histogram(MCP_CLIENT_SESSION_DURATION, SESSION)),
    }
}

const OPERATION: &str = "The duration of an MCP request or notification.";
const SESSION: &str = "The duration of an MCP session.";

/// A histogram of the global meter provider: created on first use, which
/// is after [`crate::enable`] (and so after the provider was installed).
fn histogram(name: &'static str, description: &'static str) -> Histogram<f64> {
    global::meter("toolwire")
        .f64_histogram(name)
        .with_unit("s")
        .with_description(description)
        .with_boundaries(DURATION_BUCKETS.to_vec())
        .build()
}
