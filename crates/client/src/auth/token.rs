//! The token endpoint: exchanging an authorization code, refreshing, and
//! authenticating the client (`client_secret_basic`, `client_secret_post`, `none`).

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::AuthError;
use super::discovery::AuthorizationServerMetadata;
use super::fetch::{form, parse_url, send_json};
use super::registration::{ClientCredentials, TokenAuthMethod, oauth_error};

/// Seconds since the Unix epoch.
pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Tokens from one authorization, for one resource at one authorization server.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenSet {
    /// The access token, sent as `Authorization: Bearer …`.
    pub access_token: String,
    /// The refresh token, if the server issued one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires (seconds since the epoch), if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// The scopes granted (the token response's `scope`, else those requested).
    #[serde(default)]
    pub scopes: Vec<String>,
    /// The scopes requested for this token, kept for step-up unions.
    #[serde(default)]
    pub requested_scopes: Vec<String>,
}

impl fmt::Debug for TokenSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenSet")
            .field("access_token", &"<redacted>")
            .field(
                "refresh_token",
                &self.refresh_token.as_ref().map(|_| "<redacted>"),
            )
            .field("expires_at", &self.expires_at)
            .field("scopes", &self.scopes)
            .field("requested_scopes", &self.requested_scopes)
            .finish()
    }
}

impl TokenSet {
    /// True when the access token expires within `margin` from now.
    pub fn expires_within(&self, margin: Duration) -> bool {
        self.expires_at
            .is_some_and(|at| at <= now().saturating_add(margin.as_secs()))
    }
}

/// Exchanges an authorization code (RFC 6749 §4.1.3, with PKCE and RFC 8707 `resource`).
#[allow(clippy::too_many_arguments)]
pub async fn exchange_code(
    http: &reqwest::Client,
    server: &AuthorizationServerMetadata,
    client: &ClientCredentials,
    code: &str,
    code_verifier: &str,
    redirect_uri: &str,
    resource: &str,
    requested_scopes: &[String],
) -> Result<TokenSet, AuthError> {
    let params = [
        ("grant_type", "authorization_code"),
        ("code", code),
        ("code_verifier", code_verifier),
        ("redirect_uri", redirect_uri),
        ("resource", resource),
    ];
    let reply = token_request(http, server, client, &params).await?;
    reply.into_tokens(requested_scopes, None)
}

/// Uses a refresh token (RFC 6749 §6) for new tokens; keeps the old refresh
/// token when the server does not rotate it.
pub async fn refresh(
    http: &reqwest::Client,
    server: &AuthorizationServerMetadata,
    client: &ClientCredentials,
    tokens: &TokenSet,
    resource: &str,
) -> Result<TokenSet, AuthError> {
    let refresh_token = tokens
        .refresh_token
        .as_deref()
        .ok_or_else(|| AuthError::Token {
            error: "invalid_grant".into(),
            description: Some("no refresh token".into()),
        })?;
    let params = [
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh_token),
        ("resource", resource),
    ];
    let reply = token_request(http, server, client, &params).await?;
    let mut fresh = reply.into_tokens(&tokens.requested_scopes, Some(&tokens.scopes))?;
    if fresh.refresh_token.is_none() {
        fresh.refresh_token = tokens.refresh_token.clone();
    }
    Ok(fresh)
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    token_type: String,
    #[serde(default)]
    expires_in: Option<Value>,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    scope: Option<String>,
}

impl TokenResponse {
    fn into_tokens(
        self,
        requested: &[String],
        previous_scopes: Option<&[String]>,
    ) -> Result<TokenSet, AuthError> {
        if !self.token_type.eq_ignore_ascii_case("bearer") {
            return Err(AuthError::Token {
                error: "unsupported_token_type".into(),
                description: Some(format!("token_type {:?} is not Bearer", self.token_type)),
            });
        }
        if self.access_token.is_empty() {
            return Err(AuthError::Token {
                error: "invalid_response".into(),
                description: Some("empty access_token".into()),
            });
        }
        // Lenient: some servers send expires_in as a string or a float.
        let expires_in = match self.expires_in {
            Some(Value::Number(n)) => n.as_f64().map(|f| f.max(0.0) as u64),
            Some(Value::String(s)) => s.trim().parse::<u64>().ok(),
            _ => None,
        };
        let scopes = match self.scope.as_deref() {
            Some(s) => super::challenge::split_scope(s),
            None => previous_scopes.map_or_else(|| requested.to_vec(), <[String]>::to_vec),
        };
        Ok(TokenSet {
            access_token: self.access_token,
            refresh_token: self.refresh_token.filter(|r| !r.is_empty()),
            expires_at: expires_in.map(|s| now().saturating_add(s)),
            scopes,
            requested_scopes: requested.to_vec(),
        })
    }
}

async fn token_request(
    http: &reqwest::Client,
    server: &AuthorizationServerMetadata,
    client: &ClientCredentials,
    params: &[(&str, &str)],
) -> Result<TokenResponse, AuthError> {
    let endpoint = server
        .token_endpoint
        .as_deref()
        .ok_or_else(|| AuthError::Discovery(format!("{} has no token endpoint", server.issuer)))?;
    let url = parse_url(endpoint, "token endpoint")?;
    let mut pairs = params.to_vec();
    let mut request = http.post(url.clone());
    match client.auth_method(server) {
        TokenAuthMethod::None => pairs.push(("client_id", &client.client_id)),
        TokenAuthMethod::ClientSecretPost => {
            pairs.push(("client_id", &client.client_id));
            pairs.push((
                "client_secret",
                client.client_secret.as_deref().unwrap_or(""),
            ));
        }
        TokenAuthMethod::ClientSecretBasic => {
            let secret = client.client_secret.as_deref().unwrap_or("");
            request = request.header(AUTHORIZATION, basic_auth(&client.client_id, secret)?);
        }
    }
    let request = request
        .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(form(&pairs));
    let reply = send_json(request, &url).await?;
    if !reply.status.is_success() {
        let (error, description) = oauth_error(reply.body.as_ref());
        return Err(AuthError::Token {
            error: error.unwrap_or_else(|| format!("HTTP {}", reply.status.as_u16())),
            description,
        });
    }
    let body = reply.body.ok_or_else(|| AuthError::Token {
        error: "invalid_response".into(),
        description: Some("the token response is not JSON".into()),
    })?;
    serde_json::from_value(body).map_err(|e| AuthError::Token {
        error: "invalid_response".into(),
        description: Some(e.to_string()),
    })
}

/// `Basic base64(urlencode(id) ":" urlencode(secret))` (RFC 6749 §2.3.1).
fn basic_auth(id: &str, secret: &str) -> Result<HeaderValue, AuthError> {
    let encode = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    let credentials = STANDARD.encode(format!("{}:{}", encode(id), encode(secret)));
    let mut value =
        HeaderValue::from_str(&format!("Basic {credentials}")).map_err(|e| AuthError::Token {
            error: "invalid_client".into(),
            description: Some(e.to_string()),
        })?;
    value.set_sensitive(true);
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_auth_form_encodes_both_parts() {
        let v = basic_auth("my client", "p:ss/é").unwrap();
        let b64 = v.to_str().unwrap().strip_prefix("Basic ").unwrap();
        let decoded = String::from_utf8(STANDARD.decode(b64).unwrap()).unwrap();
        assert_eq!(decoded, "my+client:p%3Ass%2F%C3%A9");
    }

    #[test]
    fn token_response_rules() {
        let parse = |v: Value| serde_json::from_value::<TokenResponse>(v).unwrap();
        let t = parse(serde_json::json!({"access_token":"a","token_type":"bearer","expires_in":"60","scope":"x y"}))
            .into_tokens(&["x".into()], None)
            .unwrap();
        assert_eq!(t.scopes, ["x", "y"]);
        assert!(t.expires_within(Duration::from_secs(61)));
        assert!(!t.expires_within(Duration::from_secs(30)));
        let t = parse(serde_json::json!({"access_token":"a","token_type":"Bearer"}))
            .into_tokens(&["r".into()], None)
            .unwrap();
        assert_eq!(t.scopes, ["r"]);
        assert_eq!(t.expires_at, None);
        assert!(!t.expires_within(Duration::from_secs(1_000_000)));
        let err = parse(serde_json::json!({"access_token":"a","token_type":"DPoP"}))
            .into_tokens(&[], None)
            .unwrap_err();
        assert!(
            matches!(err, AuthError::Token { ref error, .. } if error == "unsupported_token_type")
        );
        let debug = format!("{t:?}");
        assert!(!debug.contains("\"a\""));
    }
}
