//! The peer: the official Rust SDK `rmcp` (3.x), Streamable HTTP in
//! stateless mode with JSON replies, TCP_NODELAY on.
//!
//! ```text
//! rmcp-echo <port> [--fillers N] [--sessions [--session-idle-timeout SECS]]
//! ```
//!
//! Configured as rmcp documents for a stateless production deployment:
//! `legacy_session_mode: false` (no sessions; 2026-07-28 requests are always
//! served statelessly), `json_response: true` (plain JSON unless the handler
//! sends a notification first, then SSE), the default loopback `Host` check,
//! `NeverSessionManager`, served by axum. The handler is built once and
//! cloned per request (its tool router sits behind an `Arc`), so the service
//! factory costs a reference-count increment, not a rebuild.
//!
//! Tools: `echo` (required string `text`, returned as one text block),
//! `echo_progress` (one progress notification, then the text) and
//! `--fillers` tools for the `tools/list` scenario. rmcp speaks 2026-07-28
//! natively, so it gets exactly the requests toolwire gets.
//!
//! `--sessions` serves 2025-11-25 clients as rmcp does in its stateful mode:
//! `legacy_session_mode: true` with a `LocalSessionManager`, so `initialize`
//! opens a session (an `Mcp-Session-Id`, a worker task per session) and its
//! calls are answered on SSE streams; 2026-07-28 requests are still served
//! statelessly. `--session-idle-timeout` sets the manager's
//! `SessionConfig::keep_alive` (rmcp's default: 300 s), after which an idle
//! session's worker ends and its id answers 404.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use rmcp::handler::server::router::tool::{ToolRoute, ToolRouter};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, ProgressNotificationParam, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, tool, tool_handler, tool_router};
use toolwire_bench::servers::{EchoArgs, filler_description};

#[derive(Clone)]
struct Echo {
    router: Arc<ToolRouter<Echo>>,
}

#[tool_router]
impl Echo {
    fn new(fillers: usize) -> Echo {
        let mut router = Self::tool_router();
        for n in 0..fillers {
            let schema = serde_json::json!({"type": "object", "additionalProperties": false});
            let serde_json::Value::Object(schema) = schema else {
                unreachable!()
            };
            let tool = Tool::new(format!("filler_{n:03}"), filler_description(n), schema);
            router.add_route(ToolRoute::new_dyn(tool, |_context| {
                async { Ok(CallToolResult::success(vec![ContentBlock::text("ok")]).into()) }.boxed()
            }));
        }
        Echo {
            router: Arc::new(router),
        }
    }

    #[tool(description = "Echoes the text back")]
    fn echo(&self, Parameters(args): Parameters<EchoArgs>) -> String {
        args.text
    }

    #[tool(description = "Reports progress once, then echoes the text back")]
    async fn echo_progress(
        &self,
        Parameters(args): Parameters<EchoArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<String, ErrorData> {
        if let Some(token) = context.meta.get_progress_token() {
            let _ = context
                .peer
                .notify_progress(
                    ProgressNotificationParam::new(token, 1.0)
                        .with_total(1.0)
                        .with_message("echoing"),
                )
                .await;
        }
        Ok(args.text)
    }
}

#[tool_handler(router = self.router)]
impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

fn usage() -> ! {
    eprintln!("usage: rmcp-echo <port> [--fillers N] [--sessions [--session-idle-timeout SECS]]");
    std::process::exit(2);
}

toolwire_bench::allocator_from_features!();

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut port: Option<u16> = None;
    let mut fillers = 0;
    let mut sessions = false;
    let mut idle_timeout: Option<u64> = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut number = || -> u64 {
            args.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| usage())
        };
        match arg.as_str() {
            "--fillers" => fillers = number() as usize,
            "--sessions" => sessions = true,
            "--session-idle-timeout" => idle_timeout = Some(number()),
            other => port = Some(other.parse().unwrap_or_else(|_| usage())),
        }
    }
    let Some(port) = port else { usage() };
    toolwire_bench::raise_nofile_limit();

    let handler = Echo::new(fillers);
    let listener =
        tokio::net::TcpListener::bind(SocketAddr::new(toolwire_bench::LOOPBACK, port)).await?;
    if sessions {
        let config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(true)
            .with_json_response(true);
        let mut manager = LocalSessionManager::default();
        if let Some(secs) = idle_timeout {
            manager.session_config.keep_alive = Some(Duration::from_secs(secs));
        }
        serve(listener, handler, manager, config).await
    } else {
        let config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true);
        serve(listener, handler, NeverSessionManager::default(), config).await
    }
}

async fn serve<M: SessionManager>(
    listener: tokio::net::TcpListener,
    handler: Echo,
    manager: M,
    config: StreamableHttpServerConfig,
) -> std::io::Result<()> {
    let service: StreamableHttpService<Echo, M> =
        StreamableHttpService::new(move || Ok(handler.clone()), Arc::new(manager), config);
    let router = axum::Router::new().nest_service("/mcp", service);
    use axum::serve::ListenerExt;
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, router).await
}
