//! Client registration: pre-registered credentials, a Client ID Metadata
//! Document URL, or Dynamic Client Registration (RFC 7591), in the order
//! the MCP specification gives.

use std::fmt;

use reqwest::header::CONTENT_TYPE;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::AuthError;
use super::discovery::AuthorizationServerMetadata;
use super::fetch::{parse_url, send_json};

/// How the client authenticates at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TokenAuthMethod {
    /// HTTP Basic with the form-encoded id and secret (RFC 6749 §2.3.1).
    ClientSecretBasic,
    /// `client_id` and `client_secret` in the request body.
    ClientSecretPost,
    /// A public client: `client_id` in the body, no secret.
    None,
}

impl TokenAuthMethod {
    /// The registered name, e.g. `client_secret_basic`.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenAuthMethod::ClientSecretBasic => "client_secret_basic",
            TokenAuthMethod::ClientSecretPost => "client_secret_post",
            TokenAuthMethod::None => "none",
        }
    }

    /// The method for a registered name this client implements.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "client_secret_basic" => Some(TokenAuthMethod::ClientSecretBasic),
            "client_secret_post" => Some(TokenAuthMethod::ClientSecretPost),
            "none" => Some(TokenAuthMethod::None),
            _ => None,
        }
    }
}

/// OIDC `application_type` sent with Dynamic Client Registration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ApplicationType {
    /// Desktop, mobile and CLI clients, and web apps served on localhost.
    #[default]
    Native,
    /// Browser-based applications served from a remote host.
    Web,
}

impl ApplicationType {
    /// `native` or `web`.
    pub fn as_str(self) -> &'static str {
        match self {
            ApplicationType::Native => "native",
            ApplicationType::Web => "web",
        }
    }
}

/// Where a client identity came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientSource {
    /// Configured by the user for one authorization server.
    PreRegistered,
    /// The URL of a Client ID Metadata Document (portable across servers).
    MetadataDocument,
    /// Issued by the authorization server's registration endpoint.
    Dynamic,
}

/// A client identity at one authorization server.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientCredentials {
    /// The client identifier.
    pub client_id: String,
    /// The client secret, for confidential clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// The token endpoint authentication method the server registered, if it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_method: Option<String>,
    /// When the secret expires (seconds since the epoch; 0 or absent: never).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret_expires_at: Option<u64>,
    /// The redirect URIs registered.
    #[serde(default)]
    pub redirect_uris: Vec<String>,
    /// Where this identity came from.
    pub source: ClientSource,
}

impl fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientCredentials")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .field(
                "token_endpoint_auth_method",
                &self.token_endpoint_auth_method,
            )
            .field("redirect_uris", &self.redirect_uris)
            .field("source", &self.source)
            .finish()
    }
}

impl ClientCredentials {
    /// A public client known by `client_id` alone.
    pub fn public(client_id: impl Into<String>, source: ClientSource) -> Self {
        ClientCredentials {
            client_id: client_id.into(),
            client_secret: None,
            token_endpoint_auth_method: None,
            client_secret_expires_at: None,
            redirect_uris: Vec::new(),
            source,
        }
    }

    /// How to authenticate at `server`'s token endpoint: the registered
    /// method when the server named one, else the first of
    /// `client_secret_basic` and `client_secret_post` it lists (`none` for
    /// a client without a secret).
    pub fn auth_method(&self, server: &AuthorizationServerMetadata) -> TokenAuthMethod {
        if self.client_secret.is_none() {
            return TokenAuthMethod::None;
        }
        if let Some(m) = self
            .token_endpoint_auth_method
            .as_deref()
            .and_then(TokenAuthMethod::from_name)
        {
            return m;
        }
        let supported = server.token_auth_methods();
        if supported.iter().any(|m| m == "client_secret_basic") {
            TokenAuthMethod::ClientSecretBasic
        } else if supported.iter().any(|m| m == "client_secret_post") {
            TokenAuthMethod::ClientSecretPost
        } else if supported.iter().any(|m| m == "none") {
            TokenAuthMethod::None
        } else {
            TokenAuthMethod::ClientSecretBasic
        }
    }

    /// True when the secret has expired (`now` in seconds since the epoch).
    pub fn expired(&self, now: u64) -> bool {
        matches!(self.client_secret_expires_at, Some(t) if t != 0 && t <= now)
    }
}

/// Client credentials registered out of band with one authorization server.
#[derive(Clone, PartialEq, Eq)]
pub struct PreRegistered {
    /// The issuer identifier of the server they are valid at; they are never
    /// sent anywhere else.
    pub issuer: String,
    /// The client identifier.
    pub client_id: String,
    /// The secret, for confidential clients.
    pub client_secret: Option<String>,
}

impl fmt::Debug for PreRegistered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreRegistered")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

impl PreRegistered {
    /// Credentials for the server whose issuer identifier is `issuer`.
    pub fn new(issuer: impl Into<String>, client_id: impl Into<String>) -> Self {
        PreRegistered {
            issuer: issuer.into(),
            client_id: client_id.into(),
            client_secret: None,
        }
    }

    /// With a client secret.
    pub fn secret(mut self, secret: impl Into<String>) -> Self {
        self.client_secret = Some(secret.into());
        self
    }

    pub(crate) fn credentials(&self) -> ClientCredentials {
        ClientCredentials {
            client_secret: self.client_secret.clone(),
            ..ClientCredentials::public(self.client_id.clone(), ClientSource::PreRegistered)
        }
    }
}

/// What the client says about itself when it registers (RFC 7591 §2), and
/// in the Client ID Metadata Document it hosts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientMetadata {
    /// `client_name`, shown to the user on the consent screen.
    pub client_name: String,
    /// `redirect_uris`.
    pub redirect_uris: Vec<String>,
    /// `grant_types`.
    pub grant_types: Vec<String>,
    /// `token_endpoint_auth_method`.
    pub token_endpoint_auth_method: TokenAuthMethod,
    /// `application_type` (OpenID Connect Registration).
    pub application_type: ApplicationType,
    /// `client_uri`, if any.
    pub client_uri: Option<String>,
}

impl ClientMetadata {
    /// The registration request body (RFC 7591 §3.1).
    pub fn registration_request(&self) -> Value {
        let mut body = json!({
            "client_name": self.client_name,
            "redirect_uris": self.redirect_uris,
            "grant_types": self.grant_types,
            "response_types": ["code"],
            "token_endpoint_auth_method": self.token_endpoint_auth_method.as_str(),
            "application_type": self.application_type.as_str(),
        });
        if let Some(uri) = &self.client_uri {
            body["client_uri"] = json!(uri);
        }
        body
    }

    /// The Client ID Metadata Document to host at `client_id` (an HTTPS URL
    /// with a path; the document's `client_id` must equal it exactly).
    pub fn metadata_document(&self, client_id: &str) -> Value {
        let mut doc = self.registration_request();
        doc["client_id"] = json!(client_id);
        doc["token_endpoint_auth_method"] = json!("none");
        doc
    }
}

/// Checks that `url` can serve as a Client ID Metadata Document URL: HTTPS
/// with a path.
pub fn validate_metadata_document_url(url: &str) -> Result<(), AuthError> {
    let parsed = parse_url(url, "client metadata document")?;
    if parsed.scheme() != "https" || parsed.path().trim_matches('/').is_empty() {
        return Err(AuthError::Registration(format!(
            "client metadata document URL {url:?} must be HTTPS and have a path"
        )));
    }
    if parsed.fragment().is_some() {
        return Err(AuthError::Registration(format!(
            "client metadata document URL {url:?} has a fragment"
        )));
    }
    Ok(())
}

/// Registers at `server`'s registration endpoint (RFC 7591).
pub async fn register(
    client: &reqwest::Client,
    server: &AuthorizationServerMetadata,
    metadata: &ClientMetadata,
) -> Result<ClientCredentials, AuthError> {
    let endpoint = server.registration_endpoint.as_deref().ok_or_else(|| {
        AuthError::Registration(format!("{} has no registration endpoint", server.issuer))
    })?;
    let url = parse_url(endpoint, "registration endpoint")?;
    let body = serde_json::to_vec(&metadata.registration_request())
        .map_err(|e| AuthError::Registration(e.to_string()))?;
    let reply = send_json(
        client
            .post(url.clone())
            .header(CONTENT_TYPE, "application/json")
            .body(body),
        &url,
    )
    .await?;
    if !reply.status.is_success() {
        let (error, description) = oauth_error(reply.body.as_ref());
        return Err(AuthError::Registration(format!(
            "HTTP {}: {}{}",
            reply.status.as_u16(),
            error.unwrap_or_else(|| "no error code".into()),
            description.map(|d| format!(" ({d})")).unwrap_or_default()
        )));
    }
    #[derive(Deserialize)]
    struct Registered {
        client_id: String,
        client_secret: Option<String>,
        token_endpoint_auth_method: Option<String>,
        client_secret_expires_at: Option<u64>,
        redirect_uris: Option<Vec<String>>,
    }
    let registered: Registered = reply
        .body
        .ok_or_else(|| AuthError::Registration("the registration response is not JSON".into()))
        .and_then(|v| {
            serde_json::from_value(v)
                .map_err(|e| AuthError::Registration(format!("invalid registration response: {e}")))
        })?;
    if registered.client_id.is_empty() {
        return Err(AuthError::Registration("empty client_id".into()));
    }
    Ok(ClientCredentials {
        client_id: registered.client_id,
        client_secret: registered.client_secret.filter(|s| !s.is_empty()),
        token_endpoint_auth_method: registered.token_endpoint_auth_method,
        client_secret_expires_at: registered.client_secret_expires_at,
        redirect_uris: registered
            .redirect_uris
            .unwrap_or_else(|| metadata.redirect_uris.clone()),
        source: ClientSource::Dynamic,
    })
}

/// `error` and `error_description` of an OAuth error body.
pub(crate) fn oauth_error(body: Option<&Value>) -> (Option<String>, Option<String>) {
    let field = |name: &str| {
        body.and_then(|b| b.get(name))
            .and_then(Value::as_str)
            .map(|s| s.chars().take(300).collect::<String>())
    };
    (field("error"), field("error_description"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(methods: Option<&[&str]>) -> AuthorizationServerMetadata {
        serde_json::from_value(json!({
            "issuer": "https://as.example",
            "token_endpoint_auth_methods_supported": methods,
        }))
        .unwrap()
    }

    #[test]
    fn auth_method_follows_registration_then_server() {
        let mut c = ClientCredentials::public("id", ClientSource::Dynamic);
        assert_eq!(c.auth_method(&server(None)), TokenAuthMethod::None);
        c.client_secret = Some("s".into());
        assert_eq!(
            c.auth_method(&server(None)),
            TokenAuthMethod::ClientSecretBasic
        );
        assert_eq!(
            c.auth_method(&server(Some(&["client_secret_post"]))),
            TokenAuthMethod::ClientSecretPost
        );
        assert_eq!(
            c.auth_method(&server(Some(&["private_key_jwt", "client_secret_basic"]))),
            TokenAuthMethod::ClientSecretBasic
        );
        c.token_endpoint_auth_method = Some("client_secret_post".into());
        assert_eq!(
            c.auth_method(&server(Some(&["client_secret_basic"]))),
            TokenAuthMethod::ClientSecretPost
        );
    }

    #[test]
    fn registration_request_has_application_type() {
        let m = ClientMetadata {
            client_name: "toolwire".into(),
            redirect_uris: vec!["http://127.0.0.1:1/callback".into()],
            grant_types: vec!["authorization_code".into(), "refresh_token".into()],
            token_endpoint_auth_method: TokenAuthMethod::None,
            application_type: ApplicationType::Native,
            client_uri: None,
        };
        let body = m.registration_request();
        assert_eq!(body["application_type"], "native");
        assert_eq!(
            body["grant_types"],
            json!(["authorization_code", "refresh_token"])
        );
        let doc = m.metadata_document("https://app.example/client.json");
        assert_eq!(doc["client_id"], "https://app.example/client.json");
    }

    #[test]
    fn metadata_document_urls() {
        assert!(validate_metadata_document_url("https://app.example/client.json").is_ok());
        for bad in [
            "http://app.example/c.json",
            "https://app.example",
            "https://app.example/",
            "x",
        ] {
            assert!(validate_metadata_document_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn secrets_stay_out_of_debug() {
        let p = PreRegistered::new("https://as", "id").secret("hunter2");
        assert!(!format!("{p:?}").contains("hunter2"));
        assert!(!format!("{:?}", p.credentials()).contains("hunter2"));
    }
}
