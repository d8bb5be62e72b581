//! `toolwire gateway`: many MCP servers behind one endpoint, as the
//! configuration file says; `toolwire gateway check` shows what it would
//! serve.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use toolwire::server::http::{HttpConfig, HttpServer};
use toolwire_gateway::Gateway;
use toolwire_gateway::config::{GatewayConfig, Listen, TokenConfig};

use crate::failure::Failure;
use crate::safe_text;
use crate::serve::{auth_config, bind_failure, shutdown_signal};

/// `toolwire gateway --config FILE`, or `toolwire gateway check --config FILE`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct GatewayArgs {
    #[command(subcommand)]
    command: Option<GatewayCommand>,
    /// The configuration file (TOML; see crates/gateway/CONFIG.md).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
enum GatewayCommand {
    /// Check the file, connect to every upstream and print the tools the
    /// gateway would serve, with where each comes from.
    Check {
        /// The configuration file.
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
    },
}

pub async fn run(args: GatewayArgs) -> Result<(), Failure> {
    match args.command {
        Some(GatewayCommand::Check { config }) => check(&load(&config)?).await,
        None => {
            let path = args.config.ok_or_else(|| {
                Failure::usage("toolwire gateway needs --config FILE")
                    .hint("see crates/gateway/CONFIG.md for the file's keys")
            })?;
            serve(&load(&path)?).await
        }
    }
}

fn load(path: &std::path::Path) -> Result<GatewayConfig, Failure> {
    GatewayConfig::load(path).map_err(|e| Failure::usage(e.to_string()))
}

async fn start(config: &GatewayConfig) -> Result<Gateway, Failure> {
    let gateway = Gateway::start(config)
        .await
        .map_err(|e| Failure::usage(e.to_string()))?;
    for failure in gateway.failures() {
        tracing::warn!("{failure}; its tools are not served");
    }
    Ok(gateway)
}

/// Prints the tool table; exit code 2 when an upstream was left out.
async fn check(config: &GatewayConfig) -> Result<(), Failure> {
    let gateway = start(config).await?;
    let tools = gateway.tools();
    let width = tools.iter().map(|t| t.name.len()).max().unwrap_or(4).max(4);
    println!("{:width$}  UPSTREAM / TOOL  (SCOPE)", "NAME");
    for tool in &tools {
        let scope = tool
            .scope
            .as_deref()
            .map(|s| format!("  (needs scope {s})"))
            .unwrap_or_default();
        let line = format!(
            "{:width$}  {} / {}{scope}",
            tool.name, tool.upstream, tool.upstream_tool
        );
        println!("{}", safe_text::line(&line));
    }
    let failures = gateway.failures();
    for failure in &failures {
        println!("{}", safe_text::line(&format!("left out: {failure}")));
    }
    match failures.len() {
        0 => Ok(()),
        n => Err(Failure::protocol(format!(
            "{n} of {} upstreams could not be reached or listed",
            config.upstreams.len()
        ))),
    }
}

async fn serve(config: &GatewayConfig) -> Result<(), Failure> {
    let tokens = resolve_tokens(&config.tokens)?;
    let gateway = start(config).await?;
    gateway.watch_upstreams();
    let server = gateway.server().clone();
    tracing::info!(
        tools = gateway.tools().len(),
        upstreams = config.upstreams.len() - gateway.failures().len(),
        "gateway ready"
    );
    let shutdown = shutdown_signal();
    match config.listen {
        Listen::Stdio => tokio::select! {
            served = toolwire::server::stdio::serve_stdio(server) => {
                served.map_err(|e| Failure::protocol(format!("stdio transport failed: {e}")))
            }
            () = shutdown => Ok(()),
        },
        Listen::Http(addr) => {
            if !addr.ip().is_loopback() && tokens.is_empty() {
                return Err(Failure::usage(format!(
                    "gateway.http = \"{addr}\" is beyond loopback: anyone who can reach it \
                     could call every upstream's tools"
                ))
                .hint(
                    "add tokens = [{ env = \"GW_TOKEN\" }] to [gateway], or listen on 127.0.0.1",
                ));
            }
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| bind_failure(addr, e))?;
            let addr = listener.local_addr().map_err(|e| bind_failure(addr, e))?;
            let mut http = HttpConfig::new();
            if !tokens.is_empty() {
                http = http.auth(auth_config(addr, &tokens, "toolwire gateway")?);
            }
            let http = HttpServer::from_listener(listener, server, http)
                .map_err(|e| bind_failure(addr, e))?;
            eprintln!(
                "toolwire: gateway serving {} tools at http://{}/mcp (Ctrl-C to stop)",
                gateway.tools().len(),
                http.local_addr()
            );
            http.run_until(shutdown)
                .await
                .map_err(|e| Failure::protocol(format!("the HTTP server failed: {e}")))
        }
    }
}

/// Each token's value from its environment variable.
fn resolve_tokens(tokens: &[TokenConfig]) -> Result<Vec<(String, Vec<String>)>, Failure> {
    tokens
        .iter()
        .map(|token| match std::env::var(&token.env) {
            Ok(value) if !value.is_empty() => Ok((value, token.scopes.clone())),
            _ => Err(Failure::usage(format!(
                "gateway.tokens: the environment variable {} is not set (or empty)",
                token.env
            ))),
        })
        .collect()
}
