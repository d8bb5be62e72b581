//! The authorization request (authorization code with PKCE `S256`, `state`
//! and RFC 8707 `resource`) and the checks on its response (`iss` per RFC
//! 9207, then `state`, then the code or the error).

use std::collections::BTreeMap;
use std::fmt;

use reqwest::Url;

use super::AuthError;
use super::discovery::AuthorizationServerMetadata;
use super::fetch::parse_url;
use super::pkce::{Pkce, random_token};

/// One authorization request, with what is needed to check its response:
/// the `state`, the PKCE verifier and the issuer recorded before redirecting.
#[derive(Clone)]
pub struct AuthorizationRequest {
    url: Url,
    state: String,
    pkce: Pkce,
    issuer: String,
    iss_advertised: bool,
    redirect_uri: String,
    resource: String,
    scopes: Vec<String>,
}

impl fmt::Debug for AuthorizationRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthorizationRequest")
            .field("url", &self.url.as_str())
            .field("issuer", &self.issuer)
            .field("redirect_uri", &self.redirect_uri)
            .field("resource", &self.resource)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

impl AuthorizationRequest {
    /// Builds the request for `client_id` at the server whose validated
    /// metadata is `server`. `resource` is sent exactly as given; `scopes`
    /// are omitted when empty. Fails when the server lacks PKCE `S256`.
    pub fn new(
        server: &AuthorizationServerMetadata,
        client_id: &str,
        redirect_uri: &str,
        resource: &str,
        scopes: &[String],
    ) -> Result<Self, AuthError> {
        if !server.supports_s256() {
            return Err(AuthError::PkceUnsupported(server.issuer.clone()));
        }
        let endpoint = server.authorization_endpoint.as_deref().ok_or_else(|| {
            AuthError::Discovery(format!("{} has no authorization endpoint", server.issuer))
        })?;
        let mut url = parse_url(endpoint, "authorization endpoint")?;
        let pkce = Pkce::generate()?;
        let state = random_token(32)?;
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("response_type", "code")
                .append_pair("client_id", client_id)
                .append_pair("redirect_uri", redirect_uri)
                .append_pair("code_challenge", pkce.challenge())
                .append_pair("code_challenge_method", pkce.method())
                .append_pair("state", &state)
                .append_pair("resource", resource);
            if !scopes.is_empty() {
                q.append_pair("scope", &scopes.join(" "));
            }
        }
        Ok(AuthorizationRequest {
            url,
            state,
            pkce,
            issuer: server.issuer.clone(),
            iss_advertised: server.authorization_response_iss_parameter_supported == Some(true),
            redirect_uri: redirect_uri.to_owned(),
            resource: resource.to_owned(),
            scopes: scopes.to_vec(),
        })
    }

    /// The URL to open in the user's browser.
    pub fn url(&self) -> &str {
        self.url.as_str()
    }

    /// The `state` sent.
    pub fn state(&self) -> &str {
        &self.state
    }

    /// The PKCE pair (its verifier goes to the token endpoint).
    pub fn pkce(&self) -> &Pkce {
        &self.pkce
    }

    /// The redirect URI sent.
    pub fn redirect_uri(&self) -> &str {
        &self.redirect_uri
    }

    /// The `resource` sent.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The scopes requested.
    pub fn scopes(&self) -> &[String] {
        &self.scopes
    }

    /// Checks the redirect the authorization server sent (the full callback
    /// URL, or just its query string) and returns the authorization code.
    ///
    /// Order matters: `iss` is checked first (RFC 9207 §2.4: a response from
    /// the wrong issuer is discarded unread, error included), then `state`,
    /// then the error or the code.
    pub fn validate_callback(&self, callback: &str) -> Result<String, AuthError> {
        let query = match Url::parse(callback) {
            Ok(url) => url.query().unwrap_or("").to_owned(),
            Err(_) => callback.trim_start_matches('?').to_owned(),
        };
        let mut params: BTreeMap<String, String> = BTreeMap::new();
        for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
            if params
                .insert(k.clone().into_owned(), v.into_owned())
                .is_some()
                && matches!(&*k, "code" | "state" | "iss" | "error")
            {
                return Err(AuthError::InvalidResponse(format!(
                    "parameter {k} is repeated"
                )));
            }
        }
        match params.get("iss") {
            // Simple string comparison: no case folding, no trailing-slash or
            // percent-encoding normalisation.
            Some(iss) if *iss != self.issuer => {
                return Err(AuthError::IssMismatch {
                    expected: self.issuer.clone(),
                    received: iss.clone(),
                });
            }
            Some(_) => {}
            None if self.iss_advertised => {
                return Err(AuthError::IssMissing {
                    expected: self.issuer.clone(),
                });
            }
            None => {}
        }
        if params.get("state") != Some(&self.state) {
            return Err(AuthError::StateMismatch);
        }
        if let Some(error) = params.get("error") {
            return Err(AuthError::Denied {
                error: error.chars().take(100).collect(),
                description: params
                    .get("error_description")
                    .map(|d| d.chars().take(300).collect()),
            });
        }
        match params.get("code") {
            Some(code) if !code.is_empty() => Ok(code.clone()),
            _ => Err(AuthError::InvalidResponse("no authorization code".into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn server(iss: Option<bool>) -> AuthorizationServerMetadata {
        serde_json::from_value(json!({
            "issuer": "https://as.example/tenant",
            "authorization_endpoint": "https://as.example/authorize?prompt=consent",
            "token_endpoint": "https://as.example/token",
            "code_challenge_methods_supported": ["S256"],
            "authorization_response_iss_parameter_supported": iss,
        }))
        .unwrap()
    }

    fn request(iss: Option<bool>, scopes: &[&str]) -> AuthorizationRequest {
        let scopes: Vec<String> = scopes.iter().map(|s| s.to_string()).collect();
        AuthorizationRequest::new(
            &server(iss),
            "client",
            "http://127.0.0.1:9/cb",
            "https://mcp.example",
            &scopes,
        )
        .unwrap()
    }

    fn query(r: &AuthorizationRequest) -> BTreeMap<String, String> {
        Url::parse(r.url())
            .unwrap()
            .query_pairs()
            .into_owned()
            .collect()
    }

    fn callback(r: &AuthorizationRequest, extra: &str) -> String {
        format!("http://127.0.0.1:9/cb?code=c0de&state={}{extra}", r.state())
    }

    #[test]
    fn request_parameters() {
        let r = request(None, &["a", "b"]);
        let q = query(&r);
        assert_eq!(q["prompt"], "consent");
        assert_eq!(q["response_type"], "code");
        assert_eq!(q["client_id"], "client");
        assert_eq!(q["redirect_uri"], "http://127.0.0.1:9/cb");
        assert_eq!(q["code_challenge_method"], "S256");
        assert_eq!(
            q["code_challenge"],
            super::super::pkce::s256(r.pkce().verifier())
        );
        assert_eq!(q["resource"], "https://mcp.example");
        assert_eq!(q["scope"], "a b");
        assert_eq!(q["state"], r.state());
        assert!(!query(&request(None, &[])).contains_key("scope"));
        assert_ne!(request(None, &[]).state(), r.state());
    }

    #[test]
    fn pkce_is_required() {
        let mut s = server(None);
        s.code_challenge_methods_supported = Some(vec!["plain".into()]);
        let e = AuthorizationRequest::new(&s, "c", "http://127.0.0.1/cb", "https://m", &[])
            .unwrap_err();
        assert_eq!(
            e,
            AuthError::PkceUnsupported("https://as.example/tenant".into())
        );
        s.code_challenge_methods_supported = None;
        assert!(
            AuthorizationRequest::new(&s, "c", "http://127.0.0.1/cb", "https://m", &[]).is_err()
        );
    }

    #[test]
    fn iss_table_of_rfc9207() {
        let ok = "&iss=https%3A%2F%2Fas.example%2Ftenant";
        let wrong = "&iss=https%3A%2F%2Fevil.example";
        let slash = "&iss=https%3A%2F%2Fas.example%2Ftenant%2F";
        let upper = "&iss=HTTPS%3A%2F%2Fas.example%2Ftenant";
        // Advertised: present must match, absent is rejected.
        let r = request(Some(true), &[]);
        assert_eq!(r.validate_callback(&callback(&r, ok)).unwrap(), "c0de");
        assert!(matches!(
            r.validate_callback(&callback(&r, wrong)),
            Err(AuthError::IssMismatch { .. })
        ));
        assert!(matches!(
            r.validate_callback(&callback(&r, "")),
            Err(AuthError::IssMissing { .. })
        ));
        assert!(matches!(
            r.validate_callback(&callback(&r, slash)),
            Err(AuthError::IssMismatch { .. })
        ));
        assert!(matches!(
            r.validate_callback(&callback(&r, upper)),
            Err(AuthError::IssMismatch { .. })
        ));
        // Not advertised: present is still compared, absent proceeds.
        for adv in [None, Some(false)] {
            let r = request(adv, &[]);
            assert_eq!(r.validate_callback(&callback(&r, "")).unwrap(), "c0de");
            assert_eq!(r.validate_callback(&callback(&r, ok)).unwrap(), "c0de");
            assert!(matches!(
                r.validate_callback(&callback(&r, wrong)),
                Err(AuthError::IssMismatch { .. })
            ));
        }
    }

    #[test]
    fn state_error_and_code() {
        let r = request(None, &[]);
        assert_eq!(
            r.validate_callback("code=x&state=nope"),
            Err(AuthError::StateMismatch)
        );
        assert_eq!(
            r.validate_callback("http://127.0.0.1:9/cb?code=x"),
            Err(AuthError::StateMismatch)
        );
        let denied = format!(
            "?error=access_denied&error_description=no&state={}",
            r.state()
        );
        assert_eq!(
            r.validate_callback(&denied),
            Err(AuthError::Denied {
                error: "access_denied".into(),
                description: Some("no".into())
            })
        );
        // A wrong iss hides the error entirely.
        let hidden = format!("{denied}&iss=https://evil");
        assert!(matches!(
            r.validate_callback(&hidden),
            Err(AuthError::IssMismatch { .. })
        ));
        let no_code = format!("state={}", r.state());
        assert!(matches!(
            r.validate_callback(&no_code),
            Err(AuthError::InvalidResponse(_))
        ));
        let twice = format!("{}&code=other", callback(&r, ""));
        assert!(matches!(
            r.validate_callback(&twice),
            Err(AuthError::InvalidResponse(_))
        ));
    }
}
