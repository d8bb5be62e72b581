//! Configuring a [`Client`]: its transport, handlers, hooks, cache and
//! timeouts.

use std::sync::{Arc, RwLock};

use toolwire_protocol::{Implementation, LATEST_PROTOCOL_VERSION};

use crate::cache::Cache;
use crate::client::{Client, ClientInner};
use crate::handlers::{ElicitationHandler, Handlers, RootsProvider, SamplingHandler, StaticRoots};
use crate::mrtr::{InboundAnswers, RequestInputs};
use crate::options::TimeoutPolicy;
use crate::request_text::DeclaredTexts;
use crate::safety::{AllowAll, ApprovalHook, AuditHook};
use crate::tool_book::ToolBook;
use crate::transport::Transport;
use crate::watch::Watched;

/// Configures a [`Client`].
///
/// ```
/// use std::time::Duration;
/// use toolwire_client::{Client, transport::HttpTransport};
/// use toolwire_protocol::{ElicitRequestParams, ElicitResult, Root};
/// let client = Client::builder(HttpTransport::new("http://127.0.0.1:8080/mcp").unwrap())
///     .name("files")
///     .client_info("my-app", "1.2.0")
///     .elicitation(|_p: ElicitRequestParams, _cx| async { Ok(ElicitResult::decline()) })
///     .roots(vec![Root::new("file:///home/me/project")])
///     .timeout(Duration::from_secs(30))
///     .max_rounds(4)
///     .build();
/// assert_eq!(
///     serde_json::to_value(client.capabilities()).unwrap(),
///     serde_json::json!({"elicitation": {"form": {}}, "roots": {}})
/// );
/// ```
pub struct ClientBuilder {
    name: Option<String>,
    transport: Arc<dyn Transport>,
    info: Implementation,
    versions: Vec<String>,
    handlers: Handlers,
    cache: Option<Cache>,
    approval: Arc<dyn ApprovalHook>,
    audit: Option<Arc<dyn AuditHook>>,
    audit_events: bool,
    trusted: bool,
    timeouts: TimeoutPolicy,
    max_rounds: usize,
    tasks: bool,
}

impl std::fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("name", &self.name)
            .field("transport", &self.transport)
            .field("handlers", &self.handlers)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Starts configuring a client that talks over `transport`.
    pub fn builder(transport: impl Transport + 'static) -> ClientBuilder {
        Self::builder_shared(Arc::new(transport))
    }

    /// Like [`Client::builder`], for a transport shared with other clients.
    pub fn builder_shared(transport: Arc<dyn Transport>) -> ClientBuilder {
        ClientBuilder {
            name: None,
            transport,
            info: Implementation::new("toolwire-client", env!("CARGO_PKG_VERSION")),
            versions: vec![LATEST_PROTOCOL_VERSION.to_owned()],
            handlers: Handlers::default(),
            cache: None,
            approval: Arc::new(AllowAll),
            audit: None,
            audit_events: true,
            trusted: false,
            timeouts: TimeoutPolicy::default(),
            max_rounds: 8,
            tasks: true,
        }
    }
}

impl ClientBuilder {
    /// The label of this server in hooks, audit records and groups
    /// (default: the transport's URL or command line).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The `clientInfo` sent on every request.
    pub fn client_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.info = Implementation::new(name, version);
        self
    }

    /// The protocol versions this client speaks, preferred first
    /// (default: only the latest).
    pub fn protocol_versions<I, S>(mut self, versions: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let versions: Vec<String> = versions.into_iter().map(Into::into).collect();
        if !versions.is_empty() {
            self.versions = versions;
        }
        self
    }

    /// Answers elicitation requests (declares the `elicitation` capability, form mode).
    pub fn elicitation(mut self, handler: impl ElicitationHandler + 'static) -> Self {
        self.handlers.elicitation = Some(Arc::new(handler));
        self
    }

    /// Also declares URL-mode elicitation (the handler must handle it).
    pub fn elicitation_url_mode(mut self, enabled: bool) -> Self {
        self.handlers.elicitation_url = enabled;
        self
    }

    /// Answers sampling requests (declares the `sampling` capability).
    pub fn sampling(mut self, handler: impl SamplingHandler + 'static) -> Self {
        self.handlers.sampling = Some(Arc::new(handler));
        self
    }

    /// Answers `roots/list` with a fixed list (declares the `roots` capability).
    pub fn roots(self, roots: Vec<toolwire_protocol::Root>) -> Self {
        self.roots_provider(StaticRoots(roots))
    }

    /// Answers `roots/list` from a provider (declares the `roots` capability).
    pub fn roots_provider(mut self, provider: impl RootsProvider + 'static) -> Self {
        self.handlers.roots = Some(Arc::new(provider));
        self
    }

    /// Uses this cache (share one cache between clients by cloning it).
    pub fn cache(mut self, cache: Cache) -> Self {
        self.cache = Some(cache);
        self
    }

    /// Decides about every `tools/call` before it is sent (default: allow all).
    pub fn approval(mut self, hook: impl ApprovalHook + 'static) -> Self {
        self.approval = Arc::new(hook);
        self
    }

    /// Receives an audit record for every `tools/call` (they are also
    /// emitted as `toolwire::audit` tracing events).
    pub fn audit(mut self, hook: impl AuditHook + 'static) -> Self {
        self.audit = Some(Arc::new(hook));
        self
    }

    /// Whether each call's audit record is also emitted as a
    /// `toolwire::audit` tracing event (default: `true`). An application
    /// that records every call itself turns it off, so a call is not
    /// logged twice.
    ///
    /// ```
    /// use toolwire_client::Client;
    /// use toolwire_client::transport::HttpTransport;
    ///
    /// let transport = HttpTransport::builder("http://127.0.0.1:8080/mcp").build().unwrap();
    /// let client = Client::builder(transport).audit_events(false).build();
    /// # drop(client);
    /// ```
    pub fn audit_events(mut self, emit: bool) -> Self {
        self.audit_events = emit;
        self
    }

    /// Believes this server's tool annotations (default: untrusted).
    pub fn trust_annotations(mut self, trusted: bool) -> Self {
        self.trusted = trusted;
        self
    }

    /// Default time to wait for an answer; progress restarts it (default 60 s).
    pub fn timeout(mut self, timeout: std::time::Duration) -> Self {
        self.timeouts.timeout = timeout;
        self
    }

    /// Default hard limit per request, whatever the progress (default 10 min).
    pub fn max_timeout(mut self, max: std::time::Duration) -> Self {
        self.timeouts.max_timeout = max;
        self
    }

    /// Whether progress notifications restart the timeout (default true).
    pub fn reset_timeout_on_progress(mut self, reset: bool) -> Self {
        self.timeouts.reset_on_progress = reset;
        self
    }

    /// How many rounds of input requests one call may take (default 8).
    pub fn max_rounds(mut self, rounds: usize) -> Self {
        self.max_rounds = rounds;
        self
    }

    /// Whether `call_tool` declares the Tasks extension
    /// (`io.modelcontextprotocol/tasks`) so that the server may answer with
    /// a task, which the call then follows to its end (default: `true`).
    /// With `false` the server must answer at once (a tool that only runs
    /// as a task fails with -32021). [`Client::start_tool_task`] declares it
    /// either way.
    pub fn tasks(mut self, enabled: bool) -> Self {
        self.tasks = enabled;
        self
    }

    /// Makes the client. Nothing is sent until the first request.
    pub fn build(self) -> Client {
        let server_key = self.transport.server_key();
        let capabilities = self.handlers.capabilities();
        let name = self.name.unwrap_or_else(|| server_key.clone());
        let cache = self.cache.unwrap_or_default();
        let request_inputs = RequestInputs::default();
        let info = self.info;
        let declared = DeclaredTexts::new(&capabilities, &info);
        self.transport.set_inbound(Arc::new(InboundAnswers {
            handlers: self.handlers.clone(),
            server: name.clone(),
            per_request: request_inputs.clone(),
        }));
        let watched = Watched::new(cache.clone(), server_key.clone());
        Client {
            inner: Arc::new(ClientInner {
                name,
                server_key,
                watched,
                transport: self.transport,
                version: RwLock::new(self.versions[0].clone()),
                versions: self.versions,
                handlers: self.handlers,
                declared,
                capabilities,
                cache,
                tools: RwLock::new(ToolBook::default()),
                approval: self.approval,
                audit: self.audit,
                audit_events: self.audit_events,
                trusted: self.trusted,
                timeouts: self.timeouts,
                max_rounds: self.max_rounds,
                request_inputs,
                tasks: self.tasks,
            }),
        }
    }
}
