//! The Streamable HTTP transport of MCP 2026-07-28: one endpoint that
//! accepts POST, one JSON-RPC message per request, answered with a JSON
//! object or with a Server-Sent Events stream scoped to that request.
//!
//! What the endpoint checks, in order, before the dispatcher sees a request:
//!
//! 1. `Host` and `Origin` name a loopback host (`localhost`, `127.0.0.1`,
//!    `[::1]`, any port) or an entry of the allow lists, else **403**
//!    (DNS-rebinding protection, on by default).
//! 2. The method is POST, else **405** (`GET` and `DELETE` belonged to earlier
//!    revisions: there are no sessions and no standalone streams).
//! 3. `Accept` lists both `application/json` and `text/event-stream`, else
//!    **406**; `Content-Type` is `application/json`, else **415**.
//! 4. The body fits the size limit (default 4 MiB), else **413**; it is one
//!    JSON-RPC message, else **400** with -32700 (not JSON) or -32600.
//! 5. A notification is accepted with **202** and no body; a response
//!    (clients must not send any) is refused with **400** and -32600.
//! 6. `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` and the called tool's
//!    `Mcp-Param-{Name}` headers match the body, else **400** with -32020
//!    naming the header.
//!
//! The reply's status follows the JSON-RPC error it carries: -32601 → 404;
//! -32020, -32021, -32022, -32600, -32700 and -32602 for bad `_meta` → 400;
//! anything else (results, tool errors, other -32602) → 200.
//!
//! `subscriptions/listen`, and a request whose `_meta` asks for notifications
//! (a `progressToken` or a `logLevel`), is answered with `text/event-stream` as
//! soon as its first notification is ready: each message is one `data:` line,
//! notifications come first, the final response closes the stream, and a quiet
//! stream gets a keep-alive comment now and then. When the final response is
//! ready before any notification it is sent as plain JSON with its status, so
//! early errors such as an unsupported version still get their 4xx status.
//! Closing the response stream (or the connection, before the reply) cancels
//! the request: its [`RequestContext::cancellation`](crate::RequestContext::cancellation)
//! token fires.
//!
//! `Mcp-Session-Id` and `Last-Event-ID` are ignored; no session id is ever
//! minted or echoed.
//!
//! Two guards run right after the `Host`/`Origin` check, both off by default:
//! authentication ([`HttpConfig::auth`], see [`crate::auth`]: **401**, **403**
//! or **400** with a `WWW-Authenticate` challenge, and the protected resource
//! metadata served at its well-known path), and a per-principal request
//! limit ([`HttpConfig::request_limit`]: **429** with `Retry-After`, keyed by
//! the authenticated subject, else by the peer's IP address; requests refused
//! by authentication count against the address, so a flood of bad tokens is
//! limited too).
//!
//! ```no_run
//! use toolwire_server::{Server, http::{HttpConfig, HttpServer}};
//! # async fn run(server: Server) -> std::io::Result<()> {
//! let http = HttpServer::bind("127.0.0.1:0".parse().unwrap(), server, HttpConfig::new()).await?;
//! println!("MCP endpoint: http://{}/mcp", http.local_addr());
//! http.run_until(async { tokio::signal::ctrl_c().await.ok(); }).await
//! # }
//! ```
//!
//! To add the endpoint to an existing axum app, merge [`router`] into it (and
//! call [`Server::shutdown`] when the app shuts down gracefully, so that open
//! `subscriptions/listen` streams end). A [`Principal`] placed in the request's
//! extensions (by an authentication layer) is the one the request runs as;
//! otherwise it runs anonymously.

mod accept;

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{ConnectInfo, State};
use axum::response::Response;
use axum::routing::any;
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use http::header::{self, HeaderName};
use http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::{CancellationToken, DropGuard};
use toolwire_protocol::{
    ErrorObject, ErrorResponse, JsonObject, Message, Request, RequestId, code, keys,
};
use toolwire_schema::header_value::{decode_header_value, header_matches};

use self::accept::Connections;
use crate::context::encode::encode_message;
use crate::context::{Outbox, Principal, RequestEnv, response_streams};
use crate::dispatch::Reply;
use crate::security::audit::{self, Denial};
use crate::security::auth::AuthConfig;
use crate::server::Server;
use crate::store::rate_limit::{InMemoryRateLimits, RateLimit, RateLimitStore, retry_secs};

/// Where [`serve`] listens unless told otherwise: loopback only.
pub const DEFAULT_ADDR: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 8080);

/// The default path of the MCP endpoint.
pub const DEFAULT_PATH: &str = "/mcp";

/// The default request body limit: 4 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// The default time a client has to send a request's headers.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// The default interval between SSE keep-alive comments.
pub const DEFAULT_SSE_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// `MCP-Protocol-Version`: the request's protocol version.
pub const MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// `Mcp-Method`: the request's `method`.
pub const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
/// `Mcp-Name`: the request's `params.name` or `params.uri`.
pub const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");

/// Notifications buffered per streamed request before its handler waits.
const OUTBOX_CAPACITY: usize = 32;

/// Longest header or body value quoted in an error message.
const QUOTE_LIMIT: usize = 80;

/// Settings of the HTTP endpoint; the defaults are the safe choice.
///
/// ```
/// use std::time::Duration;
/// use toolwire_server::http::HttpConfig;
/// let config = HttpConfig::new()
///     .path("/api/mcp")
///     .max_body_bytes(1 << 20)
///     .allow_host("mcp.example.com")
///     .allow_origin("https://app.example.com")
///     .sse_keep_alive(Some(Duration::from_secs(30)));
/// assert_eq!(config.get_path(), "/api/mcp");
/// ```
#[derive(Debug, Clone)]
pub struct HttpConfig {
    path: String,
    max_body_bytes: usize,
    allowed_hosts: Vec<String>,
    allowed_origins: Vec<String>,
    any_host: bool,
    any_origin: bool,
    sse_keep_alive: Option<Duration>,
    header_read_timeout: Duration,
    auth: Option<AuthConfig>,
    request_limit: Option<RateLimit>,
    rate_limits: Arc<dyn RateLimitStore>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            path: DEFAULT_PATH.to_owned(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            any_host: false,
            any_origin: false,
            sse_keep_alive: Some(DEFAULT_SSE_KEEP_ALIVE),
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            auth: None,
            request_limit: None,
            rate_limits: Arc::new(InMemoryRateLimits::new()),
        }
    }
}

impl HttpConfig {
    /// The defaults: path `/mcp`, 4 MiB bodies, loopback hosts and origins
    /// only, a keep-alive comment every 15 s on quiet streams, 30 s to send
    /// a request's headers.
    pub fn new() -> Self {
        HttpConfig::default()
    }

    /// The endpoint's path (a leading `/` is added when missing).
    pub fn path(mut self, path: impl Into<String>) -> Self {
        let path = path.into();
        self.path = if path.starts_with('/') {
            path
        } else {
            format!("/{path}")
        };
        self
    }

    /// The largest accepted request body in bytes; a larger one gets 413.
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// Accepts requests whose `Host` names this host: `example.com` allows any
    /// port, `example.com:8443` only that one. Compared case-insensitively.
    pub fn allow_host(mut self, host: impl Into<String>) -> Self {
        self.allowed_hosts.push(host.into());
        self
    }

    /// Accepts requests whose `Origin` is exactly this origin, e.g.
    /// `https://app.example.com` (scheme, host and port; case-insensitive).
    pub fn allow_origin(mut self, origin: impl Into<String>) -> Self {
        let origin = origin.into();
        self.allowed_origins
            .push(origin.trim_end_matches('/').to_owned());
        self
    }

    /// Turns off the `Host` check: any host name is accepted. Only for a
    /// server behind a proxy that checks the host itself.
    pub fn allow_any_host(mut self) -> Self {
        self.any_host = true;
        self
    }

    /// Turns off the `Origin` check: any web page may call the server from a
    /// browser. Only for a server that authenticates every request.
    pub fn allow_any_origin(mut self) -> Self {
        self.any_origin = true;
        self
    }

    /// The interval between keep-alive comments on a quiet SSE stream; `None`
    /// sends none.
    pub fn sse_keep_alive(mut self, interval: Option<Duration>) -> Self {
        self.sse_keep_alive = interval.filter(|d| !d.is_zero());
        self
    }

    /// How long a client may take to send a request's headers before
    /// [`HttpServer`] closes the connection (default 30 s), so that slow or
    /// stalled clients cannot hold connections open for free. Applies to
    /// [`HttpServer`] only: with [`router`], the server you mount it in
    /// decides.
    /// (A zero timeout is taken as 1 ms.)
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// Turns authentication on: every request needs a valid access token,
    /// and the protected resource metadata is served (see [`crate::auth`]).
    /// Off by default.
    pub fn auth(mut self, auth: AuthConfig) -> Self {
        self.auth = Some(auth);
        self
    }

    /// Limits requests per principal (the authenticated subject, else the
    /// peer's IP address); a request over the limit gets 429 with
    /// `Retry-After`. Off by default. The address is known when the server
    /// runs through [`HttpServer`] (or an app served with
    /// `into_make_service_with_connect_info::<SocketAddr>()`); otherwise all
    /// unauthenticated requests share one bucket.
    pub fn request_limit(mut self, limit: RateLimit) -> Self {
        self.request_limit = Some(limit);
        self
    }

    /// Keeps the request-limit buckets in `store` (shared by several
    /// instances) instead of this process's memory.
    pub fn rate_limit_store(mut self, store: Arc<dyn RateLimitStore>) -> Self {
        self.rate_limits = store;
        self
    }

    /// The authentication settings, when on.
    pub fn get_auth(&self) -> Option<&AuthConfig> {
        self.auth.as_ref()
    }

    /// The endpoint's path.
    pub fn get_path(&self) -> &str {
        &self.path
    }

    /// The body limit in bytes.
    pub fn get_max_body_bytes(&self) -> usize {
        self.max_body_bytes
    }

    /// The SSE keep-alive interval.
    pub fn get_sse_keep_alive(&self) -> Option<Duration> {
        self.sse_keep_alive
    }

    fn host_allowed(&self, authority: &str) -> bool {
        let host = strip_port(authority);
        self.any_host
            || is_loopback(host)
            || self
                .allowed_hosts
                .iter()
                .any(|a| a.eq_ignore_ascii_case(host) || a.eq_ignore_ascii_case(authority))
    }

    fn origin_allowed(&self, origin: &str) -> bool {
        let origin = origin.trim_end_matches('/');
        if self.any_origin
            || self
                .allowed_origins
                .iter()
                .any(|a| a.eq_ignore_ascii_case(origin))
        {
            return true;
        }
        let Some((scheme, authority)) = origin.split_once("://") else {
            return false;
        };
        (scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https"))
            && !authority.contains('/')
            && is_loopback(strip_port(authority))
    }
}

/// The MCP endpoint as an axum [`Router`] serving `config`'s path (default
/// `/mcp`); merge or nest it into an app.
///
/// ```
/// use toolwire_server::{Server, http::{router, HttpConfig}};
/// let server = Server::builder("demo", "1").build().unwrap();
/// let app = axum::Router::new().merge(router(server, HttpConfig::new()));
/// # drop(app);
/// ```
pub fn router(server: Server, config: HttpConfig) -> Router {
    let path = config.path.clone();
    let mut router = Router::new().route(&path, any(handle));
    if let Some(auth) = &config.auth {
        if auth.lacks_authorization_server() {
            tracing::warn!(
                "authentication is on but the protected resource metadata names no \
                 authorization server (AuthConfig::authorization_server); MCP clients need one"
            );
        }
        router = router.route(auth.metadata_path(), auth.metadata_route());
    }
    let endpoint = Arc::new(Endpoint { server, config });
    router.with_state(endpoint)
}

/// Serves `server` at `http://{addr}/mcp` (or `config`'s path) until the
/// process ends.
///
/// ```no_run
/// # async fn run(server: toolwire_server::Server) -> std::io::Result<()> {
/// use toolwire_server::http::{serve, HttpConfig, DEFAULT_ADDR};
/// serve(server, DEFAULT_ADDR, HttpConfig::new()).await
/// # }
/// ```
pub async fn serve(server: Server, addr: SocketAddr, config: HttpConfig) -> io::Result<()> {
    HttpServer::bind(addr, server, config).await?.run().await
}

/// Serves `server` until `shutdown` completes, then stops accepting
/// connections and waits for the requests in flight to finish.
pub async fn serve_with_shutdown<F>(
    server: Server,
    addr: SocketAddr,
    config: HttpConfig,
    shutdown: F,
) -> io::Result<()>
where
    F: Future<Output = ()> + Send + 'static,
{
    HttpServer::bind(addr, server, config)
        .await?
        .run_until(shutdown)
        .await
}

/// A bound but not yet running HTTP server: bind first (port 0 picks a free
/// port), read [`HttpServer::local_addr`], then run.
#[derive(Debug)]
pub struct HttpServer {
    listener: TcpListener,
    local_addr: SocketAddr,
    server: Server,
    router: Router,
    header_read_timeout: Duration,
}

impl HttpServer {
    /// Binds `addr` and prepares the endpoint.
    pub async fn bind(
        addr: SocketAddr,
        server: Server,
        config: HttpConfig,
    ) -> io::Result<HttpServer> {
        HttpServer::from_listener(TcpListener::bind(addr).await?, server, config)
    }

    /// Serves on a listener bound beforehand: the way to know the port
    /// before building a configuration that names it (an OAuth resource
    /// URI, say), with no window in which another process could take it.
    ///
    /// ```no_run
    /// # async fn demo(server: toolwire_server::Server) -> std::io::Result<()> {
    /// use toolwire_server::http::{HttpConfig, HttpServer};
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let resource = format!("http://{}/mcp", listener.local_addr()?);
    /// # let _ = resource;
    /// let http = HttpServer::from_listener(listener, server, HttpConfig::new())?;
    /// http.run().await
    /// # }
    /// ```
    pub fn from_listener(
        listener: TcpListener,
        server: Server,
        config: HttpConfig,
    ) -> io::Result<HttpServer> {
        let local_addr = listener.local_addr()?;
        Ok(HttpServer {
            listener,
            local_addr,
            header_read_timeout: config.header_read_timeout,
            router: router(server.clone(), config),
            server,
        })
    }

    /// The address actually bound.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Serves until the process ends.
    pub async fn run(self) -> io::Result<()> {
        self.run_until(std::future::pending()).await
    }

    /// Serves until `shutdown` completes; then stops accepting connections,
    /// ends every `subscriptions/listen` stream with its completion result
    /// ([`Server::shutdown`]) and waits for the requests in flight to finish.
    pub async fn run_until<F>(self, shutdown: F) -> io::Result<()>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let server = self.server;
        let shutdown = async move {
            shutdown.await;
            server.shutdown();
        };
        let connections = Connections {
            router: self.router,
            header_read_timeout: self.header_read_timeout,
        };
        connections.serve(self.listener, shutdown).await
    }
}

struct Endpoint {
    server: Server,
    config: HttpConfig,
}

async fn handle(
    State(endpoint): State<Arc<Endpoint>>,
    request: axum::extract::Request,
) -> Response {
    let (mut parts, body) = request.into_parts();
    if let Some(refusal) = endpoint.refuse_host_or_origin(&parts.headers, &parts.uri) {
        return error_reply(
            StatusCode::FORBIDDEN,
            None,
            ErrorObject::invalid_request(refusal),
        );
    }
    if let Err(refusal) = endpoint.admit(&mut parts).await {
        return refusal;
    }
    if parts.method != Method::POST {
        let mut response = empty(StatusCode::METHOD_NOT_ALLOWED);
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST"));
        return response;
    }
    if !accepts_json_and_sse(&parts.headers) {
        return error_reply(
            StatusCode::NOT_ACCEPTABLE,
            None,
            ErrorObject::invalid_request(
                "the Accept header must list both application/json and text/event-stream",
            ),
        );
    }
    if !is_json_content_type(&parts.headers) {
        return error_reply(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            None,
            ErrorObject::invalid_request("the Content-Type must be application/json"),
        );
    }
    let limit = endpoint.config.max_body_bytes;
    let bytes = match read_body(body, &parts.headers, limit).await {
        Ok(bytes) => bytes,
        Err(BodyError::TooLarge) => {
            let error = ErrorObject::invalid_request(format!(
                "the request body is larger than {limit} bytes"
            ));
            return error_reply(StatusCode::PAYLOAD_TOO_LARGE, None, error);
        }
        Err(BodyError::Read(problem)) => {
            let error =
                ErrorObject::invalid_request(format!("could not read the request body: {problem}"));
            return error_reply(StatusCode::BAD_REQUEST, None, error);
        }
    };
    let message = match Message::from_slice(&bytes) {
        Ok(message) => message,
        Err(error) => {
            let response = error.to_response();
            return error_reply(StatusCode::BAD_REQUEST, response.id, response.error);
        }
    };
    drop(bytes);
    match message {
        Message::Request(request) => {
            if let Err(error) = check_headers(&endpoint.server, &parts.headers, &request) {
                return error_reply(StatusCode::BAD_REQUEST, Some(request.id), error);
            }
            let principal = parts.extensions.remove::<Principal>().unwrap_or_default();
            endpoint.dispatch(request, principal).await
        }
        Message::Notification(_) => empty(StatusCode::ACCEPTED),
        Message::Result(_) | Message::Error(_) => error_reply(
            StatusCode::BAD_REQUEST,
            None,
            ErrorObject::invalid_request(
                "the body must be a request or a notification; clients send no responses",
            ),
        ),
    }
}

impl Endpoint {
    /// Authenticates the request (when auth is on: the principal goes into
    /// its extensions) and applies the request limit (when on).
    async fn admit(&self, parts: &mut http::request::Parts) -> Result<(), Response> {
        if let Some(auth) = &self.config.auth {
            match auth.admit(parts).await {
                Ok(principal) => {
                    parts.extensions.insert(principal);
                }
                // A flood of refused requests is limited by address: it
                // gets 429 instead of the refusal once over the limit.
                Err(refusal) => return Err(self.limit(parts).await.err().unwrap_or(refusal)),
            }
        }
        self.limit(parts).await
    }

    /// Applies the request limit (when on) to the request's principal: the
    /// authenticated subject, else the peer's address.
    async fn limit(&self, parts: &http::request::Parts) -> Result<(), Response> {
        let Some(limit) = &self.config.request_limit else {
            return Ok(());
        };
        let principal = parts
            .extensions
            .get::<Principal>()
            .filter(|p| p.is_authenticated());
        let key = match (principal, parts.extensions.get::<ConnectInfo<SocketAddr>>()) {
            (Some(principal), _) => format!("http\u{0}{}", principal.key()),
            (None, Some(ConnectInfo(peer))) => format!("http-ip\u{0}{}", peer.ip()),
            (None, None) => "http-anonymous".to_owned(),
        };
        if let Err(wait) = self.config.rate_limits.check(&key, limit).await {
            audit::denial(principal, Denial::RateLimited, "HTTP endpoint");
            let secs = retry_secs(wait);
            let error =
                ErrorObject::invalid_request(format!("too many requests; retry in {secs} s"));
            let mut response = error_reply(StatusCode::TOO_MANY_REQUESTS, None, error);
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
            return Err(response);
        }
        Ok(())
    }

    /// Why the request's `Host` or `Origin` is refused, if it is.
    fn refuse_host_or_origin(&self, headers: &HeaderMap, uri: &Uri) -> Option<String> {
        let config = &self.config;
        if !config.any_host {
            let host = match headers.get(header::HOST) {
                Some(value) => Some(value.to_str().unwrap_or("\u{fffd}")),
                None => uri.authority().map(|a| a.as_str()),
            };
            if let Some(host) = host.filter(|h| !config.host_allowed(h)) {
                return Some(format!(
                    "Host {} is not allowed (DNS rebinding protection; allow it with HttpConfig::allow_host)",
                    quote(host)
                ));
            }
        }
        if !config.any_origin {
            for origin in headers.get_all(header::ORIGIN) {
                let origin = origin.to_str().unwrap_or("\u{fffd}");
                if !config.origin_allowed(origin) {
                    return Some(format!(
                        "Origin {} is not allowed (allow it with HttpConfig::allow_origin)",
                        quote(origin)
                    ));
                }
            }
        }
        None
    }

    async fn dispatch(&self, request: Request, principal: Principal) -> Response {
        let cancel = CancellationToken::new();
        if !response_streams(&request) {
            // Dropping this future (the client went away) cancels the token.
            let guard = cancel.clone().drop_guard();
            let env = RequestEnv {
                principal,
                outbox: None,
                cancel,
            };
            let reply = self.server.reply(request, env).await;
            guard.disarm();
            return match reply {
                Reply::Message(message) => json_reply(&message),
                answer @ Reply::Answer(..) => {
                    let mut body = Vec::with_capacity(1024);
                    answer.encode(&mut body);
                    json_body(body, StatusCode::OK)
                }
            };
        }
        // Notifications travel as encoded SSE events (a small queue per open
        // stream); the final response on its own channel.
        let (events, receiver) = mpsc::channel(OUTBOX_CAPACITY);
        let (respond, response) = oneshot::channel();
        let env = RequestEnv {
            principal,
            outbox: Some(Outbox::encoding(events, sse_event)),
            cancel: cancel.clone(),
        };
        tokio::spawn(run_streamed(self.server.clone(), request, env, respond));
        let mut stream = SseStream {
            pending: None,
            receiver,
            response: Some(response),
            guard: Some(cancel.drop_guard()),
            keep_alive: self.config.sse_keep_alive,
        };
        match stream.next().await {
            Next::Response(message) => {
                stream.disarm();
                json_reply(&message)
            }
            Next::Event(event) => {
                stream.pending = Some(event);
                sse_reply(stream)
            }
            Next::Ended => {
                stream.disarm();
                error_reply(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    None,
                    ErrorObject::internal("the request ended without a response"),
                )
            }
        }
    }
}

/// Runs a request whose notifications are streamed; the final response goes
/// to `respond`. A cancelled request sends nothing more.
async fn run_streamed(
    server: Server,
    request: Request,
    env: RequestEnv,
    respond: oneshot::Sender<Message>,
) {
    let cancel = env.cancel.clone();
    let response = tokio::select! {
        // The handler is polled first so it sees the cancellation it waits on.
        biased;
        response = server.handle_request(request, env) => response,
        () = cancel.cancelled() => return,
    };
    if !cancel.is_cancelled() {
        let _ = respond.send(response);
    }
}

/// The state of one request's SSE stream. Dropping it before the final
/// response (the client closed the stream) cancels the request.
struct SseStream {
    pending: Option<Bytes>,
    receiver: mpsc::Receiver<Bytes>,
    response: Option<oneshot::Receiver<Message>>,
    guard: Option<DropGuard>,
    keep_alive: Option<Duration>,
}

/// What a streamed request produced next.
enum Next {
    /// A notification, already encoded as an SSE event.
    Event(Bytes),
    /// The final response.
    Response(Message),
    /// The request ended without a response (or after it).
    Ended,
}

impl SseStream {
    /// The request is over: dropping the stream no longer cancels anything,
    /// and the next poll ends it.
    fn disarm(&mut self) {
        if let Some(guard) = self.guard.take() {
            guard.disarm();
        }
    }

    /// The next notification, or the final response once every notification
    /// sent before it has been taken.
    async fn next(&mut self) -> Next {
        let Some(response) = self.response.as_mut() else {
            return Next::Ended;
        };
        tokio::select! {
            // A handler's notifications are queued before it returns, so
            // taking events first keeps them ahead of the response.
            biased;
            Some(event) = self.receiver.recv() => Next::Event(event),
            result = response => {
                self.response = None;
                result.map_or(Next::Ended, Next::Response)
            }
        }
    }

    async fn next_chunk(mut self) -> Option<(Result<Bytes, Infallible>, SseStream)> {
        self.guard.as_ref()?;
        if let Some(event) = self.pending.take() {
            return Some((Ok(event), self));
        }
        let next = match self.keep_alive {
            Some(interval) => match tokio::time::timeout(interval, self.next()).await {
                Ok(next) => next,
                Err(_) => return Some((Ok(Bytes::from_static(b":\n\n")), self)),
            },
            None => self.next().await,
        };
        match next {
            Next::Event(event) => Some((Ok(event), self)),
            Next::Response(message) => {
                self.disarm();
                Some((Ok(sse_event(&message)), self))
            }
            Next::Ended => {
                self.disarm();
                None
            }
        }
    }
}

fn sse_reply(stream: SseStream) -> Response {
    let body = Body::from_stream(futures::stream::unfold(stream, SseStream::next_chunk));
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(
        HeaderName::from_static("x-accel-buffering"),
        HeaderValue::from_static("no"),
    );
    response
}

/// One SSE event: the message on a single `data:` line (JSON text never
/// contains a raw newline).
fn sse_event(message: &Message) -> Bytes {
    let mut bytes = Vec::with_capacity(256);
    bytes.extend_from_slice(b"data: ");
    encode_message(&mut bytes, message);
    bytes.extend_from_slice(b"\n\n");
    Bytes::from(bytes)
}

// ---------------------------------------------------------------------------
// Header checks

/// Checks the request metadata headers against the body.
fn check_headers(
    server: &Server,
    headers: &HeaderMap,
    request: &Request,
) -> Result<(), ErrorObject> {
    let params = request.params.as_ref();

    let version = required(headers, &MCP_PROTOCOL_VERSION, "MCP-Protocol-Version")?;
    // A body without a protocol version is malformed: the dispatcher answers
    // that with -32602 (400), so only a present value is compared here.
    if let Some(body) = body_protocol_version(params) {
        if version != body {
            return Err(mismatch("MCP-Protocol-Version", version, body));
        }
    }

    let method = required(headers, &MCP_METHOD, "Mcp-Method")?;
    if method != request.method {
        return Err(mismatch("Mcp-Method", method, &request.method));
    }

    if let Some(field) = name_field(&request.method) {
        let raw = required(headers, &MCP_NAME, "Mcp-Name")?;
        let name = decode_header_value(raw).map_err(|e| malformed("Mcp-Name", &e))?;
        match params.and_then(|p| p.get(field)) {
            Some(Value::String(body)) if *body == name => {}
            Some(Value::String(body)) => return Err(mismatch("Mcp-Name", &name, body)),
            _ => {
                return Err(ErrorObject::header_mismatch(format!(
                    "Header mismatch: Mcp-Name header value {} has no body value to match (params.{field} is missing or not a string)",
                    quote(&name)
                )));
            }
        }
    }

    for param in server.param_headers(request) {
        let raw = single(headers, param.name.as_str(), &param.name)?;
        match (raw, param.value) {
            (None, None) => {}
            (None, Some(_)) => {
                return Err(ErrorObject::header_mismatch(format!(
                    "Header mismatch: required header {} is missing (argument {} is present in the body)",
                    param.name, param.pointer
                )));
            }
            (Some(raw), None) => {
                return Err(ErrorObject::header_mismatch(format!(
                    "Header mismatch: {} header value {} has no body value to match (argument {} is absent or null)",
                    param.name,
                    quote(raw),
                    param.pointer
                )));
            }
            (Some(raw), Some(value)) => match header_matches(raw, value, param.kind) {
                Ok(true) => {}
                Ok(false) => {
                    let body = value.to_string();
                    return Err(mismatch(&param.name, raw.trim_matches([' ', '\t']), &body));
                }
                Err(error) => return Err(malformed(&param.name, &error)),
            },
        }
    }
    Ok(())
}

/// The body field `Mcp-Name` mirrors for `method`, if any.
fn name_field(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        _ => None,
    }
}

fn body_protocol_version(params: Option<&JsonObject>) -> Option<&str> {
    params?.get("_meta")?.get(keys::PROTOCOL_VERSION)?.as_str()
}

/// A header that must be present exactly once; surrounding whitespace trimmed.
fn required<'h>(
    headers: &'h HeaderMap,
    name: &HeaderName,
    display: &str,
) -> Result<&'h str, ErrorObject> {
    match single(headers, name, display)? {
        Some(value) => Ok(value.trim_matches([' ', '\t'])),
        None => Err(ErrorObject::header_mismatch(format!(
            "Header mismatch: required header {display} is missing"
        ))),
    }
}

/// A header's value when present once; two copies or bytes outside visible
/// ASCII, space and tab are malformed.
fn single<'h, K>(
    headers: &'h HeaderMap,
    name: K,
    display: &str,
) -> Result<Option<&'h str>, ErrorObject>
where
    K: http::header::AsHeaderName,
{
    let mut values = headers.get_all(name).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(ErrorObject::header_mismatch(format!(
            "Header mismatch: {display} header must appear once, found several"
        )));
    }
    value.to_str().map(Some).map_err(|_| {
        ErrorObject::header_mismatch(format!(
            "Header mismatch: {display} header contains invalid characters (only visible ASCII, space and tab; \
             encode other text as =?base64?...?=)"
        ))
    })
}

fn mismatch(display: &str, header: &str, body: &str) -> ErrorObject {
    ErrorObject::header_mismatch(format!(
        "Header mismatch: {display} header value {} does not match body value {}",
        quote(header),
        quote(body)
    ))
}

fn malformed(display: &str, error: &dyn std::fmt::Display) -> ErrorObject {
    ErrorObject::header_mismatch(format!(
        "Header mismatch: {display} header is malformed: {error}"
    ))
}

/// `'text'`, cut short when long.
fn quote(text: &str) -> String {
    match text.char_indices().nth(QUOTE_LIMIT) {
        Some((end, _)) => format!("'{}…'", &text[..end]),
        None => format!("'{text}'"),
    }
}

// ---------------------------------------------------------------------------
// Transport checks

fn accepts_json_and_sse(headers: &HeaderMap) -> bool {
    let (mut json, mut sse) = (false, false);
    for value in headers.get_all(header::ACCEPT) {
        let Ok(value) = value.to_str() else {
            continue;
        };
        for range in value.split(',') {
            let mut fields = range.split(';');
            let media = fields.next().unwrap_or("").trim();
            let refused = fields.any(|p| {
                p.split_once('=').is_some_and(|(k, v)| {
                    k.trim().eq_ignore_ascii_case("q")
                        && v.trim().parse::<f32>().is_ok_and(|q| q == 0.0)
                })
            });
            if refused {
                continue;
            }
            json |= media.eq_ignore_ascii_case("application/json");
            sse |= media.eq_ignore_ascii_case("text/event-stream");
        }
    }
    json && sse
}

fn is_json_content_type(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"))
}

enum BodyError {
    TooLarge,
    Read(String),
}

/// Reads the whole body, refusing more than `limit` bytes; a body that
/// arrives in one chunk is not copied.
async fn read_body(body: Body, headers: &HeaderMap, limit: usize) -> Result<Bytes, BodyError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(BodyError::TooLarge);
    }
    let mut stream = body.into_data_stream();
    let mut first: Option<Bytes> = None;
    let mut more: Option<BytesMut> = None;
    let mut total = 0usize;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| BodyError::Read(e.to_string()))?;
        total = total.saturating_add(chunk.len());
        if total > limit {
            return Err(BodyError::TooLarge);
        }
        match (&mut first, &mut more) {
            (None, _) => first = Some(chunk),
            (Some(head), None) => {
                let mut buffer =
                    BytesMut::with_capacity(declared.map_or(head.len() * 2, |n| n as usize));
                buffer.extend_from_slice(head);
                buffer.extend_from_slice(&chunk);
                more = Some(buffer);
            }
            (Some(_), Some(buffer)) => buffer.extend_from_slice(&chunk),
        }
    }
    Ok(match (first, more) {
        (_, Some(buffer)) => buffer.freeze(),
        (Some(head), None) => head,
        (None, None) => Bytes::new(),
    })
}

fn strip_port(authority: &str) -> &str {
    if authority.starts_with('[') {
        match authority.find(']') {
            Some(end) => &authority[..=end],
            None => authority,
        }
    } else {
        authority
            .split_once(':')
            .map_or(authority, |(host, _)| host)
    }
}

fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost") || host == "127.0.0.1" || host == "[::1]"
}

// ---------------------------------------------------------------------------
// Replies

/// The HTTP status of a reply carrying `message`.
fn status_of(message: &Message) -> StatusCode {
    match message {
        Message::Error(response) => status_of_error(&response.error),
        _ => StatusCode::OK,
    }
}

fn status_of_error(error: &ErrorObject) -> StatusCode {
    match error.code {
        code::PARSE_ERROR
        | code::INVALID_REQUEST
        | code::HEADER_MISMATCH
        | code::MISSING_REQUIRED_CLIENT_CAPABILITY
        | code::UNSUPPORTED_PROTOCOL_VERSION => StatusCode::BAD_REQUEST,
        code::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        code::INVALID_PARAMS if crate::dispatch::is_meta_error(error) => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

fn json_reply(message: &Message) -> Response {
    let mut body = Vec::with_capacity(256);
    encode_message(&mut body, message);
    json_body(body, status_of(message))
}

/// A JSON response from its encoded body.
fn json_body(body: Vec<u8>, status: StatusCode) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

fn error_reply(status: StatusCode, id: Option<RequestId>, error: ErrorObject) -> Response {
    let mut response = json_reply(&Message::Error(ErrorResponse::new(id, error)));
    *response.status_mut() = status;
    response
}

fn empty(status: StatusCode) -> Response {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = status;
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        let config = HttpConfig::new();
        for host in [
            "localhost",
            "LocalHost:3000",
            "127.0.0.1",
            "127.0.0.1:8080",
            "[::1]",
            "[::1]:9",
        ] {
            assert!(config.host_allowed(host), "{host}");
        }
        for host in [
            "example.com",
            "127.0.0.2",
            "localhost.evil.com",
            "[::2]:80",
            "0.0.0.0:80",
        ] {
            assert!(!config.host_allowed(host), "{host}");
        }
        let config = HttpConfig::new()
            .allow_host("Example.com")
            .allow_host("api.test:8443");
        assert!(config.host_allowed("example.com:1"));
        assert!(config.host_allowed("api.test:8443"));
        assert!(!config.host_allowed("api.test:8444"));
    }

    #[test]
    fn loopback_origins() {
        let config = HttpConfig::new();
        for origin in [
            "http://localhost:3000",
            "https://127.0.0.1",
            "http://[::1]:8080",
            "http://localhost/",
        ] {
            assert!(config.origin_allowed(origin), "{origin}");
        }
        for origin in [
            "null",
            "https://evil.com",
            "file://localhost",
            "http://localhost.evil.com",
            "localhost",
        ] {
            assert!(!config.origin_allowed(origin), "{origin}");
        }
        let config = HttpConfig::new().allow_origin("https://app.example.com/");
        assert!(config.origin_allowed("https://APP.example.com"));
        assert!(!config.origin_allowed("http://app.example.com"));
    }

    #[test]
    fn accept_needs_both_types() {
        let accept = |v: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::ACCEPT, HeaderValue::from_str(v).unwrap());
            accepts_json_and_sse(&headers)
        };
        assert!(accept("application/json, text/event-stream"));
        assert!(accept("text/event-stream;q=0.5,Application/JSON"));
        assert!(!accept("application/json"));
        assert!(!accept("*/*"));
        assert!(!accept("application/json, text/event-stream;q=0"));
    }

    #[test]
    fn quotes_are_bounded() {
        assert_eq!(quote("abc"), "'abc'");
        assert_eq!(quote(&"é".repeat(100)).chars().count(), QUOTE_LIMIT + 3);
    }
}
