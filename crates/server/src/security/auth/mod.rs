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

// ---------------------------------------------------------------------------
// Static tokens

/// Bearer tokens from configuration, each standing for a principal. Tokens
/// are kept only as SHA-256 digests and looked up by digest.
///
/// ```
/// use toolwire_server::auth::StaticTokens;
/// let tokens = StaticTokens::parse(
///     "# token  subject  scopes...\n\
///      tok-alice-0123456789abcdef  alice  tools:read tools:write\n",
/// ).unwrap();
/// assert_eq!(tokens.len(), 1);
/// ```
#[derive(Clone, Default)]
pub struct StaticTokens {
    tokens: HashMap<[u8; 32], Principal>,
}

impl fmt::Debug for StaticTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StaticTokens")
            .field("tokens", &self.tokens.len())
            .finish()
    }
}

impl StaticTokens {
    /// No tokens.
    pub fn new() -> Self {
        StaticTokens::default()
    }

    /// Adds `token` standing for `principal`.
    pub fn token(mut self, token: impl AsRef<str>, principal: Principal) -> Self {
        self.tokens
            .insert(Sha256::digest(token.as_ref().as_bytes()).into(), principal);
        self
    }

    /// Reads a table: one `TOKEN SUBJECT [SCOPE...]` per line, separated by
    /// whitespace; blank lines and lines starting with `#` are skipped.
    pub fn parse(text: &str) -> Result<Self, AuthConfigError> {
        let mut tokens = StaticTokens::new();
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut fields = line.split_whitespace();
            let (Some(token), Some(subject)) = (fields.next(), fields.next()) else {
                return Err(AuthConfigError::Tokens {
                    line: index + 1,
                    reason: "expected TOKEN SUBJECT [SCOPE...]".into(),
                });
            };
            tokens = tokens.token(token, Principal::new(subject).with_scopes(fields));
        }
        Ok(tokens)
    }

    /// Reads a table from a file (see [`StaticTokens::parse`]).
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, AuthConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| AuthConfigError::Io {
            path: path.display().to_string(),
            source,
        })?;
        StaticTokens::parse(&text)
    }

    /// Tokens known.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// True when no token is known.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }
}

impl Authenticator for StaticTokens {
    fn authenticate<'a>(
        &'a self,
        request: &'a Parts,
    ) -> BoxFuture<'a, Result<Principal, AuthError>> {
        let outcome = bearer_token(request).and_then(|token| {
            let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
            self.tokens
                .get(&digest)
                .cloned()
                .ok_or_else(|| AuthError::InvalidToken("The access token is not valid".into()))
        });
        Box::pin(std::future::ready(outcome))
    }
}

// ---------------------------------------------------------------------------
// JWT access tokens

/// The default clock-skew allowance for `exp` and `nbf`: 30 seconds.
pub const DEFAULT_JWT_LEEWAY: Duration = Duration::from_secs(30);

struct VerifyingKey {
    kid: Option<String>,
    alg: Algorithm,
    key: DecodingKey,
}

/// Verifies JWT access tokens (RFC 9068 style): the signature with a
/// configured key, `iss` equal to a configured issuer, `aud` containing
/// this resource's URI, `exp` (required) and `nbf` (when present) with a
/// small leeway, and a `sub`. Scopes come from `scope` (space-separated)
/// or `scp` (a string or an array).
///
/// HS256 uses a shared secret of at least 32 bytes; asymmetric algorithms
/// (RS256, ES256, and the others a JWKS key declares) use keys from a JWKS
/// document, chosen by `kid`. A token whose `alg` has no configured key is
/// refused, so an HMAC token can never be checked against a public key.
///
/// ```
/// use toolwire_server::auth::JwtVerifier;
/// let verifier = JwtVerifier::new("https://auth.example.com", "https://mcp.example.com/mcp")
///     .hs256_secret(b"a shared secret of at least 32 bytes!!")
///     .unwrap();
/// # drop(verifier);
/// ```
pub struct JwtVerifier {
    issuers: Vec<String>,
    audience: String,
    hmac: Option<DecodingKey>,
    keys: Vec<VerifyingKey>,
    leeway: Duration,
}

impl fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JwtVerifier")
            .field("issuers", &self.issuers)
            .field("audience", &self.audience)
            .field("hs256", &self.hmac.is_some())
            .field(
                "keys",
                &self
                    .keys
                    .iter()
                    .map(|k| (k.kid.clone(), k.alg))
                    .collect::<Vec<_>>(),
            )
            .field("leeway", &self.leeway)
            .finish()
    }
}

#[derive(Deserialize)]
struct Claims {
    /// Required by the validation; optional here so its absence is named.
    #[serde(default)]
    sub: Option<String>,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    scp: Option<ScopeClaim>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ScopeClaim {
    One(String),
    Many(Vec<String>),
}

impl JwtVerifier {
    /// Tokens issued by `issuer` for `audience` (this resource's canonical
    /// URI, the same as [`AuthConfig::new`]'s). Add keys before use.
    pub fn new(issuer: impl Into<String>, audience: impl Into<String>) -> Self {
        JwtVerifier {
            issuers: vec![issuer.into()],
            audience: audience.into(),
            hmac: None,
            keys: Vec::new(),
            leeway: DEFAULT_JWT_LEEWAY,
        }
    }

    /// Accepts another issuer too.
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuers.push(issuer.into());
        self
    }

    /// Accepts HS256 tokens signed with `secret` (at least 32 bytes).
    pub fn hs256_secret(mut self, secret: &[u8]) -> Result<Self, AuthConfigError> {
        if secret.len() < 32 {
            return Err(AuthConfigError::Key(format!(
                "an HS256 secret must be at least 32 bytes, got {}",
                secret.len()
            )));
        }
        self.hmac = Some(DecodingKey::from_secret(secret));
        Ok(self)
    }

    /// Adds the signing keys of a JWKS document (RFC 7517). Keys marked for
    /// encryption and symmetric (`oct`) keys are skipped; a key without
    /// `alg` is RS256 (RSA) or ES256/ES384 (EC P-256/P-384) or EdDSA.
    pub fn jwks(mut self, json: &str) -> Result<Self, AuthConfigError> {
        let set: JwkSet = serde_json::from_str(json)
            .map_err(|e| AuthConfigError::Key(format!("not a JWKS document: {e}")))?;
        let before = self.keys.len();
        for jwk in &set.keys {
            if matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)) {
                continue;
            }
            let alg = match (&jwk.common.key_algorithm, &jwk.algorithm) {
                (_, AlgorithmParameters::OctetKey(_)) => continue,
                (Some(alg), _) => match key_algorithm(*alg) {
                    Some(alg) => alg,
                    None => continue,
                },
                (None, AlgorithmParameters::RSA(_)) => Algorithm::RS256,
                (None, AlgorithmParameters::EllipticCurve(ec)) => match ec.curve {
                    EllipticCurve::P256 => Algorithm::ES256,
                    EllipticCurve::P384 => Algorithm::ES384,
                    _ => continue,
                },
                (None, AlgorithmParameters::OctetKeyPair(_)) => Algorithm::EdDSA,
            };
            let key = DecodingKey::from_jwk(jwk).map_err(|e| {
                AuthConfigError::Key(format!(
                    "JWKS key {:?}: {e}",
                    jwk.common.key_id.as_deref().unwrap_or("(no kid)")
                ))
            })?;
            self.keys.push(VerifyingKey {
                kid: jwk.common.key_id.clone(),
                alg,
                key,
            });
        }
        if self.keys.len() == before {
            return Err(AuthConfigError::Key(
                "the JWKS document has no usable signing key".into(),
            ));
        }
        Ok(self)
    }

    /// Adds the keys of a JWKS file.
    pub fn jwks_file(self, path: impl AsRef<Path>) -> Result<Self, AuthConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| AuthConfigError::Io {
            path: path.display().to_string(),
            source,
        })?;
        self.jwks(&text)
    }

    /// Clock-skew allowance for `exp` and `nbf` (default 30 s).
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// Verifies `token` and returns its principal.
    pub fn verify(&self, token: &str) -> Result<Principal, AuthError> {
        let invalid = |why: &str| AuthError::InvalidToken(why.to_owned());
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| invalid("The access token is malformed"))?;
        let candidates: Vec<&DecodingKey> = if header.alg == Algorithm::HS256 {
            self.hmac.iter().collect()
        } else {
            self.keys
                .iter()
                .filter(|k| k.alg == header.alg)
                .filter(|k| header.kid.is_none() || k.kid == header.kid)
                .map(|k| &k.key)
                .collect()
        };
        if candidates.is_empty() {
            return Err(invalid(if header.kid.is_some() {
                "The access token was signed with an unknown key"
            } else {
                "The access token algorithm is not accepted"
            }));
        }
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&self.issuers);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.validate_nbf = true;
        validation.leeway = self.leeway.as_secs();
        let mut last = None;
        for key in candidates {
            match jsonwebtoken::decode::<Claims>(token, key, &validation) {
                Ok(data) => return Ok(principal_of(data.claims)),
                Err(error) => last = Some(error),
            }
        }
        let kind = last.map(|e| e.into_kind());
        use jsonwebtoken::errors::ErrorKind as K;
        Err(invalid(match kind {
            Some(K::ExpiredSignature) => "The access token expired",
            Some(K::ImmatureSignature) => "The access token is not valid yet",
            Some(K::InvalidAudience) => "The access token was not issued for this resource",
            Some(K::InvalidIssuer) => "The access token was not issued by a trusted issuer",
            Some(K::InvalidSignature) => "The access token signature is invalid",
            Some(K::MissingRequiredClaim(claim)) => {
                return Err(AuthError::InvalidToken(format!(
                    "The access token has no {claim} claim"
                )));
            }
            Some(K::InvalidAlgorithm) => "The access token algorithm is not accepted",
            _ => "The access token is malformed",
        }))
    }
}

fn key_algorithm(alg: KeyAlgorithm) -> Option<Algorithm> {
    Some(match alg {
        KeyAlgorithm::RS256 => Algorithm::RS256,
        KeyAlgorithm::RS384 => Algorithm::RS384,
        KeyAlgorithm::RS512 => Algorithm::RS512,
        KeyAlgorithm::PS256 => Algorithm::PS256,
        KeyAlgorithm::PS384 => Algorithm::PS384,
        KeyAlgorithm::PS512 => Algorithm::PS512,
        KeyAlgorithm::ES256 => Algorithm::ES256,
        KeyAlgorithm::ES384 => Algorithm::ES384,
        KeyAlgorithm::EdDSA => Algorithm::EdDSA,
        _ => return None,
    })
}

fn principal_of(claims: Claims) -> Principal {
    let mut scopes: Vec<String> = claims
        .scope
        .iter()
        .flat_map(|s| s.split_whitespace().map(str::to_owned))
        .collect();
    match claims.scp {
        Some(ScopeClaim::One(s)) => scopes.extend(s.split_whitespace().map(str::to_owned)),
        Some(ScopeClaim::Many(list)) => scopes.extend(list),
        None => {}
    }
    Principal::new(claims.sub.unwrap_or_default()).with_scopes(scopes)
}

impl Authenticator for JwtVerifier {
    fn authenticate<'a>(
        &'a self,
        request: &'a Parts,
    ) -> BoxFuture<'a, Result<Principal, AuthError>> {
        let outcome = bearer_token(request).and_then(|token| self.verify(token));
        Box::pin(std::future::ready(outcome))
    }
}

// ---------------------------------------------------------------------------
// The resource server configuration

/// Authentication settings of the HTTP endpoint: who verifies tokens, this
/// resource's identity, and its protected resource metadata (RFC 9728).
#[derive(Debug, Clone)]
pub struct AuthConfig {
    resource: String,
    metadata_path: String,
    metadata_url: String,
    authorization_servers: Vec<String>,
    scopes_supported: Option<Vec<String>>,
    required_scopes: Vec<String>,
    implied: Vec<(String, Vec<String>)>,
    resource_name: Option<String>,
    resource_documentation: Option<String>,
    authenticator: Arc<dyn Authenticator>,
}

impl AuthConfig {
    /// Authentication for the resource `resource` — the endpoint's canonical
    /// URI, e.g. `https://mcp.example.com/mcp`, which tokens must name as
    /// their audience — with `authenticator` checking credentials.
    pub fn new(
        resource: impl Into<String>,
        authenticator: impl Authenticator,
    ) -> Result<Self, AuthConfigError> {
        AuthConfig::with_authenticator(resource, Arc::new(authenticator))
    }

    /// Like [`AuthConfig::new`] with a shared authenticator.
    pub fn with_authenticator(
        resource: impl Into<String>,
        authenticator: Arc<dyn Authenticator>,
    ) -> Result<Self, AuthConfigError> {
        let resource = resource.into();
        let bad = |reason: &str| AuthConfigError::Resource {
            uri: resource.clone(),
            reason: reason.to_owned(),
        };
        if resource.contains('#') {
            return Err(bad("a resource URI has no fragment"));
        }
        let uri: http::Uri = resource
            .parse()
            .map_err(|e: http::uri::InvalidUri| bad(&e.to_string()))?;
        let scheme = uri.scheme_str().ok_or_else(|| bad("it is not absolute"))?;
        if scheme != "https" && scheme != "http" {
            return Err(bad("the scheme must be https (or http for local testing)"));
        }
        let authority = uri.authority().ok_or_else(|| bad("it has no host"))?;
        if uri.query().is_some() {
            return Err(bad("a resource URI should have no query"));
        }
        let path = uri.path().trim_end_matches('/');
        let metadata_path = format!("{WELL_KNOWN_PRM}{path}");
        let metadata_url = format!("{scheme}://{authority}{metadata_path}");
        Ok(AuthConfig {
            resource,
            metadata_path,
            metadata_url,
            authorization_servers: Vec::new(),
            scopes_supported: None,
            required_scopes: Vec::new(),
            implied: Vec::new(),
            resource_name: None,
            resource_documentation: None,
            authenticator,
        })
    }

    /// Adds an authorization server (its issuer URL) to the metadata; MCP
    /// requires at least one.
    pub fn authorization_server(mut self, issuer: impl Into<String>) -> Self {
        self.authorization_servers.push(issuer.into());
        self
    }

    /// The `scopes_supported` of the metadata (default: the required scopes).
    pub fn scopes_supported<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes_supported = Some(scopes.into_iter().map(Into::into).collect());
        self
    }

    setters! {
        /// Scopes every request needs; a token without them gets 403
        /// `insufficient_scope` naming them all.
        require_scopes;
    }

    /// Declares a scope hierarchy: a token granted `broad` also holds each
    /// of `narrower` (applied transitively before any scope check).
    pub fn scope_implies<I, S>(mut self, broad: impl Into<String>, narrower: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.implied
            .push((broad.into(), narrower.into_iter().map(Into::into).collect()));
        self
    }

    /// A human-readable name for the metadata's `resource_name`.
    pub fn resource_name(mut self, name: impl Into<String>) -> Self {
        self.resource_name = Some(name.into());
        self
    }

    /// A documentation URL for the metadata's `resource_documentation`.
    pub fn resource_documentation(mut self, url: impl Into<String>) -> Self {
        self.resource_documentation = Some(url.into());
        self
    }

    /// The resource's canonical URI.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// Where the metadata document is served, as a path.
    pub fn metadata_path(&self) -> &str {
        &self.metadata_path
    }

    /// Where the metadata document is served, as a URL (the
    /// `resource_metadata` of every challenge).
    pub fn metadata_url(&self) -> &str {
        &self.metadata_url
    }

    /// The protected resource metadata document (RFC 9728 §2).
    pub fn metadata_document(&self) -> Value {
        let mut doc = serde_json::Map::new();
        doc.insert("resource".into(), json!(self.resource));
        doc.insert(
            "authorization_servers".into(),
            json!(self.authorization_servers),
        );
        let scopes = self
            .scopes_supported
            .clone()
            .or_else(|| (!self.required_scopes.is_empty()).then(|| self.required_scopes.clone()));
        if let Some(scopes) = scopes {
            doc.insert("scopes_supported".into(), json!(scopes));
        }
        doc.insert("bearer_methods_supported".into(), json!(["header"]));
        if let Some(name) = &self.resource_name {
            doc.insert("resource_name".into(), json!(name));
        }
        if let Some(url) = &self.resource_documentation {
            doc.insert("resource_documentation".into(), json!(url));
        }
        Value::Object(doc)
    }

    /// Adds the scopes implied by those granted, until nothing changes.
    fn expand(&self, mut principal: Principal) -> Principal {
        loop {
            let mut added = false;
            for (broad, narrower) in &self.implied {
                if principal.has_scope(broad) {
                    for scope in narrower {
                        if !principal.has_scope(scope) {
                            principal.scopes.push(scope.clone());
                            added = true;
                        }
                    }
                }
            }
            if !added {
                return principal;
            }
        }
    }

    /// Authenticates `request` and checks the required scopes; the refusal
    /// is the finished HTTP response.
    pub(crate) async fn admit(&self, request: &Parts) -> Result<Principal, Response> {
        let principal = match self.authenticator.authenticate(request).await {
            Ok(principal) => self.expand(principal),
            Err(error) => {
                let detail = match &error {
                    AuthError::Missing => "no access token",
                    AuthError::InvalidToken(d) | AuthError::InvalidRequest(d) => d,
                    AuthError::InsufficientScope { description, .. } => description,
                };
                let reason = match error {
                    AuthError::InsufficientScope { .. } => Denial::InsufficientScope,
                    _ => Denial::AuthFailed,
                };
                audit::denial(None, reason, detail);
                return Err(self.refuse(&error));
            }
        };
        let missing: Vec<&String> = self
            .required_scopes
            .iter()
            .filter(|s| !principal.has_scope(s))
            .collect();
        if !missing.is_empty() {
            let description = format!(
                "This server needs the scope{} {}",
                if missing.len() == 1 { "" } else { "s" },
                missing
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(" ")
            );
            audit::denial(Some(&principal), Denial::InsufficientScope, &description);
            return Err(self.refuse(&AuthError::InsufficientScope {
                scopes: self.required_scopes.clone(),
                description,
            }));
        }
        Ok(principal)
    }

    /// The `WWW-Authenticate` value for `error`.
    pub fn challenge(&self, error: &AuthError) -> String {
        let (code, scope, description) = match error {
            AuthError::Missing => (None, self.required_scopes.clone(), None),
            AuthError::InvalidToken(d) => (Some("invalid_token"), Vec::new(), Some(d.as_str())),
            AuthError::InvalidRequest(d) => (Some("invalid_request"), Vec::new(), Some(d.as_str())),
            AuthError::InsufficientScope {
                scopes,
                description,
            } => (
                Some("insufficient_scope"),
                scopes.clone(),
                Some(description.as_str()),
            ),
        };
        let mut params = Vec::new();
        if let Some(code) = code {
            params.push(format!("error=\"{code}\""));
        }
        if !scope.is_empty() {
            params.push(format!("scope=\"{}\"", quotable(&scope.join(" "))));
        }
        params.push(format!(
            "resource_metadata=\"{}\"",
            quotable(&self.metadata_url)
        ));
        if let Some(description) = description {
            params.push(format!("error_description=\"{}\"", quotable(description)));
        }
        format!("Bearer {}", params.join(", "))
    }

    fn refuse(&self, error: &AuthError) -> Response {
        let (status, message) = match error {
            AuthError::Missing => (
                StatusCode::UNAUTHORIZED,
                "Unauthorized: an access token is required".to_owned(),
            ),
            AuthError::InvalidToken(d) => (StatusCode::UNAUTHORIZED, format!("Unauthorized: {d}")),
            AuthError::InvalidRequest(d) => (StatusCode::BAD_REQUEST, format!("Bad request: {d}")),
            AuthError::InsufficientScope { description, .. } => {
                (StatusCode::FORBIDDEN, format!("Forbidden: {description}"))
            }
        };
        let body = json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": ErrorObject::new(code::INVALID_REQUEST, message),
        });
        let mut response = Response::new(Body::from(body.to_string()));
        *response.status_mut() = status;
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Ok(value) = HeaderValue::from_str(&self.challenge(error)) {
            headers.insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }

    /// The GET route serving the metadata document.
    pub(crate) fn metadata_route<S>(&self) -> axum::routing::MethodRouter<S>
    where
        S: Clone + Send + Sync + 'static,
    {
        let body = bytes::Bytes::from(self.metadata_document().to_string());
        axum::routing::get(move || {
            let body = body.clone();
            async move {
                let mut response = Response::new(Body::from(body));
                response.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                response
            }
        })
    }

    /// True when the metadata names no authorization server (MCP requires one).
    pub(crate) fn lacks_authorization_server(&self) -> bool {
        self.authorization_servers.is_empty()
    }
}

/// Text safe inside a quoted-string of an auth parameter (RFC 6750 §3:
/// `%x20-21 / %x23-5B / %x5D-7E`); anything else becomes `?`.
fn quotable(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            ' ' | '!' | '#'..='[' | ']'..='~' => c,
            _ => '?',
        })
        .collect()
}

#[cfg(test)]
mod tests {
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
