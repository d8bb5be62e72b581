//! Reaching a server: an HTTP URL or a command spawned over stdio, with the
//! handlers that answer its input requests (elicitation as terminal
//! prompts, sampling through a configured command, roots from `--root`).

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use tokio::io::AsyncWriteExt;
use toolwire::client::handlers::{BoxError, InputContext, SamplingHandler};
use toolwire::client::transport::{BoxFuture, Era, HttpTransport, ProtocolMode, StdioTransport};
use toolwire::client::{ApprovalHook, Client, RequestNotification, RequestOptions};
use toolwire::protocol::{
    ContentBlock, CreateMessageRequestParams, CreateMessageResult, LoggingLevel, OneOrMany, Role,
    Root, SamplingContent, TextContent,
};

use crate::failure::Failure;
use crate::forms::TerminalForms;
use crate::terminal::Ui;

/// How to reach the server and how to answer what it asks.
#[derive(Debug, Clone, Args)]
pub struct ConnectArgs {
    /// Print the result as JSON on stdout: exactly the protocol's result
    /// object (for `list`, the merged items of every page). For scripts.
    #[arg(long)]
    pub json: bool,

    /// An extra HTTP header for every request, as NAME:VALUE (repeatable).
    #[arg(long = "header", short = 'H', value_name = "NAME:VALUE")]
    pub headers: Vec<String>,

    /// Send `Authorization: Bearer TOKEN` with every HTTP request.
    #[arg(
        long,
        value_name = "TOKEN",
        env = "TOOLWIRE_BEARER",
        hide_env_values = true
    )]
    pub bearer: Option<String>,

    /// Trust the CA certificate(s) in FILE (PEM) for https:// servers,
    /// besides the platform's roots and Mozilla's: a private CA, or a
    /// server's self-signed certificate.
    #[arg(long, value_name = "FILE")]
    pub ca: Option<std::path::PathBuf>,

    /// When the server answers 401, authorize with OAuth 2.1 (authorization
    /// code + PKCE): the URL to open is printed, the redirect is received on
    /// 127.0.0.1:--oauth-port, and tokens are kept (owner-only) in
    /// $XDG_CONFIG_HOME/toolwire/tokens.json. Ignored with --bearer.
    #[arg(long)]
    pub oauth: bool,

    /// The loopback port that receives the OAuth redirect.
    #[arg(long, value_name = "PORT", default_value = "8932")]
    pub oauth_port: u16,

    /// Seconds to wait for an answer; each progress notification restarts
    /// the clock.
    #[arg(long, value_name = "SECS", default_value = "60", value_parser = parse_seconds)]
    pub timeout: Duration,

    /// A root the server may work in: a file:// URI or a path (repeatable).
    /// Declares the roots capability; without it, roots requests are refused.
    #[arg(long = "root", value_name = "URI_OR_PATH")]
    pub roots: Vec<String>,

    /// Answer the server's sampling requests (requests for a model
    /// completion) by running CMD with `sh -c`, the conversation on its
    /// stdin; its stdout is the answer. Without it, sampling is refused.
    #[arg(long, value_name = "CMD")]
    pub sampling_command: Option<String>,

    /// Believe this server's tool annotations (readOnlyHint,
    /// destructiveHint, ...). By default they are shown as untrusted claims.
    #[arg(long)]
    pub trust_annotations: bool,

    /// The least severe server log message to print on stderr: debug, info,
    /// notice, warning, error, critical, alert or emergency.
    #[arg(long, value_name = "LEVEL", default_value = "info", value_parser = parse_level)]
    pub log_level: LoggingLevel,

    /// Which MCP era to speak: `modern` (2026-07-28, stateless), `legacy`
    /// (2025-11-25, 2025-06-18, 2025-03-26: initialize and sessions), or
    /// `auto`: find out once and remember it per server in
    /// $XDG_CONFIG_HOME/toolwire/eras.json (a failure under the remembered
    /// verdict finds out again).
    #[arg(long, value_name = "ERA", default_value = "auto", value_parser = parse_protocol)]
    pub protocol: ProtocolMode,
}

fn parse_protocol(text: &str) -> Result<ProtocolMode, String> {
    text.parse()
}

fn parse_seconds(text: &str) -> Result<Duration, String> {
    let seconds: f64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    if !(seconds.is_finite() && seconds > 0.0 && seconds <= 86_400.0) {
        return Err("the timeout must be between 0 and 86400 seconds".into());
    }
    Ok(Duration::from_secs_f64(seconds))
}

fn parse_level(text: &str) -> Result<LoggingLevel, String> {
    serde_json::from_value(serde_json::Value::String(text.to_ascii_lowercase())).map_err(|_| {
        "expected debug, info, notice, warning, error, critical, alert or emergency".to_owned()
    })
}

/// Where the server is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A Streamable HTTP endpoint.
    Http(String),
    /// A command to spawn, talking newline-delimited JSON on stdin/stdout.
    Stdio(Vec<String>),
}

impl Target {
    /// How to name the server in messages.
    pub fn describe(&self) -> String {
        match self {
            Target::Http(url) => url.clone(),
            Target::Stdio(command) => format!("`{}`", command.join(" ")),
        }
    }

    /// Splits a subcommand's positional words into the target and the rest:
    /// with a command after `--` every word is the rest; otherwise the first
    /// word is the server's URL.
    pub fn split(
        mut words: Vec<String>,
        command: Vec<String>,
    ) -> Result<(Target, Vec<String>), Failure> {
        if !command.is_empty() {
            return Ok((Target::Stdio(command), words));
        }
        if words.is_empty() {
            return Err(Failure::usage(
                "no server given: pass its URL (e.g. http://127.0.0.1:8931/mcp) \
                 or, for a stdio server, its command after `--` (e.g. -- toolwire serve --stdio)",
            ));
        }
        let server = words.remove(0);
        Ok((Target::Http(normalize_url(&server)?), words))
    }
}

fn normalize_url(server: &str) -> Result<String, Failure> {
    let lower = server.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        return Ok(server.to_owned());
    }
    let looks_like_host = server
        .split('/')
        .next()
        .is_some_and(|authority| authority.contains(':') || authority == "localhost")
        && !server.contains(char::is_whitespace);
    if looks_like_host && !lower.contains("://") {
        return Ok(format!("http://{server}"));
    }
    Err(Failure::usage(format!(
        "{server:?} is not an HTTP URL. Give a URL like http://127.0.0.1:8931/mcp, \
         or run a stdio server by putting its command after `--`, \
         e.g. `toolwire list -- {server}`"
    )))
}

/// A client ready to use, with what is needed to report and close.
#[derive(Debug)]
pub struct Connection {
    pub client: Client,
    pub target: Target,
    pub ui: Arc<Ui>,
    pub stdio: Option<StdioTransport>,
    pub args: ConnectArgs,
    /// The era remembered from an earlier command, used instead of a probe.
    pub era_hint: Option<Era>,
    /// Set when a failure may come from speaking the wrong era.
    pub era_suspect: std::sync::atomic::AtomicBool,
}

impl Connection {
    /// Builds the client (nothing is sent yet). `era_hint` is the era
    /// remembered for this server (auto mode only).
    pub fn open(
        target: Target,
        args: &ConnectArgs,
        ui: Arc<Ui>,
        approval: Option<impl ApprovalHook + 'static>,
        era_hint: Option<Era>,
    ) -> Result<Connection, Failure> {
        let mut stdio = None;
        let builder = match &target {
            Target::Http(url) => {
                let mut http = HttpTransport::builder(url.clone());
                for header in &args.headers {
                    let Some((name, value)) = header.split_once(':') else {
                        return Err(Failure::usage(format!(
                            "--header {header:?}: expected NAME:VALUE, e.g. X-Trace:abc"
                        )));
                    };
                    http = http.header(name.trim(), value.trim());
                }
                if let Some(path) = &args.ca {
                    let pem = std::fs::read(path)
                        .map_err(|e| Failure::usage(format!("--ca {}: {e}", path.display())))?;
                    http = http.ca_certificate_pem(pem);
                }
                if let Some(token) = &args.bearer {
                    http = http.bearer_token(token);
                } else if args.oauth {
                    http = http.oauth(oauth(args.oauth_port)?);
                }
                let transport = http
                    .protocol(args.protocol)
                    .era_hint(era_hint)
                    .build()
                    .map_err(|e| Failure::usage(format!("cannot use {url}: {e}")))?;
                Client::builder(transport)
            }
            Target::Stdio(command) => {
                if !args.headers.is_empty() || args.bearer.is_some() {
                    tracing::warn!("--header and --bearer apply to HTTP only; ignored for stdio");
                }
                let transport = StdioTransport::command(&command[0])
                    .args(&command[1..])
                    .transport()
                    .shutdown_grace(Duration::from_secs(3))
                    .protocol(args.protocol)
                    .era_hint(era_hint)
                    .build();
                stdio = Some(transport.clone());
                Client::builder(transport)
            }
        };
        let mut builder = builder
            .name(target.describe())
            .client_info("toolwire", env!("CARGO_PKG_VERSION"))
            .timeout(args.timeout)
            .max_timeout(args.timeout.max(Duration::from_secs(600)))
            .trust_annotations(args.trust_annotations)
            .elicitation(TerminalForms {
                ui: Arc::clone(&ui),
            })
            .elicitation_url_mode(true);
        if let Some(command) = &args.sampling_command {
            builder = builder.sampling(CommandSampler {
                command: command.clone(),
                ui: Arc::clone(&ui),
            });
        }
        if let Some(approval) = approval {
            builder = builder.approval(approval);
        }
        if !args.roots.is_empty() {
            let roots = args
                .roots
                .iter()
                .map(|r| root_of(r))
                .collect::<Result<Vec<_>, _>>()?;
            builder = builder.roots(roots);
        }
        Ok(Connection {
            client: builder.build(),
            target,
            ui,
            stdio,
            args: args.clone(),
            era_hint,
            era_suspect: Default::default(),
        })
    }

    /// Request options that feed progress and log notifications, and the
    /// status of a call the server made a task, to the terminal.
    pub fn options(&self) -> RequestOptions {
        let ui = Arc::clone(&self.ui);
        RequestOptions::new()
            .log_level(self.args.log_level)
            .on_notification(move |notification| match notification {
                RequestNotification::Progress(p) => ui.progress(&p),
                RequestNotification::Log(l) => ui.log(&l),
                RequestNotification::Task(task) => ui.task_status(&task),
                RequestNotification::Other(n) => {
                    tracing::debug!(method = %n.method, "notification ignored")
                }
            })
    }

    /// Ends the connection (stdio: closes the child's stdin, then signals it).
    pub async fn close(&self) {
        self.ui.clear_progress();
        self.client.close().await;
    }
}

/// A `--root` value as a root: URIs are kept, paths become `file://` URIs.
fn root_of(text: &str) -> Result<Root, Failure> {
    if text.contains("://") {
        return Ok(Root::new(text));
    }
    let path = std::path::Path::new(text);
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map_err(|e| Failure::usage(format!("--root {text}: {e}")))?
            .join(path)
    };
    let mut uri = String::from("file://");
    for byte in absolute.to_string_lossy().bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => {
                uri.push(byte as char)
            }
            other => uri.push_str(&format!("%{other:02X}")),
        }
    }
    let name = absolute
        .file_name()
        .map(|n| n.to_string_lossy().into_owned());
    Ok(Root {
        name,
        ..Root::new(uri)
    })
}

/// Answers sampling requests with a command: the conversation on its stdin,
/// its stdout the assistant's answer.
#[derive(Debug, Clone)]
struct CommandSampler {
    command: String,
    ui: Arc<Ui>,
}

impl SamplingHandler for CommandSampler {
    fn create_message(
        &self,
        params: CreateMessageRequestParams,
        cx: InputContext,
    ) -> BoxFuture<'static, Result<CreateMessageResult, BoxError>> {
        let command = self.command.clone();
        let ui = Arc::clone(&self.ui);
        Box::pin(async move {
            ui.say(&ui.dim(&format!(
                "The server {} asks for a model completion (during {} {}); running `{command}`",
                cx.server, cx.method, cx.target
            )));
            let prompt = conversation_text(&params);
            let answer = run_sampler(&command, &prompt).await?;
            Ok(CreateMessageResult {
                role: Role::Assistant,
                content: OneOrMany::One(SamplingContent::Text(TextContent {
                    text: answer,
                    ..Default::default()
                })),
                model: format!("command:{command}"),
                stop_reason: Some("endTurn".to_owned()),
                meta: None,
            })
        })
    }
}

/// The conversation as plain text: the system prompt, then one paragraph
/// per message, `role: text`.
fn conversation_text(params: &CreateMessageRequestParams) -> String {
    let mut text = String::new();
    if let Some(system) = &params.system_prompt {
        text.push_str(&format!("system: {system}\n\n"));
    }
    for message in &params.messages {
        let role = match message.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        let parts: Vec<String> = message
            .content
            .as_slice()
            .iter()
            .map(|c| match c {
                SamplingContent::Text(t) => t.text.clone(),
                SamplingContent::Image(i) => format!("[image {}]", i.mime_type),
                SamplingContent::Audio(a) => format!("[audio {}]", a.mime_type),
                SamplingContent::ToolUse(u) => format!("[tool use {}]", u.name),
                SamplingContent::ToolResult(_) => "[tool result]".to_owned(),
            })
            .collect();
        text.push_str(&format!("{role}: {}\n\n", parts.join("\n")));
    }
    text
}

async fn run_sampler(command: &str, prompt: &str) -> Result<String, BoxError> {
    let mut child = shell(command)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot run --sampling-command `{command}`: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A command that ignores its input may close stdin early: fine.
        let _ = stdin.write_all(prompt.as_bytes()).await;
    }
    let output = child
        .wait_with_output()
        .await
        .map_err(|e| format!("--sampling-command `{command}` failed: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "--sampling-command `{command}` exited with {}",
            output.status
        )
        .into());
    }
    let answer = String::from_utf8_lossy(&output.stdout)
        .trim_end()
        .to_owned();
    Ok(answer)
}

#[cfg(unix)]
fn shell(command: &str) -> tokio::process::Command {
    let mut shell = tokio::process::Command::new("sh");
    shell.arg("-c").arg(command);
    shell
}

#[cfg(not(unix))]
fn shell(command: &str) -> tokio::process::Command {
    let mut shell = tokio::process::Command::new("cmd");
    shell.arg("/C").arg(command);
    shell
}

/// The text of content blocks, for messages.
pub fn text_of(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(ContentBlock::as_text)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Where `--oauth` keeps tokens and client registrations:
/// `$XDG_CONFIG_HOME/toolwire/tokens.json`, else `~/.config/toolwire/tokens.json`.
pub fn token_file() -> Option<std::path::PathBuf> {
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|home| std::path::PathBuf::from(home).join(".config"))
        })?;
    Some(config.join("toolwire").join("tokens.json"))
}

/// OAuth 2.1 for servers that answer 401: a loopback redirect on `port`
/// and tokens in the user's config directory.
fn oauth(port: u16) -> Result<toolwire::client::auth::OAuth, Failure> {
    use toolwire::client::auth::{FileStore, LoopbackRedirect, OAuth};
    let tokens = token_file()
        .ok_or_else(|| Failure::usage("--oauth needs HOME or XDG_CONFIG_HOME to store tokens"))?;
    OAuth::builder(LoopbackRedirect::on_port(port))
        .client_name("toolwire")
        .store(FileStore::new(tokens))
        .build()
        .map_err(|e| Failure::usage(format!("--oauth: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_are_urls_or_commands() {
        let (target, rest) =
            Target::split(vec!["http://h:1/mcp".into(), "echo".into()], Vec::new()).unwrap();
        assert_eq!(target, Target::Http("http://h:1/mcp".into()));
        assert_eq!(rest, ["echo"]);
        let (target, rest) =
            Target::split(vec!["echo".into()], vec!["srv".into(), "--stdio".into()]).unwrap();
        assert_eq!(target, Target::Stdio(vec!["srv".into(), "--stdio".into()]));
        assert_eq!(rest, ["echo"]);
        let (target, _) = Target::split(vec!["127.0.0.1:8931/mcp".into()], Vec::new()).unwrap();
        assert_eq!(target, Target::Http("http://127.0.0.1:8931/mcp".into()));
        assert!(Target::split(vec!["my-server".into()], Vec::new()).is_err());
        assert!(Target::split(Vec::new(), Vec::new()).is_err());
    }

    #[test]
    fn paths_become_file_uris() {
        let root = root_of("/tmp/my project").unwrap();
        assert_eq!(root.uri, "file:///tmp/my%20project");
        assert_eq!(root.name.as_deref(), Some("my project"));
        assert_eq!(root_of("file:///x").unwrap().uri, "file:///x");
    }
}
