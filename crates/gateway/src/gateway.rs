//! The gateway: every upstream's tools under exposed names, served by one
//! toolwire server that forwards each call to the upstream it came from,
//! and kept current as upstreams change their lists, go away and return.

use std::sync::{Arc, Mutex};

use tokio::sync::watch;
use toolwire_client::Client;
use toolwire_server::protocol::{Prompt, Resource, ResourceTemplate, Tool};
use toolwire_server::{
    ChangeFeed, InMemoryRateLimits, InMemoryTaskStore, RateLimitStore, Server, ServerBuilder,
    StateKey, TaskStore,
};

use crate::audit::AuditLog;
use crate::bridge::ParkedRequests;
use crate::config::{GatewayConfig, StartMode, UpstreamConfig};
use crate::error::GatewayError;
use crate::hints::ListHints;
use crate::pin::PinStore;
use crate::rate_use::MeteredRateLimits;
use crate::registry::{ExposedTool, Registry, WithheldTool};
use crate::status::Health;
use crate::tasks::TaskEnds;
use crate::upstream::{UpstreamError, client_for};

/// What one upstream lists.
#[derive(Debug)]
pub(crate) struct Listing {
    pub(crate) tools: Vec<Tool>,
    pub(crate) prompts: Vec<Prompt>,
    pub(crate) resources: Vec<Resource>,
    pub(crate) templates: Vec<ResourceTemplate>,
    /// The caching hints of the lists fetched.
    pub(crate) hints: ListHints,
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
    /// One per upstream, in the configuration's order.
    pub(crate) slots: Mutex<Vec<Arc<Slot>>>,
    pub(crate) registry: Mutex<Registry>,
    pub(crate) pins: Option<Arc<PinStore>>,
    /// The server's rate-limit store, counting each principal's use.
    pub(crate) rate_limits: Arc<MeteredRateLimits>,
    /// Where calls and events are recorded, when anywhere.
    pub(crate) audit: Option<Arc<AuditLog>>,
    /// Set by [`Gateway::watch_upstreams`]: upstreams added later are
    /// followed too.
    pub(crate) watching: std::sync::atomic::AtomicBool,
}

/// One upstream and the client that reaches it.
#[derive(Debug)]
pub(crate) struct Slot {
    pub(crate) upstream: UpstreamConfig,
    /// `None` when its client could not be made.
    pub(crate) client: Option<Arc<Client>>,
    /// False while a lazy upstream waits for its first use.
    pub(crate) started: Arc<watch::Sender<bool>>,
    /// True once a reload removed or replaced it: its watcher stops.
    pub(crate) retired: watch::Sender<bool>,
    /// How its listings went, for [`Gateway::upstreams`].
    pub(crate) health: Mutex<Health>,
}

impl Slot {
    /// The slot of `upstream` (a lazy one with pins waits for its first
    /// use), and why its client could not be made.
    pub(crate) fn open(
        upstream: &UpstreamConfig,
        pins: Option<&PinStore>,
    ) -> (Slot, Option<UpstreamError>) {
        let pinned = pinned_tools(pins, upstream).len();
        let started = upstream.start == StartMode::Boot || pinned == 0;
        if !started {
            tracing::info!(upstream = %upstream.name, tools = pinned,
                "lazy: serving its pinned tools; it starts on the first call of one");
        } else if upstream.start == StartMode::Lazy {
            tracing::info!(upstream = %upstream.name,
                "lazy, but nothing is pinned for it yet: started now to pin its tools");
        }
        let (client, error) = match client_for(upstream) {
            Ok(client) => (Some(Arc::new(client)), None),
            Err(error) => (None, Some(error)),
        };
        let slot = Slot {
            upstream: upstream.clone(),
            client,
            started: Arc::new(watch::channel(started).0),
            retired: watch::channel(false).0,
            health: Mutex::default(),
        };
        (slot, error)
    }

    /// The slot of `upstream` on `old`'s client, started or not as `old`
    /// is (a policy change keeps the process or connection).
    pub(crate) fn reusing(upstream: &UpstreamConfig, old: &Slot) -> Slot {
        Slot {
            upstream: upstream.clone(),
            client: old.client.clone(),
            started: Arc::clone(&old.started),
            retired: watch::channel(false).0,
            health: Mutex::new(old.health()),
        }
    }

    /// What stays of a retired slot: its name, no client.
    pub(crate) fn tombstone(upstream: &UpstreamConfig) -> Slot {
        Slot {
            upstream: upstream.clone(),
            client: None,
            started: Arc::new(watch::channel(true).0),
            retired: watch::channel(true).0,
            health: Mutex::default(),
        }
    }

    pub(crate) fn is_started(&self) -> bool {
        *self.started.borrow()
    }

    pub(crate) fn is_retired(&self) -> bool {
        *self.retired.borrow()
    }

    /// How its listings went so far.
    pub(crate) fn health(&self) -> Health {
        self.health_mut().clone()
    }

    pub(crate) fn health_mut(&self) -> std::sync::MutexGuard<'_, Health> {
        self.health
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Gateway {
    /// Connects to every upstream, lists its tools and serves them. An
    /// upstream that cannot be reached or listed is left out (see
    /// [`Gateway::failures`]) and the others are served; two tools that
    /// would get one name are refused ([`GatewayError::Collision`]). A lazy
    /// upstream (`start = "lazy"`) is not reached: the tools pinned for it
    /// are served until one of them is called.
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
        let audit = audit_log(config)?;
        let pins = match &config.lock {
            Some(path) => Some(Arc::new(
                PinStore::open(path, config.pin).map_err(GatewayError::Lock)?,
            )),
            None => None,
        };
        let rate_limits = Arc::new(MeteredRateLimits::new(
            stores
                .rate_limits
                .clone()
                .unwrap_or_else(|| Arc::new(InMemoryRateLimits::new())),
        ));
        // Calls waiting for input, shared by every route and watched by the
        // task store (a task that ends while its call waits releases it).
        let parked = Arc::new(ParkedRequests::default());
        let mut builder = stores
            .apply(server_builder()?, &parked)
            .rate_limit_store(rate_limits.clone());
        if let Some(limit) = config.call_limit {
            builder = builder.tool_call_limit(limit);
        }
        let server = builder.build()?;
        let mut slots = Vec::new();
        let mut registry = Registry::new(config, audit.clone(), pins.clone(), parked);
        for upstream in &config.upstreams {
            let (slot, error) = Slot::open(upstream, pins.as_deref());
            registry.set_failure(slots.len(), error);
            slots.push(Arc::new(slot));
        }
        let gateway = Gateway {
            inner: Arc::new(Inner {
                server,
                config: config.clone(),
                slots: Mutex::new(slots),
                registry: Mutex::new(registry),
                pins,
                audit,
                rate_limits,
                watching: Default::default(),
            }),
        };
        let listings = (0..config.upstreams.len()).map(|i| gateway.first_listing(i));
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

    /// Closes every upstream's connection, all at once, once the server
    /// has stopped: a stdio child has its stdin closed and time to exit
    /// (then SIGTERM, then SIGKILL, as [`Client::close`] does), so that it
    /// can finish what it does at exit (flush its telemetry, for one)
    /// instead of being killed when the gateway exits.
    ///
    /// ```no_run
    /// # async fn run(config: toolwire_gateway::config::GatewayConfig) -> Result<(), toolwire_gateway::GatewayError> {
    /// let gateway = toolwire_gateway::Gateway::start(&config).await?;
    /// // ... serve gateway.server() until asked to stop ...
    /// gateway.close().await;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn close(&self) {
        let clients: Vec<Arc<Client>> = self
            .inner
            .slots()
            .iter()
            .filter_map(|slot| slot.client.clone())
            .collect();
        futures::future::join_all(clients.iter().map(|client| client.close())).await;
    }

    /// The tools served now, upstream by upstream in the configuration's
    /// order (after a reload, the upstreams it added or changed last).
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

    /// The audit log: the configured `audit` target, or with `ui = true`
    /// and no target, one kept in memory for the console
    /// ([`AuditLog::in_memory`]); `None` when calls are not recorded.
    pub fn audit(&self) -> Option<Arc<AuditLog>> {
        self.inner.audit.clone()
    }

    /// The upstreams left out now, and why.
    pub fn failures(&self) -> Vec<UpstreamError> {
        self.inner.lock().failures()
    }

    /// The names of the lazy upstreams not started yet (their pinned tools
    /// are served).
    pub fn waiting(&self) -> Vec<String> {
        self.inner
            .slots()
            .iter()
            .filter(|slot| !slot.is_started() && !slot.is_retired())
            .map(|slot| slot.upstream.name.clone())
            .collect()
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

    /// What upstream `index` is served with at start: its lists, or the
    /// tools pinned for it while it waits for its first use.
    pub(crate) async fn first_listing(&self, index: usize) -> Result<Listing, UpstreamError> {
        let slot = self.inner.slot(index);
        if slot.is_started() {
            return self.list(index).await;
        }
        Ok(Listing {
            tools: pinned_tools(self.inner.pins.as_deref(), &slot.upstream),
            prompts: Vec::new(),
            resources: Vec::new(),
            templates: Vec::new(),
            hints: ListHints::default(),
        })
    }

    /// The tools, prompts, resources and resource templates of upstream
    /// `index` as it lists them now (an upstream that lists no prompts has
    /// none, and so on).
    pub(crate) async fn list(&self, index: usize) -> Result<Listing, UpstreamError> {
        let slot = self.inner.slot(index);
        let listing = self.fetch(&slot, index).await;
        slot.health_mut().listed(listing.is_ok());
        listing
    }

    /// What upstream `index` (in `slot`) lists now.
    async fn fetch(&self, slot: &Slot, index: usize) -> Result<Listing, UpstreamError> {
        let upstream = &slot.upstream;
        let Some(client) = &slot.client else {
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
        let mut hints = ListHints {
            tools: Some(listing.hints),
            ..ListHints::default()
        };
        let tools = listing.tools.into_iter().map(|info| info.tool).collect();
        // A server without prompts answers with an error: it has none.
        let prompts = match client.list_prompts().await {
            Ok(fetched) => {
                hints.prompts = Some(fetched.hints);
                fetched.value
            }
            Err(_) => Vec::new(),
        };
        let resources = match client.list_resources().await {
            Ok(fetched) => {
                hints.resources = Some(fetched.hints);
                fetched.value
            }
            Err(_) => Vec::new(),
        };
        let templates = match client.list_resource_templates().await {
            Ok(fetched) => {
                hints.templates = Some(fetched.hints);
                fetched.value
            }
            Err(_) => Vec::new(),
        };
        Ok(Listing {
            tools,
            prompts,
            resources,
            templates,
            hints,
        })
    }

    /// Serves what `listing` says upstream `index` has (nothing when it
    /// failed); returns the tools withheld because their names were taken.
    pub(crate) fn apply(
        &self,
        index: usize,
        listing: Result<Listing, UpstreamError>,
    ) -> Vec<crate::names::Collision> {
        let slot = self.inner.slot(index);
        let mut registry = self.inner.lock();
        // Checked under the lock a reload retires slots with.
        if slot.is_retired() {
            return Vec::new();
        }
        match (listing, slot.client.clone()) {
            (Ok(listing), Some(client)) => {
                registry.set_failure(index, None);
                let server = &self.inner.server;
                // Hints before the tools come, after they go (below): a
                // list is never served with hints looser than its upstreams'.
                registry.set_hints(server, index, listing.hints);
                registry.serve_prompts(server, index, &client, listing.prompts);
                registry.serve_resources(server, index, &client, listing.resources);
                registry.serve_templates(server, index, &client, listing.templates);
                let started = Arc::clone(&slot.started);
                registry.serve(server, index, client, started, listing.tools)
            }
            (Ok(_), None) => Vec::new(),
            (Err(error), _) => {
                tracing::warn!(%error, "upstream left out; its tools are not served");
                registry.set_failure(index, Some(error));
                registry.serve_none(&self.inner.server, index);
                registry.set_hints(&self.inner.server, index, ListHints::default());
                Vec::new()
            }
        }
    }
}

/// The audit log `config` asks for: its `audit` target, or in memory for
/// the console (`ui = true`), or none.
fn audit_log(config: &GatewayConfig) -> Result<Option<Arc<AuditLog>>, GatewayError> {
    Ok(match &config.audit {
        Some(target) => Some(Arc::new(
            AuditLog::open(target).map_err(GatewayError::Audit)?,
        )),
        None if config.ui => Some(Arc::new(AuditLog::in_memory())),
        None => None,
    })
}

/// The tools pinned for `upstream` (none without a lock file).
fn pinned_tools(pins: Option<&PinStore>, upstream: &UpstreamConfig) -> Vec<Tool> {
    pins.map(|pins| pins.pinned(&upstream.name))
        .unwrap_or_default()
}

impl Inner {
    /// The upstreams now.
    pub(crate) fn slots(&self) -> Vec<Arc<Slot>> {
        self.slots_mut().clone()
    }

    pub(crate) fn slots_mut(&self) -> std::sync::MutexGuard<'_, Vec<Arc<Slot>>> {
        self.slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn slot(&self, index: usize) -> Arc<Slot> {
        Arc::clone(&self.slots()[index])
    }

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
    /// Where the gateway's own tasks live (a downstream client that declares
    /// the Tasks extension gets them), so that any instance answers
    /// `tasks/get` for them.
    pub tasks: Option<Arc<dyn TaskStore>>,
}

impl std::fmt::Debug for SharedStores {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedStores")
            .field("rate_limits", &self.rate_limits.is_some())
            .field("change_feed", &self.change_feed.is_some())
            .field("tasks", &self.tasks.is_some())
            .finish()
    }
}

impl SharedStores {
    /// `builder` with the change feed and the task store (in memory when
    /// unset), watched for tasks that end while their call waits in
    /// `parked` (the rate limits go through [`MeteredRateLimits`], set by
    /// [`Gateway::start_with`]).
    fn apply(self, mut builder: ServerBuilder, parked: &Arc<ParkedRequests>) -> ServerBuilder {
        if let Some(feed) = self.change_feed {
            builder = builder.change_feed(feed);
        }
        let tasks = self
            .tasks
            .unwrap_or_else(|| Arc::new(InMemoryTaskStore::new()));
        builder.task_store(Arc::new(TaskEnds::new(tasks, Arc::clone(parked))))
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
