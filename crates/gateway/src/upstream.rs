//! Reaching one upstream: the client for its transport (a child process on
//! stdio, or Streamable HTTP), and its tools as the gateway will serve them.

use toolwire_client::Client;
use toolwire_client::handlers::BoxError;
use toolwire_client::transport::{HttpTransport, StdioTransport};

use toolwire_server::protocol::{CreateMessageRequestParams, ElicitRequestParams};

use crate::config::{UpstreamConfig, UpstreamTransport};

/// Why an upstream could not be reached or listed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("upstream {name:?}: {reason}")]
pub struct UpstreamError {
    /// The upstream's name.
    pub name: String,
    /// What went wrong.
    pub reason: String,
}

/// The client for `upstream`: a child process it starts on first use, or
/// an HTTP endpoint (with the bearer token of `bearer_env`).
pub fn client_for(upstream: &UpstreamConfig) -> Result<Client, UpstreamError> {
    let failed = |reason: String| UpstreamError {
        name: upstream.name.clone(),
        reason,
    };
    let builder = match &upstream.transport {
        UpstreamTransport::Command(command) => {
            let (program, args) = command
                .split_first()
                .ok_or_else(|| failed("the command is empty".into()))?;
            Client::builder(StdioTransport::command(program).args(args).build())
        }
        UpstreamTransport::Url { url, bearer_env } => {
            let mut transport = HttpTransport::builder(url.clone());
            if let Some(var) = bearer_env {
                let token = std::env::var(var).map_err(|_| {
                    failed(format!(
                        "the environment variable {var} (bearer_env) is not set"
                    ))
                })?;
                transport = transport.bearer_token(token);
            }
            Client::builder(transport.build().map_err(|e| failed(e.to_string()))?)
        }
    };
    let mut builder = builder
        .name(upstream.name.clone())
        .client_info("toolwire-gateway", env!("CARGO_PKG_VERSION"))
        // The gateway records each call itself (its audit file and the
        // server's `tool_call` event): the client's event would repeat it.
        .audit_events(false)
        // Declared so a 2025-11-25 upstream, which learns the capabilities
        // once at `initialize`, may ask; each forwarded call answers with
        // its own handler (and tells a 2026-07-28 upstream what its client
        // declared). These answer only what is asked outside a call.
        .elicitation(|_: ElicitRequestParams, _| refuse())
        .elicitation_url_mode(true)
        .sampling(|_: CreateMessageRequestParams, _| refuse())
        .roots_provider(|_| refuse());
    if let Some(timeout) = upstream.timeout {
        builder = builder.timeout(timeout);
    }
    Ok(builder.build())
}

/// The answer to input asked outside any forwarded call: there is no client
/// to ask.
async fn refuse<T>() -> Result<T, BoxError> {
    Err("the gateway has no client to ask outside a forwarded call".into())
}
