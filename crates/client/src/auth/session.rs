//! One MCP server's authorization state, and the request loop the HTTP
//! transport runs through it: send with the current token; on `401`
//! authorize (or reuse, or refresh) and retry; on `403 insufficient_scope`
//! step up and retry, a bounded number of times.

use std::sync::Mutex;

use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue, WWW_AUTHENTICATE};
use reqwest::{StatusCode, Url};

use super::challenge::BearerChallenge;
use super::discovery::{Discovery, discover};
use super::flow::AuthorizationRequest;
use super::registration::{ClientCredentials, ClientMetadata, ClientSource, TokenAuthMethod};
use super::store::IssuerRecord;
use super::token::{TokenSet, exchange_code, now, refresh};
use super::{AuthError, OAuth};

/// Why [`Session::send`] failed: authorization, or the POST itself.
#[derive(Debug)]
pub(crate) enum SendError {
    /// No usable token could be obtained, or the server kept refusing it.
    Auth(AuthError),
    /// The request could not be sent.
    Io(String),
}

/// The authorization state for one MCP server.
#[derive(Debug)]
pub(crate) struct Session {
    oauth: OAuth,
    server: Url,
    state: tokio::sync::Mutex<State>,
    credentials_key: Mutex<String>,
}

#[derive(Debug, Default)]
struct State {
    /// What discovery last found; replaced on every 401.
    discovery: Option<Discovery>,
    /// The client identity at `discovery`'s issuer.
    client: Option<ClientCredentials>,
    /// The tokens in use, from `discovery`'s issuer.
    tokens: Option<TokenSet>,
}

/// How a 401 was resolved.
#[derive(Debug, PartialEq, Eq)]
enum Renewed {
    /// Another token was already at hand (stored, or renewed meanwhile).
    Reused,
    /// A new token was just issued (refresh or authorization).
    Fresh,
}

impl Session {
    pub(crate) fn new(oauth: OAuth, server: Url) -> Self {
        let pending = super::pkce::random_token(16).unwrap_or_default();
        Session {
            oauth,
            server,
            state: tokio::sync::Mutex::new(State::default()),
            credentials_key: Mutex::new(format!("oauth-pending-{pending}")),
        }
    }

    /// Identifies the token in use, for cache partitions.
    pub(crate) fn credentials_key(&self) -> String {
        lock(&self.credentials_key).clone()
    }

    /// Sends `method` (a POST with `body`, or a GET or DELETE) to the MCP
    /// endpoint with the session's token, authorizing and retrying as the
    /// server demands.
    pub(crate) async fn send(
        &self,
        http: &reqwest::Client,
        method: reqwest::Method,
        url: &Url,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<reqwest::Response, SendError> {
        let config = &self.oauth.config;
        let mut unauthorized_rounds = 0;
        let mut step_ups = 0;
        loop {
            let token = self.access_token().await.map_err(SendError::Auth)?;
            let mut headers = headers.clone();
            if let Some(token) = &token {
                let mut value = HeaderValue::from_str(&format!("Bearer {token}"))
                    .map_err(|_| SendError::Auth(AuthError::Rejected))?;
                value.set_sensitive(true);
                headers.insert(AUTHORIZATION, value);
            }
            let mut request = http.request(method.clone(), url.clone()).headers(headers);
            if method == reqwest::Method::POST {
                request = request.body(body.to_vec());
            }
            let response = request
                .send()
                .await
                .map_err(|e| SendError::Io(format!("{method} {url} failed: {e}")))?;
            let challenge = BearerChallenge::from_headers(
                response
                    .headers()
                    .get_all(WWW_AUTHENTICATE)
                    .iter()
                    .filter_map(|v| v.to_str().ok()),
            );
            match response.status() {
                StatusCode::UNAUTHORIZED => {
                    unauthorized_rounds += 1;
                    if unauthorized_rounds > 2 {
                        return Err(SendError::Auth(AuthError::Rejected));
                    }
                    let renewed = self
                        .unauthorized(challenge.as_ref(), token.as_deref())
                        .await
                        .map_err(SendError::Auth)?;
                    // A token issued a moment ago that is refused at once will
                    // be refused again: stop rather than loop.
                    if renewed == Renewed::Fresh {
                        unauthorized_rounds = 2;
                    }
                }
                StatusCode::FORBIDDEN => match challenge {
                    Some(challenge) if challenge.is_insufficient_scope() => {
                        if step_ups >= config.max_step_ups {
                            return Err(SendError::Auth(AuthError::InsufficientScope {
                                required: challenge.scope.unwrap_or_default(),
                            }));
                        }
                        step_ups += 1;
                        self.step_up(&challenge, token.as_deref())
                            .await
                            .map_err(SendError::Auth)?;
                    }
                    _ => return Ok(response),
                },
                _ => return Ok(response),
            }
        }
    }

    /// The access token to send, refreshed first when it is about to expire.
    async fn access_token(&self) -> Result<Option<String>, AuthError> {
        let config = &self.oauth.config;
        let mut st = self.state.lock().await;
        let Some(tokens) = &st.tokens else {
            return Ok(None);
        };
        if tokens.expires_within(config.refresh_margin) {
            let renewed = match (&tokens.refresh_token, &st.discovery, &st.client) {
                (Some(_), Some(d), Some(c)) => refresh(
                    &config.http,
                    &d.authorization_server,
                    c,
                    tokens,
                    &d.resource.resource,
                )
                .await
                .inspect_err(|e| tracing::debug!(error = %e, "token refresh failed"))
                .ok(),
                _ => None,
            };
            match renewed {
                Some(fresh) => self.keep_tokens(&mut st, fresh).await?,
                // Expired with no way to refresh: the server's 401 starts over.
                None if tokens.expires_within(std::time::Duration::ZERO) => st.tokens = None,
                None => {}
            }
        }
        Ok(st.tokens.as_ref().map(|t| t.access_token.clone()))
    }

    /// Answers a 401: discovers afresh (the authorization server may have
    /// changed), then reuses a stored token, refreshes, or authorizes.
    async fn unauthorized(
        &self,
        challenge: Option<&BearerChallenge>,
        rejected: Option<&str>,
    ) -> Result<Renewed, AuthError> {
        let config = &self.oauth.config;
        let mut st = self.state.lock().await;
        if let Some(current) = &st.tokens {
            if Some(current.access_token.as_str()) != rejected {
                return Ok(Renewed::Reused);
            }
        }
        let discovery = discover(
            &config.http,
            &self.server,
            challenge,
            config.allow_insecure_http,
        )
        .await?;
        let same_issuer = st
            .discovery
            .as_ref()
            .is_some_and(|d| d.issuer == discovery.issuer);
        if !same_issuer {
            // Nothing from another authorization server is ever reused.
            st.client = None;
            st.tokens = None;
        }
        let resource = discovery.resource.resource.clone();
        let issuer = discovery.issuer.clone();
        st.discovery = Some(discovery);

        let record = config.store.load(&issuer).await?.unwrap_or_default();
        if let Some(stored) = record.tokens.get(&resource) {
            if Some(stored.access_token.as_str()) != rejected
                && !stored.expires_within(std::time::Duration::ZERO)
            {
                st.tokens = Some(stored.clone());
                self.set_credentials_key(&stored.access_token);
                return Ok(Renewed::Reused);
            }
            if stored.refresh_token.is_some() {
                let client = self.client(&mut st).await?;
                let d = st.discovery.as_ref().ok_or(AuthError::Rejected)?;
                match refresh(
                    &config.http,
                    &d.authorization_server,
                    &client,
                    stored,
                    &resource,
                )
                .await
                {
                    Ok(fresh) => {
                        self.keep_tokens(&mut st, fresh).await?;
                        return Ok(Renewed::Fresh);
                    }
                    Err(e) => tracing::debug!(error = %e, "refresh failed; authorizing again"),
                }
            }
        }
        let d = st.discovery.as_ref().ok_or(AuthError::Rejected)?;
        let scopes = self.with_offline_access(
            challenge
                .and_then(|c| c.scope.clone())
                .or_else(|| d.resource.scopes_supported.clone())
                .unwrap_or_default(),
            d,
        );
        self.authorize(&mut st, scopes).await?;
        Ok(Renewed::Fresh)
    }

    /// Answers a 403 `insufficient_scope`: re-authorizes with the scopes
    /// requested before plus the challenged ones.
    async fn step_up(
        &self,
        challenge: &BearerChallenge,
        rejected: Option<&str>,
    ) -> Result<(), AuthError> {
        let config = &self.oauth.config;
        let mut st = self.state.lock().await;
        let current = st.tokens.clone();
        if current.as_ref().map(|t| t.access_token.as_str()) != rejected {
            return Ok(());
        }
        let required = challenge.scope.clone().unwrap_or_default();
        let held = current.as_ref().map(|t| t.scopes.as_slice()).unwrap_or(&[]);
        if required.is_empty() || required.iter().all(|s| held.contains(s)) {
            // Nothing more to ask for: re-authorizing cannot help.
            return Err(AuthError::InsufficientScope { required });
        }
        if st.discovery.is_none() {
            let d = discover(
                &config.http,
                &self.server,
                Some(challenge),
                config.allow_insecure_http,
            )
            .await?;
            st.discovery = Some(d);
        }
        let mut scopes = current.map(|t| t.requested_scopes).unwrap_or_default();
        for s in required {
            if !scopes.contains(&s) {
                scopes.push(s);
            }
        }
        let d = st.discovery.as_ref().ok_or(AuthError::Rejected)?;
        let scopes = self.with_offline_access(scopes, d);
        self.authorize(&mut st, scopes).await
    }

    /// Adds `offline_access` to a non-empty scope list when the authorization
    /// server lists it (an otherwise empty list stays empty: omitting `scope`
    /// means the server's defaults, which `offline_access` alone would narrow).
    fn with_offline_access(&self, mut scopes: Vec<String>, d: &Discovery) -> Vec<String> {
        const OFFLINE: &str = "offline_access";
        if self.oauth.config.offline_access
            && !scopes.is_empty()
            && d.authorization_server.supports_scope(OFFLINE)
            && !scopes.iter().any(|s| s == OFFLINE)
        {
            scopes.push(OFFLINE.to_owned());
        }
        scopes
    }

    /// The authorization code flow, start to finish.
    async fn authorize(&self, st: &mut State, scopes: Vec<String>) -> Result<(), AuthError> {
        let config = &self.oauth.config;
        let client = self.client(st).await?;
        let d = st.discovery.as_ref().ok_or(AuthError::Rejected)?;
        let redirect_uri = config.redirect.redirect_uri();
        let request = AuthorizationRequest::new(
            &d.authorization_server,
            &client.client_id,
            &redirect_uri,
            &d.resource.resource,
            &scopes,
        )?;
        tracing::debug!(issuer = %d.issuer, scopes = ?scopes, "authorizing");
        let callback = config.redirect.authorize(request.url()).await?;
        let code = request.validate_callback(&callback)?;
        let exchanged = exchange_code(
            &config.http,
            &d.authorization_server,
            &client,
            &code,
            request.pkce().verifier(),
            &redirect_uri,
            request.resource(),
            &scopes,
        )
        .await;
        match exchanged {
            Ok(tokens) => self.keep_tokens(st, tokens).await,
            Err(e) => {
                if matches!(&e, AuthError::Token { error, .. } if error == "invalid_client")
                    && client.source == ClientSource::Dynamic
                {
                    // The server no longer knows this registration: forget it,
                    // so the next attempt registers again.
                    self.forget_client(st).await?;
                }
                Err(e)
            }
        }
    }

    /// The client identity at the current issuer, in the specification's
    /// order: pre-registered, Client ID Metadata Document, a stored dynamic
    /// registration, a new dynamic registration.
    async fn client(&self, st: &mut State) -> Result<ClientCredentials, AuthError> {
        if let Some(client) = &st.client {
            return Ok(client.clone());
        }
        let config = &self.oauth.config;
        let d = st.discovery.as_ref().ok_or(AuthError::Rejected)?;
        let server = &d.authorization_server;
        let issuer = d.issuer.clone();
        let redirect_uri = config.redirect.redirect_uri();
        let client = if let Some(p) = config.pre_registered.iter().find(|p| p.issuer == issuer) {
            p.credentials()
        } else if let (Some(url), Some(true)) = (
            &config.metadata_document_url,
            server.client_id_metadata_document_supported,
        ) {
            ClientCredentials::public(url.clone(), ClientSource::MetadataDocument)
        } else {
            let mut record = config.store.load(&issuer).await?.unwrap_or_default();
            match record
                .client
                .clone()
                .filter(|c| !c.expired(now()) && c.redirect_uris.contains(&redirect_uri))
            {
                Some(stored) => stored,
                None if server.registration_endpoint.is_some() => {
                    let metadata = self.client_metadata(d, &redirect_uri);
                    let client =
                        super::registration::register(&config.http, server, &metadata).await?;
                    tracing::debug!(issuer = %issuer, client_id = %client.client_id, "registered");
                    record.client = Some(client.clone());
                    config.store.save(&issuer, record).await?;
                    client
                }
                None => return Err(self.no_registration(d)),
            }
        };
        st.client = Some(client.clone());
        Ok(client)
    }

    fn client_metadata(&self, d: &Discovery, redirect_uri: &str) -> ClientMetadata {
        let config = &self.oauth.config;
        let server = &d.authorization_server;
        let mut grant_types = vec!["authorization_code".to_owned()];
        if server.allows_grant("refresh_token") {
            grant_types.push("refresh_token".to_owned());
        }
        let methods = server.token_auth_methods();
        let token_endpoint_auth_method = ["none", "client_secret_basic", "client_secret_post"]
            .into_iter()
            .find(|m| methods.iter().any(|x| x == m))
            .and_then(TokenAuthMethod::from_name)
            .unwrap_or(TokenAuthMethod::ClientSecretBasic);
        ClientMetadata {
            client_name: config.client_name.clone(),
            redirect_uris: vec![redirect_uri.to_owned()],
            grant_types,
            token_endpoint_auth_method,
            application_type: config.application_type,
            client_uri: config.client_uri.clone(),
        }
    }

    fn no_registration(&self, d: &Discovery) -> AuthError {
        let config = &self.oauth.config;
        let reason = if config.pre_registered.is_empty() {
            "it offers no Dynamic Client Registration, no Client ID Metadata Document is usable, \
             and no pre-registered credentials are configured"
                .to_owned()
        } else {
            let issuers: Vec<&str> = config
                .pre_registered
                .iter()
                .map(|p| p.issuer.as_str())
                .collect();
            format!(
                "the pre-registered credentials are for {issuers:?}, and it offers no other way to register"
            )
        };
        AuthError::NoRegistration {
            issuer: d.issuer.clone(),
            reason,
        }
    }

    async fn forget_client(&self, st: &mut State) -> Result<(), AuthError> {
        st.client = None;
        if let Some(d) = &st.discovery {
            let store = &self.oauth.config.store;
            if let Some(mut record) = store.load(&d.issuer).await? {
                record.client = None;
                store.save(&d.issuer, record).await?;
            }
        }
        Ok(())
    }

    /// Makes `tokens` current and stores them under the issuer and resource.
    async fn keep_tokens(&self, st: &mut State, tokens: TokenSet) -> Result<(), AuthError> {
        let store = &self.oauth.config.store;
        if let Some(d) = &st.discovery {
            let mut record: IssuerRecord = store.load(&d.issuer).await?.unwrap_or_default();
            record
                .tokens
                .insert(d.resource.resource.clone(), tokens.clone());
            store.save(&d.issuer, record).await?;
        }
        self.set_credentials_key(&tokens.access_token);
        st.tokens = Some(tokens);
        Ok(())
    }

    fn set_credentials_key(&self, access_token: &str) {
        *lock(&self.credentials_key) = crate::digest::short_hex(access_token.as_bytes());
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
