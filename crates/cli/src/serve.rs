//! `toolwire serve`: the demo server over Streamable HTTP or stdio, with
//! graceful shutdown on Ctrl-C (or SIGTERM).

use std::net::SocketAddr;

use clap::Args;
use toolwire::server::StateKey;
use toolwire::server::http::{HttpConfig, HttpServer};

use crate::failure::Failure;

/// Keys that seal `requestState`, for several instances behind one endpoint.
const STATE_KEYS_ENV: &str = "TOOLWIRE_STATE_KEYS";

/// Where [`run`] listens unless told otherwise.
pub const DEFAULT_ADDR: &str = "127.0.0.1:8931";

/// `toolwire serve`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    toolwire serve                          # http://127.0.0.1:8931/mcp\n  \
    toolwire serve --http 127.0.0.1:0       # any free port (printed on stderr)\n  \
    toolwire serve --stdio                  # for `toolwire list -- toolwire serve --stdio`\n\n\
    Logs go to stderr; RUST_LOG filters them (default: info).\n\
    TOOLWIRE_STATE_KEYS: comma-separated 32-byte keys (base64 or hex) that seal\n\
    requestState, shared by several instances behind one endpoint (default: a\n\
    random key per process).")]
pub struct ServeArgs {
    /// Serve Streamable HTTP on ADDR: host:port, or a port alone (loopback).
    /// The endpoint is /mcp. Port 0 picks a free port. [default: 127.0.0.1:8931]
    #[arg(long, value_name = "ADDR", conflicts_with = "stdio")]
    http: Option<String>,

    /// Serve over stdio instead: one JSON-RPC message per line on stdin and
    /// stdout, until stdin closes. Nothing else is written to stdout.
    #[arg(long)]
    stdio: bool,

    /// Also accept browser requests from ORIGIN, e.g. https://app.example.com
    /// (repeatable). Loopback origins are always accepted; others get 403.
    #[arg(long, value_name = "ORIGIN")]
    allow_origin: Vec<String>,

    /// Also accept requests whose Host header names HOST (repeatable); needed
    /// when clients reach the server by a non-loopback name or address.
    #[arg(long, value_name = "HOST")]
    allow_host: Vec<String>,
}

pub async fn run(args: ServeArgs) -> Result<(), Failure> {
    let mut builder = crate::demo::builder()
        .state_keys_from_env(STATE_KEYS_ENV)
        .map_err(Failure::usage)?;
    if std::env::var_os(STATE_KEYS_ENV).is_none() {
        // One process: a fresh key is right (requestState dies with it).
        builder = builder.state_key(StateKey::random());
    }
    let server = builder
        .build()
        .map_err(|e| Failure::protocol(format!("the demo server does not build: {e}")))?;
    let shutdown = shutdown_signal();
    if args.stdio {
        tracing::info!("serving the demo MCP server on stdio");
        tokio::select! {
            served = toolwire::server::stdio::serve_stdio(server) => {
                served.map_err(|e| Failure::protocol(format!("stdio transport failed: {e}")))
            }
            () = shutdown => Ok(()),
        }
    } else {
        let addr = resolve(args.http.as_deref().unwrap_or(DEFAULT_ADDR)).await?;
        let mut config = HttpConfig::new();
        for origin in &args.allow_origin {
            config = config.allow_origin(origin);
        }
        for host in &args.allow_host {
            config = config.allow_host(host);
        }
        let http = HttpServer::bind(addr, server, config)
            .await
            .map_err(|e| bind_failure(addr, e))?;
        let url = format!("http://{}/mcp", http.local_addr());
        if !http.local_addr().ip().is_loopback() {
            tracing::warn!(
                "listening beyond loopback on {}: anyone who can reach it can call the tools",
                http.local_addr()
            );
        }
        eprintln!("toolwire: serving the demo MCP server at {url} (Ctrl-C to stop)");
        eprintln!("toolwire: try `toolwire list {url}` or `toolwire call {url} echo text=hello`");
        http.run_until(shutdown)
            .await
            .map_err(|e| Failure::protocol(format!("the HTTP server failed: {e}")))?;
        eprintln!("toolwire: stopped");
        Ok(())
    }
}

/// `host:port`, `[v6]:port`, or a port alone (on 127.0.0.1).
async fn resolve(text: &str) -> Result<SocketAddr, Failure> {
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    let bad = |detail: String| {
        Failure::usage(format!(
            "--http {text:?}: {detail}; expected host:port like 127.0.0.1:8931, or a port"
        ))
    };
    let mut found = tokio::net::lookup_host(text)
        .await
        .map_err(|e| bad(e.to_string()))?;
    found
        .next()
        .ok_or_else(|| bad("the name resolves to no address".into()))
}

fn bind_failure(addr: SocketAddr, error: std::io::Error) -> Failure {
    match error.kind() {
        std::io::ErrorKind::AddrInUse => Failure::protocol(format!(
            "cannot listen on {addr}: the address is already in use (another `toolwire serve`?)"
        ))
        .hint(format!(
            "stop the other server, or choose another port, e.g. --http {}:0 for any free one",
            addr.ip()
        )),
        std::io::ErrorKind::PermissionDenied => {
            Failure::protocol(format!("cannot listen on {addr}: permission denied"))
                .hint("ports below 1024 need privileges; choose a higher port")
        }
        _ => Failure::protocol(format!("cannot listen on {addr}: {error}")),
    }
}

/// Resolves on Ctrl-C, or SIGTERM on Unix. The handlers are installed when
/// this is called (before the address is printed), not when first polled,
/// so a signal sent as soon as the server says it listens is not lost.
fn shutdown_signal() -> impl std::future::Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let interrupt = signal(SignalKind::interrupt());
        let terminate = signal(SignalKind::terminate());
        async move {
            match (interrupt, terminate) {
                (Ok(mut interrupt), Ok(mut terminate)) => {
                    tokio::select! {
                        _ = interrupt.recv() => {}
                        _ = terminate.recv() => {}
                    }
                }
                _ => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
            tracing::info!("shutting down");
        }
    }
    #[cfg(not(unix))]
    {
        async move {
            let _ = tokio::signal::ctrl_c().await;
            tracing::info!("shutting down");
        }
    }
}
