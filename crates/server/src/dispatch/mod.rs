//! The one dispatcher every transport calls: checks `_meta`, routes by
//! method, runs the handler, and finishes the result.

pub(crate) mod param_headers;

use std::panic::AssertUnwindSafe;

use futures::FutureExt;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolwire_protocol::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, DiscoverResult, ErrorObject,
    ErrorResponse, Implementation, JsonObject, ListChangedCapability, LoggingLevel, Message,
    ProgressToken, Request, RequestId, ResourcesCapability, ResultResponse, ResultType,
    ServerCapabilities, code, keys,
};

use crate::context::mrtr::{InputRequired, Round, RoundKey};
use crate::context::output::{ToolError, ToolOutput};
use crate::context::{CheckedMeta, RequestContext, RequestEnv};
use crate::features::listing::{Listed, Listing};
use crate::features::tool::BoxFuture;
use crate::security::audit::{self, Denial, Outcome};
use crate::server::Server;

/// Methods of earlier revisions (or never standard) that this revision removed.
const REMOVED_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

/// What the dispatcher produced for a request that succeeded.
pub(crate) enum Answer {
    Object(JsonObject),
    /// A list page: its entries are written from the JSON made when they
    /// were registered.
    Listing(Listing),
    /// A tool's finished result (sanitised, `_meta` filled in), written
    /// without building a JSON tree of it first.
    ToolResult(CallToolResult),
}

impl Answer {
    /// The result as one JSON object.
    fn into_object(self) -> JsonObject {
        match self {
            Answer::Object(result) => result,
            Answer::Listing(listing) => listing.into_object(),
            Answer::ToolResult(result) => match serde_json::to_value(result) {
                Ok(Value::Object(result)) => result,
                _ => JsonObject::new(),
            },
        }
    }

    /// Appends the result object, encoded: the same bytes as serialising
    /// [`Answer::into_object`].
    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Answer::Object(result) => write_json(out, result),
            Answer::Listing(listing) => listing.write(out),
            Answer::ToolResult(result) => write_json(out, result),
        }
    }
}

/// A response, as a transport that writes bytes receives it.
pub(crate) enum Reply {
    Message(Message),
    /// A successful response to the request with this id, not yet a message.
    Answer(RequestId, Answer),
}

impl Reply {
    /// The response as a message.
    pub fn into_message(self) -> Message {
        match self {
            Reply::Message(message) => message,
            Reply::Answer(id, answer) => {
                Message::Result(ResultResponse::new(id, answer.into_object()))
            }
        }
    }

    /// Appends the response as JSON: byte for byte the serialised
    /// [`Reply::into_message`], without building it first.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Reply::Message(message) => encode_message(out, message),
            Reply::Answer(id, answer) => {
                out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
                write_json(out, id);
                out.extend_from_slice(br#","result":"#);
                answer.write(out);
                out.push(b'}');
            }
        }
    }
}

/// Appends `value` as JSON. What is written here (ids, results,
/// definitions) is plain data, whose serialisation cannot fail.
pub(crate) fn write_json(out: &mut Vec<u8>, value: &(impl Serialize + ?Sized)) {
    let _ = serde_json::to_writer(out, value);
}

/// Appends `message` as JSON, for every transport. Should it not serialise,
/// the peer gets an internal error for the same request instead of half a
/// message.
pub(crate) fn encode_message(out: &mut Vec<u8>, message: &Message) {
    let start = out.len();
    if serde_json::to_writer(&mut *out, message).is_err() {
        out.truncate(start);
        let id = match message {
            Message::Result(response) => Some(response.id.clone()),
            Message::Error(response) => response.id.clone(),
            Message::Request(_) | Message::Notification(_) => None,
        };
        let error = ErrorObject::internal("the response could not be serialized");
        write_json(out, &Message::Error(ErrorResponse::new(id, error)));
    }
}

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
    /// when they were registered.
    pub(crate) async fn reply(&self, request: Request, env: RequestEnv) -> Reply {
        let id = request.id.clone();
        match self.dispatch(request, env).await {
            Ok(Answer::Object(result)) => {
                Reply::Message(Message::Result(ResultResponse::new(id, result)))
            }
            Ok(answer) => Reply::Answer(id, answer),
            Err(error) => Reply::Message(Message::Error(ErrorResponse::new(Some(id), error))),
        }
    }

    async fn dispatch(&self, request: Request, env: RequestEnv) -> Result<Answer, ErrorObject> {
        let method = request.method.as_str();
        if REMOVED_METHODS.contains(&method) {
            return Err(self.removed_method(method));
        }
        if !self.serves(method) {
            return Err(ErrorObject::method_not_found(method));
        }
        let meta = self.check_meta(request.params.as_ref())?;
        let cx = RequestContext::new(request.id, method, meta, env);
        let params = request.params.unwrap_or_default();
        match cx.method() {
            // Boxed: a long-lived request (subscriptions/listen) should not
            // carry the size of this future.
            "tools/call" => Box::pin(self.call_tool(parse_call(params)?, cx)).await,
            "tools/list" => self
                .list(&self.inner.tools, parse(params)?, &cx)
                .map(Answer::Listing),
            "resources/list" => self
                .list(&self.inner.resources, parse(params)?, &cx)
                .map(Answer::Listing),
            "resources/templates/list" => self
                .list(&self.inner.templates, parse(params)?, &cx)
                .map(Answer::Listing),
            "prompts/list" => self
                .list(&self.inner.prompts, parse(params)?, &cx)
                .map(Answer::Listing),
            _ => self.respond(params, cx).await.map(Answer::Object),
        }
    }

    /// Runs the methods whose result is one JSON object.
    async fn respond(
        &self,
        params: JsonObject,
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
            "subscriptions/listen" => self.listen(parse(params)?, cx).await,
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

    /// Checks the per-request `_meta` fields every request must carry.
    fn check_meta(&self, params: Option<&JsonObject>) -> Result<CheckedMeta, ErrorObject> {
        // Read in place: the request keeps its `_meta`, nothing is copied.
        let meta = match params.and_then(|p| p.get("_meta")) {
            Some(Value::Object(meta)) => meta,
            Some(_) => {
                return Err(ErrorObject::invalid_params(format!(
                    "{INVALID_META}: must be an object"
                )));
            }
            None => {
                return Err(ErrorObject::invalid_params(missing_meta_message(
                    "params._meta",
                )));
            }
        };
        let version = match meta.get(keys::PROTOCOL_VERSION) {
            Some(Value::String(v)) => v.clone(),
            Some(_) => return Err(bad_meta(keys::PROTOCOL_VERSION, "must be a string")),
            None => {
                return Err(ErrorObject::invalid_params(missing_meta_message(
                    keys::PROTOCOL_VERSION,
                )));
            }
        };
        let supported = &self.inner.config.supported_versions;
        if !supported.contains(&version) {
            let supported: Vec<&str> = supported.iter().map(String::as_str).collect();
            return Err(ErrorObject::unsupported_protocol_version(
                &supported, &version,
            ));
        }
        let field = |key: &str| meta.get(key);
        let client_capabilities: ClientCapabilities =
            match field(keys::CLIENT_CAPABILITIES).map(ClientCapabilities::deserialize) {
                Some(Ok(caps)) => caps,
                Some(Err(e)) => return Err(bad_meta(keys::CLIENT_CAPABILITIES, &e.to_string())),
                None => {
                    return Err(ErrorObject::invalid_params(missing_meta_message(
                        keys::CLIENT_CAPABILITIES,
                    )));
                }
            };
        Ok(CheckedMeta {
            protocol_version: version,
            client_capabilities,
            client_info: field(keys::CLIENT_INFO)
                .map(Implementation::deserialize)
                .transpose()
                .map_err(|e| bad_meta(keys::CLIENT_INFO, &e.to_string()))?,
            progress_token: field(keys::PROGRESS_TOKEN)
                .map(ProgressToken::deserialize)
                .transpose()
                .map_err(|e| bad_meta(keys::PROGRESS_TOKEN, &e.to_string()))?,
            log_level: field(keys::LOG_LEVEL)
                .map(LoggingLevel::deserialize)
                .transpose()
                .map_err(|e| bad_meta(keys::LOG_LEVEL, &e.to_string()))?,
        })
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
            instructions: config.instructions.clone(),
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
            ..Default::default()
        }
    }

    /// Runs one round of a request that may ask for input (tools/call,
    /// prompts/get, resources/read): opens its `requestState`, runs the
    /// handler with a panic guard, and seals a new state when it asks again.
    pub(crate) async fn run_round<T, F>(
        &self,
        key: &RoundKey<'_>,
        request_state: Option<&str>,
        responses: Option<&JsonObject>,
        cx: RequestContext,
        what: &str,
        run: F,
    ) -> Result<Finished<T>, ErrorObject>
    where
        F: FnOnce(RequestContext) -> BoxFuture<Result<T, ToolError>>,
    {
        let round = self.inner.state_codec.open(key, request_state, responses)?;
        let cx = cx.with_round(round.clone());
        // A second handle on the context (not a copy of the capabilities):
        // only a handler that asks for input needs them read again.
        let asked = cx.clone();
        let outcome = match AssertUnwindSafe(run(cx)).catch_unwind().await {
            Ok(outcome) => outcome,
            Err(panic) => {
                tracing::error!(handler = %what, panic = panic_message(&panic), "handler panicked");
                return Err(ErrorObject::internal(format!(
                    "{what} failed with an internal error"
                )));
            }
        };
        match outcome {
            Ok(value) => Ok(Finished::Value(value)),
            Err(ToolError::Execution(message)) => Ok(Finished::ExecutionError(message)),
            Err(ToolError::Protocol(error)) => Err(error),
            Err(ToolError::InputRequired(ask)) => self
                .ask_for_input(key, &round, *ask, asked.client_capabilities())
                .map(Finished::InputRequired),
        }
    }

    async fn call_tool(
        &self,
        params: CallToolRequestParams,
        cx: RequestContext,
    ) -> Result<Answer, ErrorObject> {
        let record = audit::ToolCallRecord::start(&cx, &params);
        let (outcome, reply) = self.run_tool(params, cx).await;
        if let Some(record) = record {
            record.finish(outcome);
        }
        reply
    }

    /// `tools/call`: lookup → authorise (scopes) → rate limits → input
    /// limits → schema → handler → output schema → sanitising.
    async fn run_tool(
        &self,
        params: CallToolRequestParams,
        cx: RequestContext,
    ) -> (Outcome, Result<Answer, ErrorObject>) {
        // A tool the caller may not use is answered exactly like an unknown one.
        let unknown = || ErrorObject::invalid_params(format!("Unknown tool: {}", params.name));
        let tool = match self.inner.tools.get(&params.name) {
            Some(tool) if tool.permits(cx.principal()) => tool,
            Some(_) => {
                let detail = format!("tool {}", params.name);
                audit::denial(Some(cx.principal()), Denial::Forbidden, &detail);
                return (Outcome::Denied, Err(unknown()));
            }
            None => return (Outcome::ProtocolError, Err(unknown())),
        };
        let name = params.name.as_str();
        if let Err(message) = self.check_tool_rate(&tool, cx.principal()).await {
            let result = CallToolResult::error(message);
            return (Outcome::RateLimited, Ok(self.finish_tool(name, result)));
        }
        let arguments = Value::Object(params.arguments.unwrap_or_default());
        let Value::Object(object) = &arguments else {
            unreachable!("made an object just above")
        };
        let limits = tool.input_limits.unwrap_or(self.inner.config.input_limits);
        if let Err(message) = limits.check(name, object) {
            let result = CallToolResult::error(message);
            return (Outcome::ToolError, Ok(self.finish_tool(name, result)));
        }
        if let Err(errors) = tool.input_schema.validate(&arguments) {
            let text = format!("Invalid arguments for tool {name}:\n{errors}");
            let result = CallToolResult::error(text);
            return (Outcome::ToolError, Ok(self.finish_tool(name, result)));
        }
        let principal = cx.principal().key().to_owned();
        // The round's key keeps the arguments as sent (a handler that asks
        // for input is matched against them); the handler gets its own copy.
        let handler_arguments = object.clone();
        let mut salient = JsonObject::new();
        salient.insert("name".to_owned(), Value::String(name.to_owned()));
        salient.insert("arguments".to_owned(), arguments);
        let key = RoundKey {
            method: "tools/call",
            principal: &principal,
            salient: Value::Object(salient),
        };
        let arguments = handler_arguments;
        let handler = std::sync::Arc::clone(&tool.handler);
        let run = move |cx| -> BoxFuture<Result<CallToolResult, ToolError>> {
            Box::pin(async move {
                match handler(arguments, cx).await? {
                    ToolOutput::Complete(result) => Ok(result),
                    ToolOutput::InputRequired(ask) => Err(ToolError::InputRequired(Box::new(ask))),
                }
            })
        };
        let state = params.request_state.as_deref();
        let what = format!("Tool {name}");
        let responses = params.input_responses.as_ref();
        match self.run_round(&key, state, responses, cx, &what, run).await {
            Err(error) => (Outcome::ProtocolError, Err(error)),
            Ok(Finished::Value(result)) => match self.check_output(&tool, &result) {
                Err(error) => (Outcome::ProtocolError, Err(error)),
                Ok(()) => {
                    let outcome = if result.is_error() {
                        Outcome::ToolError
                    } else {
                        Outcome::Ok
                    };
                    (outcome, Ok(self.finish_tool(name, result)))
                }
            },
            Ok(Finished::ExecutionError(message)) => {
                let result = CallToolResult::error(message);
                (Outcome::ToolError, Ok(self.finish_tool(name, result)))
            }
            Ok(Finished::InputRequired(result)) => {
                (Outcome::InputRequired, Ok(Answer::Object(result)))
            }
        }
    }

    /// Ends a round with `input_required`, unless it asks for something the client cannot do.
    fn ask_for_input(
        &self,
        key: &RoundKey<'_>,
        round: &Round,
        ask: InputRequired,
        declared: &ClientCapabilities,
    ) -> Result<JsonObject, ErrorObject> {
        if let Some(missing) = ask.missing_capabilities(declared) {
            return Err(ErrorObject::missing_client_capability(&missing));
        }
        Ok(self.finish(self.inner.state_codec.seal(key, round, ask)))
    }
}

/// How a round ended.
pub(crate) enum Finished<T> {
    /// The handler produced its value.
    Value(T),
    /// The handler failed in a way the caller may correct.
    ExecutionError(String),
    /// The handler asked for input: the finished `input_required` result.
    InputRequired(JsonObject),
}

impl Server {
    /// A result that breaks the tool's own `outputSchema` is a server bug: never sent.
    fn check_output(
        &self,
        tool: &crate::features::registry::RegisteredTool,
        result: &CallToolResult,
    ) -> Result<(), ErrorObject> {
        let Some(schema) = &tool.output_schema else {
            return Ok(());
        };
        if result.is_error() {
            return Ok(());
        }
        let name = &tool.definition.name;
        let problem = match &result.structured_content {
            None => "the result has no structuredContent".to_owned(),
            Some(value) => match schema.validate(value) {
                Ok(()) => return Ok(()),
                Err(errors) => errors.to_string(),
            },
        };
        tracing::error!(tool = %name, %problem, "structuredContent breaks the tool's outputSchema; result withheld");
        Err(ErrorObject::internal(format!(
            "Tool {name} produced a result that does not match its outputSchema"
        )))
    }
}

/// `tools/call` params, parsed without rebuilding what needs no checking:
/// an `arguments` object is moved in as it is (it was parsed once already),
/// and `_meta` (checked by `check_meta`, not read again) is dropped. Any
/// other shape goes through [`parse`] whole, for its exact error.
fn parse_call(mut params: JsonObject) -> Result<CallToolRequestParams, ErrorObject> {
    params.remove("_meta");
    let arguments = match params.remove("arguments") {
        Some(Value::Object(arguments)) => Some(arguments),
        Some(Value::Null) | None => None,
        Some(other) => {
            params.insert("arguments".to_owned(), other);
            None
        }
    };
    let mut call: CallToolRequestParams = parse(params)?;
    if arguments.is_some() {
        call.arguments = arguments;
    }
    Ok(call)
}

pub(crate) fn parse<T: DeserializeOwned>(params: JsonObject) -> Result<T, ErrorObject> {
    serde_json::from_value(Value::Object(params))
        .map_err(|e| ErrorObject::invalid_params(format!("Invalid params: {e}")))
}

const MISSING_META: &str = "Missing required request metadata: ";
const INVALID_META: &str = "Invalid _meta";

fn missing_meta_message(what: &str) -> String {
    format!("{MISSING_META}{what}")
}

fn bad_meta(key: &str, problem: &str) -> ErrorObject {
    ErrorObject::invalid_params(format!("{INVALID_META}[{key:?}]: {problem}"))
}

/// True when `error` is the dispatcher's rejection of the request metadata
/// (HTTP answers these with 400, other -32602 errors with 200).
pub(crate) fn is_meta_error(error: &ErrorObject) -> bool {
    error.code == code::INVALID_PARAMS
        && (error.message.starts_with(MISSING_META) || error.message.starts_with(INVALID_META))
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}
