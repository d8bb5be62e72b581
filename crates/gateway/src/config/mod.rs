//! The gateway's configuration: one TOML file, read into [`GatewayConfig`].

mod reader;
mod sections;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::de::DeTable;
use toolwire_server::RateLimit;

use crate::glob::Glob;
use crate::pin::PinMode;
use reader::{File, Table};

/// What the gateway serves and in front of which servers.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewayConfig {
    /// Where downstream clients reach it.
    pub listen: Listen,
    /// Between an upstream's prefix and its tool's name (default `__`).
    pub name_separator: String,
    /// The longest exposed tool name (default 64, at most 128).
    pub max_name_len: usize,
    /// Where the audit records go (none by default).
    pub audit: Option<AuditTarget>,
    /// The lock file of pinned tool definitions (none: no pinning).
    pub lock: Option<PathBuf>,
    /// What a tool not yet in the lock file gets: `pin = "first-use"` (the
    /// default) or `"strict"`.
    pub pin: PinMode,
    /// Tool calls allowed per principal across all tools (none: the
    /// server's default, 100 a second). Every anonymous caller is one
    /// principal: without tokens this limit is shared by all clients.
    pub call_limit: Option<RateLimit>,
    /// Where several gateway instances keep what they share (rate limits,
    /// legacy sessions, list changes); none: this process's memory.
    pub redis: Option<RedisTarget>,
    /// Bearer tokens downstream clients present (none: no authentication,
    /// allowed on loopback only).
    pub tokens: Vec<TokenConfig>,
    /// Serve the web console at `/ui` beside `/mcp` (default false): HTTP
    /// only, and only for tokens with the `admin` scope.
    pub ui: bool,
    /// Serve `GET /healthz` and `GET /readyz` beside `/mcp` (default
    /// false; HTTP only).
    pub health: bool,
    /// How long calls in flight may finish after SIGTERM or Ctrl-C
    /// (`drain_timeout_s`, default 30 s).
    pub drain_timeout: Duration,
    /// Serve HTTPS with this certificate chain and key (`tls_cert` and
    /// `tls_key`, PEM files; none: plain HTTP).
    pub tls: Option<TlsFiles>,
    /// The servers behind the gateway, in the file's order.
    pub upstreams: Vec<UpstreamConfig>,
}

/// The PEM files of `tls_cert` and `tls_key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The certificate chain, leaf first.
    pub cert: PathBuf,
    /// Its private key.
    pub key: PathBuf,
}

/// Where downstream clients reach the gateway.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listen {
    /// Streamable HTTP at `/mcp` on this address.
    Http(SocketAddr),
    /// stdio (one client, the parent process).
    Stdio,
}

/// The Redis (or Valkey) of `redis` or `redis_url_env`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RedisTarget {
    /// One server: `redis = "redis://HOST:PORT"` (or `rediss://`).
    Url(String),
    /// A Redis Cluster, by seed nodes: `redis = ["redis://A:7000", ...]`.
    Cluster(Vec<String>),
    /// The URL is in this environment variable (for URLs with a password):
    /// `redis_url_env = "VAR"`.
    UrlFromEnv(String),
}

/// Where audit records (JSON lines) go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuditTarget {
    /// Appended to this file.
    File(PathBuf),
    /// Written to standard error (`"-"` in the file).
    Stderr,
}

/// A bearer token, read from an environment variable at start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenConfig {
    /// The variable holding the token.
    pub env: String,
    /// The scopes it grants.
    pub scopes: Vec<String>,
}

/// One server behind the gateway.
#[derive(Debug, Clone, PartialEq)]
pub struct UpstreamConfig {
    /// Its name in logs, audit records and errors.
    pub name: String,
    /// What its tools' exposed names start with (default: the name).
    pub prefix: String,
    /// How to reach it.
    pub transport: UpstreamTransport,
    /// Only these of its tools are served (empty: all).
    pub allow: Vec<Glob>,
    /// These of its tools are never served (checked after `allow`).
    pub deny: Vec<Glob>,
    /// The longest a call may take (default: the client's, 60 s).
    pub timeout: Option<Duration>,
    /// Calls per principal per tool.
    pub rate_limit: Option<RateLimit>,
    /// Tools visible and callable only with a scope: (tools, scope).
    pub scopes: Vec<(Glob, String)>,
    /// When the gateway first reaches it: at start (the default) or on the
    /// first call of one of its tools.
    pub start: StartMode,
}

/// When the gateway first reaches an upstream (`start = "boot"` or `"lazy"`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StartMode {
    /// At start: its process is started (or its URL reached) and its lists
    /// fetched before the gateway serves.
    #[default]
    Boot,
    /// On first use: until one of its tools is called, the gateway serves
    /// the tools pinned for it in the lock file without starting it. With
    /// nothing pinned for it yet it is started at boot, once, to pin them.
    Lazy,
}

/// How the gateway reaches an upstream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpstreamTransport {
    /// A child process speaking MCP on stdio: program and arguments.
    Command(Vec<String>),
    /// Streamable HTTP at `url`, with a bearer token from `bearer_env`.
    Url {
        /// The endpoint.
        url: String,
        /// The variable holding the bearer token, when one is needed.
        bearer_env: Option<String>,
    },
}

/// Why a configuration file was refused: where, which key, what is expected.
///
/// Displayed as `FILE:LINE: KEY: MESSAGE`, without `:LINE` when no line
/// applies (an unreadable file, a missing `[gateway]`) and without `KEY: `
/// when no key does (invalid TOML syntax, an unreadable file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The file (or `<string>`).
    pub source_name: String,
    /// The 1-based line, when known.
    pub line: Option<usize>,
    /// The key, as a path: `gateway.http`, `gateway.tokens[0].env`,
    /// `upstream "crm".timeout_s`. An upstream is named by its `name`, or by
    /// its 0-based index (`upstream[1]`) while its name is missing or
    /// invalid, and in errors about the name itself. Empty when no key applies.
    pub key: String,
    /// What is wrong and what is expected.
    pub message: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.source_name)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if !self.key.is_empty() {
            write!(f, ": {}", self.key)?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ConfigError {}

impl GatewayConfig {
    /// Reads and checks the file at `path`.
    pub fn load(path: &Path) -> Result<GatewayConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            source_name: path.display().to_string(),
            line: None,
            key: String::new(),
            message: format!("cannot read the file: {e}"),
        })?;
        GatewayConfig::parse(&text, &path.display().to_string())
    }

    /// Parses and checks configuration text; `source_name` names it in errors.
    ///
    /// The first problem found, in the file's order, is returned.
    pub fn parse(text: &str, source_name: &str) -> Result<GatewayConfig, ConfigError> {
        let file = File {
            text,
            name: source_name,
        };
        let doc = DeTable::parse(text).map_err(|e| file.syntax_error(&e))?;
        let root = Table {
            file: &file,
            path: String::new(),
            span: None,
            entries: doc.get_ref(),
        };
        root.config()
    }
}

/// The keys of `[gateway]`.
const GATEWAY_KEYS: &[&str] = &[
    "http",
    "stdio",
    "name_separator",
    "max_name_len",
    "audit",
    "lock",
    "pin",
    "call_limit",
    "redis",
    "redis_url_env",
    "tokens",
    "ui",
    "health",
    "drain_timeout_s",
    "tls_cert",
    "tls_key",
];
/// The keys of a `[[upstream]]`.
const UPSTREAM_KEYS: &[&str] = &[
    "name",
    "prefix",
    "command",
    "url",
    "bearer_env",
    "allow",
    "deny",
    "timeout_s",
    "rate_limit",
    "scopes",
    "start",
];
/// The keys of a `tokens` entry.
const TOKEN_KEYS: &[&str] = &["env", "scopes"];
/// Keys that would hold a secret: refused with where the secret goes instead.
const SECRET_KEYS: &[&str] = &[
    "token",
    "bearer",
    "bearer_token",
    "secret",
    "password",
    "api_key",
    "authorization",
];
const TOKEN_HINT: &str = "put it in an environment variable and name that variable in \
                          [gateway] tokens = [{ env = \"VAR\" }]";
const BEARER_HINT: &str =
    "put it in an environment variable and name that variable in bearer_env = \"VAR\"";

const TOOL_CHARS: &str = "only the characters A-Z a-z 0-9 _ - .";
const ENV_EXPECTED: &str =
    "the name of an environment variable (A-Z a-z 0-9 _, not starting with a digit)";
