//! `toolwire serve`: the demo server over Streamable HTTP or stdio, with
//! graceful shutdown on Ctrl-C (or SIGTERM).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use toolwire::server::auth::{AuthConfig, StaticTokens};
use toolwire::server::http::{
    DEFAULT_DRAIN_TIMEOUT, HttpConfig, HttpServer, TlsConfig, health_routes_for,
};
use toolwire::server::stdio::StdioConfig;
use toolwire::server::{Principal, RateLimit, StateKey};

use toolwire_redis::{
    RedisConfig, RedisConnection, RedisRateLimits, RedisSessionStore, RedisTaskStore,
};

use crate::demo::DemoOptions;
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
    toolwire serve --stdio                  # for `toolwire list -- toolwire serve --stdio`\n  \
    toolwire serve --token s3cret-token:delete --rate-limit 10/60 --handle-ttl 300\n  \
    toolwire serve --session-idle-timeout 600 --max-sessions 100\n  \
    toolwire serve --health --drain-timeout 10 --log-format json\n\n\
    Protocol revisions: 2026-07-28 clients are served statelessly (per-request _meta);\n\
    2025-11-25, 2025-06-18 and 2025-03-26 clients that open with `initialize` are served\n\
    too, on the same endpoint (over HTTP in a session named by Mcp-Session-Id; over\n\
    stdio the process serves that client's revision from then on).\n\n\
    Logs go to stderr; RUST_LOG filters them (default: info); --log-format json\n\
    writes them as JSON lines.\n\
    SIGTERM or Ctrl-C drains: no new connections, the calls in flight finish\n\
    (for --drain-timeout at most), listen streams and legacy sessions end, then\n\
    exit 0. A second signal exits at once, with status 130.\n\
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
    #[arg(long, value_name = "ORIGIN", conflicts_with = "stdio")]
    allow_origin: Vec<String>,

    /// Also accept requests whose Host header names HOST (repeatable); needed
    /// when clients reach the server by a non-loopback name or address.
    #[arg(long, value_name = "HOST", conflicts_with = "stdio")]
    allow_host: Vec<String>,

    /// Require a bearer token (HTTP only; repeatable): once one is given, a
    /// request without a valid `Authorization: Bearer TOKEN` gets 401. The
    /// scopes after `:` are granted to the token; `delete_file` then needs
    /// the scope `delete` (e.g. --token s3cret-token:delete). Tokens must
    /// not contain `:`.
    #[arg(long = "token", value_name = "TOKEN[:SCOPE,...]", value_parser = parse_token, conflicts_with = "stdio")]
    tokens: Vec<(String, Vec<String>)>,

    /// Allow N calls of each tool per SECS seconds for each caller (per
    /// principal and tool), e.g. 10/60; a call over the limit gets a tool
    /// error saying when to retry. All calls together are limited to 100
    /// per second per caller regardless.
    #[arg(long, value_name = "N/SECS", value_parser = parse_rate)]
    rate_limit: Option<RateLimit>,

    /// Keep baskets, rate-limit buckets, legacy HTTP sessions and the
    /// extra_tool switch in Redis (or Valkey) at URL, redis://HOST:PORT or
    /// rediss:// (TLS), and tell list changes through it, so that several
    /// `toolwire serve` instances behind one load balancer share them (no
    /// sticky sessions needed). Without Redis (down or unreachable) basket
    /// tools and toggle_extras fail with an error saying so, calls are
    /// refused for a second (fail closed) and new legacy sessions with 503,
    /// until it is back.
    #[arg(long, value_name = "URL")]
    redis: Option<String>,

    /// --redis names a Redis Cluster: URL is one seed node, or several
    /// separated by commas (redis://10.0.0.1:7000,redis://10.0.0.2:7000).
    #[arg(long, requires = "redis")]
    redis_cluster: bool,

    /// Forget a basket (the basket_id handle of create_basket) after SECS
    /// seconds without use. [default: 1800]
    #[arg(long, value_name = "SECS", value_parser = parse_ttl)]
    handle_ttl: Option<Duration>,

    /// End a legacy client's HTTP session (one opened by `initialize`, named
    /// by Mcp-Session-Id) after SECS whole seconds without a request;
    /// 1 to 2592000 (30 days). HTTP only: ignored with --stdio.
    /// [default: 1800]
    #[arg(long, value_name = "SECS", value_parser = parse_session_idle_timeout)]
    session_idle_timeout: Option<Duration>,

    /// Allow at most N legacy HTTP sessions open at once (at least 1); the
    /// next `initialize` gets HTTP 503 until one ends. HTTP only: ignored
    /// with --stdio. [default: 10000]
    #[arg(long, value_name = "N", value_parser = parse_max_sessions)]
    max_sessions: Option<usize>,

    /// Also serve GET /healthz (200 `ok` while the process serves) and
    /// GET /readyz (200 when ready; 503 with what is not, e.g. Redis
    /// unreachable) on the same address, without the endpoint's checks or
    /// tokens. Off by default. HTTP only.
    #[arg(long, conflicts_with = "stdio")]
    health: bool,

    /// On SIGTERM or Ctrl-C, let the calls in flight finish for up to SECS
    /// seconds (0 to 86400) before exiting. [default: 30]
    #[arg(long, value_name = "SECS", value_parser = parse_drain_timeout)]
    drain_timeout: Option<Duration>,

    /// Serve HTTPS with the certificate chain in FILE (PEM, leaf first;
    /// needs --tls-key): HTTP/2 or HTTP/1.1 as the client's TLS handshake
    /// chooses. SIGHUP reads both files again (new connections get the new
    /// certificate; a pair that cannot be used is reported and the old one
    /// kept).
    #[arg(
        long,
        value_name = "FILE",
        requires = "tls_key",
        conflicts_with = "stdio"
    )]
    tls_cert: Option<PathBuf>,

    /// The private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(
        long,
        value_name = "FILE",
        requires = "tls_cert",
        conflicts_with = "stdio"
    )]
    tls_key: Option<PathBuf>,
}

pub(crate) fn parse_token(text: &str) -> Result<(String, Vec<String>), String> {
    let (token, scopes) = match text.split_once(':') {
        Some((token, scopes)) => (token, scopes),
        None => (text, ""),
    };
    if token.is_empty() {
        return Err("the token is empty; expected TOKEN or TOKEN:scope,scope".into());
    }
    if token.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("a token cannot contain spaces or control characters".into());
    }
    let scopes = scopes
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    Ok((token.to_owned(), scopes))
}

fn parse_rate(text: &str) -> Result<RateLimit, String> {
    let bad = || format!("{text:?}: expected N/SECS, e.g. 10/60 for 10 calls a minute");
    let (count, seconds) = text.split_once('/').ok_or_else(bad)?;
    let count: u32 = count.trim().parse().map_err(|_| bad())?;
    let seconds: f64 = seconds.trim().parse().map_err(|_| bad())?;
    if count == 0 || !(seconds.is_finite() && seconds > 0.0 && seconds <= 86_400.0) {
        return Err(format!(
            "{text:?}: N must be at least 1 and SECS between 0 and 86400"
        ));
    }
    Ok(RateLimit::new(count, Duration::from_secs_f64(seconds)))
}

fn parse_ttl(text: &str) -> Result<Duration, String> {
    let seconds: f64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    if !(seconds.is_finite() && seconds > 0.0 && seconds <= 30.0 * 86_400.0) {
        return Err("the handle TTL must be between 0 and 2592000 seconds (30 days)".into());
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// Longest `--session-idle-timeout`: 30 days.
const MAX_SESSION_IDLE_SECS: u64 = 30 * 86_400;

fn parse_session_idle_timeout(text: &str) -> Result<Duration, String> {
    let seconds: u64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a whole number of seconds, e.g. 1800"))?;
    if !(1..=MAX_SESSION_IDLE_SECS).contains(&seconds) {
        return Err(format!(
            "the session idle timeout must be between 1 and {MAX_SESSION_IDLE_SECS} seconds (30 days)"
        ));
    }
    Ok(Duration::from_secs(seconds))
}

pub(crate) fn parse_drain_timeout(text: &str) -> Result<Duration, String> {
    let seconds: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds, e.g. 30"))?;
    if !(seconds.is_finite() && (0.0..=86_400.0).contains(&seconds)) {
        return Err("the drain timeout must be between 0 and 86400 seconds (a day)".into());
    }
    Ok(Duration::from_secs_f64(seconds))
}

fn parse_max_sessions(text: &str) -> Result<usize, String> {
    let sessions: usize = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a whole number of sessions, e.g. 10000"))?;
    if sessions == 0 {
        return Err(
            "must be at least 1 (0 would refuse every client that opens with `initialize`)".into(),
        );
    }
    Ok(sessions)
}

pub async fn run(args: ServeArgs, connection_threads: usize) -> Result<(), Failure> {
    let redis = match &args.redis {
        Some(url) => {
            let redis = connect_redis(url, args.redis_cluster).await?;
            tracing::info!(
                "baskets, tasks, rate limits, legacy sessions, the extra_tool switch and list changes go through Redis at {} (key prefix {})",
                redis.address(),
                redis.key_prefix()
            );
            Some(redis)
        }
        None => None,
    };
    let options = DemoOptions {
        rate_limit: args.rate_limit,
        handle_ttl: args.handle_ttl,
        scopes: !args.tokens.is_empty(),
        redis: redis.clone(),
    };
    let mut demo = crate::demo::demo(&options);
    demo.builder = demo
        .builder
        .state_keys_from_env(STATE_KEYS_ENV)
        .map_err(Failure::usage)?;
    if let Some(redis) = &redis {
        demo.builder = demo
            .builder
            .task_store(Arc::new(RedisTaskStore::new(redis)));
    }
    if std::env::var_os(STATE_KEYS_ENV).is_none() {
        // One process: a fresh key is right (requestState dies with it).
        demo.builder = demo.builder.state_key(StateKey::random());
    }
    let server = demo
        .build()
        .map_err(|e| Failure::protocol(format!("the demo server does not build: {e}")))?;
    let shutdown = shutdown_signal();
    let drain_timeout = args.drain_timeout.unwrap_or(DEFAULT_DRAIN_TIMEOUT);
    if args.stdio {
        if args.session_idle_timeout.is_some() || args.max_sessions.is_some() {
            tracing::warn!(
                "--session-idle-timeout and --max-sessions apply to HTTP sessions only; \
                 ignored with --stdio"
            );
        }
        tracing::info!("serving the demo MCP server on stdio");
        serve_stdio(server, drain_timeout, shutdown).await
    } else {
        let wanted = resolve(args.http.as_deref().unwrap_or(DEFAULT_ADDR)).await?;
        // Bound first: the resource URI of --token names the actual port.
        let listener = tokio::net::TcpListener::bind(wanted)
            .await
            .map_err(|e| bind_failure(wanted, e))?;
        let addr = listener.local_addr().map_err(|e| bind_failure(wanted, e))?;
        let mut config = with_session_limits(HttpConfig::new(), &args)
            .connection_threads(connection_threads)
            .on_connection_thread_park(crate::log_sink::flush_stderr);
        let tls = match (&args.tls_cert, &args.tls_key) {
            (Some(cert), Some(key)) => Some(load_tls(cert, key)?),
            _ => None,
        };
        if let Some(tls) = &tls {
            config = config.tls(Arc::clone(tls));
            reload_tls_on_hangup(Arc::clone(tls))?;
        }
        let scheme = scheme(config.has_tls());
        if let Some(redis) = &redis {
            config = config
                .rate_limit_store(Arc::new(RedisRateLimits::new(redis.clone())))
                .session_store(Arc::new(RedisSessionStore::new(redis)));
        }
        if !args.tokens.is_empty() {
            config = config.auth(auth_config(addr, scheme, &args.tokens, "toolwire demo")?);
        }
        for origin in &args.allow_origin {
            config = config.allow_origin(origin);
        }
        for host in &args.allow_host {
            config = config.allow_host(host);
        }
        let health = args.health.then(|| server.clone());
        let mut http = HttpServer::from_listener(listener, server, config)
            .map_err(|e| bind_failure(addr, e))?
            .drain_timeout(drain_timeout);
        if let Some(server) = health {
            let redis = redis.clone();
            http = http.with_routes(health_routes_for(&server, move || {
                let redis = redis.clone();
                async move { redis_not_ready(redis.as_ref()).await.into_iter().collect() }
            }));
        }
        let url = format!("{scheme}://{}/mcp", http.local_addr());
        if !http.local_addr().ip().is_loopback() {
            tracing::warn!(
                "listening beyond loopback on {}: anyone who can reach it can call the tools",
                http.local_addr()
            );
        }
        eprintln!("toolwire: serving the demo MCP server at {url} (Ctrl-C to stop)");
        if args.health {
            eprintln!(
                "toolwire: health checks at {scheme}://{0}/healthz and {scheme}://{0}/readyz",
                http.local_addr()
            );
        }
        let bearer = if args.tokens.is_empty() {
            ""
        } else {
            " --bearer TOKEN"
        };
        eprintln!(
            "toolwire: try `toolwire list {url}{bearer}` or `toolwire call {url} echo text=hello{bearer}`"
        );
        http.run_until(shutdown)
            .await
            .map_err(|e| Failure::protocol(format!("the HTTP server failed: {e}")))?;
        eprintln!("toolwire: stopped");
        Ok(())
    }
}

/// Serves `server` on stdin and stdout until stdin closes, or until
/// `shutdown`: then drains for `drain_timeout` at most.
pub(crate) async fn serve_stdio(
    server: toolwire::server::Server,
    drain_timeout: Duration,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), Failure> {
    let config = StdioConfig {
        shutdown_grace: drain_timeout,
        ..StdioConfig::default()
    };
    toolwire::server::stdio::serve_stdio_until(server, config, shutdown)
        .await
        .map_err(|e| Failure::protocol(format!("stdio transport failed: {e}")))
}

/// How long a readiness check waits for Redis to answer.
const READY_PING_TIMEOUT: Duration = Duration::from_secs(2);

/// Why `redis` (when there is one) keeps the server from being ready:
/// it does not answer a PING within 2 s.
pub(crate) async fn redis_not_ready(redis: Option<&RedisConnection>) -> Option<String> {
    let redis = redis?;
    let problem = match tokio::time::timeout(READY_PING_TIMEOUT, redis.ping()).await {
        Ok(Ok(())) => return None,
        Ok(Err(error)) => error,
        Err(_) => format!("no answer within {} s", READY_PING_TIMEOUT.as_secs()),
    };
    Some(format!("redis at {}: {problem}", redis.address()))
}

/// Connects to `--redis URL` (with `cluster`: seed nodes, comma-separated),
/// so that a wrong URL or a Redis that is not there is said at start, not at
/// the first call.
pub(crate) async fn connect_redis(url: &str, cluster: bool) -> Result<RedisConnection, Failure> {
    let config = if cluster {
        RedisConfig::cluster(url.split(',').map(str::trim))
    } else {
        RedisConfig::new(url)
    };
    config.connect().await.map_err(|e| {
        Failure::usage(format!("--redis: {e}"))
            .hint("start Redis (e.g. `redis-server --port 6379`) or fix the URL")
    })
}

/// `--session-idle-timeout` and `--max-sessions`, when given.
fn with_session_limits(mut config: HttpConfig, args: &ServeArgs) -> HttpConfig {
    if let Some(timeout) = args.session_idle_timeout {
        config = config.session_idle_timeout(timeout);
    }
    if let Some(sessions) = args.max_sessions {
        config = config.max_sessions(sessions);
    }
    config
}

/// Bearer tokens (with their scopes) as principals `token-1`, `token-2`,
/// ... (the token itself is never logged), protecting `http://ADDR/mcp`,
/// named `resource_name` in its metadata.
pub(crate) fn auth_config(
    addr: SocketAddr,
    scheme: &str,
    tokens: &[(String, Vec<String>)],
    resource_name: &str,
) -> Result<AuthConfig, Failure> {
    let mut table = StaticTokens::new();
    for (index, (token, scopes)) in tokens.iter().enumerate() {
        let principal = Principal::new(token_principal(index)).with_scopes(scopes.clone());
        table = table.token(token, principal);
    }
    let resource = format!("{scheme}://{addr}/mcp");
    let config = AuthConfig::new(&resource, table)
        .map_err(|e| Failure::usage(format!("cannot protect {resource}: {e}")))?
        .resource_name(resource_name);
    tracing::info!(
        tokens = tokens.len(),
        "bearer tokens required (`toolwire list URL --bearer TOKEN`)"
    );
    Ok(config)
}

/// `https` under TLS, else `http`.
pub(crate) fn scheme(tls: bool) -> &'static str {
    if tls { "https" } else { "http" }
}

/// The certificate and key of `--tls-cert`/`--tls-key` (or the gateway's
/// `tls_cert`/`tls_key`).
pub(crate) fn load_tls(cert: &Path, key: &Path) -> Result<Arc<TlsConfig>, Failure> {
    TlsConfig::from_pem_files(cert, key)
        .map(Arc::new)
        .map_err(|e| Failure::usage(format!("cannot serve TLS: {e}")))
}

/// Reads the certificate and key again on each SIGHUP; a pair that cannot
/// be used is reported and the one in use kept.
pub(crate) fn reload_tls_on_hangup(tls: Arc<TlsConfig>) -> Result<(), Failure> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut hangups = signal(SignalKind::hangup())
            .map_err(|e| Failure::protocol(format!("cannot listen for SIGHUP: {e}")))?;
        tokio::spawn(async move {
            while hangups.recv().await.is_some() {
                match tls.reload() {
                    Ok(()) => tracing::info!("TLS certificate and key read again"),
                    Err(error) => {
                        tracing::warn!(%error, "TLS certificate not reloaded; the old one stays");
                    }
                }
            }
        });
    }
    #[cfg(not(unix))]
    let _ = tls;
    Ok(())
}

/// The principal the `index`th configured token names: `token-1`, …
pub(crate) fn token_principal(index: usize) -> String {
    format!("token-{}", index + 1)
}

/// `host:port`, `[v6]:port`, or a port alone (on 127.0.0.1).
pub(crate) async fn resolve(text: &str) -> Result<SocketAddr, Failure> {
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

pub(crate) fn bind_failure(addr: SocketAddr, error: std::io::Error) -> Failure {
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

/// The exit status when a second signal stops the drain: 128 + SIGINT, as
/// a shell reports a process interrupted.
pub(crate) const SECOND_SIGNAL_EXIT: i32 = 130;

/// Resolves on Ctrl-C, or SIGTERM on Unix; from then on, a second Ctrl-C
/// or SIGTERM exits the process at once (status 130), without waiting for
/// the drain. The handlers are installed when this is called (before the
/// address is printed), not when first polled, so a signal sent as soon
/// as the server says it listens is not lost.
pub(crate) fn shutdown_signal() -> impl std::future::Future<Output = ()> + Send + 'static {
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
                    tokio::spawn(async move {
                        tokio::select! {
                            _ = interrupt.recv() => {}
                            _ = terminate.recv() => {}
                        }
                        exit_at_once();
                    });
                }
                _ => {
                    let _ = tokio::signal::ctrl_c().await;
                    tokio::spawn(async {
                        let _ = tokio::signal::ctrl_c().await;
                        exit_at_once();
                    });
                }
            }
            tracing::info!("shutting down (a second Ctrl-C or SIGTERM exits at once)");
        }
    }
    #[cfg(not(unix))]
    {
        async move {
            let _ = tokio::signal::ctrl_c().await;
            tokio::spawn(async {
                let _ = tokio::signal::ctrl_c().await;
                exit_at_once();
            });
            tracing::info!("shutting down (a second Ctrl-C exits at once)");
        }
    }
}

/// The second signal: the calls still in flight are abandoned.
fn exit_at_once() -> ! {
    tracing::warn!("second signal: exiting at once, without waiting for the calls in flight");
    std::process::exit(SECOND_SIGNAL_EXIT);
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use toolwire::server::http::{DEFAULT_MAX_SESSIONS, DEFAULT_SESSION_IDLE_TIMEOUT};

    use super::*;

    #[derive(Debug, Parser)]
    struct Serve {
        #[command(flatten)]
        args: ServeArgs,
    }

    fn config(words: &[&str]) -> HttpConfig {
        let parsed = Serve::try_parse_from(std::iter::once("serve").chain(words.iter().copied()))
            .expect("the flags parse");
        with_session_limits(HttpConfig::new(), &parsed.args)
    }

    #[test]
    fn session_flags_reach_the_http_config() {
        let given = config(&["--session-idle-timeout", "600", "--max-sessions", "5"]);
        assert_eq!(given.get_session_idle_timeout(), Duration::from_secs(600));
        assert_eq!(given.get_max_sessions(), 5);

        let defaults = config(&[]);
        assert_eq!(
            defaults.get_session_idle_timeout(),
            DEFAULT_SESSION_IDLE_TIMEOUT
        );
        assert_eq!(defaults.get_max_sessions(), DEFAULT_MAX_SESSIONS);
    }

    #[test]
    fn session_flag_values() {
        assert_eq!(parse_session_idle_timeout("1"), Ok(Duration::from_secs(1)));
        assert_eq!(
            parse_session_idle_timeout(" 2592000 "),
            Ok(Duration::from_secs(2_592_000))
        );
        let out_of_range = Err(
            "the session idle timeout must be between 1 and 2592000 seconds (30 days)".to_owned(),
        );
        assert_eq!(parse_session_idle_timeout("0"), out_of_range);
        assert_eq!(parse_session_idle_timeout("2592001"), out_of_range);
        assert_eq!(
            parse_session_idle_timeout("-1"),
            Err("\"-1\" is not a whole number of seconds, e.g. 1800".to_owned())
        );

        assert_eq!(parse_max_sessions("1"), Ok(1));
        assert_eq!(parse_max_sessions("10000"), Ok(10_000));
        assert_eq!(
            parse_max_sessions("0"),
            Err(
                "must be at least 1 (0 would refuse every client that opens with `initialize`)"
                    .to_owned()
            )
        );
        assert_eq!(
            parse_max_sessions("1e4"),
            Err("\"1e4\" is not a whole number of sessions, e.g. 10000".to_owned())
        );
    }
}
