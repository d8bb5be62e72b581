//! What a client error means for the user: the exit code, the message and
//! what to do next.

use std::time::Duration;

use serde_json::Value;
use toolwire::client::{Error, TransportError};
use toolwire::protocol::{LATEST_PROTOCOL_VERSION, code};

use crate::connect::{ConnectArgs, Connection, Target};
use crate::failure::Failure;
use crate::safe_text::line as one_line;

impl Connection {
    /// Turns a client error into a failure with a hint.
    pub async fn failure(&self, error: Error) -> Failure {
        self.ui.clear_progress();
        if self.era_hint.is_some() && may_be_wrong_era(&error) {
            self.era_suspect
                .store(true, std::sync::atomic::Ordering::SeqCst);
        }
        let stderr = self
            .stdio
            .as_ref()
            .map(|s| s.stderr_tail())
            .unwrap_or_default();
        from_client(error, &self.target, &self.args, stderr).await
    }
}

const OLDER_PROTOCOL: &str = "the server seems to speak an older MCP revision (with `initialize` \
     and sessions) without saying so in a way toolwire recognised; \
     try again with `--protocol legacy`";

/// Errors a server of the other era gives a request: what makes a
/// remembered era verdict worth checking again.
fn may_be_wrong_era(error: &Error) -> bool {
    match error {
        Error::Protocol { code, .. } => matches!(code, -32600 | -32601 | -32602 | -32000),
        Error::Transport(TransportError::Handshake(_)) => true,
        Error::Transport(TransportError::Http { status, .. }) => {
            matches!(status, 400 | 404 | 405 | 406 | 415)
        }
        _ => false,
    }
}

/// Explains a client error: exit code, message and the next step.
async fn from_client(
    error: Error,
    target: &Target,
    args: &ConnectArgs,
    stderr_tail: Vec<String>,
) -> Failure {
    let server = target.describe();
    match error {
        Error::ToolExecution { tool, result } => {
            let text = crate::connect::text_of(&result.content);
            Failure::new(
                Failure::TOOL,
                format!("tool `{tool}` reported an error: {text}"),
            )
        }
        Error::Denied { tool, .. } => Failure::new(
            Failure::DENIED,
            format!("not called: you declined to call `{tool}`"),
        ),
        Error::Transport(transport) => {
            transport_failure(transport, target, args, stderr_tail).await
        }
        Error::Timeout(after) => {
            Failure::protocol(format!("{server} did not answer within {}", seconds(after)))
                .hint("wait longer with --timeout SECS (progress notifications restart the clock)")
        }
        Error::Cancelled => Failure::protocol("the request was cancelled"),
        Error::NoCommonVersion { ours, theirs } => Failure::protocol(format!(
            "{server} speaks protocol versions {} and toolwire speaks {}: no version in common",
            theirs.join(", "),
            ours.join(", ")
        ))
        .hint(version_hint(&theirs)),
        Error::Protocol {
            code: code::UNSUPPORTED_PROTOCOL_VERSION,
            message,
            data,
        } => {
            let theirs: Vec<String> = data
                .as_ref()
                .and_then(|d| d.get("supported"))
                .and_then(|s| serde_json::from_value(s.clone()).ok())
                .unwrap_or_default();
            Failure::protocol(format!(
                "{server} refused protocol version {LATEST_PROTOCOL_VERSION}: {}",
                one_line(&message)
            ))
            .hint(version_hint(&theirs))
        }
        Error::Protocol {
            code: code::MISSING_REQUIRED_CLIENT_CAPABILITY,
            message,
            data,
        } => {
            let required = data
                .as_ref()
                .and_then(|d| d.get("requiredCapabilities"))
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            let mut hints = Vec::new();
            if required.contains_key("sampling") {
                hints.push(
                    "the server wants a model completion (sampling) and toolwire has no model: \
                     pass --sampling-command CMD (CMD reads the conversation on stdin and \
                     prints the answer), e.g. --sampling-command 'cat'",
                );
            }
            if required.contains_key("roots") {
                hints.push("the server wants to know your roots: pass --root PATH (repeatable)");
            }
            let failure = Failure::protocol(format!("{server}: {}", one_line(&message)));
            if hints.is_empty() {
                failure
            } else {
                failure.hint(hints.join("; "))
            }
        }
        Error::Protocol {
            code: code::METHOD_NOT_FOUND,
            message,
            ..
        } => Failure::protocol(format!("{server}: {}", one_line(&message))).hint(
            "the server does not offer this; `toolwire discover` shows what it supports. \
             If it does not know server/discover either, it may speak an older MCP revision",
        ),
        Error::Protocol { code, message, .. } if mentions_sessions(&message) => Failure::protocol(
            format!("{server} answered error {code}: {}", one_line(&message)),
        )
        .hint(OLDER_PROTOCOL),
        Error::Protocol { code, message, .. } if message.contains("Origin") => Failure::protocol(
            format!("{server} answered error {code}: {}", one_line(&message)),
        )
        .hint(
            "a server refuses browser origins it does not know; \
                 `toolwire serve --allow-origin ORIGIN` allows one",
        ),
        Error::Protocol { code, message, .. } if message.contains("Host") => Failure::protocol(
            format!("{server} answered error {code}: {}", one_line(&message)),
        )
        .hint(
            "a server refuses host names it does not know; \
                 `toolwire serve --allow-host HOST` allows one",
        ),
        Error::Protocol { code, message, .. } => Failure::protocol(format!(
            "{server} answered error {code}: {}",
            one_line(&message)
        )),
        Error::Input { method, reason, .. } if method == "sampling/createMessage" => {
            Failure::protocol(format!("the server asked for a model completion: {reason}")).hint(
                "toolwire has no model; pass --sampling-command CMD to answer sampling \
                 requests with a command (the conversation on its stdin, the answer on its stdout)",
            )
        }
        Error::Input { method, reason, .. } if method == "roots/list" => {
            Failure::protocol(format!("the server asked for your roots: {reason}"))
                .hint("pass --root PATH (repeatable) to tell it where it may work")
        }
        Error::TooManyRounds(rounds) => Failure::protocol(format!(
            "{server} kept asking for input: gave up after {rounds} rounds"
        )),
        Error::OutputSchema { tool, reason } => Failure::protocol(format!(
            "tool `{tool}` returned structuredContent that breaks its own outputSchema \
             (result withheld): {reason}"
        ))
        .hint("this is a bug in the server"),
        Error::UnknownTool(tool) => Failure::protocol(format!("{server} has no tool `{tool}`"))
            .hint("list the tools with `toolwire list`"),
        other => Failure::protocol(format!("{server}: {other}")),
    }
}

fn version_hint(theirs: &[String]) -> String {
    let older = theirs.iter().all(|v| v.as_str() < LATEST_PROTOCOL_VERSION);
    if !theirs.is_empty() && older {
        format!(
            "the server speaks an older MCP revision ({}); toolwire's client commands speak \
             {LATEST_PROTOCOL_VERSION} only. Upgrade the server, or use a client for its revision",
            theirs.join(", ")
        )
    } else {
        format!(
            "toolwire's client commands speak {LATEST_PROTOCOL_VERSION} only; upgrade toolwire if the server is newer"
        )
    }
}

fn mentions_sessions(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    lower.contains("session") || lower.contains("initializ")
}

fn seconds(duration: Duration) -> String {
    format!("{:.1} s", duration.as_secs_f64())
}

async fn transport_failure(
    transport: TransportError,
    target: &Target,
    args: &ConnectArgs,
    stderr_tail: Vec<String>,
) -> Failure {
    let server = target.describe();
    match (target, transport) {
        (Target::Http(url), TransportError::Http { status, body }) => {
            http_status_failure(url, status, &body, args)
        }
        (Target::Http(url), TransportError::Io(detail)) => match probe(url).await {
            Probe::Refused(authority) => Failure::protocol(format!(
                "could not connect to {authority}: connection refused"
            ))
            .hint(
                "is the server running? Start the demo with `toolwire serve` \
                     (it listens on http://127.0.0.1:8931/mcp), or check the URL",
            ),
            Probe::Unresolved(authority) => {
                Failure::protocol(format!("cannot resolve or reach {authority}: {detail}"))
                    .hint("check the host name in the URL")
            }
            Probe::Reachable => {
                let hint = if url.starts_with("https://") {
                    "the port answers but the HTTPS request failed: does the server speak \
                         plain http:// instead?"
                } else {
                    "the port answers but the request failed: is it an MCP endpoint? \
                         (`toolwire serve` listens at /mcp)"
                };
                Failure::protocol(format!("request to {url} failed: {detail}")).hint(hint)
            }
        },
        (Target::Stdio(command), TransportError::Io(detail)) => Failure::protocol(format!(
            "could not start or talk to {server}: {detail}"
        ))
        .hint(format!(
            "is `{}` installed and on your PATH? The server's command goes after `--`",
            command[0]
        )),
        (Target::Stdio(_), TransportError::Closed(detail)) => {
            let mut message = format!("the server process {server} stopped{detail}");
            if !stderr_tail.is_empty() {
                let tail: Vec<&String> = stderr_tail.iter().rev().take(10).collect();
                message.push_str("; the end of its stderr:");
                for line in tail.into_iter().rev() {
                    message.push_str("\n  | ");
                    message.push_str(&one_line(line));
                }
            }
            Failure::protocol(message).hint(
                "check that the command starts an MCP server on stdio (e.g. `toolwire serve --stdio`)",
            )
        }
        (_, TransportError::Auth(error)) => {
            let kept = crate::connect::token_file()
                .map(|path| {
                    format!(
                        " (tokens and client registrations are kept in {})",
                        path.display()
                    )
                })
                .unwrap_or_default();
            Failure::protocol(format!("could not authorize with {server}: {error}")).hint(format!(
                "run the command again to start a new authorization{kept}"
            ))
        }
        (_, TransportError::Malformed(detail)) => Failure::protocol(format!(
            "{server} sent something that is not MCP: {detail}"
        ))
        .hint(
            "check that this is an MCP server (stdio servers must write only JSON-RPC on stdout)",
        ),
        (_, other) => Failure::protocol(format!("{server}: {other}")),
    }
}

fn http_status_failure(url: &str, status: u16, body: &str, args: &ConnectArgs) -> Failure {
    let detail = body_message(body);
    let with_detail = |text: String| match &detail {
        Some(d) => format!("{text}: {d}"),
        None => text,
    };
    match status {
        401 if args.bearer.is_some() => Failure::protocol(with_detail(format!(
            "{url} did not accept the bearer token (HTTP 401)"
        )))
        .hint("check the token given with --bearer (or TOOLWIRE_BEARER)"),
        401 => Failure::protocol(with_detail(format!(
            "{url} wants a bearer token (HTTP 401)"
        )))
        .hint(
            "pass --bearer TOKEN (for `toolwire serve --token TOKEN`, the same TOKEN), \
             or --oauth when the server uses OAuth",
        ),
        403 => Failure::protocol(with_detail(format!("{url} refused the request (HTTP 403)")))
            .hint(
                "the token may lack a scope, or the server's Host/Origin check refused \
                 the request (`toolwire serve --allow-origin`, `--allow-host`)",
            ),
        404 => {
            let suggestion = if url.trim_end_matches('/').ends_with("/mcp") {
                "check the URL's path".to_owned()
            } else {
                format!(
                    "check the URL's path: `toolwire serve` listens at /mcp, e.g. {}/mcp",
                    url.trim_end_matches('/')
                )
            };
            Failure::protocol(format!("no MCP endpoint at {url} (HTTP 404)")).hint(suggestion)
        }
        405 => Failure::protocol(format!(
            "{url} does not accept POST (HTTP 405): it is not a Streamable HTTP MCP endpoint"
        ))
        .hint("check the URL (`toolwire serve` listens at /mcp)"),
        429 => Failure::protocol(with_detail(format!("{url} is rate limiting (HTTP 429)")))
            .hint("wait a little and try again"),
        400 if mentions_sessions(body) => {
            Failure::protocol(with_detail(format!("{url} refused the request (HTTP 400)")))
                .hint(OLDER_PROTOCOL)
        }
        _ => Failure::protocol(with_detail(format!("{url} answered HTTP {status}"))),
    }
}

/// The message inside a JSON-RPC error body, or the start of the body.
fn body_message(body: &str) -> Option<String> {
    if let Ok(value) = serde_json::from_str::<Value>(body) {
        if let Some(message) = value
            .get("error")
            .and_then(|e| e.get("message"))
            .and_then(Value::as_str)
        {
            return Some(one_line(message).into_owned());
        }
    }
    let trimmed = body.trim();
    (!trimmed.is_empty()).then(|| {
        let start: String = trimmed.chars().take(200).collect();
        one_line(&start).into_owned()
    })
}

enum Probe {
    Refused(String),
    Unresolved(String),
    Reachable,
}

/// Tries a plain TCP connection to the URL's host and port, to tell
/// "nothing listens there" from other failures.
async fn probe(url: &str) -> Probe {
    let (secure, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (scheme.eq_ignore_ascii_case("https"), rest),
        None => (false, url),
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let authority = authority.rsplit('@').next().unwrap_or(authority).to_owned();
    let has_port = match authority.rfind(']') {
        Some(bracket) => authority[bracket..].contains(':'),
        None => authority.contains(':'),
    };
    let address = if has_port {
        authority.clone()
    } else {
        format!("{authority}:{}", if secure { 443 } else { 80 })
    };
    let connect = tokio::net::TcpStream::connect(address);
    match tokio::time::timeout(Duration::from_secs(3), connect).await {
        Ok(Ok(_)) => Probe::Reachable,
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            Probe::Refused(authority)
        }
        Ok(Err(_)) | Err(_) => Probe::Unresolved(authority),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn older_versions_are_named() {
        assert!(version_hint(&["2025-06-18".into()]).contains("older MCP revision (2025-06-18)"));
        assert!(version_hint(&["2027-01-01".into()]).contains("upgrade toolwire"));
    }
}
