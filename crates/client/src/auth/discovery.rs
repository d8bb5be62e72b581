//! Finding the authorization server: protected resource metadata (RFC 9728)
//! from the MCP server, then authorization server metadata (RFC 8414 and
//! OpenID Connect Discovery) from the issuer it names.

use reqwest::Url;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::AuthError;
use super::challenge::BearerChallenge;
use super::fetch::{get_json, parse_url, require_secure};

const PRM_WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";
const OAUTH_WELL_KNOWN: &str = "/.well-known/oauth-authorization-server";
const OIDC_WELL_KNOWN: &str = "/.well-known/openid-configuration";

/// OAuth 2.0 Protected Resource Metadata (RFC 9728 §2): the fields MCP uses,
/// the rest kept in `extra`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProtectedResourceMetadata {
    /// The resource identifier; sent byte for byte as the `resource` parameter.
    pub resource: String,
    /// Issuer identifiers of the authorization servers for this resource.
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// Scopes needed for basic use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes_supported: Option<Vec<String>>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// OAuth 2.0 Authorization Server Metadata (RFC 8414 §2) or an OpenID
/// Provider configuration: the fields MCP uses, the rest kept in `extra`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuthorizationServerMetadata {
    /// The issuer identifier; equal to the one the document was fetched for.
    pub issuer: String,
    /// Where the user authorizes the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_endpoint: Option<String>,
    /// Where codes and refresh tokens are exchanged for tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint: Option<String>,
    /// Dynamic Client Registration endpoint (RFC 7591), if offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration_endpoint: Option<String>,
    /// Scopes the server knows (`offline_access` among them when it issues refresh tokens).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes_supported: Option<Vec<String>>,
    /// Grant types the server supports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant_types_supported: Option<Vec<String>>,
    /// Client authentication methods at the token endpoint (absent means
    /// `client_secret_basic`, RFC 8414 §2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// PKCE methods; absent means no PKCE, which MCP refuses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// RFC 9207: the server puts `iss` in every authorization response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_response_iss_parameter_supported: Option<bool>,
    /// The server accepts Client ID Metadata Document URLs as client ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id_metadata_document_supported: Option<bool>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl AuthorizationServerMetadata {
    /// True when `scope` is listed in `scopes_supported`.
    pub fn supports_scope(&self, scope: &str) -> bool {
        self.scopes_supported
            .as_ref()
            .is_some_and(|s| s.iter().any(|x| x == scope))
    }

    /// The token endpoint authentication methods, with RFC 8414's default.
    pub fn token_auth_methods(&self) -> Vec<String> {
        self.token_endpoint_auth_methods_supported
            .clone()
            .unwrap_or_else(|| vec!["client_secret_basic".to_owned()])
    }

    /// True when the server supports PKCE with `S256`.
    pub fn supports_s256(&self) -> bool {
        self.code_challenge_methods_supported
            .as_ref()
            .is_some_and(|m| m.iter().any(|x| x == "S256"))
    }

    /// True unless `grant_types_supported` is given without `grant`.
    pub fn allows_grant(&self, grant: &str) -> bool {
        self.grant_types_supported
            .as_ref()
            .is_none_or(|g| g.iter().any(|x| x == grant))
    }
}

/// What discovery found for one MCP server.
#[derive(Debug, Clone, PartialEq)]
pub struct Discovery {
    /// The protected resource metadata.
    pub resource: ProtectedResourceMetadata,
    /// The authorization server chosen (the first one listed).
    pub issuer: String,
    /// Its validated metadata.
    pub authorization_server: AuthorizationServerMetadata,
}

/// Where to look for protected resource metadata, in order: the URL the
/// challenge advertised, then the path-based well-known URL, then the root one.
pub fn protected_resource_metadata_urls(server: &Url, advertised: Option<&str>) -> Vec<Url> {
    let mut urls = Vec::new();
    if let Some(url) = advertised.and_then(|a| server.join(a).ok()) {
        urls.push(url);
    }
    let path = server.path().trim_end_matches('/');
    let mut base = server.clone();
    base.set_query(None);
    base.set_fragment(None);
    if !path.is_empty() {
        let mut url = base.clone();
        url.set_path(&format!("{PRM_WELL_KNOWN}{path}"));
        urls.push(url);
    }
    let mut root = base;
    root.set_path(PRM_WELL_KNOWN);
    urls.push(root);
    urls.dedup();
    urls
}

/// Where to look for the metadata of `issuer`, in the order MCP gives: RFC
/// 8414 and OpenID Connect with the path inserted after the well-known
/// prefix, then OpenID Connect with it appended.
pub fn authorization_server_metadata_urls(issuer: &str) -> Result<Vec<Url>, AuthError> {
    let url = parse_url(issuer, "issuer")?;
    if url.query().is_some() || url.fragment().is_some() {
        return Err(AuthError::Discovery(format!(
            "issuer {issuer:?} has a query or fragment"
        )));
    }
    let path = url.path().trim_end_matches('/').to_owned();
    let at = |p: String| {
        let mut u = url.clone();
        u.set_path(&p);
        u
    };
    Ok(if path.is_empty() {
        vec![at(OAUTH_WELL_KNOWN.into()), at(OIDC_WELL_KNOWN.into())]
    } else {
        vec![
            at(format!("{OAUTH_WELL_KNOWN}{path}")),
            at(format!("{OIDC_WELL_KNOWN}{path}")),
            at(format!("{path}{OIDC_WELL_KNOWN}")),
        ]
    })
}

/// True when the metadata's `resource` identifies the server at `server`:
/// same scheme, host and port, no fragment, and a path that is the server's
/// path or one of its parents (a root `resource` covers `/mcp`).
pub fn resource_matches(server: &Url, resource: &str) -> bool {
    let Ok(r) = Url::parse(resource) else {
        return false;
    };
    if r.fragment().is_some()
        || r.scheme() != server.scheme()
        || r.host() != server.host()
        || r.port_or_known_default() != server.port_or_known_default()
    {
        return false;
    }
    if r.query().is_some() && r.query() != server.query() {
        return false;
    }
    let rp = r.path().trim_end_matches('/');
    let sp = server.path().trim_end_matches('/');
    rp.is_empty()
        || sp == rp
        || sp
            .strip_prefix(rp)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Fetches and checks the protected resource metadata of the server at `server`.
pub async fn fetch_protected_resource_metadata(
    client: &reqwest::Client,
    server: &Url,
    challenge: Option<&BearerChallenge>,
) -> Result<ProtectedResourceMetadata, AuthError> {
    let advertised = challenge.and_then(|c| c.resource_metadata.as_deref());
    let mut tried = Vec::new();
    for url in protected_resource_metadata_urls(server, advertised) {
        let Some(doc) = get_json(client, &url).await? else {
            tried.push(url.to_string());
            continue;
        };
        let metadata: ProtectedResourceMetadata = serde_json::from_value(doc).map_err(|e| {
            AuthError::Discovery(format!("invalid protected resource metadata at {url}: {e}"))
        })?;
        if !resource_matches(server, &metadata.resource) {
            return Err(AuthError::ResourceMismatch {
                server: server.to_string(),
                advertised: metadata.resource,
            });
        }
        if metadata.authorization_servers.is_empty() {
            return Err(AuthError::Discovery(format!(
                "protected resource metadata at {url} names no authorization server"
            )));
        }
        return Ok(metadata);
    }
    Err(AuthError::Discovery(format!(
        "no protected resource metadata for {server} (tried {})",
        tried.join(", ")
    )))
}

/// Fetches the metadata of `issuer` and checks that it is the issuer's own.
pub async fn fetch_authorization_server_metadata(
    client: &reqwest::Client,
    issuer: &str,
    allow_insecure_http: bool,
) -> Result<AuthorizationServerMetadata, AuthError> {
    require_secure(&parse_url(issuer, "issuer")?, allow_insecure_http)?;
    for url in authorization_server_metadata_urls(issuer)? {
        let Some(doc) = get_json(client, &url).await? else {
            continue;
        };
        let metadata: AuthorizationServerMetadata = serde_json::from_value(doc).map_err(|e| {
            AuthError::Discovery(format!(
                "invalid authorization server metadata at {url}: {e}"
            ))
        })?;
        // RFC 8414 §3.3: exactly the issuer the URL was built from, or unusable.
        if metadata.issuer != issuer {
            return Err(AuthError::IssuerMismatch {
                expected: issuer.to_owned(),
                found: metadata.issuer,
            });
        }
        for endpoint in [
            &metadata.authorization_endpoint,
            &metadata.token_endpoint,
            &metadata.registration_endpoint,
        ]
        .into_iter()
        .flatten()
        {
            require_secure(&parse_url(endpoint, "endpoint")?, allow_insecure_http)?;
        }
        return Ok(metadata);
    }
    Err(AuthError::Discovery(format!(
        "no authorization server metadata for issuer {issuer:?}"
    )))
}

/// Protected resource metadata, then the metadata of its first authorization server.
pub async fn discover(
    client: &reqwest::Client,
    server: &Url,
    challenge: Option<&BearerChallenge>,
    allow_insecure_http: bool,
) -> Result<Discovery, AuthError> {
    let resource = fetch_protected_resource_metadata(client, server, challenge).await?;
    let issuer = resource.authorization_servers[0].clone();
    let authorization_server =
        fetch_authorization_server_metadata(client, &issuer, allow_insecure_http).await?;
    Ok(Discovery {
        resource,
        issuer,
        authorization_server,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    fn strings(urls: Vec<Url>) -> Vec<String> {
        urls.into_iter().map(String::from).collect()
    }

    #[test]
    fn prm_urls_in_order() {
        let server = url("https://mcp.example.com/public/mcp?x=1");
        assert_eq!(
            strings(protected_resource_metadata_urls(
                &server,
                Some("https://mcp.example.com/custom.json")
            )),
            [
                "https://mcp.example.com/custom.json",
                "https://mcp.example.com/.well-known/oauth-protected-resource/public/mcp",
                "https://mcp.example.com/.well-known/oauth-protected-resource",
            ]
        );
        assert_eq!(
            strings(protected_resource_metadata_urls(
                &url("https://mcp.example.com"),
                None
            )),
            ["https://mcp.example.com/.well-known/oauth-protected-resource"]
        );
    }

    #[test]
    fn as_metadata_urls_insert_and_append() {
        assert_eq!(
            strings(
                authorization_server_metadata_urls("https://auth.example.com/tenant1").unwrap()
            ),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/.well-known/openid-configuration/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            strings(authorization_server_metadata_urls("https://auth.example.com").unwrap()),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration",
            ]
        );
        assert!(authorization_server_metadata_urls("https://a.example/?q").is_err());
        assert!(authorization_server_metadata_urls("not a url").is_err());
    }

    #[test]
    fn resource_matching() {
        let server = url("http://localhost:3000/mcp");
        for ok in [
            "http://localhost:3000/mcp",
            "http://localhost:3000/mcp/",
            "http://localhost:3000",
            "http://localhost:3000/",
            "HTTP://LOCALHOST:3000/mcp",
        ] {
            assert!(resource_matches(&server, ok), "{ok}");
        }
        for bad in [
            "https://evil.example.com/mcp",
            "https://localhost:3000/mcp",
            "http://localhost:3001/mcp",
            "http://localhost:3000/mcp2",
            "http://localhost:3000/mc",
            "http://localhost:3000/mcp/sub",
            "http://localhost:3000/mcp#frag",
            "localhost:3000/mcp",
            "",
        ] {
            assert!(!resource_matches(&server, bad), "{bad}");
        }
        assert!(resource_matches(&url("https://h/a/b/mcp"), "https://h/a"));
        assert!(resource_matches(&url("https://h:443/mcp"), "https://h/mcp"));
    }
}
