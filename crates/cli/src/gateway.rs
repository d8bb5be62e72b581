//! `toolwire gateway`: many MCP servers behind one endpoint, as the
//! configuration file says; `toolwire gateway check` shows what it would
//! serve.

use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, Subcommand};
use toolwire::server::http::{DEFAULT_DRAIN_TIMEOUT, HttpConfig, HttpServer, health_routes_for};
use toolwire_console::ConsoleConfig;
use toolwire_gateway::config::{
    AuditTarget, GatewayConfig, Listen, RedisTarget, StartMode, TokenConfig, UpstreamConfig,
    UpstreamTransport,
};
use toolwire_gateway::pin::{PinMode, PinState};
use toolwire_gateway::{Gateway, SharedStores, UpstreamState, WithheldTool};
use toolwire_redis::{
    RedisChangeFeed, RedisConnection, RedisRateLimits, RedisSessionStore, RedisTaskStore,
};

use crate::failure::Failure;
use crate::safe_text;
use crate::serve::{
    auth_config, bind_failure, connect_redis, load_tls, parse_token, redis_not_ready,
    reload_tls_on_hangup, resolve, scheme, serve_stdio, shutdown_signal, token_principal,
};

/// `toolwire gateway --config FILE`, `toolwire gateway check --config FILE`,
/// or the shorthand `toolwire gateway --http ADDR [--token T] -- CMD ARGS`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct GatewayArgs {
    #[command(subcommand)]
    command: Option<GatewayCommand>,
    /// The configuration file (TOML; see crates/gateway/CONFIG.md).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["http", "server"])]
    config: Option<PathBuf>,
    /// Shorthand, without a file: serve the stdio server after `--` on
    /// Streamable HTTP at ADDR (default 127.0.0.1:8940), its tools under
    /// their own names.
    #[arg(long, value_name = "ADDR", requires = "server")]
    http: Option<String>,
    /// Shorthand: require this bearer token (repeatable), with the scopes
    /// after `:`, as for `toolwire serve --token`.
    #[arg(long = "token", value_name = "TOKEN[:SCOPE,...]", value_parser = parse_token, requires = "server")]
    tokens: Vec<(String, Vec<String>)>,
    /// Shorthand: append an audit record per call (JSON lines) to FILE, or
    /// `-` for stderr.
    #[arg(long, value_name = "FILE", requires = "server")]
    audit: Option<String>,
    /// Shorthand: the stdio server's command and arguments.
    #[arg(last = true, value_name = "COMMAND")]
    server: Vec<String>,
}

#[derive(Debug, Subcommand)]
enum GatewayCommand {
    /// Show what changed in the tools withheld by their pins (or not
    /// pinned yet, with pin = "strict") and pin them as they are now.
    Approve {
        /// The configuration file.
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
        /// Only this upstream, or this one tool of it.
        #[arg(value_name = "UPSTREAM[/TOOL]")]
        only: Option<String>,
    },
    /// Check the file, connect to every upstream and print the tools the
    /// gateway would serve, with where each comes from.
    Check {
        /// The configuration file.
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
    },
}

pub async fn run(args: GatewayArgs, connection_threads: usize) -> Result<(), Failure> {
    match &args.command {
        Some(GatewayCommand::Check { config }) => return check(&all_at_boot(load(config)?)).await,
        Some(GatewayCommand::Approve { config, only }) => {
            return approve(&all_at_boot(load(config)?), only.as_deref()).await;
        }
        None => {}
    }
    if !args.server.is_empty() {
        let config = shorthand(&args).await?;
        return serve(&config, args.tokens.clone(), None, connection_threads).await;
    }
    let path = args.config.ok_or_else(|| {
        Failure::usage("toolwire gateway needs --config FILE, or -- COMMAND for one stdio server")
            .hint("see crates/gateway/CONFIG.md for the file's keys")
    })?;
    let config = load(&path)?;
    let tokens = resolve_tokens(&config.tokens)?;
    serve(&config, tokens, Some(path), connection_threads).await
}

/// The configuration of the shorthand: one stdio server, no prefix.
async fn shorthand(args: &GatewayArgs) -> Result<GatewayConfig, Failure> {
    let addr = resolve(args.http.as_deref().unwrap_or("127.0.0.1:8940")).await?;
    let name = std::path::Path::new(&args.server[0])
        .file_name()
        .map_or_else(|| "server".into(), |n| n.to_string_lossy().into_owned());
    Ok(GatewayConfig {
        listen: Listen::Http(addr),
        name_separator: "__".into(),
        max_name_len: 128,
        audit: args.audit.as_deref().map(|a| match a {
            "-" => AuditTarget::Stderr,
            path => AuditTarget::File(path.into()),
        }),
        lock: None,
        pin: PinMode::default(),
        call_limit: None,
        redis: None,
        tokens: Vec::new(),
        ui: false,
        health: false,
        drain_timeout: DEFAULT_DRAIN_TIMEOUT,
        tls: None,
        upstreams: vec![UpstreamConfig {
            name,
            prefix: String::new(),
            transport: UpstreamTransport::Command(args.server.clone()),
            allow: Vec::new(),
            deny: Vec::new(),
            timeout: None,
            rate_limit: None,
            scopes: Vec::new(),
            start: StartMode::Boot,
        }],
    })
}

/// `config` with every upstream started at once: `check` and `approve`
/// look at what each serves now, lazy or not.
fn all_at_boot(mut config: GatewayConfig) -> GatewayConfig {
    for upstream in &mut config.upstreams {
        upstream.start = StartMode::Boot;
    }
    config
}

fn load(path: &std::path::Path) -> Result<GatewayConfig, Failure> {
    GatewayConfig::load(path).map_err(|e| Failure::usage(e.to_string()))
}

async fn start(config: &GatewayConfig) -> Result<Gateway, Failure> {
    start_with(config, SharedStores::default()).await
}

async fn start_with(config: &GatewayConfig, stores: SharedStores) -> Result<Gateway, Failure> {
    let gateway = Gateway::start_with(config, stores)
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
    for withheld in gateway.withheld() {
        println!(
            "{}",
            safe_text::line(&format!("withheld: {}", describe(&withheld)))
        );
    }
    for (name, found) in gateway.findings() {
        println!(
            "{}",
            safe_text::line(&format!("findings for {name}: {}", found.join("; ")))
        );
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

/// `UPSTREAM/TOOL (not pinned yet)` or `UPSTREAM/TOOL (changed: …)`.
fn describe(withheld: &WithheldTool) -> String {
    let state = match &withheld.state {
        PinState::Changed { changes } => format!("changed: {}", changes.join("; ")),
        PinState::New => "not pinned yet".into(),
        PinState::Pinned => "pinned".into(),
    };
    format!("{}/{} ({state})", withheld.upstream, withheld.tool)
}

/// Pins the withheld tools that `only` selects, saying what changed.
async fn approve(config: &GatewayConfig, only: Option<&str>) -> Result<(), Failure> {
    if config.lock.is_none() {
        return Err(Failure::usage(
            "the configuration names no lock file: add lock = \"toolwire-gateway.lock\" to [gateway]",
        ));
    }
    let gateway = start(config).await?;
    let selected: Vec<WithheldTool> = gateway
        .withheld()
        .into_iter()
        .filter(|w| match only {
            None => true,
            Some(only) => match only.split_once('/') {
                Some((upstream, tool)) => w.upstream == upstream && w.tool == tool,
                None => w.upstream == only,
            },
        })
        .collect();
    if selected.is_empty() {
        println!("nothing to approve");
        return Ok(());
    }
    for withheld in &selected {
        gateway
            .approve(&withheld.upstream, &withheld.tool, "cli")
            .await
            .map_err(|e| Failure::protocol(e.to_string()))?;
        println!(
            "{}",
            safe_text::line(&format!("approved {}", describe(withheld)))
        );
    }
    Ok(())
}

/// Serves `config`; with the file's `path`, SIGHUP reloads it. Over HTTP,
/// on `connection_threads` threads (0: the runtime's).
async fn serve(
    config: &GatewayConfig,
    tokens: Vec<(String, Vec<String>)>,
    path: Option<PathBuf>,
    connection_threads: usize,
) -> Result<(), Failure> {
    let redis = match &config.redis {
        Some(target) => Some(connect(target).await?),
        None => None,
    };
    let stores = match &redis {
        Some(redis) => SharedStores {
            rate_limits: Some(Arc::new(RedisRateLimits::new(redis.clone()))),
            change_feed: Some(Arc::new(RedisChangeFeed::new(redis))),
            tasks: Some(Arc::new(RedisTaskStore::new(redis))),
        },
        None => SharedStores::default(),
    };
    let gateway = start_with(config, stores).await?;
    gateway.watch_upstreams();
    if let Some(path) = path {
        reload_on_hangup(&gateway, path)?;
    }
    tracing::info!(
        tools = gateway.tools().len(),
        upstreams = config.upstreams.len() - gateway.failures().len(),
        lazy_not_started = ?gateway.waiting(),
        "gateway ready"
    );
    let served = listen(&gateway, config, &tokens, redis, connection_threads).await;
    gateway.close().await;
    served
}

/// Serves the gateway on its transport until a shutdown signal.
async fn listen(
    gateway: &Gateway,
    config: &GatewayConfig,
    tokens: &[(String, Vec<String>)],
    redis: Option<RedisConnection>,
    connection_threads: usize,
) -> Result<(), Failure> {
    let server = gateway.server().clone();
    let shutdown = shutdown_signal();
    match config.listen {
        Listen::Stdio => serve_stdio(server, config.drain_timeout, shutdown).await,
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
            let mut http = HttpConfig::new()
                .connection_threads(connection_threads)
                .on_connection_thread_park(crate::log_sink::flush_stderr);
            if let Some(files) = &config.tls {
                let tls = load_tls(&files.cert, &files.key)?;
                reload_tls_on_hangup(Arc::clone(&tls))?;
                http = http.tls(tls);
            }
            let scheme = scheme(http.has_tls());
            if let Some(redis) = &redis {
                http = http.session_store(Arc::new(RedisSessionStore::new(redis)));
            }
            if !tokens.is_empty() {
                http = http.auth(auth_config(addr, scheme, tokens, "toolwire gateway")?);
            }
            let secure_cookies = http.has_tls();
            let mut http = HttpServer::from_listener(listener, server, http)
                .map_err(|e| bind_failure(addr, e))?
                .drain_timeout(config.drain_timeout);
            if config.ui {
                http = http.with_routes(console_routes(gateway, tokens, secure_cookies));
            }
            if config.health {
                http = http.with_routes(health(gateway, redis.clone()));
            }
            eprintln!(
                "toolwire: gateway serving {} tools at {scheme}://{}/mcp (Ctrl-C to stop)",
                gateway.tools().len(),
                http.local_addr()
            );
            if config.ui {
                eprintln!("toolwire: the console is at {scheme}://{addr}/ui (admin tokens only)");
            }
            if config.health {
                eprintln!(
                    "toolwire: health checks at {scheme}://{addr}/healthz and \
                     {scheme}://{addr}/readyz"
                );
            }
            http.run_until(shutdown)
                .await
                .map_err(|e| Failure::protocol(format!("the HTTP server failed: {e}")))
        }
    }
}

/// `/healthz` and `/readyz` (`[gateway] health = true`): ready when every
/// upstream is up (or waiting for its lazy start) and Redis, when
/// configured, answers.
fn health(gateway: &Gateway, redis: Option<RedisConnection>) -> axum::Router {
    let server = gateway.server().clone();
    let gateway = gateway.clone();
    health_routes_for(&server, move || {
        let mut not_ready = upstreams_not_ready(&gateway);
        let redis = redis.clone();
        async move {
            not_ready.extend(redis_not_ready(redis.as_ref()).await);
            not_ready
        }
    })
}

/// One line per upstream that is not serving: `upstream "notes": backing
/// off` (its error is not told: the check needs no token).
fn upstreams_not_ready(gateway: &Gateway) -> Vec<String> {
    gateway
        .upstreams()
        .into_iter()
        .filter(|u| !matches!(u.state, UpstreamState::Up | UpstreamState::Waiting))
        .map(|u| format!("upstream {:?}: {}", u.name, u.state.label()))
        .collect()
}

/// The console's pages (`[gateway] ui = true`): the tokens log in as the
/// principals the MCP endpoint names them (`token-1`, `token-2`, …), and
/// only those with the admin scope get in.
fn console_routes(
    gateway: &Gateway,
    tokens: &[(String, Vec<String>)],
    secure_cookies: bool,
) -> axum::Router {
    let mut console = ConsoleConfig::new().secure_cookies(secure_cookies);
    for (index, (token, scopes)) in tokens.iter().enumerate() {
        console = console.token(token, &token_principal(index), scopes.clone());
    }
    toolwire_console::router(gateway.clone(), console)
}

/// Reads the file again on each SIGHUP and serves what it says (see
/// [`Gateway::reload`]); a file that is refused leaves the running
/// configuration in place.
fn reload_on_hangup(gateway: &Gateway, path: PathBuf) -> Result<(), Failure> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut hangups = signal(SignalKind::hangup())
            .map_err(|e| Failure::protocol(format!("cannot listen for SIGHUP: {e}")))?;
        let gateway = gateway.clone();
        tokio::spawn(async move {
            while hangups.recv().await.is_some() {
                reload(&gateway, &path).await;
            }
        });
    }
    #[cfg(not(unix))]
    let _ = (gateway, path);
    Ok(())
}

async fn reload(gateway: &Gateway, path: &std::path::Path) {
    let config = match GatewayConfig::load(path) {
        Ok(config) => config,
        Err(error) => {
            eprintln!(
                "{}",
                safe_text::line(&format!(
                    "toolwire: SIGHUP: not reloaded, the running configuration is kept: {error}"
                ))
            );
            return;
        }
    };
    let report = gateway.reload(&config).await;
    if let Some(error) = &report.lock_error {
        let line = format!(
            "toolwire: SIGHUP: cannot read the lock file again (the pins held stay): {error}"
        );
        eprintln!("{}", safe_text::line(&line));
    }
    for key in &report.needs_restart {
        eprintln!(
            "toolwire: SIGHUP: {key} changed; it takes effect only after a restart (the running value is kept)"
        );
    }
    let mut parts = Vec::new();
    for (what, names) in [
        ("added", &report.added),
        ("removed", &report.removed),
        ("changed", &report.changed),
        ("policy changed", &report.policy_changed),
    ] {
        if !names.is_empty() {
            parts.push(format!("{what} {}", names.join(", ")));
        }
    }
    if parts.is_empty() {
        parts.push("no upstream changed".into());
    }
    let line = format!(
        "toolwire: SIGHUP: reloaded {}: {}; serving {} tools",
        path.display(),
        parts.join("; "),
        gateway.tools().len()
    );
    eprintln!("{}", safe_text::line(&line));
}

/// The Redis of `redis` or `redis_url_env`, connected.
async fn connect(target: &RedisTarget) -> Result<RedisConnection, Failure> {
    let redis = match target {
        RedisTarget::Url(url) => connect_redis(url, false).await?,
        RedisTarget::Cluster(nodes) => connect_redis(&nodes.join(","), true).await?,
        RedisTarget::UrlFromEnv(var) => {
            let url = std::env::var(var).map_err(|_| {
                Failure::usage(format!(
                    "gateway.redis_url_env: the environment variable {var} is not set"
                ))
            })?;
            connect_redis(&url, false).await?
        }
    };
    tracing::info!(
        "rate limits, legacy sessions and list changes go through Redis at {} (key prefix {})",
        redis.address(),
        redis.key_prefix()
    );
    Ok(redis)
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
