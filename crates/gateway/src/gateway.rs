//! The gateway: every upstream's tools under exposed names, served by one
//! toolwire server that forwards each call to the upstream it came from,
//! and kept current as upstreams change their lists, go away and return.

use std::sync::{Arc, Mutex};

use toolwire_client::Client;
use toolwire_server::protocol::Tool;
use toolwire_server::{RegistrationError, Server, StateKey};

use crate::audit::AuditLog;
use crate::config::{GatewayConfig, UpstreamConfig};
use crate::registry::Registry;
use crate::upstream::{UpstreamError, client_for};

/// A tool the gateway serves, and where it comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExposedTool {
    /// The name downstream clients call it by.
    pub name: String,
    /// The upstream's name.
    pub upstream: String,
    /// Its name on the upstream.
    pub upstream_tool: String,
    /// The scope a caller needs, when one is configured.
    pub scope: Option<String>,
}

/// Why the gateway could not start.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// Two tools would be exposed under one name.
    #[error(
        "two tools would be exposed as {name:?}: {first_tool:?} of upstream {first:?} and \
         {second_tool:?} of upstream {second:?}; give one upstream another prefix, or deny one tool"
    )]
    Collision {
        /// The exposed name.
        name: String,
        /// The upstream that had it first.
        first: String,
        /// Its tool.
        first_tool: String,
        /// The upstream that wanted it too.
        second: String,
        /// Its tool.
        second_tool: String,
    },
    /// The audit file cannot be opened.
    #[error("cannot open the audit log: {0}")]
    Audit(std::io::Error),
    /// `TOOLWIRE_STATE_KEYS` holds a key that does not parse.
    #[error("{0}")]
    StateKeys(String),
    /// The server refused a definition.
    #[error("cannot serve the upstreams' tools: {0}")]
    Build(#[from] RegistrationError),
}

/// The environment variable with the keys sealing `requestState`: the same
/// value on every instance of one gateway behind a load balancer.
pub const STATE_KEYS_ENV: &str = "TOOLWIRE_STATE_KEYS";

/// The upstreams' tools behind one server.
#[derive(Debug, Clone)]
pub struct Gateway {
    pub(crate) inner: Arc<Inner>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) server: Server,
    pub(crate) config: GatewayConfig,
    /// One per upstream; `None` when its client could not be made.
    pub(crate) clients: Vec<Option<Arc<Client>>>,
    pub(crate) registry: Mutex<Registry>,
}

impl Gateway {
    /// Connects to every upstream, lists its tools and serves them. An
    /// upstream that cannot be reached or listed is left out (see
    /// [`Gateway::failures`]) and the others are served; two tools that
    /// would get one name are refused ([`GatewayError::Collision`]).
    pub async fn start(config: &GatewayConfig) -> Result<Gateway, GatewayError> {
        let audit = match &config.audit {
            Some(target) => Some(Arc::new(
                AuditLog::open(target).map_err(GatewayError::Audit)?,
            )),
            None => None,
        };
        let server = server_builder()?.build()?;
        let mut clients = Vec::new();
        let mut registry = Registry::new(config, audit);
        for upstream in &config.upstreams {
            match client_for(upstream) {
                Ok(client) => clients.push(Some(Arc::new(client))),
                Err(error) => {
                    registry.set_failure(clients.len(), Some(error));
                    clients.push(None);
                }
            }
        }
        let gateway = Gateway {
            inner: Arc::new(Inner {
                server,
                config: config.clone(),
                clients,
                registry: Mutex::new(registry),
            }),
        };
        let listings = (0..config.upstreams.len()).map(|i| gateway.list(i));
        for (index, listing) in futures::future::join_all(listings)
            .await
            .into_iter()
            .enumerate()
        {
            if let Some(collision) = gateway.apply(index, listing).into_iter().next() {
                return Err(gateway.inner.lock().collision_error(collision));
            }
        }
        Ok(gateway)
    }

    /// The server to put on a transport (stdio or HTTP).
    pub fn server(&self) -> &Server {
        &self.inner.server
    }

    /// The tools served now, upstream by upstream in the configuration's
    /// order.
    pub fn tools(&self) -> Vec<ExposedTool> {
        self.inner.lock().tools()
    }

    /// The upstreams left out now, and why.
    pub fn failures(&self) -> Vec<UpstreamError> {
        self.inner.lock().failures()
    }

    /// The tools of upstream `index` as it lists them now.
    pub(crate) async fn list(&self, index: usize) -> Result<Vec<Tool>, UpstreamError> {
        let upstream = &self.inner.config.upstreams[index];
        let Some(client) = &self.inner.clients[index] else {
            return Err(self
                .inner
                .lock()
                .failure(index)
                .unwrap_or_else(|| unreachable(upstream)));
        };
        // Cleared, not just invalidated: a stale list must not stand in for
        // an upstream that no longer answers.
        client.cache().clear();
        let listing = client.list_tools().await.map_err(|e| UpstreamError {
            name: upstream.name.clone(),
            reason: format!("cannot list its tools: {e}"),
        })?;
        Ok(listing.tools.into_iter().map(|info| info.tool).collect())
    }

    /// Serves what `listing` says upstream `index` has (nothing when it
    /// failed); returns the tools withheld because their names were taken.
    pub(crate) fn apply(
        &self,
        index: usize,
        listing: Result<Vec<Tool>, UpstreamError>,
    ) -> Vec<crate::names::Collision> {
        let client = self.inner.clients[index].clone();
        let mut registry = self.inner.lock();
        match (listing, client) {
            (Ok(tools), Some(client)) => {
                registry.set_failure(index, None);
                registry.serve(&self.inner.server, index, client, tools)
            }
            (Ok(_), None) => Vec::new(),
            (Err(error), _) => {
                tracing::warn!(%error, "upstream left out; its tools are not served");
                registry.set_failure(index, Some(error));
                registry.serve_none(&self.inner.server, index);
                Vec::new()
            }
        }
    }
}

impl Inner {
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.registry
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn unreachable(upstream: &UpstreamConfig) -> UpstreamError {
    UpstreamError {
        name: upstream.name.clone(),
        reason: "it has no client".into(),
    }
}

/// The gateway's server, sealing with the keys of [`STATE_KEYS_ENV`], or
/// with a random key of its own when it is unset.
fn server_builder() -> Result<toolwire_server::ServerBuilder, GatewayError> {
    let builder = Server::builder("toolwire-gateway", env!("CARGO_PKG_VERSION"))
        .state_keys_from_env(STATE_KEYS_ENV)
        .map_err(GatewayError::StateKeys)?;
    Ok(match std::env::var_os(STATE_KEYS_ENV) {
        Some(_) => builder,
        None => builder.state_key(StateKey::random()),
    })
}
