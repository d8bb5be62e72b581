//! The checks of each section and key: `[gateway]` and its tokens, each
//! `[[upstream]]` with its transport, policy and limits.

use std::path::PathBuf;
use std::time::Duration;

use toolwire_server::RateLimit;
use toolwire_server::http::DEFAULT_DRAIN_TIMEOUT;

use super::reader::*;
use super::*;
use crate::glob::Glob;
use crate::pin::PinMode;

impl Table<'_> {
    /// The root table as a configuration.
    pub(super) fn config(&self) -> Checked<GatewayConfig> {
        self.check_keys(&["gateway", "upstream"], TOKEN_HINT)?;
        let gateway = self
            .get("gateway")
            .ok_or_else(|| {
                self.file.error(
                    None,
                    "gateway",
                    "missing; expected a [gateway] table with http = \"ADDR:PORT\" \
                     or stdio = true"
                        .into(),
                )
            })?
            .table("a [gateway] table")?;
        gateway.check_keys(GATEWAY_KEYS, TOKEN_HINT)?;
        // Read in this order, so that the first problem is the one refused.
        let listen = listen(&gateway)?;
        let name_separator = name_separator(&gateway)?;
        let max_name_len = max_name_len(&gateway)?;
        let audit = audit(&gateway)?;
        let lock = lock(&gateway)?;
        let pin = pin(&gateway)?;
        let call_limit = gateway
            .get("call_limit")
            .map(|field| rate_limit(&field))
            .transpose()?;
        let redis = redis(&gateway)?;
        let tokens = tokens(&gateway)?;
        let ui = ui(&gateway, &listen, &tokens)?;
        let health = health(&gateway, &listen)?;
        let drain_timeout = gateway
            .get("drain_timeout_s")
            .map(|field| drain_timeout(&field))
            .transpose()?
            .unwrap_or(DEFAULT_DRAIN_TIMEOUT);
        let tls = tls(&gateway, &listen)?;
        Ok(GatewayConfig {
            listen,
            name_separator,
            max_name_len,
            audit,
            lock,
            pin,
            call_limit,
            redis,
            tokens,
            ui,
            health,
            drain_timeout,
            tls,
            upstreams: lazy_needs_lock(&gateway, self, upstreams(self)?)?,
        })
    }
}

/// Refuses `start = "lazy"` without `lock`: a lazy upstream's tools are
/// served from their pins until it starts.
fn lazy_needs_lock(
    gateway: &Table,
    root: &Table,
    upstreams: Vec<UpstreamConfig>,
) -> Checked<Vec<UpstreamConfig>> {
    if gateway.get("lock").is_some() {
        return Ok(upstreams);
    }
    let Some(lazy) = upstreams.iter().position(|u| u.start == StartMode::Lazy) else {
        return Ok(upstreams);
    };
    let items = root
        .get("upstream")
        .expect("upstreams were read")
        .items("")?;
    let table = items[lazy].table("")?;
    let label = format!("upstream {:?}", upstreams[lazy].name);
    let field = table.named(label).get("start").expect("start was read");
    Err(field.error(
        "expected only with lock = \"FILE\" in [gateway]: until a lazy upstream is \
         first used, the gateway serves the tools pinned for it in the lock file",
    ))
}

/// `start`: `"boot"` (the default) or `"lazy"`.
pub(super) fn start(table: &Table) -> Checked<StartMode> {
    let Some(field) = table.get("start") else {
        return Ok(StartMode::Boot);
    };
    match field.str() {
        Some("boot") => Ok(StartMode::Boot),
        Some("lazy") => Ok(StartMode::Lazy),
        _ => Err(field.expected("\"boot\" or \"lazy\"")),
    }
}

/// `http` or `stdio`, exactly one.
pub(super) fn listen(gateway: &Table) -> Checked<Listen> {
    const HTTP: &str = "an IP address and port such as \"127.0.0.1:8940\" \
                        (host names are not resolved)";
    let http = match gateway.get("http") {
        Some(field) => Some(
            field
                .str()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| field.expected(HTTP))?,
        ),
        None => None,
    };
    let stdio = gateway.get("stdio");
    let stdio_on = match &stdio {
        Some(field) => field
            .value
            .get_ref()
            .as_bool()
            .ok_or_else(|| field.expected("true or false"))?,
        None => false,
    };
    match (http, stdio.filter(|_| stdio_on)) {
        (Some(addr), None) => Ok(Listen::Http(addr)),
        (None, Some(_)) => Ok(Listen::Stdio),
        (Some(_), Some(stdio)) => {
            Err(stdio
                .error("expected exactly one of http = \"ADDR:PORT\" or stdio = true, got both"))
        }
        (None, None) => {
            Err(gateway.error("expected http = \"ADDR:PORT\" or stdio = true, got neither"))
        }
    }
}

/// `name_separator`, default `__`.
pub(super) fn name_separator(gateway: &Table) -> Checked<String> {
    match gateway.get("name_separator") {
        Some(field) => field.string(&format!("{TOOL_CHARS} (or \"\" for none)"), is_tool_chars),
        None => Ok("__".into()),
    }
}

/// `max_name_len`, default 64.
pub(super) fn max_name_len(gateway: &Table) -> Checked<usize> {
    let Some(field) = gateway.get("max_name_len") else {
        return Ok(64);
    };
    field
        .integer()
        .filter(|n| (16..=128).contains(n))
        .map(|n| n as usize)
        .ok_or_else(|| field.expected("a whole number from 16 to 128"))
}

/// `audit`: a file, or `-` for stderr.
pub(super) fn audit(gateway: &Table) -> Checked<Option<AuditTarget>> {
    let Some(field) = gateway.get("audit") else {
        return Ok(None);
    };
    let target = field.string("a file path, or \"-\" for standard error", |s| {
        !s.is_empty()
    })?;
    Ok(Some(match target.as_str() {
        "-" => AuditTarget::Stderr,
        _ => AuditTarget::File(PathBuf::from(target)),
    }))
}

/// `redis` (a URL, or an array of cluster seed nodes) or `redis_url_env`.
pub(super) fn redis(gateway: &Table) -> Checked<Option<RedisTarget>> {
    const URL: &str = "a redis:// or rediss:// URL such as \"redis://127.0.0.1:6379\"";
    const WHAT: &str =
        "a redis:// or rediss:// URL, or an array of them (Redis Cluster seed nodes)";
    let is_redis_url = |s: &str| s.starts_with("redis://") || s.starts_with("rediss://");
    match (gateway.get("redis"), gateway.get("redis_url_env")) {
        (None, None) => Ok(None),
        (Some(_), Some(env)) => Err(env.error("expected either redis or redis_url_env, not both")),
        (None, Some(env)) => Ok(Some(RedisTarget::UrlFromEnv(env.env_name()?))),
        (Some(field), None) => {
            let target = match field.str() {
                Some(_) => RedisTarget::Url(field.string(URL, is_redis_url)?),
                None => {
                    let nodes = field.items(WHAT)?;
                    if nodes.is_empty() {
                        return Err(field.expected(WHAT));
                    }
                    let urls = nodes.iter().map(|n| n.string(URL, is_redis_url));
                    RedisTarget::Cluster(urls.collect::<Checked<_>>()?)
                }
            };
            let urls = match &target {
                RedisTarget::Url(url) => std::slice::from_ref(url),
                RedisTarget::Cluster(urls) => urls.as_slice(),
                RedisTarget::UrlFromEnv(_) => &[],
            };
            if urls.iter().any(|url| has_password(url)) {
                return Err(field.error(
                    "refused: a URL with a password puts a secret in the file (not repeated \
                     here); put the URL in an environment variable and name it in \
                     redis_url_env = \"VAR\"",
                ));
            }
            Ok(Some(target))
        }
    }
}

/// True when the URL's authority carries `user:password@` or `:password@`.
fn has_password(url: &str) -> bool {
    let authority = url.split("://").nth(1).unwrap_or_default();
    let authority = authority.split(['/', '?', '#']).next().unwrap_or_default();
    authority
        .rsplit_once('@')
        .is_some_and(|(user, _)| user.contains(':'))
}

/// `lock`: the lock file's path.
pub(super) fn lock(gateway: &Table) -> Checked<Option<PathBuf>> {
    let Some(field) = gateway.get("lock") else {
        return Ok(None);
    };
    let path = field.string("a file path", |s| !s.is_empty())?;
    Ok(Some(PathBuf::from(path)))
}

/// `pin`: `"first-use"` (the default) or `"strict"`, with `lock` only.
pub(super) fn pin(gateway: &Table) -> Checked<PinMode> {
    let Some(field) = gateway.get("pin") else {
        return Ok(PinMode::default());
    };
    let mode = match field.str() {
        Some("first-use") => PinMode::TrustOnFirstUse,
        Some("strict") => PinMode::Strict,
        _ => return Err(field.expected("\"first-use\" or \"strict\"")),
    };
    match gateway.get("lock") {
        Some(_) => Ok(mode),
        None => {
            Err(field.error("expected only with lock = \"FILE\": pins are kept in the lock file"))
        }
    }
}

/// `ui`: `true` or `false` (the default); `true` needs `http` and a token
/// with the `admin` scope.
pub(super) fn ui(gateway: &Table, listen: &Listen, tokens: &[TokenConfig]) -> Checked<bool> {
    let Some(field) = gateway.get("ui") else {
        return Ok(false);
    };
    let on = field
        .value
        .get_ref()
        .as_bool()
        .ok_or_else(|| field.expected("true or false"))?;
    if !on {
        return Ok(false);
    }
    if *listen == Listen::Stdio {
        return Err(field.error("expected only with http = \"ADDR:PORT\": the console needs http"));
    }
    if !tokens.iter().any(|t| t.scopes.iter().any(|s| s == "admin")) {
        return Err(field.error(
            "the console admits only tokens with the admin scope: \
             add scopes = [\"admin\"] to one of tokens",
        ));
    }
    Ok(true)
}

/// `health`: `true` or `false` (the default); `true` needs `http`.
pub(super) fn health(gateway: &Table, listen: &Listen) -> Checked<bool> {
    let Some(field) = gateway.get("health") else {
        return Ok(false);
    };
    let on = field
        .value
        .get_ref()
        .as_bool()
        .ok_or_else(|| field.expected("true or false"))?;
    if on && *listen == Listen::Stdio {
        return Err(field.error(
            "expected only with http = \"ADDR:PORT\": /healthz and /readyz are served over HTTP",
        ));
    }
    Ok(on)
}

/// `tls_cert` and `tls_key`: both or neither, with `http` only.
pub(super) fn tls(gateway: &Table, listen: &Listen) -> Checked<Option<TlsFiles>> {
    let path = |key: &str| {
        gateway
            .get(key)
            .map(|field| {
                field
                    .string("a PEM file's path", |s| !s.is_empty())
                    .map(|p| (field, p))
            })
            .transpose()
    };
    match (path("tls_cert")?, path("tls_key")?) {
        (None, None) => Ok(None),
        (Some((field, _)), None) => {
            Err(field.error("expected with tls_key = \"FILE\" (its private key)"))
        }
        (None, Some((field, _))) => {
            Err(field.error("expected with tls_cert = \"FILE\" (its certificate chain)"))
        }
        (Some((field, _)), Some(_)) if *listen == Listen::Stdio => {
            Err(field
                .error("expected only with http = \"ADDR:PORT\": TLS is for the HTTP listener"))
        }
        (Some((_, cert)), Some((_, key))) => Ok(Some(TlsFiles {
            cert: PathBuf::from(cert),
            key: PathBuf::from(key),
        })),
    }
}

/// `drain_timeout_s`: seconds, from 0 to 86400.
pub(super) fn drain_timeout(field: &Field) -> Checked<Duration> {
    field
        .number()
        .filter(|seconds| (0.0..=86_400.0).contains(seconds))
        .map(Duration::from_secs_f64)
        .ok_or_else(|| field.expected("a number of seconds from 0 to 86400"))
}

/// `tokens`: each variable in one entry only.
pub(super) fn tokens(gateway: &Table) -> Checked<Vec<TokenConfig>> {
    let Some(field) = gateway.get("tokens") else {
        return Ok(Vec::new());
    };
    let items =
        field.items("an array of tables such as [{ env = \"VAR\", scopes = [\"admin\"] }]")?;
    let mut tokens: Vec<TokenConfig> = Vec::new();
    for item in &items {
        let (token, env) = token(item)?;
        if let Some(first) = tokens.iter().position(|t| t.env == token.env) {
            return Err(env.error(format!(
                "expected each variable in one entry only, got {:?} also in tokens[{first}]",
                token.env
            )));
        }
        tokens.push(token);
    }
    Ok(tokens)
}

/// One `tokens` entry, and its `env` field.
pub(super) fn token<'a>(item: &Field<'a>) -> Checked<(TokenConfig, Field<'a>)> {
    let Some(entries) = item.value.get_ref().as_table() else {
        let shown = if item.str().is_some() {
            "a string (not repeated here)".to_owned()
        } else {
            item.shown()
        };
        return Err(item.error(format!(
            "expected a table such as {{ env = \"VAR\", scopes = [\"admin\"] }}, got {shown}; \
             a token is read from an environment variable, never from the file"
        )));
    };
    let table = item.as_table(entries);
    table.check_keys(TOKEN_KEYS, TOKEN_HINT)?;
    let env = table.require("env", ENV_EXPECTED)?;
    let scopes = match table.get("scopes") {
        Some(field) => field.strings(
            "an array of scope names such as [\"admin\"]",
            "a non-empty scope name",
        )?,
        None => Vec::new(),
    };
    let token = TokenConfig {
        env: env.env_name()?,
        scopes,
    };
    Ok((token, env))
}

/// The `[[upstream]]` tables: at least one, names unique.
pub(super) fn upstreams(root: &Table) -> Checked<Vec<UpstreamConfig>> {
    const AT_LEAST_ONE: &str =
        "at least one [[upstream]] table (a gateway with no server behind it serves nothing)";
    let field = root.get("upstream").ok_or_else(|| {
        root.file.error(
            None,
            "upstream",
            format!("missing; expected {AT_LEAST_ONE}"),
        )
    })?;
    let items = field.items("[[upstream]] tables (an array of tables: double brackets)")?;
    if items.is_empty() {
        return Err(field.expected(AT_LEAST_ONE));
    }
    let mut upstreams: Vec<UpstreamConfig> = Vec::new();
    for (n, item) in items.iter().enumerate() {
        let table = item.table("an [[upstream]] table")?;
        let (upstream, name) = upstream(table, n)?;
        if let Some(first) = upstreams.iter().position(|u| u.name == upstream.name) {
            return Err(name.error(format!(
                "expected a name no other upstream has, got {:?}, already upstream[{first}]'s",
                upstream.name
            )));
        }
        upstreams.push(upstream);
    }
    Ok(upstreams)
}

/// The upstream in `table`, the `n`th, and its `name` field.
pub(super) fn upstream<'a>(table: Table<'a>, n: usize) -> Checked<(UpstreamConfig, Field<'a>)> {
    let label = match table.get("name").and_then(|name| name.str()) {
        Some(name) if is_upstream_name(name) => format!("upstream {name:?}"),
        _ => format!("upstream[{n}]"),
    };
    let table = table.named(label);
    table.check_keys(UPSTREAM_KEYS, BEARER_HINT)?;
    let mut name = table.require("name", "a name such as \"files\"")?;
    name.path = format!("upstream[{n}].name");
    let name_text = name.string(
        "a non-empty name without / or control characters",
        is_upstream_name,
    )?;
    let upstream = UpstreamConfig {
        prefix: prefix(&table, &name, &name_text)?,
        transport: transport(&table)?,
        allow: patterns(&table, "allow")?,
        deny: patterns(&table, "deny")?,
        timeout: table
            .get("timeout_s")
            .map(|field| timeout(&field))
            .transpose()?,
        rate_limit: table
            .get("rate_limit")
            .map(|field| rate_limit(&field))
            .transpose()?,
        scopes: scopes(&table)?,
        start: start(&table)?,
        name: name_text,
    };
    Ok((upstream, name))
}

/// `prefix`, default the name (which must then be a valid prefix).
pub(super) fn prefix(table: &Table, name: &Field, name_text: &str) -> Checked<String> {
    match table.get("prefix") {
        Some(field) => field.string(
            &format!("{TOOL_CHARS} (or \"\" for no prefix)"),
            is_tool_chars,
        ),
        None if is_tool_chars(name_text) => Ok(name_text.to_owned()),
        None => Err(name.expected(&format!(
            "{TOOL_CHARS} (the name is the prefix while prefix is not set)"
        ))),
    }
}

/// `command` or `url` (with `bearer_env`), exactly one.
pub(super) fn transport(table: &Table) -> Checked<UpstreamTransport> {
    let bearer_env = table.get("bearer_env");
    match (table.get("command"), table.get("url")) {
        (Some(command), None) => match bearer_env {
            Some(bearer_env) => Err(bearer_env.error(
                "expected only with url: a command upstream is reached over stdio, \
                 where no bearer token is sent",
            )),
            None => Ok(UpstreamTransport::Command(command_line(&command)?)),
        },
        (None, Some(url)) => Ok(UpstreamTransport::Url {
            url: http_url(&url)?,
            bearer_env: bearer_env.map(|field| field.env_name()).transpose()?,
        }),
        (Some(_), Some(url)) => Err(url.error("expected exactly one of command or url, got both")),
        (None, None) => Err(table.error(
            "expected command = [\"PROGRAM\", \"ARG\", ...] or url = \"https://...\", got neither",
        )),
    }
}

/// `url`: `http://` or `https://`, without credentials.
pub(super) fn http_url(field: &Field) -> Checked<String> {
    let url = field.string(
        "an http:// or https:// URL such as \"https://crm.example.com/mcp\"",
        is_http_url,
    )?;
    let authority = url.split("://").nth(1).unwrap_or_default();
    let authority = authority.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return Err(field.error(format!(
            "refused: a URL with user:password@ puts a secret in the file (not repeated \
             here); {BEARER_HINT}"
        )));
    }
    Ok(url)
}

/// `command`: a program and its arguments.
pub(super) fn command_line(field: &Field) -> Checked<Vec<String>> {
    const WHAT: &str = "a program and its arguments such as [\"npx\", \"-y\", \"server\"]";
    let items = field.items(WHAT)?;
    if items.is_empty() {
        return Err(field.expected(WHAT));
    }
    items
        .iter()
        .enumerate()
        .map(|(n, item)| match n {
            0 => item.string("a program name", |s| !s.is_empty()),
            _ => item.string("a string", |_| true),
        })
        .collect()
}

/// `allow` or `deny`.
pub(super) fn patterns(table: &Table, key: &str) -> Checked<Vec<Glob>> {
    let Some(field) = table.get(key) else {
        return Ok(Vec::new());
    };
    let patterns = field.strings(
        "an array of tool-name patterns such as [\"search_*\", \"get_*\"]",
        "a non-empty pattern such as \"search_*\"",
    )?;
    Ok(patterns.into_iter().map(Glob::new).collect())
}

/// `timeout_s`.
pub(super) fn timeout(field: &Field) -> Checked<Duration> {
    field
        .number()
        .filter(|seconds| (0.001..=86_400.0).contains(seconds))
        .map(Duration::from_secs_f64)
        .ok_or_else(|| field.expected("a number of seconds from 0.001 to 86400"))
}

/// `rate_limit`: `"N/SECS"`.
pub(super) fn rate_limit(field: &Field) -> Checked<RateLimit> {
    field.str().and_then(parse_rate).ok_or_else(|| {
        field.expected(
            "\"N/SECS\" with whole numbers N and SECS greater than 0, \
             such as \"30/60\" (30 calls in 60 s)",
        )
    })
}

/// `N/SECS` as a rate limit.
pub(super) fn parse_rate(text: &str) -> Option<RateLimit> {
    let (count, seconds) = text.split_once('/')?;
    let count: u32 = count.trim().parse().ok().filter(|n| *n > 0)?;
    let seconds: u64 = seconds.trim().parse().ok().filter(|s| *s > 0)?;
    Some(RateLimit::new(count, Duration::from_secs(seconds)))
}

/// `scopes`: pattern = scope, in the file's order.
pub(super) fn scopes(table: &Table) -> Checked<Vec<(Glob, String)>> {
    let Some(field) = table.get("scopes") else {
        return Ok(Vec::new());
    };
    let scopes = field.table("a table of pattern = scope such as { \"delete_*\" = \"admin\" }")?;
    let mut pairs = Vec::new();
    for (pattern, value) in scopes.entries() {
        let field = Field {
            file: scopes.file,
            path: join(&scopes.path, pattern.get_ref()),
            value,
        };
        if pattern.get_ref().is_empty() {
            return Err(field.file.error(
                Some(&pattern.span()),
                &field.path,
                "expected a non-empty pattern such as \"delete_*\"".into(),
            ));
        }
        let scope = field.string("a non-empty scope name such as \"admin\"", |s| {
            !s.is_empty()
        })?;
        pairs.push((Glob::new(pattern.get_ref().as_ref()), scope));
    }
    Ok(pairs)
}
