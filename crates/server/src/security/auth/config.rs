//! [`AuthConfig`]: the resource server configuration of the HTTP endpoint
//! and its protected resource metadata (RFC 9728).

use super::*;

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
    pub(super) fn expand(&self, mut principal: Principal) -> Principal {
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
pub(super) fn quotable(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            ' ' | '!' | '#'..='[' | ']'..='~' => c,
            _ => '?',
        })
        .collect()
}
