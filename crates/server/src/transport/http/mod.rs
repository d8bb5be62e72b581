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
//! 4. The body arrives within the body timeout (default 30 s), else **408**
//!    and the connection is closed; it fits the size limit (default 4 MiB),
//!    else **413**; it is one JSON-RPC message, else **400** with -32700
//!    (not JSON) or -32600.
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
//! [`HttpServer`] speaks HTTP/1.1 and, on the same port, HTTP/2 with prior
//! knowledge (h2c: a connection that opens with the HTTP/2 preface), so a
//! client or proxy can multiplex calls and listen streams on one connection.
//! Every check above applies to each HTTP/2 stream as to each HTTP/1.1
//! request; one connection carries at most 256 streams at once. A
//! connection that does not finish its first bytes (or, over HTTP/2, has no
//! open stream) within [`HttpConfig::header_read_timeout`] is closed.
//!
//! To add the endpoint to an existing axum app, merge [`router`] into it (and
//! call [`Server::shutdown`] when the app shuts down gracefully, so that open
//! `subscriptions/listen` streams end). A [`Principal`](crate::Principal) placed in the request's
//! extensions (by an authentication layer) is the one the request runs as;
//! otherwise it runs anonymously.

mod accept;
mod config;
mod conn;
mod endpoint;
mod event_log;
mod h2c;
mod head_timer;
mod headers;
mod health;
mod legacy;
mod reply;
mod sessions;
mod sse;
mod threads;
mod tls;

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::any;
use tokio::net::TcpListener;

use crate::server::Server;

use self::accept::Connections;
pub use self::config::{
    DEFAULT_ADDR, DEFAULT_BODY_READ_TIMEOUT, DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_SESSIONS, DEFAULT_PATH, DEFAULT_REPLAY_EVENTS, DEFAULT_SESSION_IDLE_TIMEOUT,
    DEFAULT_SSE_KEEP_ALIVE, HttpConfig, MCP_METHOD, MCP_NAME, MCP_PROTOCOL_VERSION, MCP_SESSION_ID,
};
use self::conn::Routes;
use self::endpoint::{Endpoint, handle};
pub use self::health::{HEALTHZ_PATH, READYZ_PATH, health_routes, health_routes_for};
pub use self::sessions::SessionTable;
use self::threads::ThreadPlan;
pub use self::tls::{TlsConfig, TlsError};
pub use crate::transport::drain::DEFAULT_DRAIN_TIMEOUT;
use crate::transport::drain::{CallCounter, DrainStart};

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
    let sessions = SessionTable::for_config(&config, &server);
    routes_with(server, config, sessions, CallCounter::default()).router
}

fn routes_with(
    server: Server,
    config: HttpConfig,
    sessions: SessionTable,
    calls: CallCounter,
) -> Routes {
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
    let endpoint = Arc::new(Endpoint {
        server,
        config,
        sessions,
        calls,
    });
    Routes {
        router: router.with_state(Arc::clone(&endpoint)),
        endpoint,
    }
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
    routes: Routes,
    sessions: SessionTable,
    header_read_timeout: Duration,
    calls: CallCounter,
    drain_timeout: Duration,
    tls: Option<Arc<TlsConfig>>,
    connection_threads: ThreadPlan,
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
        let sessions = SessionTable::for_config(&config, &server);
        let calls = CallCounter::default();
        Ok(HttpServer {
            listener,
            local_addr,
            header_read_timeout: config.header_read_timeout,
            tls: config.tls.clone(),
            connection_threads: config.connection_threads,
            routes: routes_with(server.clone(), config, sessions.clone(), calls.clone()),
            sessions,
            server,
            calls,
            drain_timeout: DEFAULT_DRAIN_TIMEOUT,
        })
    }

    /// Serves `routes` beside the MCP endpoint, on the same listener and
    /// connections (a health check, an admin page). The endpoint's checks
    /// (Host and Origin, authentication, rate limits) do not apply to them:
    /// each route guards itself.
    ///
    /// # Panics
    ///
    /// When one of `routes` overlaps the endpoint's path (as
    /// [`Router::merge`] does).
    ///
    /// ```no_run
    /// # async fn demo(server: toolwire_server::Server) -> std::io::Result<()> {
    /// use axum::routing::get;
    /// use toolwire_server::http::{HttpConfig, HttpServer};
    /// let health = axum::Router::new().route("/healthz", get(|| async { "ok" }));
    /// HttpServer::bind("127.0.0.1:0".parse().unwrap(), server, HttpConfig::new())
    ///     .await?
    ///     .with_routes(health)
    ///     .run()
    ///     .await
    /// # }
    /// ```
    pub fn with_routes(mut self, routes: Router) -> HttpServer {
        self.routes.router = self.routes.router.merge(routes);
        self
    }

    /// How long [`HttpServer::run_until`] lets the calls in flight finish
    /// once its shutdown signal came (default [`DEFAULT_DRAIN_TIMEOUT`],
    /// 30 s); past it, it returns with them unfinished (their connections
    /// are closed when the runtime drops their tasks).
    pub fn drain_timeout(mut self, timeout: Duration) -> HttpServer {
        self.drain_timeout = timeout;
        self
    }

    /// Requests being served right now (`subscriptions/listen` streams
    /// and legacy `GET` streams aside): from when the dispatcher gets one
    /// until its handler has finished.
    pub fn calls_in_flight(&self) -> usize {
        self.calls.get()
    }

    /// The legacy (2025-11-25) sessions open on this endpoint.
    pub fn sessions(&self) -> &SessionTable {
        &self.sessions
    }

    /// The address actually bound.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Serves until the process ends.
    pub async fn run(self) -> io::Result<()> {
        self.run_until(std::future::pending()).await
    }

    /// Serves until `shutdown` completes; then drains: stops accepting
    /// connections, ends every `subscriptions/listen` stream with its
    /// completion result ([`Server::shutdown`]) and every legacy session
    /// (see [`HttpServer::sessions`]), closes idle connections, and waits for
    /// the requests in flight to finish, up to [`HttpServer::drain_timeout`].
    /// What it waits for is logged (`draining: 3 calls in flight, 12
    /// listen streams, 2 sessions`), and then how it ended (`drained in
    /// 1.2 s`, or a warning: `drain deadline passed with 1 call unfinished`).
    pub async fn run_until<F>(self, shutdown: F) -> io::Result<()>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let server = self.server;
        let sessions = self.sessions;
        let calls = self.calls;
        let counted = calls.clone();
        let shutdown = async move {
            shutdown.await;
            DrainStart {
                calls: counted.get(),
                listens: server.open_subscriptions(),
                sessions: sessions.len(),
            }
            .log("http");
            server.shutdown();
            sessions.end_all();
        };
        let connections = Connections {
            routes: self.routes,
            header_read_timeout: self.header_read_timeout,
            tls: self.tls,
        };
        let drained = connections
            .serve(
                self.listener,
                shutdown,
                self.drain_timeout,
                self.connection_threads,
            )
            .await?;
        let unfinished = (!drained.complete).then(|| calls.get());
        crate::transport::drain::log_end("http", drained.elapsed, unfinished);
        Ok(())
    }
}
