//! The peer: the official Rust SDK `rmcp` (3.x), Streamable HTTP in
//! stateless mode with JSON replies, TCP_NODELAY on.
//!
//! ```text
//! rmcp-echo <port> [--fillers N]
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

use std::net::SocketAddr;
use std::sync::Arc;

use futures::FutureExt;
use rmcp::handler::server::router::tool::{ToolRoute, ToolRouter};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, ProgressNotificationParam, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
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
    eprintln!("usage: rmcp-echo <port> [--fillers N]");
    std::process::exit(2);
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut port: Option<u16> = None;
    let mut fillers = 0;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--fillers" => {
                fillers = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or_else(|| usage())
            }
            other => port = Some(other.parse().unwrap_or_else(|_| usage())),
        }
    }
    let Some(port) = port else { usage() };
    toolwire_bench::raise_nofile_limit();

    let handler = Echo::new(fillers);
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true);
    let service: StreamableHttpService<Echo, NeverSessionManager> = StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener =
        tokio::net::TcpListener::bind(SocketAddr::new(toolwire_bench::LOOPBACK, port)).await?;
    use axum::serve::ListenerExt;
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, router).await
}
