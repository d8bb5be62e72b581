//! The gateway: every upstream's tools under exposed names, served by one
//! toolwire server that forwards each call to the upstream it came from,
//! and kept current as upstreams change their lists, go away and return.

use std::sync::{Arc, Mutex};

use toolwire_client::Client;
use toolwire_server::protocol::{Prompt, Resource, ResourceTemplate, Tool};
use toolwire_server::{ChangeFeed, RateLimitStore, Server, ServerBuilder, StateKey};

use crate::audit::AuditLog;
use crate::config::{GatewayConfig, UpstreamConfig};
use crate::error::GatewayError;
use crate::pin::PinStore;
use crate::registry::{ExposedTool, Registry, WithheldTool};
use crate::upstream::{UpstreamError, client_for};

/// What one upstream lists.
#[derive(Debug)]
pub(crate) struct Listing {
    pub(crate) tools: Vec<Tool>,
    pub(crate) prompts: Vec<Prompt>,
    pub(crate) resources: Vec<Resource>,
    pub(crate) templates: Vec<ResourceTemplate>,
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
    pub(crate) pins: Option<Arc<PinStore>>,
}

impl Gateway {
    /// Connects to every upstream, lists its tools and serves them. An
    /// upstream that cannot be reached or listed is left out (see
    /// [`Gateway::failures`]) and the others are served; two tools that
    /// would get one name are refused ([`GatewayError::Collision`]).
    pub async fn start(config: &GatewayConfig) -> Result<Gateway, GatewayError> {
        Gateway::start_with(config, SharedStores::default()).await
    }

    /// [`Gateway::start`] with rate limits and list changes kept in shared
    /// stores (e.g. Redis, for several gateway instances behind one load
    /// balancer).
    pub async fn start_with(
        config: &GatewayConfig,
        stores: SharedStores,
    ) -> Result<Gateway, GatewayError> {
        let audit = match &config.audit {
            Some(target) => Some(Arc::new(
                AuditLog::open(target).map_err(GatewayError::Audit)?,
            )),
            None => None,
        };
        let pins = match &config.lock {
            Some(path) => Some(Arc::new(
                PinStore::open(path, config.pin).map_err(GatewayError::Lock)?,
            )),
            None => None,
        };
        let mut builder = stores.apply(server_builder()?);
        if let Some(limit) = config.call_limit {
            builder = builder.tool_call_limit(limit);
        }
        let server = builder.build()?;
        let mut clients = Vec::new();
        let mut registry = Registry::new(config, audit, pins.clone());
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
                pins,
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

    /// Signs of tool poisoning in the served tools' definitions, by exposed
    /// name (see [`crate::scan`]).
    pub fn findings(&self) -> Vec<(String, Vec<String>)> {
        self.inner.lock().findings()
    }

    /// The tools withheld now because of their pins.
    pub fn withheld(&self) -> Vec<WithheldTool> {
        self.inner.lock().withheld()
    }

    /// The pins, when the configuration names a lock file.
    pub fn pins(&self) -> Option<&PinStore> {
        self.inner.pins.as_deref()
    }

    /// The upstreams left out now, and why.
    pub fn failures(&self) -> Vec<UpstreamError> {
        self.inner.lock().failures()
    }

    /// The prompts served now, by exposed name.
    pub fn prompt_names(&self) -> Vec<String> {
        self.inner.lock().prompt_names()
    }

    /// The resources served now, by URI (kept as the upstream gives it).
    pub fn resource_uris(&self) -> Vec<String> {
        self.inner.lock().resource_uris()
    }

    /// The resource templates served now, by URI template (kept as the
    /// upstream gives it).
    pub fn resource_templates(&self) -> Vec<String> {
        self.inner.lock().template_uris()
    }

    /// The tools, prompts, resources and resource templates of upstream
    /// `index` as it lists them now (an upstream that lists no prompts has
    /// none, and so on).
    pub(crate) async fn list(&self, index: usize) -> Result<Listing, UpstreamError> {
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
        let tools = listing.tools.into_iter().map(|info| info.tool).collect();
        // A server without prompts answers with an error: it has none.
        let prompts = client
            .list_prompts()
            .await
            .map(|f| f.value)
            .unwrap_or_default();
        let resources = client
            .list_resources()
            .await
            .map(|f| f.value)
            .unwrap_or_default();
        let templates = client
            .list_resource_templates()
            .await
            .map(|f| f.value)
            .unwrap_or_default();
        Ok(Listing {
            tools,
            prompts,
            resources,
            templates,
        })
    }

    /// Serves what `listing` says upstream `index` has (nothing when it
    /// failed); returns the tools withheld because their names were taken.
    pub(crate) fn apply(
        &self,
        index: usize,
        listing: Result<Listing, UpstreamError>,
    ) -> Vec<crate::names::Collision> {
        let client = self.inner.clients[index].clone();
        let mut registry = self.inner.lock();
        match (listing, client) {
            (Ok(listing), Some(client)) => {
                registry.set_failure(index, None);
                let server = &self.inner.server;
                registry.serve_prompts(server, index, &client, listing.prompts);
                registry.serve_resources(server, index, &client, listing.resources);
                registry.serve_templates(server, index, &client, listing.templates);
                registry.serve(server, index, client, listing.tools)
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

/// Stores several gateway instances share; unset ones stay in memory.
#[derive(Clone, Default)]
pub struct SharedStores {
    /// Rate-limit buckets.
    pub rate_limits: Option<Arc<dyn RateLimitStore>>,
    /// Where `list_changed` travels between instances.
    pub change_feed: Option<Arc<dyn ChangeFeed>>,
}

impl std::fmt::Debug for SharedStores {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedStores")
            .field("rate_limits", &self.rate_limits.is_some())
            .field("change_feed", &self.change_feed.is_some())
            .finish()
    }
}

impl SharedStores {
    fn apply(self, mut builder: ServerBuilder) -> ServerBuilder {
        if let Some(store) = self.rate_limits {
            builder = builder.rate_limit_store(store);
        }
        if let Some(feed) = self.change_feed {
            builder = builder.change_feed(feed);
        }
        builder
    }
}

/// The gateway's server, sealing with the keys of [`STATE_KEYS_ENV`], or
/// with a random key of its own when it is unset.
fn server_builder() -> Result<ServerBuilder, GatewayError> {
    let builder = Server::builder("toolwire-gateway", env!("CARGO_PKG_VERSION"))
        .state_keys_from_env(STATE_KEYS_ENV)
        .map_err(GatewayError::StateKeys)?;
    Ok(match std::env::var_os(STATE_KEYS_ENV) {
        Some(_) => builder,
        None => builder.state_key(StateKey::random()),
    })
}
