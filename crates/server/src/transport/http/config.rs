//! The settings of the HTTP endpoint ([`HttpConfig`]) and its defaults.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use http::header::HeaderName;

use crate::security::auth::AuthConfig;
use crate::store::rate_limit::{InMemoryRateLimits, RateLimit, RateLimitStore};
use crate::store::sessions::{InMemorySessionStore, SessionStore};

use super::threads::ThreadPlan;
use super::tls::TlsConfig;

/// Where [`serve`](super::serve) listens unless told otherwise: loopback only.
pub const DEFAULT_ADDR: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 8080);

/// The default path of the MCP endpoint.
pub const DEFAULT_PATH: &str = "/mcp";

/// The default request body limit: 4 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// The default time a client has to send a request's headers.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a client may take to send a request's whole body: 30 s.
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// The default interval between SSE keep-alive comments.
pub const DEFAULT_SSE_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// How long a legacy (2025-11-25) session may stay unused before it ends.
pub const DEFAULT_SESSION_IDLE_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// Legacy sessions open at once; the next `initialize` gets 503.
pub const DEFAULT_MAX_SESSIONS: usize = 10_000;

/// SSE events kept per legacy stream for `Last-Event-ID` resumption.
pub const DEFAULT_REPLAY_EVENTS: usize = 64;

/// `Mcp-Session-Id`: the legacy session a request belongs to.
pub const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");

/// `MCP-Protocol-Version`: the request's protocol version.
pub const MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// `Mcp-Method`: the request's `method`.
pub const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
/// `Mcp-Name`: the request's `params.name` or `params.uri`.
pub const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");

/// Notifications buffered per streamed request before its handler waits.
pub(super) const OUTBOX_CAPACITY: usize = 32;

/// Longest header or body value quoted in an error message.
pub(super) const QUOTE_LIMIT: usize = 80;

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
    pub(super) path: String,
    pub(super) max_body_bytes: usize,
    pub(super) allowed_hosts: Vec<String>,
    pub(super) allowed_origins: Vec<String>,
    pub(super) any_host: bool,
    pub(super) any_origin: bool,
    pub(super) sse_keep_alive: Option<Duration>,
    pub(super) header_read_timeout: Duration,
    pub(super) body_read_timeout: Duration,
    pub(super) auth: Option<AuthConfig>,
    pub(super) request_limit: Option<RateLimit>,
    pub(super) rate_limits: Arc<dyn RateLimitStore>,
    pub(super) session_idle_timeout: Duration,
    pub(super) max_sessions: usize,
    pub(super) replay_events: usize,
    pub(super) session_store: Arc<dyn SessionStore>,
    pub(super) tls: Option<Arc<TlsConfig>>,
    pub(super) connection_threads: ThreadPlan,
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
            body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
            auth: None,
            request_limit: None,
            rate_limits: Arc::new(InMemoryRateLimits::new()),
            session_idle_timeout: DEFAULT_SESSION_IDLE_TIMEOUT,
            max_sessions: DEFAULT_MAX_SESSIONS,
            replay_events: DEFAULT_REPLAY_EVENTS,
            session_store: Arc::new(InMemorySessionStore::new()),
            tls: None,
            connection_threads: ThreadPlan::default(),
        }
    }
}

impl HttpConfig {
    /// The defaults: path `/mcp`, 4 MiB bodies, loopback hosts and origins
    /// only, a keep-alive comment every 15 s on quiet streams, 30 s to send
    /// a request's headers and 30 s to send its body.
    pub fn new() -> Self {
        HttpConfig::default()
    }

    /// Serves HTTPS with `tls` (HTTP/2 to clients that pick `h2` by
    /// ALPN, HTTP/1.1 to the others) instead of plain HTTP. Keep the
    /// [`Arc`] to [`TlsConfig::reload`] the certificate while serving.
    pub fn tls(mut self, tls: Arc<TlsConfig>) -> Self {
        self.tls = Some(tls);
        self
    }

    /// True when the endpoint is served over TLS.
    pub fn has_tls(&self) -> bool {
        self.tls.is_some()
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
    /// [`HttpServer`](super::HttpServer) closes the connection (default 30 s), so that slow or
    /// stalled clients cannot hold connections open for free. An HTTP/2
    /// connection is closed (GOAWAY) once it has had no open stream for
    /// this long. Applies to
    /// [`HttpServer`](super::HttpServer) only: with [`router`](super::router), the server you mount it in
    /// decides.
    /// (A zero timeout is taken as 1 ms.)
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// How long a client may take to send a request's whole body, from the
    /// moment its headers were read (default 30 s). A body that is still
    /// incomplete then gets **408** and the connection is closed, so that a
    /// half-sent body cannot hold a connection and its buffer for ever.
    /// Unlike [`HttpConfig::header_read_timeout`], this applies to
    /// [`router`](super::router) too. (A zero timeout is taken as 1 ms.)
    pub fn body_read_timeout(mut self, timeout: Duration) -> Self {
        self.body_read_timeout = timeout.max(Duration::from_millis(1));
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
    /// runs through [`HttpServer`](super::HttpServer) (or an app served with
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

    /// How long a legacy (2025-11-25) session may go unused before it ends
    /// and its id answers 404 (default 30 minutes; at least 1 s).
    pub fn session_idle_timeout(mut self, timeout: Duration) -> Self {
        self.session_idle_timeout = timeout.max(Duration::from_secs(1));
        self
    }

    /// Legacy sessions open at once (default 10,000); an `initialize` over
    /// the cap gets 503 until one ends. At least 1.
    pub fn max_sessions(mut self, sessions: usize) -> Self {
        self.max_sessions = sessions.max(1);
        self
    }

    /// SSE events kept per legacy stream so that a client reconnecting with
    /// `Last-Event-ID` misses nothing (default 64; at least 1).
    pub fn replay_events(mut self, events: usize) -> Self {
        self.replay_events = events.max(1);
        self
    }

    /// Where the records of legacy sessions live (default: this endpoint's
    /// memory). Endpoints sharing one store (e.g. `toolwire-redis`'s, on one
    /// Redis) serve each other's sessions: a client's next request may reach
    /// any of them, with no sticky sessions at the load balancer.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use toolwire_server::{InMemorySessionStore, http::HttpConfig};
    /// let shared = Arc::new(InMemorySessionStore::new());
    /// let first = HttpConfig::new().session_store(shared.clone());
    /// let second = HttpConfig::new().session_store(shared);
    /// # drop((first, second));
    /// ```
    pub fn session_store(mut self, store: Arc<dyn SessionStore>) -> Self {
        self.session_store = store;
        self
    }

    /// Serves connections on `threads` threads of their own, each with a
    /// single-threaded runtime, handed out round robin as they are
    /// accepted; 0 (the default) serves them in tasks of the runtime that
    /// runs [`HttpServer`](super::HttpServer). A connection, the tasks its
    /// requests spawn and the connections they open then stay on one
    /// thread, with no wake-ups between threads per request: on a small
    /// machine shared with a load generator or a gateway's upstreams this
    /// served more calls per second at a lower latency (bench/README.md,
    /// "Connection threads"). A connection is not moved to another thread
    /// when its own is busy. Applies to [`HttpServer`](super::HttpServer)
    /// only.
    ///
    /// ```
    /// use toolwire_server::http::HttpConfig;
    /// let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    /// let config = HttpConfig::new().connection_threads(threads);
    /// assert_eq!(config.get_connection_threads(), threads);
    /// ```
    pub fn connection_threads(mut self, threads: usize) -> Self {
        self.connection_threads.count = threads;
        self
    }

    /// How many connection threads serve connections (0: none, the
    /// caller's runtime does).
    pub fn get_connection_threads(&self) -> usize {
        self.connection_threads.count
    }

    /// Runs `hook` on each [connection thread](HttpConfig::connection_threads)
    /// just before it waits for work (Tokio's `on_thread_park`): the moment
    /// to write out what the thread gathered while it was busy, such as
    /// buffered log lines. Give the runtime's own threads the same hook
    /// with `tokio::runtime::Builder::on_thread_park`.
    ///
    /// ```
    /// use toolwire_server::http::HttpConfig;
    /// fn write_out_buffered_lines() {}
    /// let config = HttpConfig::new()
    ///     .connection_threads(2)
    ///     .on_connection_thread_park(write_out_buffered_lines);
    /// assert_eq!(config.get_connection_threads(), 2);
    /// ```
    pub fn on_connection_thread_park(mut self, hook: fn()) -> Self {
        self.connection_threads.on_park = Some(hook);
        self
    }

    /// The idle timeout of legacy sessions.
    pub fn get_session_idle_timeout(&self) -> Duration {
        self.session_idle_timeout
    }

    /// The cap on open legacy sessions.
    pub fn get_max_sessions(&self) -> usize {
        self.max_sessions
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

    pub(super) fn host_allowed(&self, authority: &str) -> bool {
        let host = strip_port(authority);
        self.any_host
            || is_loopback(host)
            || self
                .allowed_hosts
                .iter()
                .any(|a| a.eq_ignore_ascii_case(host) || a.eq_ignore_ascii_case(authority))
    }

    pub(super) fn origin_allowed(&self, origin: &str) -> bool {
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

pub(super) fn strip_port(authority: &str) -> &str {
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

pub(super) fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost") || host == "127.0.0.1" || host == "[::1]"
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
}
