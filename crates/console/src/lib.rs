//! `toolwire-console`: the web console of `toolwire gateway`.
//!
//! Served by the gateway itself at `/ui` (with `[gateway] ui = true`), on
//! the same listener as its MCP endpoint. It shows which upstreams are up,
//! which tools are served from where and which are withheld because their
//! definition drifted from its pin, what the poisoning scan found, the
//! latest calls (updating live) and the rate-limit use of each principal;
//! and it approves a drifted tool after showing the diff of its
//! definition, through the same code path as `toolwire gateway approve`.
//!
//! Only principals holding the `admin` scope get in. The login form takes
//! an admin token once and sets a session cookie (`HttpOnly`,
//! `SameSite=Strict`, `Secure` when [`ConsoleConfig::secure_cookies`] says
//! the listener has TLS, 15 minutes by default); every form that changes
//! something carries the session's CSRF token; every response carries a
//! strict Content-Security-Policy (scripts, styles and connections from
//! the console's own origin only, no inline script); every asset is
//! embedded in the binary. No token is ever rendered, nor an upstream
//! URL's credentials or query.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use tower::ServiceExt;
//! use toolwire_console::{ConsoleConfig, router};
//! use toolwire_gateway::{Gateway, config::GatewayConfig};
//!
//! let config = GatewayConfig::parse(r#"
//!     [gateway]
//!     http = "127.0.0.1:8940"
//!     ui = true
//!     tokens = [{ env = "GW_ADMIN_TOKEN", scopes = ["admin"] }]
//!
//!     [[upstream]]
//!     name = "files"
//!     command = ["/nonexistent/files-server"]  # left out: it cannot start
//! "#, "gateway.toml")?;
//! let gateway = Gateway::start(&config).await?;
//! let console = ConsoleConfig::new().token("s3cret-admin-token", "token-1", ["admin"]);
//! let app = router(gateway.clone(), console);
//!
//! // Without a session, every page leads to the login form.
//! let request = axum::http::Request::get("/ui/tools").body(axum::body::Body::empty())?;
//! let response = app.oneshot(request).await?;
//! assert_eq!(response.status(), 303);
//! assert_eq!(response.headers()["location"], "/ui/login");
//!
//! // Served beside the gateway's endpoint:
//! // HttpServer::bind(addr, gateway.server().clone(), HttpConfig::new())
//! //     .await?.with_routes(router(gateway, console)).run().await
//! # Ok(())
//! # }
//! ```
#![warn(missing_docs)]

mod assets;
mod auth;
mod diff;
mod headers;
mod pages;
mod time;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::{get, post};
use toolwire_gateway::Gateway;

use crate::auth::Auth;

/// The scope a token needs to get into the console.
pub const ADMIN_SCOPE: &str = "admin";

/// How long a console session lasts unless configured otherwise.
pub const DEFAULT_SESSION_TTL: Duration = Duration::from_secs(15 * 60);

/// Who may log in, and how the session cookie is made.
///
/// ```
/// use std::time::Duration;
/// use toolwire_console::ConsoleConfig;
/// let config = ConsoleConfig::new()
///     .token("s3cret", "token-1", ["admin"])
///     .secure_cookies(true)
///     .session_ttl(Duration::from_secs(600));
/// # drop(config);
/// ```
#[derive(Clone)]
pub struct ConsoleConfig {
    tokens: Vec<(String, String, Vec<String>)>,
    secure_cookies: bool,
    session_ttl: Duration,
}

impl std::fmt::Debug for ConsoleConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsoleConfig")
            .field("tokens", &self.tokens.len())
            .field("secure_cookies", &self.secure_cookies)
            .field("session_ttl", &self.session_ttl)
            .finish()
    }
}

impl Default for ConsoleConfig {
    fn default() -> Self {
        ConsoleConfig::new()
    }
}

impl ConsoleConfig {
    /// No tokens (nobody can log in), cookies without `Secure`, sessions
    /// of [`DEFAULT_SESSION_TTL`].
    pub fn new() -> Self {
        ConsoleConfig {
            tokens: Vec::new(),
            secure_cookies: false,
            session_ttl: DEFAULT_SESSION_TTL,
        }
    }

    /// A bearer token the gateway accepts, the principal it names (as the
    /// audit records name it) and its scopes. Only tokens with
    /// [`ADMIN_SCOPE`] log in; the others are refused with a message that
    /// says so. Only a SHA-256 digest of the token is kept.
    pub fn token(
        mut self,
        token: &str,
        principal: &str,
        scopes: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        let scopes = scopes.into_iter().map(Into::into).collect();
        self.tokens
            .push((token.to_owned(), principal.to_owned(), scopes));
        self
    }

    /// Marks the session cookie `Secure` (set it when the listener has TLS).
    pub fn secure_cookies(mut self, secure: bool) -> Self {
        self.secure_cookies = secure;
        self
    }

    /// How long a session lasts after login (then the login form again).
    pub fn session_ttl(mut self, ttl: Duration) -> Self {
        self.session_ttl = ttl;
        self
    }
}

/// What every page handler reaches.
pub(crate) struct Console {
    pub(crate) gateway: Gateway,
    pub(crate) auth: Auth,
}

/// The console's routes, all under `/ui`; merge them into the router or
/// [`HttpServer`](toolwire_server::http::HttpServer) that serves the
/// gateway.
pub fn router(gateway: Gateway, config: ConsoleConfig) -> Router {
    let console = Arc::new(Console {
        gateway,
        auth: Auth::new(&config),
    });
    Router::new()
        .route("/ui", get(pages::home))
        .route("/ui/", get(pages::home))
        .route(
            "/ui/login",
            get(pages::login::form).post(pages::login::submit),
        )
        .route("/ui/logout", post(pages::login::logout))
        .route("/ui/upstreams", get(pages::upstreams::page))
        .route("/ui/tools", get(pages::tools::list))
        .route("/ui/tools/{upstream}/{tool}", get(pages::tools::detail))
        .route(
            "/ui/tools/{upstream}/{tool}/approve",
            post(pages::tools::approve),
        )
        .route("/ui/audit", get(pages::audit::page))
        .route("/ui/audit/stream", get(pages::audit::stream))
        .route("/ui/limits", get(pages::limits::page))
        .route("/ui/assets/{file}", get(assets::serve))
        .layer(axum::middleware::from_fn(headers::secure))
        .with_state(console)
}
