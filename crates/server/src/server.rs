//! The `Server`: configuration, registries, and the builder that makes one.

use std::sync::Arc;
use std::time::Duration;

use serde_json::value::RawValue;

use toolwire_protocol::{
    CacheScope, Implementation, LATEST_PROTOCOL_VERSION, LEGACY_PROTOCOL_VERSIONS,
};

use tokio_util::sync::CancellationToken;

use crate::context::TextFilter;
use crate::context::mrtr::StateCodec;
use crate::context::seal::StateKey;
use crate::features::cache::CacheHint;
use crate::features::extract::States;
use crate::features::listen::SubscriptionCounter;
use crate::features::prompts::{PromptBuilder, RegisteredPrompt};
use crate::features::registry::{RegisteredTool, RegistrationError, Registry};
use crate::features::resources::{
    RegisteredResource, RegisteredTemplate, ResourceBuilder, ResourceTemplateBuilder,
};
use crate::features::tasks::TaskSettings;
use crate::features::tool::ToolBuilder;
use crate::security::limits::InputLimits;
use crate::security::sanitize::SanitizePolicy;
use crate::store::change_feed::{Change, ChangeFeed};
use crate::store::rate_limit::{DEFAULT_TOOL_CALL_LIMIT, RateLimit, RateLimitStore};
use crate::store::tasks::TaskStore;

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
    /// Tasks: time to live, polling interval, worker lease, cap per principal.
    pub tasks: TaskSettings,
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
            tasks: TaskSettings::default(),
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
    /// The same, as its JSON text: what a tool result's `_meta` gets when it
    /// is written.
    pub server_info_text: Arc<RawValue>,
    /// The sanitiser's text rule for notifications (`None` when it is off).
    pub text_filter: Option<TextFilter>,
    /// Where tasks are kept.
    pub task_store: Arc<dyn TaskStore>,
}

impl Server {
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

    /// True once [`Server::shutdown`] has been called (a graceful stop
    /// has begun): a readiness check reports the server draining.
    ///
    /// ```
    /// let server = toolwire_server::Server::builder("demo", "1").build().unwrap();
    /// assert!(!server.is_stopping());
    /// server.shutdown();
    /// assert!(server.is_stopping());
    /// ```
    pub fn is_stopping(&self) -> bool {
        self.inner.shutdown.is_cancelled()
    }

    /// Completes once [`Server::shutdown`] has been called: a stream of
    /// one's own served beside the endpoint (an admin page's live feed,
    /// say) ends with it, so that a graceful stop does not wait for it.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = toolwire_server::Server::builder("demo", "1").build().unwrap();
    /// let stopped = server.stopped();
    /// server.shutdown();
    /// stopped.await;
    /// # }
    /// ```
    pub fn stopped(&self) -> impl Future<Output = ()> + Send + 'static {
        self.inner.shutdown.clone().cancelled_owned()
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

pub(crate) fn compile_prompt(prompt: PromptBuilder) -> Result<RegisteredPrompt, RegistrationError> {
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

pub(crate) fn compile_resource(
    resource: ResourceBuilder,
) -> Result<RegisteredResource, RegistrationError> {
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

pub(crate) fn compile_template(
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
