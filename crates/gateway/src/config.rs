//! The gateway's configuration: one TOML file, read into [`GatewayConfig`].

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toolwire_server::RateLimit;

use crate::glob::Glob;

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
    /// Bearer tokens downstream clients present (none: no authentication,
    /// allowed on loopback only).
    pub tokens: Vec<TokenConfig>,
    /// The servers behind the gateway, in the file's order.
    pub upstreams: Vec<UpstreamConfig>,
}

/// Where downstream clients reach the gateway.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listen {
    /// Streamable HTTP at `/mcp` on this address.
    Http(SocketAddr),
    /// stdio (one client, the parent process).
    Stdio,
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
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}{}: {key}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct ConfigError {
    /// The file (or `<string>`).
    pub source_name: String,
    /// The 1-based line, when known.
    pub line: Option<usize>,
    /// The key, as a dotted path (`upstream[1].timeout_s`).
    pub key: String,
    /// What is wrong and what is expected.
    pub message: String,
}

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
    pub fn parse(text: &str, source_name: &str) -> Result<GatewayConfig, ConfigError> {
        let raw: RawConfig = toml::from_str(text).map_err(|e| ConfigError {
            source_name: source_name.to_owned(),
            line: e.span().map(|span| line_of(text, span.start)),
            key: String::new(),
            message: e.message().to_owned(),
        })?;
        raw.check(source_name)
    }
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    gateway: RawGateway,
    #[serde(default)]
    upstream: Vec<RawUpstream>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGateway {
    http: Option<SocketAddr>,
    #[serde(default)]
    stdio: bool,
    name_separator: Option<String>,
    max_name_len: Option<usize>,
    audit: Option<String>,
    #[serde(default)]
    tokens: Vec<RawToken>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawToken {
    env: String,
    #[serde(default)]
    scopes: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawUpstream {
    name: String,
    prefix: Option<String>,
    command: Option<Vec<String>>,
    url: Option<String>,
    bearer_env: Option<String>,
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
    timeout_s: Option<f64>,
    rate_limit: Option<String>,
    #[serde(default)]
    scopes: std::collections::BTreeMap<String, String>,
}

impl RawConfig {
    fn check(self, source_name: &str) -> Result<GatewayConfig, ConfigError> {
        let error = |key: String, message: String| ConfigError {
            source_name: source_name.to_owned(),
            line: None,
            key,
            message,
        };
        let listen = match (self.gateway.http, self.gateway.stdio) {
            (Some(addr), false) => Listen::Http(addr),
            (None, true) => Listen::Stdio,
            _ => {
                return Err(error(
                    "gateway".into(),
                    "expected exactly one of http = \"ADDR:PORT\" or stdio = true".into(),
                ));
            }
        };
        let upstreams = self
            .upstream
            .into_iter()
            .enumerate()
            .map(|(n, raw)| raw.check(&format!("upstream[{n}]"), &error))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(GatewayConfig {
            listen,
            name_separator: self.gateway.name_separator.unwrap_or_else(|| "__".into()),
            max_name_len: self.gateway.max_name_len.unwrap_or(64),
            audit: self.gateway.audit.map(|a| match a.as_str() {
                "-" => AuditTarget::Stderr,
                path => AuditTarget::File(PathBuf::from(path)),
            }),
            tokens: self
                .gateway
                .tokens
                .into_iter()
                .map(|t| TokenConfig {
                    env: t.env,
                    scopes: t.scopes,
                })
                .collect(),
            upstreams,
        })
    }
}

impl RawUpstream {
    fn check(
        self,
        key: &str,
        error: &dyn Fn(String, String) -> ConfigError,
    ) -> Result<UpstreamConfig, ConfigError> {
        let transport = match (self.command, self.url) {
            (Some(command), None) if !command.is_empty() => UpstreamTransport::Command(command),
            (None, Some(url)) => UpstreamTransport::Url {
                url,
                bearer_env: self.bearer_env,
            },
            _ => {
                return Err(error(
                    key.to_owned(),
                    "expected exactly one of command = [\"PROGRAM\", \"ARG\", ...] or url = \"http(s)://...\"".into(),
                ));
            }
        };
        let globs = |list: Vec<String>| list.into_iter().map(Glob::new).collect();
        let rate_limit = match self.rate_limit {
            Some(text) => Some(parse_rate(&text).ok_or_else(|| {
                error(
                    format!("{key}.rate_limit"),
                    format!("{text:?}: expected \"N/SECS\", e.g. \"30/60\""),
                )
            })?),
            None => None,
        };
        Ok(UpstreamConfig {
            prefix: self.prefix.unwrap_or_else(|| self.name.clone()),
            name: self.name,
            transport,
            allow: globs(self.allow),
            deny: globs(self.deny),
            timeout: self.timeout_s.map(Duration::from_secs_f64),
            rate_limit,
            scopes: self
                .scopes
                .into_iter()
                .map(|(tools, scope)| (Glob::new(tools), scope))
                .collect(),
        })
    }
}

/// `N/SECS` as a rate limit.
fn parse_rate(text: &str) -> Option<RateLimit> {
    let (count, seconds) = text.split_once('/')?;
    let count: u32 = count.trim().parse().ok().filter(|n| *n > 0)?;
    let seconds: u64 = seconds.trim().parse().ok().filter(|s| *s > 0)?;
    Some(RateLimit::new(count, Duration::from_secs(seconds)))
}
