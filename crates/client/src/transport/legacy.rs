//! The 2025-11-25 era ("legacy") as a client transport speaks it, shared by
//! HTTP and stdio.
//!
//! The client above the transports builds every request the 2026-07-28 way
//! (`_meta` with the version, capabilities and client info). When the server
//! turns out to be a legacy one, the transport opens a session with
//! `initialize` built from the first request's `_meta`, strips the
//! `io.modelcontextprotocol/*` keys from later requests, answers
//! `server/discover` from the `InitializeResult`, turns the per-request log
//! level into `logging/setLevel`, and serves `subscriptions/listen` from the
//! server's unsolicited notifications. Server→client requests (elicitation,
//! sampling, roots) go to the [`InboundHandler`] the client installed.

use std::fmt;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::mpsc;
use toolwire_protocol::{
    ClientCapabilities, DiscoverResult, ErrorObject, ErrorResponse, Implementation,
    InitializeResult, JsonObject, LEGACY_PROTOCOL_VERSIONS, LoggingLevel, METHOD_INITIALIZE,
    Message, Meta, Notification, Params, Request, RequestId, ResultResponse, SubscriptionFilter,
    code, keys,
};

use super::{BoxFuture, Exchange, TransportError};

/// Which era a transport speaks (see [`crate::transport`]).
///
/// ```
/// use toolwire_client::transport::ProtocolMode;
/// assert_eq!("legacy".parse::<ProtocolMode>().unwrap(), ProtocolMode::Legacy);
/// assert_eq!(ProtocolMode::default(), ProtocolMode::Auto);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ProtocolMode {
    /// Find out on first contact, as the specification describes (default).
    #[default]
    Auto,
    /// Only 2026-07-28 and later: stateless requests with `_meta`.
    Modern,
    /// Only the initialization-based revisions (2025-11-25, 2025-06-18, 2025-03-26).
    Legacy,
}

impl std::str::FromStr for ProtocolMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(ProtocolMode::Auto),
            "modern" => Ok(ProtocolMode::Modern),
            "legacy" => Ok(ProtocolMode::Legacy),
            other => Err(format!(
                "unknown protocol mode {other:?} (expected auto, modern or legacy)"
            )),
        }
    }
}

/// The era a transport found the server to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Era {
    /// 2026-07-28 and later.
    Modern,
    /// Initialization-based: 2025-11-25, 2025-06-18 or 2025-03-26.
    Legacy,
}

impl Era {
    /// `"modern"` or `"legacy"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Era::Modern => "modern",
            Era::Legacy => "legacy",
        }
    }
}

impl fmt::Display for Era {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Answers the requests a legacy server sends to the client
/// (`elicitation/create`, `sampling/createMessage`, `roots/list`); the
/// [`Client`](crate::Client) installs one built from its handlers.
pub trait InboundHandler: Send + Sync + fmt::Debug {
    /// The response (a result or an error) to `request`, sent while the
    /// client's request `related` was in flight (when that is known).
    fn handle(&self, request: Request, related: Option<Related>) -> BoxFuture<'static, Message>;
}

/// The client's request a server→client request was sent during: the
/// server's own request stream names it (HTTP), or it is the only one in
/// flight.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Related {
    /// e.g. `tools/call`.
    pub method: String,
    /// The tool or prompt name, or the resource URI (empty for other methods).
    pub target: String,
    /// The client's request id.
    pub id: Option<RequestId>,
}

impl Related {
    /// The method and target of `request`.
    pub fn of(request: &Request) -> Related {
        let field = match request.method.as_str() {
            "resources/read" => "uri",
            _ => "name",
        };
        let target = request
            .params
            .as_ref()
            .and_then(|p| p.get(field))
            .and_then(Value::as_str)
            .unwrap_or_default();
        Related {
            method: request.method.clone(),
            target: target.to_owned(),
            id: Some(request.id.clone()),
        }
    }
}

/// The request a server→client request belongs to when the server does not
/// say (stdio, or a legacy HTTP session's GET stream): the one in flight,
/// or else the one in flight that may ask for input at all (`tools/call`,
/// `prompts/get`, `resources/read`; lists being fetched meanwhile cannot).
pub(crate) fn sole_related<'a>(in_flight: impl Iterator<Item = &'a Related>) -> Option<Related> {
    let in_flight: Vec<&Related> = in_flight.collect();
    if let [only] = in_flight[..] {
        return Some(only.clone());
    }
    let mut askers = in_flight.into_iter().filter(|r| {
        matches!(
            r.method.as_str(),
            "tools/call" | "prompts/get" | "resources/read"
        )
    });
    match (askers.next(), askers.next()) {
        (Some(only), None) => Some(only.clone()),
        _ => None,
    }
}

/// The answer to a server→client request: `ping` is answered here, the
/// rest by the handler (or refused when there is none).
pub(crate) fn answer_inbound(
    handler: Option<Arc<dyn InboundHandler>>,
    request: Request,
    related: Option<Related>,
) -> BoxFuture<'static, Message> {
    if request.method == toolwire_protocol::METHOD_PING {
        let response = ResultResponse::new(request.id, JsonObject::new());
        return Box::pin(async move { Message::Result(response) });
    }
    match handler {
        Some(handler) => handler.handle(request, related),
        None => {
            let error = ErrorObject::method_not_found(&request.method);
            let response = ErrorResponse::new(Some(request.id), error);
            Box::pin(async move { Message::Error(response) })
        }
    }
}

/// JSON-RPC errors only a 2026-07-28 server sends: seeing one means modern.
pub(crate) fn is_modern_error(code: i64) -> bool {
    matches!(
        code,
        code::HEADER_MISMATCH
            | code::MISSING_REQUIRED_CLIENT_CAPABILITY
            | code::UNSUPPORTED_PROTOCOL_VERSION
    )
}

/// True when an HTTP error body is a JSON-RPC error only a modern server sends.
pub(crate) fn is_modern_error_body(body: &str) -> bool {
    match Message::from_slice(body.as_bytes()) {
        Ok(Message::Error(e)) => is_modern_error(e.error.code),
        _ => false,
    }
}

/// The verdict a `server/discover` probe's reply gives: modern for a
/// discover result or a modern error, legacy for anything else.
pub(crate) fn probe_verdict(reply: &Message) -> Era {
    match reply {
        Message::Result(r)
            if r.result
                .to_object()
                .is_ok_and(|result| result.contains_key("supportedVersions")) =>
        {
            Era::Modern
        }
        Message::Error(e) if is_modern_error(e.error.code) => Era::Modern,
        _ => Era::Legacy,
    }
}

/// A `server/discover` probe carrying the same `_meta` as `first`.
pub(crate) fn discover_probe(id: RequestId, first: &Request) -> Request {
    let meta = first
        .params
        .as_ref()
        .and_then(|p| p.get("_meta"))
        .cloned()
        .unwrap_or_else(|| Value::Object(JsonObject::new()));
    let mut params = JsonObject::new();
    params.insert("_meta".into(), meta);
    Request::new(id, "server/discover", Some(params))
}

/// The `initialize` request for a session opened on behalf of `first`: its
/// capabilities and client info come from `first`'s `_meta`.
pub(crate) fn initialize_request(id: RequestId, first: &Request) -> Request {
    let meta = first
        .params
        .as_ref()
        .and_then(|p| p.get("_meta"))
        .and_then(Value::as_object)
        .cloned()
        .map(Meta)
        .unwrap_or_default();
    let capabilities = meta
        .client_capabilities()
        .and_then(Result::ok)
        .unwrap_or_default();
    let info = meta
        .client_info()
        .and_then(Result::ok)
        .unwrap_or_else(|| Implementation::new("toolwire-client", env!("CARGO_PKG_VERSION")));
    let params = serde_json::json!({
        "protocolVersion": LEGACY_PROTOCOL_VERSIONS[0],
        "capabilities": legacy_capabilities(&capabilities),
        "clientInfo": info,
    });
    Request::new(id, METHOD_INITIALIZE, params.as_object().cloned())
}

/// The capabilities in their 2025-11-25 shape (the same fields; `roots`
/// also says it sends no `list_changed`).
fn legacy_capabilities(capabilities: &ClientCapabilities) -> Value {
    serde_json::to_value(capabilities).unwrap_or_else(|_| Value::Object(JsonObject::new()))
}

/// Checks an `initialize` reply: a result with a version we speak.
pub(crate) fn accept_initialize(reply: Message) -> Result<InitializeResult, TransportError> {
    let result = match reply {
        Message::Result(r) => r.result,
        Message::Error(e) => {
            return Err(TransportError::Handshake(format!(
                "the server refused initialize: {} ({})",
                e.error.message, e.error.code
            )));
        }
        other => {
            return Err(TransportError::Handshake(format!(
                "unexpected reply to initialize: {other:?}"
            )));
        }
    };
    let init: InitializeResult = result
        .into_parsed()
        .map_err(|e| TransportError::Handshake(format!("malformed initialize result: {e}")))?;
    if !LEGACY_PROTOCOL_VERSIONS.contains(&init.protocol_version.as_str()) {
        return Err(TransportError::Handshake(format!(
            "the server chose protocol version {:?}, which this client does not speak (it speaks {})",
            init.protocol_version,
            LEGACY_PROTOCOL_VERSIONS.join(", ")
        )));
    }
    Ok(init)
}

/// The `notifications/initialized` notification.
pub(crate) fn initialized_notification() -> Notification {
    Notification::new(toolwire_protocol::METHOD_INITIALIZED, None)
}

/// What the client asked in a request's `_meta` that a legacy session
/// expresses differently.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct LegacyAsks {
    pub log_level: Option<LoggingLevel>,
}

/// Removes the `io.modelcontextprotocol/*` keys from `_meta` (dropping
/// `_meta` when nothing is left) and returns what they asked for.
pub(crate) fn strip_modern_meta(request: &mut Request) -> LegacyAsks {
    let mut asks = LegacyAsks::default();
    let Some(params) = request.params.as_mut().map(Params::object_mut) else {
        return asks;
    };
    let Some(Value::Object(meta)) = params.get_mut("_meta") else {
        return asks;
    };
    asks.log_level = meta
        .get(keys::LOG_LEVEL)
        .and_then(|v| serde_json::from_value(v.clone()).ok());
    meta.retain(|k, _| !k.starts_with("io.modelcontextprotocol/"));
    if meta.is_empty() {
        params.remove("_meta");
    }
    asks
}

/// One legacy session's state shared by both transports: what `initialize`
/// answered, the log level set last, and the open `subscriptions/listen`
/// streams fed from the server's unsolicited notifications.
#[derive(Debug)]
pub(crate) struct LegacySession {
    pub init: InitializeResult,
    log_level: Mutex<Option<LoggingLevel>>,
    listeners: Mutex<Vec<Listener>>,
    /// When `initialize` was answered and over what, for the session
    /// duration metric.
    opened: std::time::Instant,
    network: toolwire_telemetry::Network,
}

impl Drop for LegacySession {
    fn drop(&mut self) {
        toolwire_telemetry::record_session(
            toolwire_telemetry::Side::Client,
            self.opened.elapsed(),
            self.version(),
            self.network,
            None,
        );
    }
}

#[derive(Debug)]
struct Listener {
    filter: SubscriptionFilter,
    tx: mpsc::UnboundedSender<Result<Message, TransportError>>,
}

impl LegacySession {
    pub(crate) fn new(init: InitializeResult, network: toolwire_telemetry::Network) -> Self {
        LegacySession {
            init,
            log_level: Mutex::new(None),
            listeners: Mutex::new(Vec::new()),
            opened: std::time::Instant::now(),
            network,
        }
    }

    /// The version negotiated.
    pub(crate) fn version(&self) -> &str {
        &self.init.protocol_version
    }

    /// `server/discover` answered from the `InitializeResult` (server info
    /// in `_meta`, as a 2026-07-28 server sends it).
    pub(crate) fn discover_reply(&self, id: RequestId) -> Message {
        let mut meta = Meta::default();
        meta.set_server_info(&self.init.server_info);
        let discovered = DiscoverResult {
            result_type: Default::default(),
            supported_versions: vec![self.version().to_owned()],
            capabilities: self.init.capabilities.clone(),
            instructions: self.init.instructions.clone(),
            ttl_ms: 0,
            cache_scope: Default::default(),
            meta: Some(meta),
        };
        let result = match serde_json::to_value(discovered) {
            Ok(Value::Object(result)) => result,
            _ => JsonObject::new(),
        };
        Message::Result(ResultResponse::new(id, result))
    }

    /// The `logging/setLevel` request to send first, when `asks` wants a
    /// level other than the one set and the server offers logging.
    pub(crate) fn set_level_request(&self, id: RequestId, asks: &LegacyAsks) -> Option<Request> {
        let level = asks.log_level?;
        self.init.capabilities.logging.as_ref()?;
        let mut current = lock(&self.log_level);
        if *current == Some(level) {
            return None;
        }
        *current = Some(level);
        let params = serde_json::json!({ "level": level });
        Some(Request::new(
            id,
            toolwire_protocol::METHOD_SET_LEVEL,
            params.as_object().cloned(),
        ))
    }

    /// Serves `subscriptions/listen`: an acknowledgement of what the server
    /// can send, then the matching notifications as they arrive. Resource
    /// subscriptions need `resources/subscribe`, which the caller sends for
    /// the URIs returned.
    pub(crate) fn listen(&self, request: &Request) -> (Exchange, Vec<String>) {
        let asked: SubscriptionFilter = request
            .params
            .as_ref()
            .and_then(|p| p.get("notifications"))
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default();
        let filter = self.grantable(&asked);
        let (tx, rx) = mpsc::unbounded_channel();
        let mut params = JsonObject::new();
        params.insert(
            "notifications".into(),
            serde_json::to_value(&filter).unwrap_or_default(),
        );
        let mut meta = JsonObject::new();
        meta.insert(
            keys::SUBSCRIPTION_ID.into(),
            serde_json::to_value(&request.id).unwrap_or_default(),
        );
        params.insert("_meta".into(), Value::Object(meta));
        let ack = Notification::new("notifications/subscriptions/acknowledged", Some(params));
        let _ = tx.send(Ok(Message::Notification(ack)));
        let uris = filter.resource_subscriptions.clone().unwrap_or_default();
        lock(&self.listeners).push(Listener {
            filter,
            tx: tx.clone(),
        });
        (Exchange::new(rx, None), uris)
    }

    /// The part of `asked` this server's capabilities can deliver.
    fn grantable(&self, asked: &SubscriptionFilter) -> SubscriptionFilter {
        let caps = &self.init.capabilities;
        let yes =
            |wanted: Option<bool>, offered: bool| (wanted == Some(true) && offered).then_some(true);
        let tools = caps.tools.as_ref().and_then(|t| t.list_changed) == Some(true);
        let prompts = caps.prompts.as_ref().and_then(|p| p.list_changed) == Some(true);
        let resources = caps.resources.as_ref().and_then(|r| r.list_changed) == Some(true);
        let subscribe = caps.resources.as_ref().and_then(|r| r.subscribe) == Some(true);
        SubscriptionFilter {
            tools_list_changed: yes(asked.tools_list_changed, tools),
            prompts_list_changed: yes(asked.prompts_list_changed, prompts),
            resources_list_changed: yes(asked.resources_list_changed, resources),
            resource_subscriptions: asked
                .resource_subscriptions
                .clone()
                .filter(|uris| subscribe && !uris.is_empty()),
            task_ids: None,
        }
    }

    /// Hands an unsolicited notification to the listeners that asked for it.
    pub(crate) fn broadcast(&self, notification: &Notification) {
        let mut listeners = lock(&self.listeners);
        listeners.retain(|l| !l.tx.is_closed());
        for listener in listeners.iter() {
            if wants(&listener.filter, notification) {
                let _ = listener
                    .tx
                    .send(Ok(Message::Notification(notification.clone())));
            }
        }
    }

    /// The session is over: every listener's stream ends with `reason`.
    pub(crate) fn end(&self, reason: &str) {
        for listener in lock(&self.listeners).drain(..) {
            let _ = listener
                .tx
                .send(Err(TransportError::Closed(reason.to_owned())));
        }
    }
}

fn wants(filter: &SubscriptionFilter, notification: &Notification) -> bool {
    match notification.method.as_str() {
        "notifications/tools/list_changed" => filter.tools_list_changed == Some(true),
        "notifications/prompts/list_changed" => filter.prompts_list_changed == Some(true),
        "notifications/resources/list_changed" => filter.resources_list_changed == Some(true),
        "notifications/resources/updated" => {
            let uri = notification
                .params
                .as_ref()
                .and_then(|p| p.get("uri"))
                .and_then(Value::as_str);
            let uris = filter.resource_subscriptions.as_deref().unwrap_or_default();
            uri.is_some_and(|uri| uris.iter().any(|u| u == uri))
        }
        _ => false,
    }
}

/// A `resources/subscribe` request for `uri`.
pub(crate) fn subscribe_request(id: RequestId, uri: &str) -> Request {
    let params = serde_json::json!({ "uri": uri });
    Request::new(
        id,
        toolwire_protocol::METHOD_SUBSCRIBE,
        params.as_object().cloned(),
    )
}

/// Ids for the requests a transport makes on its own (probes, `initialize`,
/// `logging/setLevel`): strings, so they never collide with the client's numbers.
pub(crate) fn internal_id(purpose: &str) -> RequestId {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    RequestId::String(format!(
        "toolwire-{purpose}-{}",
        NEXT.fetch_add(1, Ordering::Relaxed)
    ))
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(params: Value) -> Request {
        Request::new(7, "tools/call", params.as_object().cloned())
    }

    #[test]
    fn modern_meta_keys_are_stripped_and_the_log_level_kept_aside() {
        let mut r = request(json!({"name": "echo", "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/logLevel": "info",
            "progressToken": 7
        }}));
        let asks = strip_modern_meta(&mut r);
        assert_eq!(asks.log_level, Some(LoggingLevel::Info));
        assert_eq!(
            Value::Object(r.params.unwrap().into_object()),
            json!({"name": "echo", "_meta": {"progressToken": 7}})
        );
        let mut r = request(json!({"_meta": {"io.modelcontextprotocol/clientInfo": {}}}));
        strip_modern_meta(&mut r);
        assert_eq!(Value::Object(r.params.unwrap().into_object()), json!({}));
    }

    #[test]
    fn initialize_carries_the_capabilities_and_info_of_the_first_request() {
        let first = request(json!({"_meta": {
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
            "io.modelcontextprotocol/clientInfo": {"name": "app", "version": "1"}
        }}));
        let init = initialize_request(RequestId::Number(1), &first);
        assert_eq!(
            Value::Object(init.params.unwrap().into_object()),
            json!({"protocolVersion": "2025-11-25",
                   "capabilities": {"elicitation": {"form": {}}},
                   "clientInfo": {"name": "app", "version": "1"}})
        );
    }

    #[test]
    fn a_request_is_related_to_the_only_call_in_flight_beside_lists() {
        let related = |method: &str, target: &str| Related {
            method: method.into(),
            target: target.into(),
            id: None,
        };
        let (call, list) = (related("tools/call", "t"), related("tools/list", ""));
        let other = related("prompts/get", "p");
        assert_eq!(sole_related([&list].into_iter()), Some(list.clone()));
        assert_eq!(sole_related([&list, &call].into_iter()), Some(call.clone()));
        assert_eq!(sole_related([&call, &list, &other].into_iter()), None);
        assert_eq!(sole_related([&list, &list].into_iter()), None);
        assert_eq!(sole_related(std::iter::empty()), None);
    }

    #[test]
    fn probe_replies_decide_the_era() {
        let result = |v: Value| {
            Message::Result(ResultResponse::new(
                1.into(),
                v.as_object().cloned().unwrap(),
            ))
        };
        let error =
            |c: i64| Message::Error(ErrorResponse::new(Some(1.into()), ErrorObject::new(c, "x")));
        assert_eq!(
            probe_verdict(&result(json!({"supportedVersions": ["2026-07-28"]}))),
            Era::Modern
        );
        assert_eq!(
            probe_verdict(&error(code::UNSUPPORTED_PROTOCOL_VERSION)),
            Era::Modern
        );
        assert_eq!(probe_verdict(&error(-32601)), Era::Legacy);
        assert_eq!(probe_verdict(&error(-32600)), Era::Legacy);
        assert_eq!(probe_verdict(&result(json!({}))), Era::Legacy);
    }

    #[test]
    fn initialize_replies_outside_the_legacy_versions_are_refused() {
        let reply = |v: &str| {
            Message::Result(ResultResponse::new(
                1.into(),
                json!({"protocolVersion": v, "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}})
                    .as_object()
                    .cloned()
                    .unwrap(),
            ))
        };
        assert_eq!(
            accept_initialize(reply("2025-06-18"))
                .unwrap()
                .protocol_version,
            "2025-06-18"
        );
        let error = accept_initialize(reply("2024-11-05"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("\"2024-11-05\""), "{error}");
    }

    #[tokio::test]
    async fn listen_acknowledges_what_the_server_offers_and_forwards_matching_notifications() {
        let init: InitializeResult = serde_json::from_value(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {"listChanged": true}, "prompts": {}},
            "serverInfo": {"name": "s", "version": "1"}
        }))
        .unwrap();
        let session = LegacySession::new(init, toolwire_telemetry::Network::Pipe);
        let listen = Request::new(
            9,
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true, "promptsListChanged": true}})
                .as_object()
                .cloned(),
        );
        let (mut exchange, uris) = session.listen(&listen);
        assert!(uris.is_empty());
        let Some(Ok(Message::Notification(ack))) = exchange.next().await else {
            panic!("no acknowledgement")
        };
        assert_eq!(
            Value::Object(ack.params.unwrap()),
            json!({"notifications": {"toolsListChanged": true},
                   "_meta": {"io.modelcontextprotocol/subscriptionId": 9}})
        );
        session.broadcast(&Notification::new(
            "notifications/prompts/list_changed",
            None,
        ));
        session.broadcast(&Notification::new("notifications/tools/list_changed", None));
        let Some(Ok(Message::Notification(n))) = exchange.next().await else {
            panic!("no notification")
        };
        assert_eq!(n.method, "notifications/tools/list_changed");
    }
}
