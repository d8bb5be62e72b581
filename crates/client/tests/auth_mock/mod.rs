//! A mock OAuth 2.1 authorization server and a protected MCP server (axum on
//! 127.0.0.1:0) that check what a client sends: PKCE S256, state echo,
//! `resource`, redirect URI, client authentication. Every request is
//! recorded; every rule broken is recorded as a violation.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use toolwire_client::TransportError;
use toolwire_client::auth::{AuthError, FollowRedirect, OAuth, OAuthBuilder};
use toolwire_client::transport::{HttpTransport, OutgoingRequest, Transport};
use toolwire_protocol::{Message, Request};

/// One request either server received.
#[derive(Debug, Clone)]
pub struct Seen {
    /// `as` or `rs` (or `as2`).
    pub server: String,
    pub method: String,
    pub path: String,
    pub query: BTreeMap<String, String>,
    pub form: BTreeMap<String, String>,
    pub json: Option<Value>,
    pub authorization: Option<String>,
}

#[derive(Debug, Default)]
pub struct Log {
    seen: Mutex<Vec<Seen>>,
    violations: Mutex<Vec<String>>,
}

impl Log {
    pub fn all(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
    pub fn violations(&self) -> Vec<String> {
        self.violations.lock().unwrap().clone()
    }
    fn violation(&self, v: impl Into<String>) {
        self.violations.lock().unwrap().push(v.into());
    }
    /// Requests to `server` at an endpoint whose path ends with `suffix`
    /// (metadata documents excluded).
    pub fn at(&self, server: &str, suffix: &str) -> Vec<Seen> {
        self.all()
            .into_iter()
            .filter(|s| {
                s.server == server && s.path.ends_with(suffix) && !s.path.contains("/.well-known/")
            })
            .collect()
    }
    pub fn paths(&self, server: &str) -> Vec<String> {
        self.all()
            .into_iter()
            .filter(|s| s.server == server)
            .map(|s| format!("{} {}", s.method, s.path))
            .collect()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetadataAt {
    /// RFC 8414: `/.well-known/oauth-authorization-server{prefix}`.
    OAuth,
    /// `/.well-known/openid-configuration{prefix}`.
    OidcInsert,
    /// `{prefix}/.well-known/openid-configuration`.
    OidcAppend,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Iss {
    Correct,
    Wrong,
    Omit,
    TrailingSlash,
}

#[derive(Debug, Clone)]
pub struct AsConfig {
    pub prefix: String,
    pub metadata_at: MetadataAt,
    pub issuer_override: Option<String>,
    pub scopes_supported: Option<Vec<String>>,
    pub auth_methods: Vec<String>,
    pub pkce_methods: Option<Vec<String>>,
    pub cimd: bool,
    pub dcr: bool,
    pub iss_supported: Option<bool>,
    pub iss: Iss,
    pub expires_in: u64,
    pub refresh_tokens: bool,
    /// `(client_id, client_secret)` registered out of band.
    pub pre_registered: Option<(String, String)>,
}

impl Default for AsConfig {
    fn default() -> Self {
        AsConfig {
            prefix: String::new(),
            metadata_at: MetadataAt::OAuth,
            issuer_override: None,
            scopes_supported: None,
            auth_methods: vec!["none".into()],
            pkce_methods: Some(vec!["S256".into()]),
            cimd: false,
            dcr: true,
            iss_supported: Some(true),
            iss: Iss::Correct,
            expires_in: 3600,
            refresh_tokens: false,
            pre_registered: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrmAt {
    /// Served at this path and advertised in the challenge.
    Advertised(String),
    /// `/.well-known/oauth-protected-resource/mcp`, not advertised.
    PathBased,
    /// `/.well-known/oauth-protected-resource`, not advertised; resource = the origin.
    Root,
}

#[derive(Debug, Clone)]
pub struct RsConfig {
    pub prm: PrmAt,
    pub resource_override: Option<String>,
    pub scopes_supported: Option<Vec<String>>,
    pub challenge_scope: Option<String>,
    /// Scopes each MCP method needs.
    pub required: HashMap<String, Vec<String>>,
    /// Answer every authorized request with 403 insufficient_scope; the
    /// scope is `fixed`, or a new one each time when `None`.
    pub always_forbid: Option<Option<String>>,
    /// Answer every request with 401, whatever the token.
    pub reject_all: bool,
}

impl Default for RsConfig {
    fn default() -> Self {
        RsConfig {
            prm: PrmAt::Advertised("/.well-known/oauth-protected-resource/mcp".into()),
            resource_override: None,
            scopes_supported: None,
            challenge_scope: None,
            required: HashMap::new(),
            always_forbid: None,
            reject_all: false,
        }
    }
}

#[derive(Debug, Clone)]
struct Issued {
    issuer: String,
    scopes: Vec<String>,
    resource: String,
    client_id: String,
}

#[derive(Debug, Clone)]
struct Grant {
    challenge: String,
    client_id: String,
    redirect_uri: String,
    resource: String,
    scope: Vec<String>,
}

#[derive(Debug, Clone)]
struct Client {
    secret: Option<String>,
    method: String,
    redirect_uris: Vec<String>,
}

/// Tokens issued by any mock authorization server, as the resource server sees them.
#[derive(Debug, Default)]
pub struct TokenBook {
    tokens: Mutex<HashMap<String, Issued>>,
    refresh: Mutex<HashMap<String, Issued>>,
}

pub struct MockAs {
    pub base: String,
    pub config: Mutex<AsConfig>,
    log: Arc<Log>,
    name: String,
    book: Arc<TokenBook>,
    codes: Mutex<HashMap<String, Grant>>,
    clients: Mutex<HashMap<String, Client>>,
    counter: AtomicU64,
}

impl MockAs {
    pub fn issuer(&self) -> String {
        let c = self.config.lock().unwrap();
        format!("{}{}", self.base, c.prefix)
    }

    fn next(&self, what: &str) -> String {
        format!(
            "{what}-{}-{}",
            self.name,
            self.counter.fetch_add(1, Ordering::Relaxed)
        )
    }

    fn metadata_path(&self) -> String {
        let c = self.config.lock().unwrap();
        match c.metadata_at {
            MetadataAt::OAuth => format!("/.well-known/oauth-authorization-server{}", c.prefix),
            MetadataAt::OidcInsert => format!("/.well-known/openid-configuration{}", c.prefix),
            MetadataAt::OidcAppend => format!("{}/.well-known/openid-configuration", c.prefix),
        }
    }

    fn handle(&self, method: &Method, path: &str, seen: &Seen, headers: &HeaderMap) -> Response {
        let c = self.config.lock().unwrap().clone();
        let issuer = c.issuer_override.clone().unwrap_or_else(|| self.issuer());
        let p = &c.prefix;
        if method == Method::GET && path == self.metadata_path() {
            let mut doc = json!({
                "issuer": issuer,
                "authorization_endpoint": format!("{}{p}/authorize", self.base),
                "token_endpoint": format!("{}{p}/token", self.base),
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "token_endpoint_auth_methods_supported": c.auth_methods,
            });
            if c.dcr {
                doc["registration_endpoint"] = json!(format!("{}{p}/register", self.base));
            }
            if let Some(m) = &c.pkce_methods {
                doc["code_challenge_methods_supported"] = json!(m);
            }
            if let Some(s) = &c.scopes_supported {
                doc["scopes_supported"] = json!(s);
            }
            if let Some(i) = c.iss_supported {
                doc["authorization_response_iss_parameter_supported"] = json!(i);
            }
            if c.cimd {
                doc["client_id_metadata_document_supported"] = json!(true);
            }
            return axum::Json(doc).into_response();
        }
        if method == Method::POST && path == format!("{p}/register") && c.dcr {
            let body = seen.json.clone().unwrap_or_default();
            let method = body["token_endpoint_auth_method"]
                .as_str()
                .unwrap_or("client_secret_basic");
            // Issue what the server supports: the requested method if listed, else the first.
            let method = if c.auth_methods.iter().any(|m| m == method) {
                method.to_owned()
            } else {
                c.auth_methods[0].clone()
            };
            let id = self.next("client");
            let secret = (method != "none").then(|| self.next("secret"));
            let redirect_uris: Vec<String> = body["redirect_uris"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            self.clients.lock().unwrap().insert(
                id.clone(),
                Client {
                    secret: secret.clone(),
                    method: method.clone(),
                    redirect_uris: redirect_uris.clone(),
                },
            );
            let mut reply = json!({"client_id": id, "redirect_uris": redirect_uris, "token_endpoint_auth_method": method});
            if let Some(s) = secret {
                reply["client_secret"] = json!(s);
            }
            return (StatusCode::CREATED, axum::Json(reply)).into_response();
        }
        if method == Method::GET && path == format!("{p}/authorize") {
            return self.authorize(&c, &issuer, &seen.query);
        }
        if method == Method::POST && path == format!("{p}/token") {
            return self.token(&c, &issuer, &seen.form, headers);
        }
        StatusCode::NOT_FOUND.into_response()
    }

    fn client(&self, c: &AsConfig, id: &str) -> Option<Client> {
        if let Some((pid, secret)) = &c.pre_registered {
            if pid == id {
                return Some(Client {
                    secret: Some(secret.clone()),
                    method: c.auth_methods[0].clone(),
                    redirect_uris: Vec::new(),
                });
            }
        }
        if c.cimd && id.starts_with("https://") {
            return Some(Client {
                secret: None,
                method: "none".into(),
                redirect_uris: Vec::new(),
            });
        }
        self.clients.lock().unwrap().get(id).cloned()
    }

    fn authorize(&self, c: &AsConfig, issuer: &str, q: &BTreeMap<String, String>) -> Response {
        let log = &self.log;
        let get = |k: &str| q.get(k).cloned().unwrap_or_default();
        let client_id = get("client_id");
        let Some(client) = self.client(c, &client_id) else {
            log.violation(format!("authorize: unknown client {client_id}"));
            return StatusCode::BAD_REQUEST.into_response();
        };
        let redirect_uri = get("redirect_uri");
        if !client.redirect_uris.is_empty() && !client.redirect_uris.contains(&redirect_uri) {
            log.violation(format!(
                "authorize: redirect_uri {redirect_uri} not registered"
            ));
        }
        if get("response_type") != "code" {
            log.violation("authorize: response_type is not code");
        }
        if get("code_challenge_method") != "S256" || get("code_challenge").is_empty() {
            log.violation("authorize: no S256 code challenge");
        }
        if get("state").is_empty() {
            log.violation("authorize: no state");
        }
        let code = self.next("code");
        self.codes.lock().unwrap().insert(
            code.clone(),
            Grant {
                challenge: get("code_challenge"),
                client_id,
                redirect_uri: redirect_uri.clone(),
                resource: get("resource"),
                scope: get("scope")
                    .split(' ')
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect(),
            },
        );
        let mut target = url::Url::parse(&redirect_uri).unwrap();
        {
            let mut qp = target.query_pairs_mut();
            qp.append_pair("code", &code)
                .append_pair("state", &get("state"));
            match c.iss {
                Iss::Correct => {
                    qp.append_pair("iss", issuer);
                }
                Iss::Wrong => {
                    qp.append_pair("iss", "https://evil.example.com");
                }
                Iss::TrailingSlash => {
                    qp.append_pair("iss", &format!("{issuer}/"));
                }
                Iss::Omit => {}
            }
        }
        (StatusCode::FOUND, [("location", target.to_string())]).into_response()
    }

    fn token(
        &self,
        c: &AsConfig,
        issuer: &str,
        f: &BTreeMap<String, String>,
        headers: &HeaderMap,
    ) -> Response {
        let log = &self.log;
        let bad = |error: &str| {
            (StatusCode::BAD_REQUEST, axum::Json(json!({"error": error}))).into_response()
        };
        // Client authentication.
        let basic = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Basic "))
            .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
            .and_then(|b| String::from_utf8(b).ok())
            .and_then(|s| s.split_once(':').map(|(a, b)| (decode(a), decode(b))));
        let (client_id, secret, used) = match (&basic, f.get("client_secret")) {
            (Some((id, secret)), _) => (id.clone(), Some(secret.clone()), "client_secret_basic"),
            (None, Some(secret)) => (
                f.get("client_id").cloned().unwrap_or_default(),
                Some(secret.clone()),
                "client_secret_post",
            ),
            (None, None) => (
                f.get("client_id").cloned().unwrap_or_default(),
                None,
                "none",
            ),
        };
        let Some(client) = self.client(c, &client_id) else {
            log.violation(format!("token: unknown client {client_id}"));
            return bad("invalid_client");
        };
        if client.method != used {
            log.violation(format!(
                "token: client authenticated with {used}, registered {}",
                client.method
            ));
            return bad("invalid_client");
        }
        if client.secret != secret {
            log.violation("token: wrong client secret");
            return bad("invalid_client");
        }
        let issued = match f.get("grant_type").map(String::as_str) {
            Some("authorization_code") => {
                let Some(grant) = self
                    .codes
                    .lock()
                    .unwrap()
                    .remove(&f.get("code").cloned().unwrap_or_default())
                else {
                    log.violation("token: unknown or reused code");
                    return bad("invalid_grant");
                };
                let verifier = f.get("code_verifier").cloned().unwrap_or_default();
                let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .encode(Sha256::digest(verifier.as_bytes()));
                if computed != grant.challenge {
                    log.violation("token: code_verifier does not match code_challenge");
                    return bad("invalid_grant");
                }
                if f.get("redirect_uri") != Some(&grant.redirect_uri) {
                    log.violation("token: redirect_uri differs");
                    return bad("invalid_grant");
                }
                if f.get("resource") != Some(&grant.resource) {
                    log.violation("token: resource differs from the authorization request");
                    return bad("invalid_grant");
                }
                if grant.client_id != client_id {
                    log.violation("token: code issued to another client");
                    return bad("invalid_grant");
                }
                Issued {
                    issuer: issuer.to_owned(),
                    scopes: grant.scope,
                    resource: grant.resource,
                    client_id,
                }
            }
            Some("refresh_token") => {
                let rt = f.get("refresh_token").cloned().unwrap_or_default();
                let Some(old) = self.book.refresh.lock().unwrap().remove(&rt) else {
                    log.violation("token: unknown refresh token");
                    return bad("invalid_grant");
                };
                if f.get("resource") != Some(&old.resource) {
                    log.violation("token: refresh with another resource");
                }
                old
            }
            other => {
                log.violation(format!("token: grant_type {other:?}"));
                return bad("unsupported_grant_type");
            }
        };
        let access = self.next("access");
        let mut reply = json!({
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": c.expires_in,
        });
        if !issued.scopes.is_empty() {
            reply["scope"] = json!(issued.scopes.join(" "));
        }
        if c.refresh_tokens {
            let rt = self.next("refresh");
            self.book
                .refresh
                .lock()
                .unwrap()
                .insert(rt.clone(), issued.clone());
            reply["refresh_token"] = json!(rt);
        }
        self.book.tokens.lock().unwrap().insert(access, issued);
        axum::Json(reply).into_response()
    }
}

pub struct MockRs {
    pub base: String,
    pub config: Mutex<RsConfig>,
    /// The issuer the metadata names (switchable, for migrations).
    pub authorization_server: Mutex<String>,
    log: Arc<Log>,
    book: Arc<TokenBook>,
    forbid_counter: AtomicU64,
}

impl MockRs {
    pub fn url(&self) -> String {
        format!("{}/mcp", self.base)
    }

    fn prm_path(&self) -> String {
        match &self.config.lock().unwrap().prm {
            PrmAt::Advertised(p) => p.clone(),
            PrmAt::PathBased => "/.well-known/oauth-protected-resource/mcp".into(),
            PrmAt::Root => "/.well-known/oauth-protected-resource".into(),
        }
    }

    fn handle(&self, method: &Method, path: &str, seen: &Seen) -> Response {
        let c = self.config.lock().unwrap().clone();
        if method == Method::GET && path == self.prm_path() {
            let resource = c.resource_override.clone().unwrap_or_else(|| match c.prm {
                PrmAt::Root => self.base.clone(),
                _ => self.url(),
            });
            let mut doc = json!({
                "resource": resource,
                "authorization_servers": [self.authorization_server.lock().unwrap().clone()],
            });
            if let Some(s) = &c.scopes_supported {
                doc["scopes_supported"] = json!(s);
            }
            return axum::Json(doc).into_response();
        }
        if method != Method::POST || path != "/mcp" {
            return StatusCode::NOT_FOUND.into_response();
        }
        let body = seen.json.clone().unwrap_or_default();
        let mcp_method = body["method"].as_str().unwrap_or("").to_owned();
        let challenge = |error: &str, scope: Option<&str>| {
            let mut h = format!("Bearer error=\"{error}\"");
            if let Some(s) = scope {
                h.push_str(&format!(", scope=\"{s}\""));
            }
            if let PrmAt::Advertised(p) = &c.prm {
                h.push_str(&format!(", resource_metadata=\"{}{p}\"", self.base));
            }
            h
        };
        let token = seen
            .authorization
            .as_deref()
            .and_then(|a| a.strip_prefix("Bearer "));
        let current_issuer = self.authorization_server.lock().unwrap().clone();
        let issued = token.and_then(|t| self.book.tokens.lock().unwrap().get(t).cloned());
        let Some(issued) = issued.filter(|i| i.issuer == current_issuer && !c.reject_all) else {
            return (
                StatusCode::UNAUTHORIZED,
                [(
                    "www-authenticate",
                    challenge("invalid_token", c.challenge_scope.as_deref()),
                )],
                axum::Json(json!({"error": "invalid_token"})),
            )
                .into_response();
        };
        let expected_resource = c.resource_override.clone().unwrap_or_else(|| match c.prm {
            PrmAt::Root => self.base.clone(),
            _ => self.url(),
        });
        if issued.resource != expected_resource {
            self.log
                .violation(format!("rs: token for resource {}", issued.resource));
        }
        if let Some(fixed) = &c.always_forbid {
            let scope = fixed.clone().unwrap_or_else(|| {
                format!(
                    "extra{}",
                    self.forbid_counter.fetch_add(1, Ordering::Relaxed)
                )
            });
            return (
                StatusCode::FORBIDDEN,
                [(
                    "www-authenticate",
                    challenge("insufficient_scope", Some(&scope)),
                )],
            )
                .into_response();
        }
        if let Some(needed) = c.required.get(&mcp_method) {
            if !needed.iter().all(|s| issued.scopes.contains(s)) {
                return (
                    StatusCode::FORBIDDEN,
                    [(
                        "www-authenticate",
                        challenge("insufficient_scope", Some(&needed.join(" "))),
                    )],
                )
                    .into_response();
            }
        }
        let result = match mcp_method.as_str() {
            "tools/list" => json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}],
                "resultType": "complete", "ttlMs": 0, "cacheScope": "private"}),
            _ => json!({"content": [{"type": "text", "text": "ok"}], "resultType": "complete"}),
        };
        axum::Json(json!({"jsonrpc": "2.0", "id": body["id"], "result": result})).into_response()
    }
}

fn decode(s: &str) -> String {
    url::form_urlencoded::parse(format!("x={s}").as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

enum Role {
    As(Arc<MockAs>),
    Rs(Arc<MockRs>),
}

async fn dispatch(
    State((role, log)): State<(Arc<Role>, Arc<Log>)>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let parse = |s: &[u8]| -> BTreeMap<String, String> {
        url::form_urlencoded::parse(s).into_owned().collect()
    };
    let content_type = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let seen = Seen {
        server: match &*role {
            Role::As(a) => a.name.clone(),
            Role::Rs(_) => "rs".into(),
        },
        method: method.to_string(),
        path: uri.path().to_owned(),
        query: parse(uri.query().unwrap_or("").as_bytes()),
        form: if content_type.starts_with("application/x-www-form-urlencoded") {
            parse(&body)
        } else {
            BTreeMap::new()
        },
        json: serde_json::from_slice(&body).ok(),
        authorization: headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
    };
    log.seen.lock().unwrap().push(seen.clone());
    match &*role {
        Role::As(a) => a.handle(&method, uri.path(), &seen, &headers),
        Role::Rs(r) => r.handle(&method, uri.path(), &seen),
    }
}

async fn serve(role: Role, log: Arc<Log>, listener: tokio::net::TcpListener) {
    let app = Router::new()
        .fallback(dispatch)
        .with_state((Arc::new(role), log));
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
}

async fn listen() -> (tokio::net::TcpListener, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    (listener, base)
}

/// An authorization server and a protected MCP server that trusts it.
pub struct World {
    pub log: Arc<Log>,
    pub auth: Arc<MockAs>,
    pub rs: Arc<MockRs>,
    book: Arc<TokenBook>,
}

impl World {
    pub async fn start(as_config: AsConfig, rs_config: RsConfig) -> World {
        let log = Arc::new(Log::default());
        let book = Arc::new(TokenBook::default());
        let auth = Self::start_as(&log, &book, "as", as_config).await;
        let (listener, base) = listen().await;
        let rs = Arc::new(MockRs {
            base,
            config: Mutex::new(rs_config),
            authorization_server: Mutex::new(auth.issuer()),
            log: log.clone(),
            book: book.clone(),
            forbid_counter: AtomicU64::new(0),
        });
        serve(Role::Rs(rs.clone()), log.clone(), listener).await;
        World {
            log,
            auth,
            rs,
            book,
        }
    }

    async fn start_as(
        log: &Arc<Log>,
        book: &Arc<TokenBook>,
        name: &str,
        config: AsConfig,
    ) -> Arc<MockAs> {
        let (listener, base) = listen().await;
        let auth = Arc::new(MockAs {
            base,
            config: Mutex::new(config),
            log: log.clone(),
            name: name.into(),
            book: book.clone(),
            codes: Mutex::new(HashMap::new()),
            clients: Mutex::new(HashMap::new()),
            counter: AtomicU64::new(0),
        });
        serve(Role::As(auth.clone()), log.clone(), listener).await;
        auth
    }

    /// A second authorization server trusted by the same token book.
    pub async fn another_as(&self, name: &str, config: AsConfig) -> Arc<MockAs> {
        Self::start_as(&self.log, &self.book, name, config).await
    }

    pub fn oauth(&self) -> OAuthBuilder {
        OAuth::builder(FollowRedirect::new("http://127.0.0.1:9/callback"))
    }

    pub fn transport(&self, oauth: OAuth) -> HttpTransport {
        HttpTransport::builder(self.rs.url())
            .oauth(oauth)
            .build()
            .unwrap()
    }

    pub fn assert_clean(&self) {
        assert_eq!(self.log.violations(), Vec::<String>::new());
    }
}

/// Sends one MCP request; the result object, or the transport error.
pub async fn call(transport: &HttpTransport, method: &str) -> Result<Value, TransportError> {
    let params = json!({"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    }});
    let request = Request::new(1, method, params.as_object().cloned());
    let mut exchange = transport.send(OutgoingRequest::new(request)).await?;
    match exchange.next().await {
        Some(Ok(Message::Result(r))) => Ok(Value::Object(
            r.result.into_object().expect("a result tree"),
        )),
        other => panic!("unexpected reply: {other:?}"),
    }
}

/// The authorization error of a failed call.
pub async fn auth_error(transport: &HttpTransport, method: &str) -> AuthError {
    match call(transport, method).await {
        Err(TransportError::Auth(e)) => e,
        other => panic!("expected an authorization error, got {other:?}"),
    }
}
