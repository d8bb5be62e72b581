//! [`ServerBuilder`]: a server's settings, tools, prompts and resources,
//! checked and compiled by [`ServerBuilder::build`].

use std::sync::Arc;
use std::time::Duration;

use toolwire_protocol::{Icon, Implementation};

use tokio_util::sync::CancellationToken;

use crate::context::mrtr::StateCodec;
use crate::context::seal::{Sealer, StateKey};
use crate::features::cache::CacheHint;
use crate::features::extract::States;
use crate::features::prompts::PromptBuilder;
use crate::features::registry::{RegisteredTool, RegistrationError, Registry};
use crate::features::resources::{ResourceBuilder, ResourceTemplateBuilder};
use crate::features::tool::ToolBuilder;
use crate::security::limits::InputLimits;
use crate::security::sanitize::SanitizePolicy;
use crate::store::change_feed::{Change, ChangeFeed, InMemoryChangeFeed};
use crate::store::rate_limit::{InMemoryRateLimits, RateLimit, RateLimitStore};
use crate::store::tasks::{InMemoryTaskStore, TaskStore};

/// Server-wide settings; every field has a safe default.
use crate::server::{
    Server, ServerConfig, ServerInner, compile_prompt, compile_resource, compile_template,
};

impl Server {
    /// Starts building a server with a name and version.
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> ServerBuilder {
        ServerBuilder {
            config: ServerConfig {
                info: Implementation::new(name, version),
                ..Default::default()
            },
            tools: Vec::new(),
            states: States::default(),
            prompts: Vec::new(),
            resources: Vec::new(),
            templates: Vec::new(),
            rate_limit_store: None,
            change_feed: None,
            task_store: None,
        }
    }
}

/// Builds a [`Server`].
#[derive(Debug)]
pub struct ServerBuilder {
    config: ServerConfig,
    tools: Vec<ToolBuilder>,
    states: States,
    prompts: Vec<PromptBuilder>,
    resources: Vec<ResourceBuilder>,
    templates: Vec<ResourceTemplateBuilder>,
    rate_limit_store: Option<Arc<dyn RateLimitStore>>,
    change_feed: Option<Arc<dyn ChangeFeed>>,
    task_store: Option<Arc<dyn TaskStore>>,
}

impl ServerBuilder {
    /// The display name.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.config.info.title = Some(title.into());
        self
    }

    /// A description of the server.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.config.info.description = Some(description.into());
        self
    }

    /// Instructions for the model, returned by `server/discover`.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.config.instructions = Some(instructions.into());
        self
    }

    /// Adds an icon.
    pub fn icon(mut self, icon: Icon) -> Self {
        self.config
            .info
            .icons
            .get_or_insert_with(Vec::new)
            .push(icon);
        self
    }

    /// Items per page of list results (at least 1).
    pub fn page_size(mut self, size: usize) -> Self {
        self.config.page_size = size.max(1);
        self
    }

    /// Caching hints on list results.
    pub fn list_cache(mut self, ttl_ms: u64, scope: toolwire_protocol::CacheScope) -> Self {
        self.config.list_cache = CacheHint { ttl_ms, scope };
        self
    }

    /// Serves the stateless era only: `initialize` (2025-11-25 and earlier)
    /// is refused with an error naming the supported versions. By default a
    /// server serves both eras.
    pub fn modern_only(mut self) -> Self {
        self.config.legacy_versions.clear();
        self
    }

    /// How long a legacy session's handler waits for the client to answer
    /// an elicitation, sampling or roots request (default 120 s).
    pub fn client_request_timeout(mut self, timeout: Duration) -> Self {
        self.config.client_request_timeout = timeout;
        self
    }

    /// Caching hints on `server/discover`.
    pub fn discover_cache(mut self, ttl_ms: u64, scope: toolwire_protocol::CacheScope) -> Self {
        self.config.discover_cache = CacheHint { ttl_ms, scope };
        self
    }

    /// Adds a key for sealing `requestState`. The first key added seals; all
    /// open, so rotating means putting the new key first and keeping the old.
    pub fn state_key(mut self, key: StateKey) -> Self {
        self.config.state_keys.push(key);
        self
    }

    /// Adds the keys in environment variable `var` (comma-separated, each 32
    /// bytes as base64 or hex). An unset variable adds nothing; a bad value is an error.
    pub fn state_keys_from_env(mut self, var: &str) -> Result<Self, String> {
        if let Ok(text) = std::env::var(var) {
            for part in text.split(',').filter(|p| !p.trim().is_empty()) {
                let key = StateKey::parse(part).map_err(|e| format!("{var}: {e}"))?;
                self.config.state_keys.push(key);
            }
        }
        Ok(self)
    }

    /// How long a `requestState` stays valid (default 10 minutes).
    pub fn state_ttl(mut self, ttl: Duration) -> Self {
        self.config.state_ttl = ttl;
        self
    }

    /// Caching hints on `resources/read` (resources may set their own).
    pub fn read_cache(mut self, ttl_ms: u64, scope: toolwire_protocol::CacheScope) -> Self {
        self.config.read_cache = CacheHint { ttl_ms, scope };
        self
    }

    /// Turns list-changed notifications (and the `listChanged` declarations) on or off.
    pub fn list_changed(mut self, enabled: bool) -> Self {
        self.config.list_changed = enabled;
        self
    }

    /// Open `subscriptions/listen` requests allowed per principal (default 64).
    pub fn max_subscriptions_per_principal(mut self, limit: usize) -> Self {
        self.config.max_subscriptions_per_principal = limit;
        self
    }

    /// Lets a request that carries `inputResponses` but no `requestState`
    /// use those answers, as a client may do when it answers before being
    /// asked (off by default).
    ///
    /// By default such answers are ignored: without `requestState` nothing
    /// proves the server asked, so a handler only ever sees answers to its
    /// own questions of the previous round. When on, a handler sees every
    /// answer sent, keyed as the client chose (unknown keys stay unread);
    /// `elicit_form`, `sample` and `list_roots` still validate what they read.
    /// Answers that come with a `requestState` are always filtered to the
    /// keys it asked.
    pub fn answers_without_state(mut self, enabled: bool) -> Self {
        self.config.answers_without_state = enabled;
        self
    }

    /// Limits tool calls per principal across all tools (default 100 per
    /// second, bursts of 200). A call over the limit gets a tool execution
    /// error saying when to retry. Tools may add their own limit
    /// ([`ToolBuilder::rate_limit`]).
    pub fn tool_call_limit(mut self, limit: RateLimit) -> Self {
        self.config.tool_call_limit = Some(limit);
        self
    }

    /// Removes the server-wide limit on tool calls (per-tool limits still
    /// apply). Loosens a default: only for servers whose callers are
    /// trusted or limited elsewhere (e.g. a load benchmark).
    pub fn no_tool_call_limit(mut self) -> Self {
        self.config.tool_call_limit = None;
        self
    }

    /// Keeps rate-limit buckets in `store` (shared by several instances)
    /// instead of this process's memory.
    pub fn rate_limit_store(mut self, store: Arc<dyn RateLimitStore>) -> Self {
        self.rate_limit_store = Some(store);
        self
    }

    /// Publishes list changes and resource updates through `feed` (shared
    /// by several instances) instead of this process's memory: a listener
    /// on one instance then hears of changes made on another.
    pub fn change_feed(mut self, feed: Arc<dyn ChangeFeed>) -> Self {
        self.change_feed = Some(feed);
        self
    }

    /// Caps on tool arguments: size, depth and string length (defaults
    /// 1 MiB, 32, 256 KiB). Tools may set their own.
    pub fn input_limits(mut self, limits: InputLimits) -> Self {
        self.config.input_limits = limits;
        self
    }

    /// What is done to tool results before they leave (default: every rule
    /// of [`SanitizePolicy`] on).
    pub fn sanitize(mut self, policy: SanitizePolicy) -> Self {
        self.config.sanitize = policy;
        self
    }

    /// Turns output sanitising off: tool results leave exactly as their
    /// handlers made them. Loosens a default.
    pub fn no_sanitizing(mut self) -> Self {
        self.config.sanitize = SanitizePolicy::off();
        self
    }

    /// Adds a prompt.
    pub fn prompt(mut self, prompt: PromptBuilder) -> Self {
        self.prompts.push(prompt);
        self
    }

    /// Adds a static resource.
    pub fn resource(mut self, resource: ResourceBuilder) -> Self {
        self.resources.push(resource);
        self
    }

    /// Adds a resource template.
    pub fn resource_template(mut self, template: ResourceTemplateBuilder) -> Self {
        self.templates.push(template);
        self
    }

    /// Adds a tool (checked when [`ServerBuilder::build`] runs).
    pub fn tool(mut self, tool: ToolBuilder) -> Self {
        self.tools.push(tool);
        self
    }

    /// Adds several tools, in order (e.g. the `tools()` that `#[tools]`
    /// writes for an `impl` block).
    pub fn tools(mut self, tools: impl IntoIterator<Item = ToolBuilder>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// Gives every tool's handler a [`crate::State`] of type `S` (one per
    /// type; a tool's own [`ToolBuilder::state`] wins). A handler that takes
    /// a state no one gave fails [`ServerBuilder::build`].
    pub fn state<S: Clone + Send + Sync + 'static>(mut self, state: S) -> Self {
        self.states.insert(state);
        self
    }

    /// How long tasks are kept from creation (`ttlMs`); `None`: for ever.
    /// A task read after it is gets -32602 "Task has expired".
    ///
    /// ```
    /// let builder = toolwire_server::Server::builder("demo", "1")
    ///     .task_ttl(Some(std::time::Duration::from_secs(600)));
    /// # drop(builder);
    /// ```
    pub fn task_ttl(mut self, ttl: Option<Duration>) -> Self {
        self.config.tasks.ttl = ttl;
        self
    }

    /// The polling interval suggested to clients (`pollIntervalMs`).
    ///
    /// ```
    /// let builder = toolwire_server::Server::builder("demo", "1")
    ///     .task_poll_interval(std::time::Duration::from_millis(250));
    /// # drop(builder);
    /// ```
    pub fn task_poll_interval(mut self, interval: Duration) -> Self {
        self.config.tasks.poll_interval = interval;
        self
    }

    /// Unfinished tasks allowed per principal (at least 1).
    ///
    /// ```
    /// let builder = toolwire_server::Server::builder("demo", "1").max_tasks_per_principal(4);
    /// # drop(builder);
    /// ```
    pub fn max_tasks_per_principal(mut self, limit: usize) -> Self {
        self.config.tasks.max_per_principal = limit.max(1);
        self
    }

    /// How long a task worker's lease lasts ([`TaskSettings::lease`](crate::TaskSettings::lease)).
    ///
    /// ```
    /// let builder = toolwire_server::Server::builder("demo", "1")
    ///     .task_lease(std::time::Duration::from_secs(60));
    /// # drop(builder);
    /// ```
    pub fn task_lease(mut self, lease: Duration) -> Self {
        self.config.tasks.lease = lease;
        self
    }

    /// Where tasks are kept, instead of this process's memory: a store
    /// shared by several instances lets any of them answer for any task.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let builder = toolwire_server::Server::builder("demo", "1")
    ///     .task_store(Arc::new(toolwire_server::InMemoryTaskStore::new()));
    /// # drop(builder);
    /// ```
    pub fn task_store(mut self, store: Arc<dyn TaskStore>) -> Self {
        self.task_store = Some(store);
        self
    }

    /// Checks and compiles every tool, or names the first that breaks a rule.
    pub fn build(self) -> Result<Server, RegistrationError> {
        let changes = self
            .change_feed
            .unwrap_or_else(|| Arc::new(InMemoryChangeFeed::new()));
        let feed = || Arc::clone(&changes);
        let states = &self.states;
        let registry = Registry::with_entries(
            feed(),
            Some(Change::ToolsListChanged),
            self.tools
                .into_iter()
                .map(|tool| RegisteredTool::compile(tool, states))
                .collect::<Result<_, _>>()?,
        )?;
        let prompts = Registry::with_entries(
            feed(),
            Some(Change::PromptsListChanged),
            self.prompts
                .into_iter()
                .map(compile_prompt)
                .collect::<Result<_, _>>()?,
        )?;
        let resources = Registry::with_entries(
            feed(),
            Some(Change::ResourcesListChanged),
            self.resources
                .into_iter()
                .map(compile_resource)
                .collect::<Result<_, _>>()?,
        )?;
        let templates = Registry::with_entries(
            feed(),
            Some(Change::ResourcesListChanged),
            self.templates
                .into_iter()
                .map(compile_template)
                .collect::<Result<_, _>>()?,
        )?;
        let mut keys = self.config.state_keys.clone();
        if keys.is_empty() {
            tracing::warn!(
                "no requestState key configured: using a random key; several instances behind one \
                 endpoint need a shared key (ServerBuilder::state_key or state_keys_from_env)"
            );
            keys.push(StateKey::random());
        }
        let state_codec = StateCodec {
            sealer: Sealer::new(keys),
            ttl: self.config.state_ttl,
            answers_without_state: self.config.answers_without_state,
        };
        let server_info = serde_json::to_value(&self.config.info).unwrap_or_default();
        // A JSON value always writes out.
        let server_info_text = std::sync::Arc::from(
            serde_json::value::to_raw_value(&server_info).expect("a JSON value serializes"),
        );
        let text_filter = self.config.sanitize.text_filter();
        Ok(Server {
            inner: Arc::new(ServerInner {
                server_info,
                server_info_text,
                text_filter,
                config: self.config,
                tools: registry,
                states: self.states,
                prompts,
                resources,
                templates,
                changes,
                subscriptions: Arc::default(),
                shutdown: CancellationToken::new(),
                state_codec,
                rate_limits: self
                    .rate_limit_store
                    .unwrap_or_else(|| Arc::new(InMemoryRateLimits::new())),
                task_store: self
                    .task_store
                    .unwrap_or_else(|| Arc::new(InMemoryTaskStore::new())),
            }),
        })
    }
}
