//! Why authorization failed.

/// Why the client could not obtain (or use) an access token.
///
/// Messages never contain tokens, secrets or authorization codes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// A request to the MCP server's metadata or the authorization server
    /// failed (connection, timeout, unreadable body).
    #[error("authorization: {0}")]
    Http(String),
    /// No protected resource metadata or authorization server metadata was
    /// found, or it is unusable.
    #[error("authorization discovery failed: {0}")]
    Discovery(String),
    /// The protected resource metadata names another resource than the
    /// server the client talks to (RFC 9728 §3.3); nothing was sent to its
    /// authorization server.
    #[error("protected resource metadata is for {advertised:?}, not for the server at {server:?}")]
    ResourceMismatch {
        /// The MCP server URL in use.
        server: String,
        /// The `resource` the metadata claims.
        advertised: String,
    },
    /// The authorization server metadata's `issuer` differs from the issuer
    /// identifier it was fetched for (RFC 8414 §3.3); it was not used.
    #[error("authorization server metadata for {expected:?} claims issuer {found:?}")]
    IssuerMismatch {
        /// The issuer the well-known URL was built from.
        expected: String,
        /// The `issuer` in the document.
        found: String,
    },
    /// The authorization server does not advertise PKCE with `S256`.
    #[error("authorization server {0:?} does not support PKCE with S256")]
    PkceUnsupported(String),
    /// A URL that must be HTTPS (or loopback) is not.
    #[error("refusing insecure URL {0:?}: authorization endpoints must use HTTPS (or loopback)")]
    Insecure(String),
    /// The client has no way to register with this authorization server.
    #[error("cannot register with authorization server {issuer:?}: {reason}")]
    NoRegistration {
        /// The authorization server.
        issuer: String,
        /// Why not.
        reason: String,
    },
    /// Dynamic Client Registration was refused.
    #[error("client registration failed: {0}")]
    Registration(String),
    /// The redirect handler failed or was cancelled.
    #[error("authorization redirect: {0}")]
    Redirect(String),
    /// The authorization response's `state` is missing or not ours.
    #[error("authorization response has a missing or wrong state")]
    StateMismatch,
    /// The authorization response's `iss` differs from the recorded issuer
    /// (RFC 9207 §2.4); the response was discarded unread.
    #[error("authorization response came from {received:?}, expected issuer {expected:?}")]
    IssMismatch {
        /// The issuer recorded before redirecting.
        expected: String,
        /// The `iss` received.
        received: String,
    },
    /// The authorization server advertises `iss` in responses, but this one
    /// has none (RFC 9207 §2.4); it was discarded.
    #[error("authorization response lacks the iss parameter that {expected:?} advertises")]
    IssMissing {
        /// The issuer recorded before redirecting.
        expected: String,
    },
    /// The authorization server answered the authorization request with an error.
    #[error("authorization denied: {error}{}", describe(.description))]
    Denied {
        /// The OAuth error code, e.g. `access_denied`.
        error: String,
        /// `error_description`, if any.
        description: Option<String>,
    },
    /// The authorization response is malformed (no code, repeated parameters).
    #[error("invalid authorization response: {0}")]
    InvalidResponse(String),
    /// The token endpoint refused the request.
    #[error("token request failed: {error}{}", describe(.description))]
    Token {
        /// The OAuth error code (or the HTTP status when there is none).
        error: String,
        /// `error_description`, if any.
        description: Option<String>,
    },
    /// The server still demands more scope after the allowed step-ups, or
    /// demands scopes the client already holds.
    #[error("insufficient scope: the server requires {required:?}")]
    InsufficientScope {
        /// The scopes the server's challenge asked for.
        required: Vec<String>,
    },
    /// The server rejected a freshly obtained token.
    #[error("the server rejected the access token")]
    Rejected,
    /// The operating system gave no random bytes.
    #[error("no randomness available: {0}")]
    Randomness(String),
    /// The token store failed.
    #[error("token store: {0}")]
    Store(String),
}

fn describe(description: &Option<String>) -> String {
    match description {
        Some(d) => format!(" ({d})"),
        None => String::new(),
    }
}
