//! The one dispatcher every transport calls: checks `_meta`, routes by
//! method, runs the handler, and finishes the result.

mod completion;
mod listen;
mod listing;
mod meta;
pub(crate) mod param_headers;
mod prompts;
mod reply;
mod resources;
mod round;
mod task_worker;
mod tasks;
mod tools;
pub(crate) mod view;

use std::future::Future;

use futures::future::Either;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use toolwire_protocol::{
    DiscoverResult, ErrorObject, ErrorResponse, JsonObject, ListChangedCapability, Message, Params,
    Request, RequestId, ResourcesCapability, ResultResponse, ResultType, ServerCapabilities,
    TASKS_EXTENSION, code, keys,
};

pub(crate) use self::listen::{Heard, Listening};
pub(crate) use self::meta::is_meta_error;
pub(crate) use self::reply::{Answer, Reply};
use self::tools::parse_call;
use crate::context::{CheckedMeta, RequestContext, RequestEnv};
use crate::features::listing::Listing;
use crate::server::Server;
use crate::telemetry;

/// What routing a request produced: an answer, or an admitted
/// subscription whose stream is still to run.
pub(crate) enum Routed {
    Answer(Answer),
    Listening(Box<Listening>),
}

/// Methods of earlier revisions (or never standard) that this revision removed.
const REMOVED_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

impl Server {
    /// Handles any incoming message. Requests get a response; notifications
    /// and stray responses get `None` (the transport acts on cancellation).
    pub async fn handle_message(&self, message: Message, env: RequestEnv) -> Option<Message> {
        match message {
            Message::Request(request) => Some(self.handle_request(request, env).await),
            Message::Notification(_) | Message::Result(_) | Message::Error(_) => None,
        }
    }

    /// Handles one request and returns its response (a result or an error).
    pub async fn handle_request(&self, request: Request, env: RequestEnv) -> Message {
        self.reply(request, env).await.into_message()
    }

    /// Handles one request for a transport that writes bytes: a list page
    /// stays apart from its entries, which are written from the JSON made
    /// when they were registered. A `subscriptions/listen` runs to its end
    /// here, its notifications sent to the request's outbox.
    pub(crate) async fn reply(&self, request: Request, env: RequestEnv) -> Reply {
        let (outbox, cancel) = (env.outbox.clone(), env.cancel.clone());
        match self.reply_streaming(request, env).await {
            Reply::Listening(listening) => Reply::Message(listening.drive(outbox, cancel).await),
            reply => reply,
        }
    }

    /// [`Server::reply`], except that an admitted `subscriptions/listen` is
    /// handed back ([`Reply::Listening`]) for the transport to stream. Not
    /// an `async fn`: the untraced future is returned as it is, not wrapped
    /// in one more (every layer is copied with the futures around it).
    pub(crate) fn reply_streaming(
        &self,
        request: Request,
        env: RequestEnv,
    ) -> impl Future<Output = Reply> {
        if toolwire_telemetry::enabled() {
            // Boxed: the untraced path keeps its future's size.
            let started = telemetry::start(&request, &env, None);
            let serve = self.reply_untraced(request, env);
            return Either::Left(Box::pin(telemetry::traced(started, serve, Reply::outcome)));
        }
        Either::Right(self.reply_untraced(request, env))
    }

    async fn reply_untraced(&self, mut request: Request, env: RequestEnv) -> Reply {
        let id = request.id.clone();
        let routed = match self.check_request(&mut request) {
            Ok(meta) => {
                let cx = self.context(request.id, &request.method, meta, env);
                self.route(request.params, cx).await
            }
            Err(error) => Err(error),
        };
        self.replied(id, routed)
    }

    /// What a request is checked for before it is routed: a method this
    /// revision removed or this server does not serve, then its `_meta`.
    fn check_request(&self, request: &mut Request) -> Result<CheckedMeta, ErrorObject> {
        let method = request.method.as_str();
        if REMOVED_METHODS.contains(&method) {
            return Err(self.removed_method(method));
        }
        if !self.serves(method) {
            return Err(ErrorObject::method_not_found(method));
        }
        self.check_meta(request.params.as_mut())
    }

    /// Serves a request whose metadata the transport established itself (a
    /// legacy session: the capabilities it declared at `initialize`), skipping
    /// the per-request `_meta` check. The transport decides which methods
    /// reach this.
    pub(crate) async fn serve_checked(
        &self,
        request: Request,
        meta: CheckedMeta,
        env: RequestEnv,
    ) -> Reply {
        let id = request.id.clone();
        if !self.serves(&request.method) {
            let error = ErrorObject::method_not_found(&request.method);
            return self.error_reply(id, error);
        }
        let (outbox, cancel) = (env.outbox.clone(), env.cancel.clone());
        let cx = self.context(request.id, &request.method, meta, env);
        let routed = self.route(request.params, cx).await;
        match self.replied(id, routed) {
            Reply::Listening(listening) => Reply::Message(listening.drive(outbox, cancel).await),
            reply => reply,
        }
    }

    /// The reply to request `id` for what routing it produced.
    fn replied(&self, id: RequestId, routed: Result<Routed, ErrorObject>) -> Reply {
        match routed {
            Ok(Routed::Answer(Answer::Object(result))) => {
                Reply::Message(Message::Result(ResultResponse::new(id, result)))
            }
            Ok(Routed::Answer(answer)) => Reply::Answer(id, answer),
            Ok(Routed::Listening(listening)) => Reply::Listening(listening),
            Err(error) => self.error_reply(id, error),
        }
    }

    /// An error response; its message and data pass the invisible-text rule
    /// (an error message reaches the model too).
    fn error_reply(&self, id: RequestId, mut error: ErrorObject) -> Reply {
        self.inner.config.sanitize.clean_error(&mut error);
        Reply::Message(Message::Error(ErrorResponse::new(Some(id), error)))
    }

    /// A list page, to be written with the invisible-text rule.
    fn listing(&self, listing: Listing) -> Answer {
        Answer::Listing(listing, self.inner.config.sanitize.invisible_mode())
    }

    /// The context a checked request runs with.
    fn context(
        &self,
        id: RequestId,
        method: &str,
        meta: CheckedMeta,
        env: RequestEnv,
    ) -> RequestContext {
        RequestContext::new(id, method, meta, env).with_text_filter(self.inner.text_filter.clone())
    }

    /// Runs the handler of a checked request (its context made before, so
    /// that this future does not carry the checked `_meta`).
    async fn route(
        &self,
        params: Option<Params>,
        cx: RequestContext,
    ) -> Result<Routed, ErrorObject> {
        let params = params.unwrap_or_default();
        let params = &params;
        let answer = match cx.method() {
            "subscriptions/listen" => {
                let listening = self.listen(parse(params)?, &cx).await?;
                return Ok(Routed::Listening(Box::new(listening)));
            }
            "tools/call" => Box::pin(self.call_tool(parse_call(params)?, cx)).await,
            "tools/list" => self
                .list(&self.inner.tools, parse(params)?, &cx)
                .map(|l| self.listing(l)),
            "resources/list" => self
                .list(&self.inner.resources, parse(params)?, &cx)
                .map(|l| self.listing(l)),
            "resources/templates/list" => self
                .list(&self.inner.templates, parse(params)?, &cx)
                .map(|l| self.listing(l)),
            "prompts/list" => self
                .list(&self.inner.prompts, parse(params)?, &cx)
                .map(|l| self.listing(l)),
            _ => self.respond(params, cx).await.map(Answer::Object),
        };
        answer.map(Routed::Answer)
    }

    /// Runs the methods whose result is one JSON object.
    async fn respond(
        &self,
        params: &Params,
        cx: RequestContext,
    ) -> Result<JsonObject, ErrorObject> {
        match cx.method() {
            "server/discover" => Ok(self.finish(self.discover())),
            // The larger futures are boxed so that a long-lived request
            // (subscriptions/listen) does not carry their size.
            "resources/read" => Box::pin(self.read_resource(parse(params)?, cx)).await,
            "prompts/get" => Box::pin(self.get_prompt(parse(params)?, cx)).await,
            "completion/complete" => Box::pin(self.complete(parse(params)?, &cx))
                .await
                .map(|r| self.finish(r)),
            "tasks/get" | "tasks/update" | "tasks/cancel" => {
                Box::pin(self.task_request(params, &cx)).await
            }
            other => Err(ErrorObject::method_not_found(other)),
        }
    }

    /// True when this server answers `method` (given what is registered).
    fn serves(&self, method: &str) -> bool {
        match method {
            // `capabilities()` always declares tools: answering these needs
            // no look at the registries (the hot path).
            "server/discover" | "subscriptions/listen" | "tools/list" | "tools/call" => {
                return true;
            }
            // The Tasks extension: a server without task tools answers that
            // the task is unknown.
            "tasks/get" | "tasks/update" | "tasks/cancel" => return true,
            _ => {}
        }
        let caps = self.capabilities();
        match method {
            "tools/list" | "tools/call" => caps.tools.is_some(),
            "resources/list" | "resources/templates/list" | "resources/read" => {
                caps.resources.is_some()
            }
            "prompts/list" | "prompts/get" => caps.prompts.is_some(),
            "completion/complete" => caps.completions.is_some(),
            _ => false,
        }
    }

    /// The refusal of an `initialize` this server does not serve (it is
    /// modern only): names the versions it does serve.
    pub(crate) fn refuse_initialize(&self) -> ErrorObject {
        self.removed_method("initialize")
    }

    fn removed_method(&self, method: &str) -> ErrorObject {
        let versions = self.inner.config.supported_versions.join(", ");
        let hint = if method == "initialize" {
            format!(
                " (this server speaks the stateless protocol, versions {versions}: no initialize handshake; \
                 send server/discover and put _meta on every request)"
            )
        } else {
            format!(" (removed in protocol {versions})")
        };
        ErrorObject::new(
            code::METHOD_NOT_FOUND,
            format!("Method not found: {method}{hint}"),
        )
    }

    /// Adds `resultType` (when absent) and `_meta` serverInfo to a result.
    pub(crate) fn finish(&self, result: impl Serialize) -> JsonObject {
        let mut object = match serde_json::to_value(result) {
            Ok(Value::Object(object)) => object,
            _ => JsonObject::new(),
        };
        object
            .entry("resultType")
            .or_insert_with(|| serde_json::json!(ResultType::Complete));
        let meta = object
            .entry("_meta")
            .or_insert_with(|| Value::Object(JsonObject::new()));
        if let Value::Object(meta) = meta {
            let info = self.inner.server_info.clone();
            meta.insert(keys::SERVER_INFO.to_owned(), info);
        }
        object
    }

    fn discover(&self) -> DiscoverResult {
        let config = &self.inner.config;
        DiscoverResult {
            supported_versions: config.supported_versions.clone(),
            capabilities: self.capabilities(),
            instructions: config.instructions.as_deref().map(|text| {
                let (text, _) = config.sanitize.clean_text_invisible(text);
                text.into_owned()
            }),
            ttl_ms: config.discover_cache.ttl_ms,
            cache_scope: config.discover_cache.scope,
            ..Default::default()
        }
    }

    /// The capabilities this server really serves: tools always; resources,
    /// prompts and completions when something is registered for them;
    /// `listChanged` / `subscribe` only when listeners are told.
    pub fn capabilities(&self) -> ServerCapabilities {
        let inner = &self.inner;
        let list_changed = inner.config.list_changed.then_some(true);
        let has_resources = !inner.resources.is_empty() || !inner.templates.is_empty();
        let has_completions = inner
            .prompts
            .enabled()
            .iter()
            .any(|p| !p.completer.is_empty())
            || inner
                .templates
                .enabled()
                .iter()
                .any(|t| !t.completer.is_empty());
        ServerCapabilities {
            tools: Some(ListChangedCapability { list_changed }),
            prompts: (!inner.prompts.is_empty()).then_some(ListChangedCapability { list_changed }),
            resources: has_resources.then_some(ResourcesCapability {
                subscribe: Some(true),
                list_changed,
            }),
            completions: has_completions.then(JsonObject::new),
            extensions: self.offers_tasks().then(|| {
                [(TASKS_EXTENSION.to_owned(), JsonObject::new())]
                    .into_iter()
                    .collect()
            }),
            ..Default::default()
        }
    }
}

/// A method's params read as `T` (from their text when they have one).
/// `_meta` is left out: [`Server::check_meta`] read it already.
pub(crate) fn parse<T: DeserializeOwned>(params: &Params) -> Result<T, ErrorObject> {
    params
        .parse_without_meta()
        .map_err(|e| ErrorObject::invalid_params(format!("Invalid params: {e}")))
}
