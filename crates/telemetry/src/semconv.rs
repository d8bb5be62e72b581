//! Names from the OpenTelemetry semantic conventions for MCP (GenAI
//! conventions, `docs/gen-ai/mcp.md`), in one place.

/// The JSON-RPC method: `tools/call`, `server/discover`, ...
pub const MCP_METHOD_NAME: &str = "mcp.method.name";
/// The MCP revision the request was made in.
pub const MCP_PROTOCOL_VERSION: &str = "mcp.protocol.version";
/// A legacy (2025-11-25) session's id.
pub const MCP_SESSION_ID: &str = "mcp.session.id";
/// The resource a `resources/*` request names.
pub const MCP_RESOURCE_URI: &str = "mcp.resource.uri";
/// The tool of a `tools/call`.
pub const GEN_AI_TOOL_NAME: &str = "gen_ai.tool.name";
/// The prompt of a `prompts/get`.
pub const GEN_AI_PROMPT_NAME: &str = "gen_ai.prompt.name";
/// `execute_tool` on tool calls (and only there).
pub const GEN_AI_OPERATION_NAME: &str = "gen_ai.operation.name";
/// The value of [`GEN_AI_OPERATION_NAME`] on tool calls.
pub const EXECUTE_TOOL: &str = "execute_tool";
/// The request's JSON-RPC id, as a string.
pub const JSONRPC_REQUEST_ID: &str = "jsonrpc.request.id";
/// `pipe` (stdio) or `tcp` (HTTP).
pub const NETWORK_TRANSPORT: &str = "network.transport";
/// `http` over Streamable HTTP.
pub const NETWORK_PROTOCOL_NAME: &str = "network.protocol.name";
/// `1.1` or `2`.
pub const NETWORK_PROTOCOL_VERSION: &str = "network.protocol.version";
/// Why the operation failed: the JSON-RPC error code as a string, or
/// [`TOOL_ERROR`].
pub const ERROR_TYPE: &str = "error.type";
/// The JSON-RPC error code of a failed request, as a string.
pub const RPC_RESPONSE_STATUS_CODE: &str = "rpc.response.status_code";
/// The value of [`ERROR_TYPE`] for a tool result with `isError: true`.
pub const TOOL_ERROR: &str = "tool_error";

/// Duration of a request as its receiver saw it (seconds).
pub const MCP_SERVER_OPERATION_DURATION: &str = "mcp.server.operation.duration";
/// Duration of a request as its sender saw it (seconds).
pub const MCP_CLIENT_OPERATION_DURATION: &str = "mcp.client.operation.duration";
/// Duration of a legacy session on the server (seconds).
pub const MCP_SERVER_SESSION_DURATION: &str = "mcp.server.session.duration";
/// Duration of a legacy session on the client (seconds).
pub const MCP_CLIENT_SESSION_DURATION: &str = "mcp.client.session.duration";

/// The bucket boundaries the conventions give for the MCP duration
/// histograms (seconds).
pub const DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// The `_meta` key of the W3C `traceparent`.
pub const TRACEPARENT: &str = "traceparent";
/// The `_meta` key of the W3C `tracestate`.
pub const TRACESTATE: &str = "tracestate";
