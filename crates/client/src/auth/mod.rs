//! OAuth 2.1 authorization for remote MCP servers (MCP `basic/authorization`).
//!
//! Give an [`OAuth`] to the HTTP transport (`HttpTransportBuilder::oauth`)
//! and it answers `401 Unauthorized` by authorizing and retrying:
//!
//! 1. the `WWW-Authenticate` challenge is read ([`challenge`]);
//! 2. the protected resource metadata is fetched (the advertised URL, else
//!    the path-based well-known URL, else the root one) and its `resource`
//!    checked against the server URL; the first authorization server's
//!    metadata is fetched (RFC 8414 and OpenID Connect, path-insert then
//!    path-append) and its `issuer` checked ([`discovery`]);
//! 3. the client identifies itself: pre-registered credentials for that
//!    issuer, else a Client ID Metadata Document URL when the server supports
//!    them, else Dynamic Client Registration with `application_type`
//!    ([`registration`]);
//! 4. the user authorizes through the [`RedirectHandler`] (authorization code
//!    with PKCE `S256`, `state`, `resource` byte for byte as published; the
//!    response's `iss` checked per RFC 9207) ([`flow`]);
//! 5. the code is exchanged at the token endpoint with the client
//!    authentication the server supports ([`token`]), and the tokens are kept
//!    in the [`TokenStore`], per issuer ([`store`]).
//!
//! Scopes come from the challenge, else the metadata's `scopes_supported`,
//! else are omitted; `offline_access` is added only when the authorization
//! server lists it. A `403` with `insufficient_scope` re-authorizes with the
//! union of the scopes held and those challenged, a bounded number of times.
//! Access tokens are refreshed shortly before they expire.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use toolwire_client::auth::{FileStore, LoopbackRedirect, OAuth};
//! use toolwire_client::transport::HttpTransport;
//!
//! let oauth = OAuth::builder(LoopbackRedirect::bind(0).await?)
//!     .client_name("my-agent")
//!     .store(FileStore::new("/home/me/.config/my-agent/tokens.json"))
//!     .build()?;
//! let transport = HttpTransport::builder("https://mcp.example.com/mcp")
//!     .oauth(oauth)
//!     .build()?;
//! # drop(transport);
//! # Ok(()) }
//! ```

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

pub mod challenge;
pub mod discovery;
mod error;
mod fetch;
pub mod flow;
pub mod pkce;
mod redirect;
pub mod registration;
mod session;
pub mod store;
pub mod token;

pub use challenge::BearerChallenge;
pub use discovery::{AuthorizationServerMetadata, Discovery, ProtectedResourceMetadata};
pub use error::AuthError;
pub use redirect::{FollowRedirect, LoopbackRedirect, RedirectHandler};
pub use registration::{ApplicationType, ClientCredentials, PreRegistered, TokenAuthMethod};
pub use store::{FileStore, IssuerRecord, MemoryStore, TokenStore};
pub use token::TokenSet;

pub(crate) use session::{SendError, Session};

/// How a client authorizes with the servers it talks to: the redirect
/// handler, the token store and the client's identity. Cheap to clone; one
/// value may serve many transports.
#[derive(Clone)]
pub struct OAuth {
    config: Arc<Config>,
}

struct Config {
    redirect: Arc<dyn RedirectHandler>,
    store: Arc<dyn TokenStore>,
    http: reqwest::Client,
    client_name: String,
    client_uri: Option<String>,
    metadata_document_url: Option<String>,
    pre_registered: Vec<PreRegistered>,
    application_type: ApplicationType,
    offline_access: bool,
    max_step_ups: usize,
    refresh_margin: Duration,
    allow_insecure_http: bool,
}

impl fmt::Debug for OAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.config;
        f.debug_struct("OAuth")
            .field("redirect", &c.redirect)
            .field("store", &c.store)
            .field("client_name", &c.client_name)
            .field("metadata_document_url", &c.metadata_document_url)
            .field("pre_registered", &c.pre_registered)
            .field("application_type", &c.application_type)
            .field("offline_access", &c.offline_access)
            .field("max_step_ups", &c.max_step_ups)
            .field("refresh_margin", &c.refresh_margin)
            .field("allow_insecure_http", &c.allow_insecure_http)
            .finish_non_exhaustive()
    }
}

/// Configures an [`OAuth`].
#[derive(Debug)]
pub struct OAuthBuilder {
    redirect: Arc<dyn RedirectHandler>,
    store: Option<Arc<dyn TokenStore>>,
    http: Option<reqwest::Client>,
    client_name: String,
    client_uri: Option<String>,
    metadata_document_url: Option<String>,
    pre_registered: Vec<PreRegistered>,
    application_type: ApplicationType,
    offline_access: bool,
    max_step_ups: usize,
    refresh_margin: Duration,
    allow_insecure_http: bool,
}

impl OAuth {
    /// Starts configuring authorization that sends the user through `redirect`.
    pub fn builder(redirect: impl RedirectHandler + 'static) -> OAuthBuilder {
        OAuthBuilder {
            redirect: Arc::new(redirect),
            store: None,
            http: None,
            client_name: "toolwire".to_owned(),
            client_uri: None,
            metadata_document_url: None,
            pre_registered: Vec::new(),
            application_type: ApplicationType::Native,
            offline_access: true,
            max_step_ups: 2,
            refresh_margin: Duration::from_secs(60),
            allow_insecure_http: false,
        }
    }

    /// The token store.
    pub fn store(&self) -> &Arc<dyn TokenStore> {
        &self.config.store
    }

    /// A session for the MCP server at `server` (used by the HTTP transport).
    pub(crate) fn session(&self, server: reqwest::Url) -> Session {
        Session::new(self.clone(), server)
    }
}

impl OAuthBuilder {
    /// Where registrations and tokens are kept (default: in memory).
    pub fn store(mut self, store: impl TokenStore + 'static) -> Self {
        self.store = Some(Arc::new(store));
        self
    }

    /// A store shared with other code.
    pub fn shared_store(mut self, store: Arc<dyn TokenStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// The reqwest client for metadata, registration and token requests
    /// (default: rustls, 30 s timeout). It should not follow redirects.
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.http = Some(client);
        self
    }

    /// `client_name` for Dynamic Client Registration (default `toolwire`).
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    /// `client_uri` for Dynamic Client Registration.
    pub fn client_uri(mut self, uri: impl Into<String>) -> Self {
        self.client_uri = Some(uri.into());
        self
    }

    /// The HTTPS URL of this client's Client ID Metadata Document, used as
    /// the client id with servers that support them. The document must list
    /// the redirect handler's URI (see
    /// [`ClientMetadata::metadata_document`](registration::ClientMetadata::metadata_document)).
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.metadata_document_url = Some(url.into());
        self
    }

    /// Credentials registered out of band with one authorization server;
    /// preferred there, and never sent to any other.
    pub fn pre_registered(mut self, credentials: PreRegistered) -> Self {
        self.pre_registered.push(credentials);
        self
    }

    /// `application_type` for Dynamic Client Registration (default `native`).
    pub fn application_type(mut self, kind: ApplicationType) -> Self {
        self.application_type = kind;
        self
    }

    /// Whether to ask for `offline_access` (refresh tokens) when the
    /// authorization server lists it (default true).
    pub fn offline_access(mut self, enabled: bool) -> Self {
        self.offline_access = enabled;
        self
    }

    /// How many times one request may re-authorize for more scope after
    /// `403 insufficient_scope` (default 2).
    pub fn max_step_ups(mut self, n: usize) -> Self {
        self.max_step_ups = n;
        self
    }

    /// How long before expiry an access token is refreshed (default 60 s).
    pub fn refresh_margin(mut self, margin: Duration) -> Self {
        self.refresh_margin = margin;
        self
    }

    /// Allows plain-HTTP authorization servers and redirect URIs on
    /// non-loopback hosts. Off by default: tokens and codes would travel in
    /// clear text.
    pub fn allow_insecure_http(mut self, allow: bool) -> Self {
        self.allow_insecure_http = allow;
        self
    }

    /// Checks the configuration and makes the [`OAuth`].
    pub fn build(self) -> Result<OAuth, AuthError> {
        if let Some(url) = &self.metadata_document_url {
            registration::validate_metadata_document_url(url)?;
        }
        let redirect_uri = self.redirect.redirect_uri();
        let parsed = reqwest::Url::parse(&redirect_uri).map_err(|e| {
            AuthError::Redirect(format!("invalid redirect URI {redirect_uri:?}: {e}"))
        })?;
        fetch::require_secure(&parsed, self.allow_insecure_http)?;
        if parsed.fragment().is_some() {
            return Err(AuthError::Redirect(format!(
                "redirect URI {redirect_uri:?} has a fragment"
            )));
        }
        Ok(OAuth {
            config: Arc::new(Config {
                redirect: self.redirect,
                store: self.store.unwrap_or_else(|| Arc::new(MemoryStore::new())),
                http: self.http.unwrap_or_else(fetch::default_client),
                client_name: self.client_name,
                client_uri: self.client_uri,
                metadata_document_url: self.metadata_document_url,
                pre_registered: self.pre_registered,
                application_type: self.application_type,
                offline_access: self.offline_access,
                max_step_ups: self.max_step_ups,
                refresh_margin: self.refresh_margin,
                allow_insecure_http: self.allow_insecure_http,
            }),
        })
    }
}
