//! The `Server`: configuration, registries, and the builder that makes one.

use std::sync::Arc;
use std::time::Duration;

use toolwire_protocol::{
    CacheScope, Icon, Implementation, LATEST_PROTOCOL_VERSION, LEGACY_PROTOCOL_VERSIONS,
};

use tokio_util::sync::CancellationToken;

use crate::context::TextFilter;
use crate::context::mrtr::StateCodec;
use crate::context::seal::{Sealer, StateKey};
use crate::features::cache::CacheHint;
use crate::features::extract::States;
use crate::features::listen::SubscriptionCounter;
use crate::features::prompts::{PromptBuilder, RegisteredPrompt};
use crate::features::registry::{RegisteredTool, RegistrationError, Registry};
use crate::features::resources::{
    RegisteredResource, RegisteredTemplate, ResourceBuilder, ResourceTemplateBuilder,
};
use crate::features::tool::ToolBuilder;
use crate::security::limits::InputLimits;
use crate::security::sanitize::SanitizePolicy;
use crate::store::change_feed::{Change, ChangeFeed, InMemoryChangeFeed};
use crate::store::rate_limit::{
    DEFAULT_TOOL_CALL_LIMIT, InMemoryRateLimits, RateLimit, RateLimitStore,
};

/// Server-wide settings; every field has a safe default.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Name and version reported in `serverInfo`.
    pub info: Implementation,
    /// How to use the server, for the model.
    pub instructions: Option<String>,
    /// Protocol versions served statelessly (per-request `_meta`), newest first.
    pub supported_versions: Vec<String>,
    /// Initialization-based versions negotiated with a legacy client's
    /// `initialize`, newest first (default 2025-11-25, 2025-06-18,
    /// 2025-03-26). Empty: the server is modern only, and `initialize` is
    /// refused with an error naming [`ServerConfig::supported_versions`].
    pub legacy_versions: Vec<String>,
    /// How long a legacy session's handler waits for the client to answer a
    /// server-to-client request (elicitation, sampling, roots) before the
    /// request is cancelled and the handler gets an error. Default 120 s.
    pub client_request_timeout: Duration,
    /// Items per page of `tools/list` (and the other lists).
    pub page_size: usize,
    /// Caching hints of `tools/list` (and the other lists).
    pub list_cache: CacheHint,
    /// Caching hints of `server/discover`.
    pub discover_cache: CacheHint,
    /// Keys that seal `requestState`: the first seals, all open. Empty means a
    /// random key made at start-up (fine for one instance only).
    pub state_keys: Vec<StateKey>,
    /// How long a `requestState` stays valid.
    pub state_ttl: Duration,
    /// Caching hints of `resources/read` unless a resource sets its own.
    pub read_cache: CacheHint,
    /// Whether list-changed notifications are offered to listeners (and
    /// `listChanged` declared). On by default.
    pub list_changed: bool,
    /// Open `subscriptions/listen` requests allowed per principal.
    pub max_subscriptions_per_principal: usize,
    /// Whether a retry that carries `inputResponses` but no `requestState`
    /// may use those answers. Off by default.
    pub answers_without_state: bool,
    /// Tool calls allowed per principal, across all tools; `None` for no
    /// limit. Default: [`DEFAULT_TOOL_CALL_LIMIT`] (100 per second, bursts of 200).
    pub tool_call_limit: Option<RateLimit>,
    /// Caps on tool arguments checked before schema validation (tools may
    /// set their own).
    pub input_limits: InputLimits,
    /// What is done to tool results before they leave (all rules on by default).
    pub sanitize: SanitizePolicy,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            info: Implementation::new("toolwire-server", env!("CARGO_PKG_VERSION")),
            instructions: None,
            supported_versions: vec![LATEST_PROTOCOL_VERSION.to_owned()],
            legacy_versions: LEGACY_PROTOCOL_VERSIONS
                .iter()
                .map(|v| (*v).to_owned())
                .collect(),
            client_request_timeout: Duration::from_secs(120),
            page_size: 100,
            list_cache: CacheHint {
                ttl_ms: 60_000,
                scope: CacheScope::Public,
            },
            discover_cache: CacheHint {
                ttl_ms: 3_600_000,
                scope: CacheScope::Public,
            },
            state_keys: Vec::new(),
            state_ttl: Duration::from_secs(600),
            read_cache: CacheHint {
                ttl_ms: 0,
                scope: CacheScope::Private,
            },
            list_changed: true,
            max_subscriptions_per_principal: 64,
            answers_without_state: false,
            tool_call_limit: Some(DEFAULT_TOOL_CALL_LIMIT),
            input_limits: InputLimits::default(),
            sanitize: SanitizePolicy::default(),
        }
    }
}

/// An MCP server: cheap to clone, shared by every transport serving it.
///
/// ```
/// use toolwire_server::{Server, ToolBuilder, RequestContext, NoArgs};
/// let server = Server::builder("demo", "1.0.0")
///     .tool(ToolBuilder::new("hello").handler(|_: NoArgs, _cx: RequestContext| async { "hello" }))
///     .build()
///     .unwrap();
/// assert_eq!(server.tool_names(), ["hello"]);
/// ```
#[derive(Clone)]
pub struct Server {
    pub(crate) inner: Arc<ServerInner>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("info", &self.inner.config.info)
            .field("tools", &self.tool_names())
            .finish()
    }
}

pub(crate) struct ServerInner {
    pub config: ServerConfig,
    pub tools: Registry<RegisteredTool>,
    /// The states given to the builder, for tools added later.
    pub states: States,
    pub prompts: Registry<RegisteredPrompt>,
    pub resources: Registry<RegisteredResource>,
    pub templates: Registry<RegisteredTemplate>,
    pub changes: Arc<dyn ChangeFeed>,
    pub subscriptions: Arc<SubscriptionCounter>,
    pub shutdown: CancellationToken,
    pub state_codec: StateCodec,
    pub rate_limits: Arc<dyn RateLimitStore>,
    /// `config.info` as JSON, made once: every result carries it.
    pub server_info: serde_json::Value,
    /// The sanitiser's text rule for notifications (`None` when it is off).
    pub text_filter: Option<TextFilter>,
}

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
        }
    }

    /// The server's settings.
    pub fn config(&self) -> &ServerConfig {
        &self.inner.config
    }

    /// Names of every registered tool (enabled or not), in order.
    pub fn tool_names(&self) -> Vec<String> {
        self.inner
            .tools
            .snapshot()
            .iter()
            .map(|s| s.item.definition.name.clone())
            .collect()
    }

    /// Open `subscriptions/listen` requests right now.
    pub fn open_subscriptions(&self) -> usize {
        self.inner.subscriptions.total()
    }

    /// Ends every open `subscriptions/listen` request with its completion
    /// result, so transports can close their streams gracefully.
    pub fn shutdown(&self) {
        self.inner.shutdown.cancel();
    }

    /// Tells listeners that subscribed to `uri` that it changed.
    pub fn notify_resource_updated(&self, uri: &str) {
        self.inner
            .changes
            .publish(Change::ResourceUpdated(uri.to_owned()));
    }

    /// Tells tools listeners the list changed (registry edits do this themselves).
    pub fn notify_tools_list_changed(&self) {
        self.inner.tools.touch();
    }

    /// Tells prompts listeners the list changed (registry edits do this themselves).
    pub fn notify_prompts_list_changed(&self) {
        self.inner.prompts.touch();
    }

    /// Tells resources listeners the list changed (registry edits do this themselves).
    pub fn notify_resources_list_changed(&self) {
        self.inner.resources.touch();
    }

    /// Adds a prompt while the server runs; listeners are told.
    pub fn add_prompt(&self, prompt: PromptBuilder) -> Result<(), RegistrationError> {
        self.inner.prompts.add(compile_prompt(prompt)?)
    }

    /// Removes a prompt.
    pub fn remove_prompt(&self, name: &str) -> Result<(), RegistrationError> {
        self.inner.prompts.remove(name)
    }

    /// Adds a resource while the server runs; listeners are told.
    pub fn add_resource(&self, resource: ResourceBuilder) -> Result<(), RegistrationError> {
        self.inner.resources.add(compile_resource(resource)?)
    }

    /// Removes a resource by URI.
    pub fn remove_resource(&self, uri: &str) -> Result<(), RegistrationError> {
        self.inner.resources.remove(uri)
    }

    /// Sets the caching hints of `tools/list` results while the server runs,
    /// in place of [`crate::ServerBuilder::list_cache`]'s (`None`: those
    /// again). A list that depends on scopes or on the caller is still
    /// marked `private`.
    pub fn set_tools_list_cache(&self, hint: Option<CacheHint>) {
        self.inner.tools.set_list_cache(hint);
    }

    /// [`Server::set_tools_list_cache`](Server::set_tools_list_cache)
    /// for `prompts/list`.
    pub fn set_prompts_list_cache(&self, hint: Option<CacheHint>) {
        self.inner.prompts.set_list_cache(hint);
    }

    /// [`Server::set_tools_list_cache`](Server::set_tools_list_cache)
    /// for `resources/list`.
    pub fn set_resources_list_cache(&self, hint: Option<CacheHint>) {
        self.inner.resources.set_list_cache(hint);
    }

    /// [`Server::set_tools_list_cache`](Server::set_tools_list_cache)
    /// for `resources/templates/list`.
    pub fn set_resource_templates_list_cache(&self, hint: Option<CacheHint>) {
        self.inner.templates.set_list_cache(hint);
    }

    /// Adds a resource template while the server runs; listeners are told.
    pub fn add_resource_template(
        &self,
        template: ResourceTemplateBuilder,
    ) -> Result<(), RegistrationError> {
        self.inner.templates.add(compile_template(template)?)
    }

    /// Removes a resource template by its URI template.
    pub fn remove_resource_template(&self, uri_template: &str) -> Result<(), RegistrationError> {
        self.inner.templates.remove(uri_template)
    }

    /// Adds a tool while the server runs; listeners are told.
    pub fn add_tool(&self, tool: ToolBuilder) -> Result<(), RegistrationError> {
        self.inner
            .tools
            .add(RegisteredTool::compile(tool, &self.inner.states)?)
    }

    /// Replaces the tool of the same name, keeping its place in the list.
    pub fn replace_tool(&self, tool: ToolBuilder) -> Result<(), RegistrationError> {
        self.inner
            .tools
            .replace(RegisteredTool::compile(tool, &self.inner.states)?)
    }

    /// Removes a tool.
    pub fn remove_tool(&self, name: &str) -> Result<(), RegistrationError> {
        self.inner.tools.remove(name)
    }

    /// Enables a disabled tool.
    pub fn enable_tool(&self, name: &str) -> Result<(), RegistrationError> {
        self.inner.tools.set_enabled(name, true)
    }

    /// Disables a tool: it is neither listed nor callable until enabled.
    pub fn disable_tool(&self, name: &str) -> Result<(), RegistrationError> {
        self.inner.tools.set_enabled(name, false)
    }
}

fn compile_prompt(prompt: PromptBuilder) -> Result<RegisteredPrompt, RegistrationError> {
    let handler = prompt.handler.ok_or_else(|| RegistrationError::NoHandler {
        kind: "prompt",
        tool: prompt.definition.name.clone(),
    })?;
    Ok(RegisteredPrompt {
        definition: prompt.definition,
        handler,
        completer: prompt.completer,
        required_scopes: prompt.required_scopes,
    })
}

fn compile_resource(resource: ResourceBuilder) -> Result<RegisteredResource, RegistrationError> {
    let handler = resource
        .handler
        .ok_or_else(|| RegistrationError::NoHandler {
            kind: "resource",
            tool: resource.definition.uri.clone(),
        })?;
    Ok(RegisteredResource {
        definition: resource.definition,
        handler,
        cache: resource.cache,
        required_scopes: resource.required_scopes,
    })
}

fn compile_template(
    template: ResourceTemplateBuilder,
) -> Result<RegisteredTemplate, RegistrationError> {
    let name = template.definition.uri_template.clone();
    let handler = template
        .handler
        .clone()
        .ok_or_else(|| RegistrationError::NoHandler {
            kind: "resource template",
            tool: name.clone(),
        })?;
    RegisteredTemplate::new(template, handler).map_err(|reason| RegistrationError::Template {
        template: name,
        reason,
    })
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
        let text_filter = self.config.sanitize.text_filter();
        Ok(Server {
            inner: Arc::new(ServerInner {
                server_info,
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
            }),
        })
    }
}
