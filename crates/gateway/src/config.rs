//! The gateway's configuration: one TOML file, read into [`GatewayConfig`].

use std::net::SocketAddr;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::Spanned;
use toml::de::{DeTable, DeValue};
use toolwire_server::RateLimit;

use crate::glob::Glob;
use crate::pin::PinMode;

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

/// A value read from the file, or why it was refused.
type Checked<T> = Result<T, ConfigError>;
type Value<'a> = Spanned<DeValue<'a>>;

/// The keys of `[gateway]`.
const GATEWAY_KEYS: &[&str] = &[
    "http",
    "stdio",
    "name_separator",
    "max_name_len",
    "audit",
    "lock",
    "pin",
    "tokens",
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

/// The text being read, for errors.
struct File<'a> {
    text: &'a str,
    name: &'a str,
}

impl File<'_> {
    /// An error at `span` (no line without one).
    fn error(&self, span: Option<&Range<usize>>, key: &str, message: String) -> ConfigError {
        ConfigError {
            source_name: self.name.to_owned(),
            line: span.map(|span| line_of(self.text, span.start)),
            key: key.to_owned(),
            message,
        }
    }

    /// The TOML parser's error, with its line and column.
    fn syntax_error(&self, error: &toml::de::Error) -> ConfigError {
        let span = error.span().unwrap_or(0..0);
        if error.message() == "duplicate key" {
            let key = self.text.get(span.clone()).unwrap_or_default();
            let message = "appears twice in the same table; expected it once".to_owned();
            return self.error(Some(&span), key, message);
        }
        let column = self.text[..span.start.min(self.text.len())]
            .rsplit('\n')
            .next()
            .map_or(1, |line| line.chars().count() + 1);
        let message = format!("invalid TOML at column {column}: {}", error.message());
        self.error(Some(&span), "", message)
    }
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// "unknown key; expected one of ...", with the likeliest meant.
fn unknown_key(name: &str, allowed: &[&str]) -> String {
    let list = allowed.join(", ");
    let closest = allowed
        .iter()
        .map(|key| (edit_distance(name, key), *key))
        .filter(|(distance, key)| *distance <= 2 || (name.len() >= 3 && key.starts_with(name)))
        .min();
    match closest {
        Some((_, key)) => format!("unknown key (did you mean {key}?); expected one of {list}"),
        None => format!("unknown key; expected one of {list}"),
    }
}

/// Levenshtein distance, in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

/// `key` appended to the key path `path`, quoted unless bare.
fn join(path: &str, key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    match (path.is_empty(), bare) {
        (true, true) => key.to_owned(),
        (true, false) => format!("{key:?}"),
        (false, true) => format!("{path}.{key}"),
        (false, false) => format!("{path}.{key:?}"),
    }
}

/// A table of the file, with its key path and span (none for the root).
struct Table<'a> {
    file: &'a File<'a>,
    path: String,
    span: Option<Range<usize>>,
    entries: &'a DeTable<'a>,
}

/// A value of the file, with its key path.
struct Field<'a> {
    file: &'a File<'a>,
    path: String,
    value: &'a Value<'a>,
}

impl<'a> Table<'a> {
    /// An error about the table itself, at its header.
    fn error(&self, message: impl Into<String>) -> ConfigError {
        self.file
            .error(self.span.as_ref(), &self.path, message.into())
    }

    /// The value of `key`, if set.
    fn get(&self, key: &str) -> Option<Field<'a>> {
        self.entries.get(key).map(|value| Field {
            file: self.file,
            path: join(&self.path, key),
            value,
        })
    }

    /// The value of `key`, which must be set.
    fn require(&self, key: &str, expected: &str) -> Checked<Field<'a>> {
        self.get(key).ok_or_else(|| {
            let message = format!("missing; expected {expected}");
            self.file
                .error(self.span.as_ref(), &join(&self.path, key), message)
        })
    }

    /// The entries in the file's order.
    fn entries(&self) -> Vec<(&'a Spanned<toml::de::DeString<'a>>, &'a Value<'a>)> {
        let mut entries: Vec<_> = self.entries.iter().collect();
        entries.sort_by_key(|(key, _)| key.span().start);
        entries
    }

    /// Refuses any key not in `allowed`, telling where a secret goes instead
    /// when the key looks like one.
    fn check_keys(&self, allowed: &[&str], secret_hint: &str) -> Checked<()> {
        for (key, _) in self.entries() {
            let name = key.get_ref().as_ref();
            if allowed.contains(&name) {
                continue;
            }
            let message = if SECRET_KEYS.contains(&name) {
                format!("refused: secrets are never read from the file; {secret_hint}")
            } else {
                unknown_key(name, allowed)
            };
            return Err(self
                .file
                .error(Some(&key.span()), &join(&self.path, name), message));
        }
        Ok(())
    }

    /// The same table under another key path.
    fn named(self, path: String) -> Table<'a> {
        Table { path, ..self }
    }
}

impl<'a> Field<'a> {
    /// An error at this value.
    fn error(&self, message: impl Into<String>) -> ConfigError {
        self.file
            .error(Some(&self.value.span()), &self.path, message.into())
    }

    /// "expected `what`, got <this value>".
    fn expected(&self, what: &str) -> ConfigError {
        self.error(format!("expected {what}, got {}", self.shown()))
    }

    /// The value as the message shows it.
    fn shown(&self) -> String {
        match self.value.get_ref() {
            DeValue::String(s) => format!("{s:?}"),
            DeValue::Array(items) if items.is_empty() => "an empty array".into(),
            DeValue::Array(_) => "an array".into(),
            DeValue::Table(_) => "a table".into(),
            DeValue::Datetime(d) => format!("a date-time ({d})"),
            _ => self.file.text[self.value.span()].to_owned(),
        }
    }

    /// The string, if it is one.
    fn str(&self) -> Option<&'a str> {
        self.value.get_ref().as_str()
    }

    /// A string for which `valid` holds.
    fn string(&self, what: &str, valid: impl Fn(&str) -> bool) -> Checked<String> {
        match self.str() {
            Some(s) if valid(s) => Ok(s.to_owned()),
            _ => Err(self.expected(what)),
        }
    }

    /// A number (integer or float).
    fn number(&self) -> Option<f64> {
        match self.value.get_ref() {
            DeValue::Integer(i) => i64::from_str_radix(i.as_str(), i.radix())
                .ok()
                .map(|i| i as f64),
            DeValue::Float(f) => f.as_str().parse().ok(),
            _ => None,
        }
    }

    /// An integer.
    fn integer(&self) -> Option<i64> {
        let i = self.value.get_ref().as_integer()?;
        i64::from_str_radix(i.as_str(), i.radix()).ok()
    }

    /// The items of an array, keyed `path[0]`, `path[1]`, ...
    fn items(&self, what: &str) -> Checked<Vec<Field<'a>>> {
        let items = self
            .value
            .get_ref()
            .as_array()
            .ok_or_else(|| self.expected(what))?;
        Ok(items
            .iter()
            .enumerate()
            .map(|(n, value)| Field {
                file: self.file,
                path: format!("{}[{n}]", self.path),
                value,
            })
            .collect())
    }

    /// The value as a table.
    fn table(&self, what: &str) -> Checked<Table<'a>> {
        let entries = self
            .value
            .get_ref()
            .as_table()
            .ok_or_else(|| self.expected(what))?;
        Ok(self.as_table(entries))
    }

    fn as_table(&self, entries: &'a DeTable<'a>) -> Table<'a> {
        Table {
            file: self.file,
            path: self.path.clone(),
            span: Some(self.value.span()),
            entries,
        }
    }

    /// The name of an environment variable; a value that is not one is not
    /// repeated, in case it is the secret itself.
    fn env_name(&self) -> Checked<String> {
        match self.str() {
            Some(s) if is_env_name(s) => Ok(s.to_owned()),
            Some(_) => Err(self.error(format!(
                "expected {ENV_EXPECTED} holding the secret, not the secret itself; \
                 got a string that is not such a name (not repeated here)"
            ))),
            None => Err(self.expected(ENV_EXPECTED)),
        }
    }

    /// An array of non-empty strings.
    fn strings(&self, what: &str, item: &str) -> Checked<Vec<String>> {
        self.items(what)?
            .iter()
            .map(|field| field.string(item, |s| !s.is_empty()))
            .collect()
    }
}

/// Letters, digits, `_`, `-` and `.`: what the spec allows in tool names.
fn is_tool_chars(s: &str) -> bool {
    s.chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// A portable environment variable name.
fn is_env_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// An upstream's name: non-empty, no `/` (it separates upstream and tool in
/// `approve UPSTREAM/TOOL`), no control characters.
fn is_upstream_name(s: &str) -> bool {
    !s.is_empty() && !s.chars().any(|c| c == '/' || c.is_control())
}

/// `http://` or `https://` followed by a host.
fn is_http_url(s: &str) -> bool {
    let rest = s
        .strip_prefix("https://")
        .or_else(|| s.strip_prefix("http://"));
    rest.is_some_and(|rest| !rest.is_empty() && !rest.starts_with('/'))
}

impl Table<'_> {
    /// The root table as a configuration.
    fn config(&self) -> Checked<GatewayConfig> {
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
        Ok(GatewayConfig {
            listen: listen(&gateway)?,
            name_separator: name_separator(&gateway)?,
            max_name_len: max_name_len(&gateway)?,
            audit: audit(&gateway)?,
            lock: lock(&gateway)?,
            pin: pin(&gateway)?,
            tokens: tokens(&gateway)?,
            upstreams: upstreams(self)?,
        })
    }
}

/// `http` or `stdio`, exactly one.
fn listen(gateway: &Table) -> Checked<Listen> {
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
fn name_separator(gateway: &Table) -> Checked<String> {
    match gateway.get("name_separator") {
        Some(field) => field.string(&format!("{TOOL_CHARS} (or \"\" for none)"), is_tool_chars),
        None => Ok("__".into()),
    }
}

/// `max_name_len`, default 64.
fn max_name_len(gateway: &Table) -> Checked<usize> {
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
fn audit(gateway: &Table) -> Checked<Option<AuditTarget>> {
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

/// `lock`: the lock file's path.
fn lock(gateway: &Table) -> Checked<Option<PathBuf>> {
    let Some(field) = gateway.get("lock") else {
        return Ok(None);
    };
    let path = field.string("a file path", |s| !s.is_empty())?;
    Ok(Some(PathBuf::from(path)))
}

/// `pin`: `"first-use"` (the default) or `"strict"`, with `lock` only.
fn pin(gateway: &Table) -> Checked<PinMode> {
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

/// `tokens`: each variable in one entry only.
fn tokens(gateway: &Table) -> Checked<Vec<TokenConfig>> {
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
fn token<'a>(item: &Field<'a>) -> Checked<(TokenConfig, Field<'a>)> {
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
fn upstreams(root: &Table) -> Checked<Vec<UpstreamConfig>> {
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
fn upstream<'a>(table: Table<'a>, n: usize) -> Checked<(UpstreamConfig, Field<'a>)> {
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
        name: name_text,
    };
    Ok((upstream, name))
}

/// `prefix`, default the name (which must then be a valid prefix).
fn prefix(table: &Table, name: &Field, name_text: &str) -> Checked<String> {
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
fn transport(table: &Table) -> Checked<UpstreamTransport> {
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
fn http_url(field: &Field) -> Checked<String> {
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
fn command_line(field: &Field) -> Checked<Vec<String>> {
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
fn patterns(table: &Table, key: &str) -> Checked<Vec<Glob>> {
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
fn timeout(field: &Field) -> Checked<Duration> {
    field
        .number()
        .filter(|seconds| (0.001..=86_400.0).contains(seconds))
        .map(Duration::from_secs_f64)
        .ok_or_else(|| field.expected("a number of seconds from 0.001 to 86400"))
}

/// `rate_limit`: `"N/SECS"`.
fn rate_limit(field: &Field) -> Checked<RateLimit> {
    field.str().and_then(parse_rate).ok_or_else(|| {
        field.expected(
            "\"N/SECS\" with whole numbers N and SECS greater than 0, \
             such as \"30/60\" (30 calls in 60 s)",
        )
    })
}

/// `N/SECS` as a rate limit.
fn parse_rate(text: &str) -> Option<RateLimit> {
    let (count, seconds) = text.split_once('/')?;
    let count: u32 = count.trim().parse().ok().filter(|n| *n > 0)?;
    let seconds: u64 = seconds.trim().parse().ok().filter(|s| *s > 0)?;
    Some(RateLimit::new(count, Duration::from_secs(seconds)))
}

/// `scopes`: pattern = scope, in the file's order.
fn scopes(table: &Table) -> Checked<Vec<(Glob, String)>> {
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
