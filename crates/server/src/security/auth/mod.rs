//! Authentication on the Streamable HTTP transport: the server as an OAuth
//! 2.1 resource server (MCP authorization, RFC 6750, RFC 9728).
//!
//! Off by default (a local server on loopback needs none); turned on with
//! [`HttpConfig::auth`](crate::http::HttpConfig::auth). Then every request
//! to the endpoint goes through an [`Authenticator`] before anything else
//! but the Host/Origin check:
//!
//! - no credentials → **401** with `WWW-Authenticate: Bearer
//!   resource_metadata="<metadata URL>"` (plus `scope="…"` when the server
//!   requires scopes);
//! - a bad, expired or foreign token → **401** with `error="invalid_token"`
//!   and an `error_description`;
//! - a malformed `Authorization` header, or a token in the query string →
//!   **400** with `error="invalid_request"`;
//! - a valid token without the server-wide required scopes
//!   ([`AuthConfig::require_scopes`]) → **403** with
//!   `error="insufficient_scope", scope="<all required scopes>"`.
//!
//! The protected resource metadata document (RFC 9728) is served at
//! `/.well-known/oauth-protected-resource` followed by the resource URI's
//! path (e.g. `/.well-known/oauth-protected-resource/mcp` for
//! `https://mcp.example.com/mcp`), without authentication.
//!
//! Scopes a *tool* (prompt, resource) requires are not challenged with 403:
//! a caller without them is told the tool does not exist, exactly as for an
//! unknown tool, so that scopes do not reveal what exists. Use server-wide
//! required scopes for what should be challenged.
//!
//! Provided authenticators: [`StaticTokens`] (a table of bearer tokens from
//! configuration) and [`JwtVerifier`] (JWT access tokens: HS256 with a
//! shared secret, RS256/ES256 and friends with keys from a JWKS document;
//! signature, `iss`, `aud` equal to this resource, `exp`, `nbf`). stdio has
//! no authentication: it runs as the principal in
//! [`StdioConfig::principal`](crate::stdio::StdioConfig::principal).
//!
//! ```
//! use toolwire_server::{Principal, auth::{AuthConfig, StaticTokens}};
//! use toolwire_server::http::HttpConfig;
//! let tokens = StaticTokens::new()
//!     .token("s3cr3t-token-for-alice-0123456789", Principal::new("alice").with_scopes(["mcp"]));
//! let auth = AuthConfig::new("https://mcp.example.com/mcp", tokens)
//!     .unwrap()
//!     .authorization_server("https://auth.example.com")
//!     .require_scopes(["mcp"]);
//! assert_eq!(
//!     auth.metadata_url(),
//!     "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
//! );
//! let config = HttpConfig::new().auth(auth);
//! # drop(config);
//! ```

mod config;
mod jwt;
mod static_tokens;

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use futures::future::BoxFuture;
use http::request::Parts;
use http::{HeaderValue, StatusCode, header};
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, JwkSet, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use toolwire_protocol::{ErrorObject, code};

use crate::context::Principal;
use crate::security::audit::{self, Denial};
use crate::setters::setters;

/// The well-known path prefix of RFC 9728.
pub const WELL_KNOWN_PRM: &str = "/.well-known/oauth-protected-resource";

/// Why a request was not admitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthError {
    /// No credentials for this scheme: 401 with a bare challenge.
    Missing,
    /// Credentials that are not valid (bad signature, expired, wrong
    /// audience or issuer, unknown token): 401 with `error="invalid_token"`.
    InvalidToken(String),
    /// A malformed request (two `Authorization` headers, a token in the
    /// query string): 400 with `error="invalid_request"`.
    InvalidRequest(String),
    /// A valid token without the scopes needed: 403 with
    /// `error="insufficient_scope"` naming `scopes`.
    InsufficientScope {
        /// Every scope the operation needs.
        scopes: Vec<String>,
        /// What is missing, for people.
        description: String,
    },
}

/// Turns an HTTP request's head into a [`Principal`], or refuses it.
/// Implementations must not read the body (it has not been read yet).
///
/// ```
/// use futures::future::BoxFuture;
/// use toolwire_server::Principal;
/// use toolwire_server::auth::{AuthError, Authenticator, bearer_token};
/// #[derive(Debug)]
/// struct OnlyBob;
/// impl Authenticator for OnlyBob {
///     fn authenticate<'a>(&'a self, request: &'a http::request::Parts)
///         -> BoxFuture<'a, Result<Principal, AuthError>> {
///         Box::pin(async move {
///             match bearer_token(request)? {
///                 "bob's token" => Ok(Principal::new("bob")),
///                 _ => Err(AuthError::InvalidToken("The access token is not valid".into())),
///             }
///         })
///     }
/// }
/// ```
pub trait Authenticator: Send + Sync + fmt::Debug + 'static {
    /// The principal of `request`, or why it is refused.
    fn authenticate<'a>(
        &'a self,
        request: &'a Parts,
    ) -> BoxFuture<'a, Result<Principal, AuthError>>;
}

/// The bearer token of `request` (RFC 6750 §2.1, `Authorization: Bearer …`).
/// No `Authorization` header, or another scheme, is [`AuthError::Missing`];
/// several headers or a token in the query string are
/// [`AuthError::InvalidRequest`]; a value that is not a token68 is
/// [`AuthError::InvalidToken`].
pub fn bearer_token(request: &Parts) -> Result<&str, AuthError> {
    if let Some(query) = request.uri.query() {
        if query
            .split('&')
            .any(|pair| pair.split('=').next() == Some("access_token"))
        {
            return Err(AuthError::InvalidRequest(
                "Access tokens must be sent in the Authorization header, not the query string"
                    .into(),
            ));
        }
    }
    let mut values = request.headers.get_all(header::AUTHORIZATION).iter();
    let Some(value) = values.next() else {
        return Err(AuthError::Missing);
    };
    if values.next().is_some() {
        return Err(AuthError::InvalidRequest(
            "Send exactly one Authorization header".into(),
        ));
    }
    let value = value.to_str().map_err(|_| {
        AuthError::InvalidRequest("The Authorization header is not visible ASCII".into())
    })?;
    let (scheme, token) = value.trim().split_once(' ').unwrap_or((value.trim(), ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(AuthError::Missing);
    }
    let token = token.trim_start_matches(' ');
    let body = token.trim_end_matches('=');
    let token68 = !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b));
    if !token68 {
        return Err(AuthError::InvalidToken(
            "The access token is malformed".into(),
        ));
    }
    Ok(token)
}

/// Why an authentication setting was refused.
#[derive(Debug, thiserror::Error)]
pub enum AuthConfigError {
    /// The resource URI is not an absolute http(s) URI without fragment.
    #[error("invalid resource URI {uri:?}: {reason}")]
    Resource {
        /// The URI given.
        uri: String,
        /// What is wrong.
        reason: String,
    },
    /// A key could not be used.
    #[error("invalid key: {0}")]
    Key(String),
    /// A token table line could not be read.
    #[error("static tokens, line {line}: {reason}")]
    Tokens {
        /// The 1-based line.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
}

pub use self::config::AuthConfig;
pub use self::jwt::{DEFAULT_JWT_LEEWAY, JwtVerifier};
pub use self::static_tokens::StaticTokens;

#[cfg(test)]
mod tests {
    use super::config::quotable;
    use super::jwt::*;
    use super::*;

    fn parts(auth: &[&str], uri: &str) -> Parts {
        let mut builder = http::Request::builder().uri(uri);
        for value in auth {
            builder = builder.header(header::AUTHORIZATION, *value);
        }
        builder.body(()).unwrap().into_parts().0
    }

    #[test]
    fn bearer_parsing() {
        assert_eq!(
            bearer_token(&parts(&["Bearer abc.def-_~+/="], "/")),
            Ok("abc.def-_~+/=")
        );
        assert_eq!(bearer_token(&parts(&["bearer  abc"], "/")), Ok("abc"));
        assert_eq!(bearer_token(&parts(&[], "/")), Err(AuthError::Missing));
        assert_eq!(
            bearer_token(&parts(&["Basic dXNlcjpwYXNz"], "/")),
            Err(AuthError::Missing)
        );
        assert!(matches!(
            bearer_token(&parts(&["Bearer a", "Bearer b"], "/")),
            Err(AuthError::InvalidRequest(_))
        ));
        assert!(matches!(
            bearer_token(&parts(&["Bearer a b"], "/")),
            Err(AuthError::InvalidToken(_))
        ));
        assert!(matches!(
            bearer_token(&parts(&["Bearer"], "/")),
            Err(AuthError::InvalidToken(_))
        ));
        assert!(matches!(
            bearer_token(&parts(&[], "/mcp?access_token=x")),
            Err(AuthError::InvalidRequest(_))
        ));
    }

    #[test]
    fn metadata_locations() {
        let tokens = StaticTokens::new();
        let at = |uri: &str| {
            let c = AuthConfig::new(uri, tokens.clone()).unwrap();
            (c.metadata_path().to_owned(), c.metadata_url().to_owned())
        };
        assert_eq!(
            at("https://mcp.example.com"),
            (
                "/.well-known/oauth-protected-resource".to_owned(),
                "https://mcp.example.com/.well-known/oauth-protected-resource".to_owned()
            )
        );
        assert_eq!(
            at("http://127.0.0.1:8080/api/mcp").1,
            "http://127.0.0.1:8080/.well-known/oauth-protected-resource/api/mcp"
        );
        for bad in [
            "mcp.example.com",
            "https://x/#frag",
            "ftp://x/",
            "https://x/?q=1",
        ] {
            assert!(AuthConfig::new(bad, tokens.clone()).is_err(), "{bad}");
        }
    }

    #[test]
    fn scopes_are_expanded_transitively() {
        let config = AuthConfig::new("https://x", StaticTokens::new())
            .unwrap()
            .scope_implies("admin", ["write"])
            .scope_implies("write", ["read"]);
        let p = config.expand(Principal::new("a").with_scopes(["admin"]));
        assert!(p.has_scope("write") && p.has_scope("read"));
    }

    #[test]
    fn quoting() {
        assert_eq!(quotable("a \"b\" \\c\n"), "a ?b? ?c?");
    }

    #[test]
    fn short_hmac_secrets_are_refused() {
        assert!(JwtVerifier::new("i", "a").hs256_secret(b"short").is_err());
    }
}
