//! One legacy (2025-11-25 and earlier) connection: what `initialize`
//! settled, and how each request is served through the one dispatcher.
//!
//! A handler that asks for input (`cx.elicit_form(..)?`) ends its round
//! with `input_required`, exactly as in the stateless era; here the session
//! turns each input request into a real request to the client, waits for the
//! answers and runs the next round itself, so the client only ever sees
//! `elicitation/create` (or sampling, roots) and then the final result.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use futures::future::join_all;
use serde_json::Value;
use tokio::sync::watch;
use toolwire_protocol::{
    CallToolResult, ClientCapabilities, ErrorObject, ErrorResponse, Implementation,
    InitializeRequestParams, InitializeResult, JsonObject, LoggingLevel, Message, Params,
    ProgressToken, Request, ResultResponse, SetLevelRequestParams, SubscribeRequestParams, keys,
    negotiate_legacy_version, revision_text,
};

use super::peer::{PeerError, PeerRequests};
use super::response::{LegacyResponse, to_legacy};
use crate::context::{CheckedMeta, RequestEnv};
use crate::dispatch::{Reply, parse};
use crate::server::Server;
use crate::store::sessions::SessionRecord;
use crate::telemetry;
use std::time::Instant;
use toolwire_telemetry::{Network, Side, record_session};

/// Rounds of input one request may ask for before it is ended.
const MAX_INPUT_ROUNDS: usize = 16;

/// What one legacy client settled at `initialize`, and what it asked for since.
#[derive(Debug)]
pub(crate) struct LegacySession {
    server: Server,
    version: Cow<'static, str>,
    /// Shared with every request's context, not copied into each.
    client_capabilities: Arc<ClientCapabilities>,
    client_info: Arc<Implementation>,
    log_level: Mutex<LoggingLevel>,
    subscribed: watch::Sender<HashSet<String>>,
    peers: PeerRequests,
    /// When this instance opened the session (`None` for one taken over
    /// from another instance) and over what, for the session duration
    /// metric.
    opened: Option<Instant>,
    network: Network,
}

impl Drop for LegacySession {
    fn drop(&mut self) {
        if let Some(opened) = self.opened {
            let duration = opened.elapsed();
            record_session(Side::Server, duration, &self.version, self.network, None);
        }
    }
}

impl LegacySession {
    /// Answers `initialize`: the negotiated version, the server's
    /// capabilities (with `logging`), its info and instructions. Refused
    /// when the server is modern only.
    pub(crate) fn open(
        server: &Server,
        params: Option<Params>,
    ) -> Result<(LegacySession, InitializeResult), ErrorObject> {
        let config = server.config();
        let supported: Vec<&str> = config.legacy_versions.iter().map(String::as_str).collect();
        if supported.is_empty() {
            return Err(server.refuse_initialize());
        }
        let params: InitializeRequestParams = parse(&params.unwrap_or_default())?;
        let version = revision_text(
            negotiate_legacy_version(&params.protocol_version, &supported).unwrap_or(supported[0]),
        );
        let mut capabilities = server.capabilities();
        capabilities.logging = Some(JsonObject::new());
        let result = InitializeResult {
            protocol_version: version.clone().into_owned(),
            capabilities,
            server_info: config.info.clone(),
            instructions: config.instructions.clone(),
            meta: None,
        };
        let session = LegacySession {
            server: server.clone(),
            version,
            client_capabilities: Arc::new(params.capabilities),
            client_info: Arc::new(params.client_info),
            // Until logging/setLevel the server may choose (2025-11-25,
            // "Logging"): everything a handler logs is sent.
            log_level: Mutex::new(LoggingLevel::Debug),
            subscribed: watch::Sender::new(HashSet::new()),
            peers: PeerRequests::default(),
            opened: Some(Instant::now()),
            network: Network::default(),
        };
        Ok((session, result))
    }

    /// Takes over a session another instance (or this one, earlier) opened.
    pub(crate) fn resume(server: &Server, record: SessionRecord) -> LegacySession {
        LegacySession {
            server: server.clone(),
            version: revision_text(&record.protocol_version),
            client_capabilities: Arc::new(record.client_capabilities),
            client_info: Arc::new(record.client_info),
            log_level: Mutex::new(record.log_level),
            subscribed: watch::Sender::new(record.subscriptions.into_iter().collect()),
            peers: PeerRequests::default(),
            opened: None,
            network: Network::default(),
        }
    }

    /// The session travels over `network` (for telemetry).
    pub(crate) fn over(mut self, network: Network) -> Self {
        self.network = network;
        self
    }

    /// The session's requests to its client carry ids starting with `tag`
    /// (unique per instance, so answers can be routed between instances).
    pub(crate) fn tag_requests(mut self, tag: &str) -> Self {
        self.peers = PeerRequests::tagged(tag);
        self
    }

    /// What another instance needs to serve this session for `principal`.
    pub(crate) fn record(&self, principal: &str) -> SessionRecord {
        let mut subscriptions: Vec<String> = self.subscribed.borrow().iter().cloned().collect();
        subscriptions.sort_unstable();
        SessionRecord {
            principal: principal.to_owned(),
            protocol_version: self.version.clone().into_owned(),
            client_capabilities: ClientCapabilities::clone(&self.client_capabilities),
            client_info: Implementation::clone(&self.client_info),
            log_level: *self.log_level.lock().expect("log level lock"),
            subscriptions,
        }
    }

    /// Adopts the log level and subscriptions of `record` (set through
    /// another instance).
    pub(crate) fn apply(&self, record: &SessionRecord) {
        *self.log_level.lock().expect("log level lock") = record.log_level;
        let uris: HashSet<String> = record.subscriptions.iter().cloned().collect();
        self.subscribed.send_if_modified(|current| {
            let changed = *current != uris;
            if changed {
                *current = uris;
            }
            changed
        });
    }

    /// True when `method` changes what [`LegacySession::record`] returns.
    pub(crate) fn changes_record(method: &str) -> bool {
        matches!(
            method,
            "logging/setLevel" | "resources/subscribe" | "resources/unsubscribe"
        )
    }

    /// The negotiated protocol version.
    pub(crate) fn version(&self) -> &str {
        &self.version
    }

    /// The URIs the client subscribed to with `resources/subscribe`.
    pub(crate) fn subscriptions(&self) -> watch::Receiver<HashSet<String>> {
        self.subscribed.subscribe()
    }

    /// Routes a response from the client to the request awaiting it; false
    /// when nothing awaits it.
    pub(crate) fn answer(&self, message: Message) -> bool {
        self.peers.answer(message)
    }

    /// The client can answer no more (its input ended): requests to it fail
    /// at once, so handlers waiting on them finish.
    pub(crate) fn close(&self) {
        self.peers.close();
    }

    /// Serves one request of this session and returns its response.
    pub(crate) async fn serve(&self, request: Request, env: RequestEnv) -> LegacyResponse {
        if toolwire_telemetry::enabled() {
            // Boxed: the untraced path keeps its future's size.
            let started = telemetry::start(&request, &env, Some(&self.version));
            let serve = self.serve_untraced(request, env);
            return Box::pin(telemetry::traced(started, serve, LegacyResponse::outcome)).await;
        }
        self.serve_untraced(request, env).await
    }

    async fn serve_untraced(&self, request: Request, env: RequestEnv) -> LegacyResponse {
        let id = request.id.clone();
        let outcome = match request.method.as_str() {
            "ping" => Ok(JsonObject::new()),
            "initialize" => Err(ErrorObject::invalid_request(
                "this session is already initialized; send initialize once per session",
            )),
            "logging/setLevel" => self.set_level(request.params),
            "resources/subscribe" => self.subscribe(request.params, true),
            "resources/unsubscribe" => self.subscribe(request.params, false),
            "server/discover" | "subscriptions/listen" => {
                Err(ErrorObject::method_not_found(&format!(
                    "{} (a 2026-07-28 method; this session speaks {})",
                    request.method, self.version
                )))
            }
            _ => return self.serve_feature(request, env).await,
        };
        LegacyResponse::Message(match outcome {
            Ok(result) => Message::Result(ResultResponse::new(id, result)),
            Err(error) => Message::Error(ErrorResponse::new(Some(id), error)),
        })
    }

    fn set_level(&self, params: Option<Params>) -> Result<JsonObject, ErrorObject> {
        let params: SetLevelRequestParams = parse(&params.unwrap_or_default())?;
        *self.log_level.lock().expect("log level lock") = params.level;
        Ok(JsonObject::new())
    }

    fn subscribe(
        &self,
        params: Option<Params>,
        subscribe: bool,
    ) -> Result<JsonObject, ErrorObject> {
        let offers = self
            .server
            .capabilities()
            .resources
            .is_some_and(|r| r.subscribe == Some(true));
        if !offers {
            let method = if subscribe {
                "resources/subscribe"
            } else {
                "resources/unsubscribe"
            };
            return Err(ErrorObject::method_not_found(method));
        }
        let params: SubscribeRequestParams = parse(&params.unwrap_or_default())?;
        self.subscribed.send_modify(|uris| {
            if subscribe {
                uris.insert(params.uri);
            } else {
                uris.remove(&params.uri);
            }
        });
        Ok(JsonObject::new())
    }

    /// Tools, prompts, resources and completion, through the dispatcher,
    /// with input requests turned into requests to the client.
    async fn serve_feature(&self, request: Request, env: RequestEnv) -> LegacyResponse {
        let Request {
            id, method, params, ..
        } = request;
        let mut params = params.unwrap_or_default();
        let meta = self.meta(&params);
        let asks_input = matches!(
            method.as_str(),
            "tools/call" | "prompts/get" | "resources/read"
        );
        for _ in 0..MAX_INPUT_ROUNDS {
            // Only a request that may ask for input keeps its params for a
            // next round.
            let round_params = if asks_input {
                params.clone()
            } else {
                std::mem::take(&mut params)
            };
            let round = Request::with_params(id.clone(), method.clone(), Some(round_params));
            let reply = match self
                .server
                .serve_checked(round, meta.clone(), env.clone())
                .await
            {
                Reply::Message(message) => message,
                // A finished result (the common case) is written as it is.
                done => return LegacyResponse::from_reply(done),
            };
            let Some(asked) = input_required(&reply) else {
                return LegacyResponse::Message(to_legacy(reply));
            };
            match self.ask_client(asked.requests, &env).await {
                Ok(answers) => {
                    let object = params.object_mut();
                    object.insert("inputResponses".into(), Value::Object(answers));
                    match asked.state {
                        Some(state) => object.insert("requestState".into(), state),
                        None => object.remove("requestState"),
                    };
                }
                Err(failure) => return self.failed(id, &method, &params, &failure),
            }
        }
        let error = ErrorObject::internal(format!(
            "{method} asked for input more than {MAX_INPUT_ROUNDS} times"
        ));
        LegacyResponse::Message(Message::Error(ErrorResponse::new(Some(id), error)))
    }

    /// The metadata a request of this session runs with: what `initialize`
    /// declared, the request's own `progressToken`, the session's log level.
    fn meta(&self, params: &Params) -> CheckedMeta {
        let progress_token = params
            .meta()
            .flatten()
            .and_then(|meta| meta.get(keys::PROGRESS_TOKEN))
            .and_then(|token| serde_json::from_str::<ProgressToken>(token.get()).ok());
        CheckedMeta {
            protocol_version: self.version.clone(),
            client_capabilities: Arc::clone(&self.client_capabilities),
            client_info: Some(Arc::clone(&self.client_info)),
            progress_token,
            log_level: Some(*self.log_level.lock().expect("log level lock")),
        }
    }

    /// Sends every input request to the client at once; the answers keyed
    /// as the handler asked, or the first failure.
    async fn ask_client(
        &self,
        requests: JsonObject,
        env: &RequestEnv,
    ) -> Result<JsonObject, Failure> {
        let timeout = self.server.config().client_request_timeout;
        let asks = requests.into_iter().map(|(key, request)| async move {
            let method = request
                .get("method")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let params = match request.get("params") {
                Some(Value::Object(params)) => Some(params.clone()),
                _ => None,
            };
            let outcome = self
                .peers
                .request(env.outbox.as_ref(), &method, params, timeout, &env.cancel)
                .await;
            (key, method, outcome)
        });
        let mut answers = JsonObject::new();
        for (key, method, outcome) in join_all(asks).await {
            match outcome {
                Ok(answer) => {
                    answers.insert(key, Value::Object(answer));
                }
                Err(error) => return Err(Failure { method, error }),
            }
        }
        Ok(answers)
    }

    /// The response of a request whose input could not be had: a tool
    /// execution error for `tools/call` (the model can act on it), a
    /// JSON-RPC error otherwise.
    fn failed(
        &self,
        id: toolwire_protocol::RequestId,
        method: &str,
        params: &Params,
        failure: &Failure,
    ) -> LegacyResponse {
        let text = failure.error.describe(&failure.method);
        if method == "tools/call" {
            let tool = params
                .member("name")
                .and_then(|name| serde_json::from_str::<String>(name.get()).ok())
                .unwrap_or_default();
            let answer = self.server.finish_tool(&tool, CallToolResult::error(text));
            return LegacyResponse::from_reply(Reply::Answer(id, answer));
        }
        let error = ErrorObject::internal(text);
        LegacyResponse::Message(Message::Error(ErrorResponse::new(Some(id), error)))
    }
}

/// A request to the client that failed.
struct Failure {
    method: String,
    error: PeerError,
}

/// The input requests and state of an `input_required` result.
struct Asked {
    requests: JsonObject,
    state: Option<Value>,
}

fn input_required(reply: &Message) -> Option<Asked> {
    let Message::Result(response) = reply else {
        return None;
    };
    let result = response.result.to_object().ok()?;
    if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
        return None;
    }
    let requests = match result.get("inputRequests") {
        Some(Value::Object(requests)) => requests.clone(),
        _ => JsonObject::new(),
    };
    Some(Asked {
        requests,
        state: result.get("requestState").cloned(),
    })
}
