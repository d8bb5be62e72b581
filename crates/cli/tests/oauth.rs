//! `toolwire --oauth` against a server that requires OAuth 2.1 (issue 12):
//! a mock authorization server and a protected MCP server (the toolwire
//! server SDK) run in-process on 127.0.0.1, and the real `toolwire` binary
//! is driven as a user would drive it: it prints the authorization URL, a
//! "browser" opens it and follows the redirect to the CLI's loopback
//! listener. Every wait is bounded; a stuck run is killed.

mod support;

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use toolwire::server::auth::{AuthConfig, StaticTokens};
use toolwire::server::http::{HttpConfig, router};
use toolwire::server::{Principal, RequestContext, Server, ToolBuilder};

/// Longest one CLI run may take before it is killed and the test fails.
const RUN_LIMIT: Duration = Duration::from_secs(30);

/// Where the authorization server's metadata is (RFC 8414, root issuer).
const METADATA: &str = "GET /.well-known/oauth-authorization-server";

// ---------------------------------------------------------------------------
// The mock authorization server

/// One request the authorization server received.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    /// The query of a GET, the form body of a POST to /token.
    params: BTreeMap<String, String>,
    /// The JSON body of a POST to /register.
    json: Option<Value>,
}

/// A code handed out by /authorize, waiting to be exchanged at /token.
#[derive(Debug)]
struct Grant {
    client_id: String,
    redirect_uri: String,
    challenge: String,
    resource: String,
}

/// A small OAuth 2.1 authorization server: metadata, Dynamic Client
/// Registration of public clients, an authorization endpoint that approves
/// at once (302 to the redirect URI with the code, the same state and
/// `iss`), and a token endpoint that checks the PKCE verifier, redirect URI,
/// client and `resource` before issuing the one access token the MCP
/// server accepts.
#[derive(Debug)]
struct Authority {
    issuer: String,
    /// The MCP server's resource identifier: the only `resource` accepted.
    resource: String,
    access_token: String,
    /// When set, /token answers `invalid_grant` to every code.
    reject_codes: AtomicBool,
    counter: AtomicUsize,
    seen: Mutex<Vec<Seen>>,
    /// Registered clients and their redirect URIs.
    clients: Mutex<HashMap<String, Vec<String>>>,
    grants: Mutex<HashMap<String, Grant>>,
    codes_issued: Mutex<Vec<String>>,
}

impl Authority {
    fn next(&self) -> usize {
        self.counter.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Everything received, in order.
    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// `METHOD /path` of every request received, in order.
    fn requests(&self) -> Vec<String> {
        self.seen()
            .iter()
            .map(|s| format!("{} {}", s.method, s.path))
            .collect()
    }

    fn codes_issued(&self) -> Vec<String> {
        self.codes_issued.lock().unwrap().clone()
    }

    fn client_ids(&self) -> Vec<String> {
        self.clients.lock().unwrap().keys().cloned().collect()
    }

    fn metadata(&self) -> Response {
        let issuer = &self.issuer;
        Json(json!({
            "issuer": issuer,
            "authorization_endpoint": format!("{issuer}/authorize"),
            "token_endpoint": format!("{issuer}/token"),
            "registration_endpoint": format!("{issuer}/register"),
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
            "authorization_response_iss_parameter_supported": true,
        }))
        .into_response()
    }

    fn register(&self, body: Option<&Value>) -> Response {
        let Some(body) = body else {
            return oauth_error("invalid_client_metadata", "the body is not JSON");
        };
        let redirect_uris: Vec<String> = body["redirect_uris"]
            .as_array()
            .map(|uris| {
                uris.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        if redirect_uris.is_empty() {
            return oauth_error("invalid_redirect_uri", "no redirect_uris");
        }
        if body["token_endpoint_auth_method"] != "none" {
            return oauth_error(
                "invalid_client_metadata",
                "only public clients (token_endpoint_auth_method none) are registered",
            );
        }
        let client_id = format!("client-{}", self.next());
        self.clients
            .lock()
            .unwrap()
            .insert(client_id.clone(), redirect_uris.clone());
        let registered = json!({
            "client_id": client_id,
            "client_id_issued_at": unix_now(),
            "redirect_uris": redirect_uris,
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code"],
            "response_types": ["code"],
        });
        (StatusCode::CREATED, Json(registered)).into_response()
    }

    fn authorize(&self, query: &BTreeMap<String, String>) -> Response {
        let get = |key: &str| query.get(key).map(String::as_str).unwrap_or("");
        let (client_id, redirect_uri) = (get("client_id"), get("redirect_uri"));
        // An unknown client or redirect URI is never redirected to (RFC 6749
        // §4.1.2.1): the "user" sees an error page.
        let known = self
            .clients
            .lock()
            .unwrap()
            .get(client_id)
            .is_some_and(|uris| uris.iter().any(|u| u == redirect_uri));
        let refusal = if !known {
            Some("unknown client_id or unregistered redirect_uri")
        } else if get("response_type") != "code" {
            Some("response_type must be code")
        } else if get("code_challenge_method") != "S256" {
            Some("PKCE with code_challenge_method S256 is required")
        } else if get("code_challenge").len() != 43 {
            Some("code_challenge is not a SHA-256 digest in base64url")
        } else if get("state").is_empty() {
            Some("no state")
        } else if get("resource") != self.resource {
            Some("resource is not the MCP server this authorization server protects")
        } else {
            None
        };
        if let Some(refusal) = refusal {
            return (StatusCode::BAD_REQUEST, refusal).into_response();
        }
        let code = format!("code-{}-{}", self.next(), nonce());
        self.grants.lock().unwrap().insert(
            code.clone(),
            Grant {
                client_id: client_id.to_owned(),
                redirect_uri: redirect_uri.to_owned(),
                challenge: get("code_challenge").to_owned(),
                resource: get("resource").to_owned(),
            },
        );
        self.codes_issued.lock().unwrap().push(code.clone());
        let mut location = url::Url::parse(redirect_uri).expect("a registered redirect URI");
        location
            .query_pairs_mut()
            .append_pair("code", &code)
            .append_pair("state", get("state"))
            .append_pair("iss", &self.issuer);
        (
            StatusCode::FOUND,
            [(header::LOCATION, location.to_string())],
        )
            .into_response()
    }

    fn token(&self, form: &BTreeMap<String, String>) -> Response {
        let get = |key: &str| form.get(key).map(String::as_str).unwrap_or("");
        if get("grant_type") != "authorization_code" {
            return oauth_error("unsupported_grant_type", "only authorization_code");
        }
        // Single use: a code is gone once presented, accepted or not.
        let Some(grant) = self.grants.lock().unwrap().remove(get("code")) else {
            return oauth_error("invalid_grant", "unknown or already used code");
        };
        let verifier = get("code_verifier");
        let refusal = if self.reject_codes.load(Ordering::SeqCst) {
            Some("the authorization code has expired")
        } else if get("client_id") != grant.client_id {
            Some("the code was issued to another client")
        } else if get("redirect_uri") != grant.redirect_uri {
            Some("redirect_uri differs from the authorization request")
        } else if get("resource") != grant.resource {
            Some("resource differs from the authorization request")
        } else if !(43..=128).contains(&verifier.len()) || s256(verifier) != grant.challenge {
            Some("code_verifier does not match the S256 code_challenge")
        } else {
            None
        };
        if let Some(refusal) = refusal {
            return oauth_error("invalid_grant", refusal);
        }
        let tokens = json!({
            "access_token": self.access_token,
            "token_type": "Bearer",
            "expires_in": 3600,
        });
        ([(header::CACHE_CONTROL, "no-store")], Json(tokens)).into_response()
    }
}

/// Every request to the authorization server: recorded, then answered.
async fn authority(
    State(authority): State<Arc<Authority>>,
    method: Method,
    uri: Uri,
    body: Bytes,
) -> Response {
    let path = uri.path().to_owned();
    let params = if method == Method::GET {
        form_pairs(uri.query().unwrap_or("").as_bytes())
    } else if path == "/token" {
        form_pairs(&body)
    } else {
        BTreeMap::new()
    };
    let json = (path == "/register")
        .then(|| serde_json::from_slice(&body).ok())
        .flatten();
    authority.seen.lock().unwrap().push(Seen {
        method: method.to_string(),
        path: path.clone(),
        params: params.clone(),
        json: json.clone(),
    });
    match (method.as_str(), path.as_str()) {
        ("GET", "/.well-known/oauth-authorization-server") => authority.metadata(),
        ("POST", "/register") => authority.register(json.as_ref()),
        ("GET", "/authorize") => authority.authorize(&params),
        ("POST", "/token") => authority.token(&params),
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

fn oauth_error(error: &str, description: &str) -> Response {
    let body = json!({ "error": error, "error_description": description });
    (StatusCode::BAD_REQUEST, Json(body)).into_response()
}

fn form_pairs(bytes: &[u8]) -> BTreeMap<String, String> {
    url::form_urlencoded::parse(bytes).into_owned().collect()
}

/// The PKCE S256 challenge of `verifier` (RFC 7636 §4.2), computed here
/// independently of the client SDK.
fn s256(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn nonce() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

// ---------------------------------------------------------------------------
// The protected MCP server and the fixture

#[derive(Deserialize, JsonSchema)]
struct NoArguments {}

async fn whoami(_: NoArguments, cx: RequestContext) -> String {
    let subject = cx.principal().subject.as_deref().unwrap_or("anonymous");
    format!("you are {subject}")
}

/// Both servers, stopped on drop.
struct Fixture {
    authority: Arc<Authority>,
    /// The MCP endpoint, also its resource identifier.
    url: String,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl Fixture {
    /// Binds both servers on OS-picked loopback ports, then starts them: the
    /// MCP server accepts only the access token the authorization server
    /// issues, and names that server in its protected resource metadata.
    async fn start() -> Fixture {
        let as_listener = TcpListener::bind("127.0.0.1:0").await.expect("bind AS");
        let rs_listener = TcpListener::bind("127.0.0.1:0").await.expect("bind RS");
        let issuer = format!("http://{}", as_listener.local_addr().unwrap());
        let url = format!("http://{}/mcp", rs_listener.local_addr().unwrap());
        let access_token = format!("at-{}-{}", std::process::id(), nonce());
        let authority = Arc::new(Authority {
            issuer: issuer.clone(),
            resource: url.clone(),
            access_token: access_token.clone(),
            reject_codes: AtomicBool::new(false),
            counter: AtomicUsize::new(0),
            seen: Mutex::default(),
            clients: Mutex::default(),
            grants: Mutex::default(),
            codes_issued: Mutex::default(),
        });
        let as_app = Router::new()
            .fallback(self::authority)
            .with_state(Arc::clone(&authority));
        let as_task = tokio::spawn(async move {
            let _ = axum::serve(as_listener, as_app).await;
        });

        let server = Server::builder("oauth-test", "1.0.0")
            .tool(
                ToolBuilder::new("whoami")
                    .description("Says who is calling")
                    .handler(whoami),
            )
            .build()
            .expect("the test server builds");
        let tokens = StaticTokens::new().token(&access_token, Principal::new("oauth-user"));
        let auth = AuthConfig::new(&url, tokens)
            .expect("a valid resource URI")
            .authorization_server(&issuer)
            .resource_name("oauth test");
        let app = router(server, HttpConfig::new().auth(auth))
            .into_make_service_with_connect_info::<SocketAddr>();
        let rs_task = tokio::spawn(async move {
            let _ = axum::serve(rs_listener, app).await;
        });
        Fixture {
            authority,
            url,
            tasks: vec![as_task, rs_task],
        }
    }
}

/// A private config directory for one test (XDG_CONFIG_HOME), removed on drop.
struct ConfigDir(PathBuf);

impl ConfigDir {
    fn new(label: &str) -> ConfigDir {
        let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "oauth-{label}-{}-{}",
            std::process::id(),
            nonce()
        ));
        std::fs::create_dir_all(&path).expect("create the config directory");
        ConfigDir(path)
    }

    fn tokens_file(&self) -> PathBuf {
        self.0.join("toolwire").join("tokens.json")
    }

    fn tokens(&self) -> Value {
        let text = std::fs::read_to_string(self.tokens_file()).expect("tokens.json exists");
        serde_json::from_str(&text).expect("tokens.json is JSON")
    }
}

impl Drop for ConfigDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

// ---------------------------------------------------------------------------
// Running the CLI, and the browser

/// How a CLI run ended, and the authorization URLs it printed.
#[derive(Debug)]
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    /// Every authorization URL printed on stderr (each one was browsed).
    authorization_urls: Vec<String>,
    /// Where the browser ended up for each, or why it failed.
    browsed: Vec<Result<String, String>>,
}

impl Ran {
    fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code,
            Some(code),
            "exit code; browsed: {:?}\nstdout:\n{}\nstderr:\n{}",
            self.browsed,
            self.stdout,
            self.stderr
        );
        self
    }
}

/// Runs `toolwire args...` with `config` as XDG_CONFIG_HOME. Whenever an
/// authorization URL of `issuer` appears on stderr, a browser opens it and
/// follows the redirects. Killed (and the test failed) after [`RUN_LIMIT`].
async fn run_cli(args: &[&str], config: &ConfigDir, issuer: &str) -> Ran {
    let mut child = tokio::process::Command::new(support::bin())
        .args(args)
        .env("XDG_CONFIG_HOME", &config.0)
        .env_remove("RUST_LOG")
        .env_remove("TOOLWIRE_BEARER")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn toolwire");
    let mut stdout = child.stdout.take().expect("piped stdout");
    let stdout = tokio::spawn(async move {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text).await;
        text
    });
    let log = Arc::new(Mutex::new(String::new()));
    let stderr = child.stderr.take().expect("piped stderr");
    let prefix = format!("{issuer}/authorize?");
    let lines = Arc::clone(&log);
    let stderr = tokio::spawn(async move {
        let (mut urls, mut browsed) = (Vec::new(), Vec::new());
        let mut reader = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = reader.next_line().await {
            lines.lock().unwrap().push_str(&format!("{line}\n"));
            let url = line.trim();
            if url.starts_with(&prefix) {
                urls.push(url.to_owned());
                browsed.push(browse(url).await);
            }
        }
        (urls, browsed)
    });
    let status = match tokio::time::timeout(RUN_LIMIT, child.wait()).await {
        Ok(status) => status.expect("wait for toolwire"),
        Err(_) => {
            let _ = child.kill().await;
            panic!(
                "`toolwire {}` did not finish within {RUN_LIMIT:?}; stderr so far:\n{}",
                args.join(" "),
                log.lock().unwrap()
            );
        }
    };
    let limit = Duration::from_secs(10);
    let stdout = tokio::time::timeout(limit, stdout)
        .await
        .expect("stdout closes")
        .expect("stdout reader");
    let (authorization_urls, browsed) = tokio::time::timeout(limit, stderr)
        .await
        .expect("stderr closes")
        .expect("stderr reader");
    let stderr = log.lock().unwrap().clone();
    Ran {
        code: status.code(),
        stdout,
        stderr,
        authorization_urls,
        browsed,
    }
}

/// Opens `url` as a browser would, following redirects; the page it lands
/// on must be the CLI's confirmation. Returns where it landed.
async fn browse(url: &str) -> Result<String, String> {
    let browser = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| e.to_string())?;
    let page = browser
        .get(url)
        .send()
        .await
        .map_err(|e| format!("GET {url}: {e}"))?;
    let (landed, status) = (page.url().clone(), page.status());
    let text = page.text().await.map_err(|e| e.to_string())?;
    if status != StatusCode::OK || !text.contains("Authorization received") {
        return Err(format!("landed on {landed} with HTTP {status}: {text}"));
    }
    let mut landed = landed;
    landed.set_query(None);
    Ok(landed.to_string())
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

// ---------------------------------------------------------------------------
// The tests

/// `toolwire list URL --oauth` with its redirect on `port`.
fn list_with_oauth<'a>(url: &'a str, port: &'a str) -> [&'a str; 7] {
    [
        "list",
        url,
        "--oauth",
        "--oauth-port",
        port,
        "--timeout",
        "20",
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_authorizes_once_then_reuses_the_stored_token() {
    let fx = Fixture::start().await;
    let authority = &fx.authority;
    let issuer = authority.issuer.clone();
    let config = ConfigDir::new("authorize");
    let port = support::closed_port().to_string();
    let redirect_uri = format!("http://127.0.0.1:{port}/callback");
    let args = list_with_oauth(&fx.url, &port);

    // 1. The server answers 401; the CLI discovers, registers, prints the
    // URL, receives the redirect, exchanges the code and lists the tools.
    let first = run_cli(&args, &config, &issuer).await;
    first.expect_code(0);
    assert_eq!(
        first.stdout,
        format!("1 tool on {}:\n  whoami — Says who is calling\n", fx.url)
    );
    assert!(
        first
            .stderr
            .contains("Open this URL in a browser to authorize:"),
        "{}",
        first.stderr
    );
    assert_eq!(first.authorization_urls.len(), 1, "{}", first.stderr);
    assert_eq!(first.browsed, [Ok(redirect_uri.clone())]);

    // Exactly what the authorization server saw, and with what.
    assert_eq!(
        authority.requests(),
        [METADATA, "POST /register", "GET /authorize", "POST /token"]
    );
    let seen = authority.seen();
    let client_ids = authority.client_ids();
    assert_eq!(client_ids.len(), 1);
    let client_id = client_ids[0].as_str();

    let registration = seen[1].json.as_ref().expect("a JSON registration");
    assert_eq!(registration["redirect_uris"], json!([redirect_uri]));
    assert_eq!(registration["client_name"], "toolwire");
    assert_eq!(registration["token_endpoint_auth_method"], "none");
    assert_eq!(registration["application_type"], "native");
    assert_eq!(registration["response_types"], json!(["code"]));
    assert_eq!(registration["grant_types"], json!(["authorization_code"]));

    let authorize = &seen[2].params;
    let printed: BTreeMap<String, String> = url::Url::parse(&first.authorization_urls[0])
        .unwrap()
        .query_pairs()
        .into_owned()
        .collect();
    assert_eq!(&printed, authorize, "the printed URL is what was browsed");
    let keys: Vec<&str> = authorize.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "client_id",
            "code_challenge",
            "code_challenge_method",
            "redirect_uri",
            "resource",
            "response_type",
            "state"
        ],
        "no scope: the server's metadata lists none"
    );
    assert_eq!(authorize["response_type"], "code");
    assert_eq!(authorize["client_id"], client_id);
    assert_eq!(authorize["redirect_uri"], redirect_uri);
    assert_eq!(authorize["code_challenge_method"], "S256");
    assert_eq!(authorize["resource"], fx.url);
    assert!(authorize["state"].len() >= 32, "{authorize:?}");

    let token = &seen[3].params;
    let codes = authority.codes_issued();
    assert_eq!(codes.len(), 1);
    assert_eq!(token["grant_type"], "authorization_code");
    assert_eq!(token["code"], codes[0]);
    assert_eq!(token["client_id"], client_id);
    assert_eq!(token["redirect_uri"], redirect_uri);
    assert_eq!(token["resource"], fx.url);
    assert_eq!(s256(&token["code_verifier"]), authorize["code_challenge"]);

    // The token is kept, owner-only, under the issuer and the resource.
    let file = config.tokens_file();
    #[cfg(unix)]
    {
        assert_eq!(mode(&file), 0o600, "{}", file.display());
        assert_eq!(mode(file.parent().unwrap()), 0o700);
    }
    let stored = config.tokens();
    assert_eq!(
        stored[&issuer]["tokens"][&fx.url]["access_token"],
        authority.access_token.as_str()
    );
    assert_eq!(stored[&issuer]["client"]["client_id"], client_id);
    // Neither the token nor the code is ever printed.
    for secret in [&authority.access_token, &codes[0]] {
        assert!(!first.stderr.contains(secret.as_str()), "{}", first.stderr);
        assert!(!first.stdout.contains(secret.as_str()));
    }

    // 2. The same config directory: the stored token is sent after the 401
    // (discovery runs again; nothing is registered or authorized).
    let before = authority.seen().len();
    let second = run_cli(&args, &config, &issuer).await;
    second.expect_code(0);
    assert_eq!(second.stdout, first.stdout);
    assert!(second.authorization_urls.is_empty(), "{}", second.stderr);
    assert!(
        !second.stderr.contains("Open this URL"),
        "{}",
        second.stderr
    );
    assert_eq!(authority.requests()[before..], [METADATA]);

    // 3. And a tool call runs as the principal the token stands for.
    let before = authority.seen().len();
    let call = run_cli(
        &[
            "call",
            &fx.url,
            "whoami",
            "--yes",
            "--oauth",
            "--oauth-port",
            &port,
            "--timeout",
            "20",
        ],
        &config,
        &issuer,
    )
    .await;
    call.expect_code(0);
    assert_eq!(call.stdout.trim_end(), "you are oauth-user");
    assert!(call.authorization_urls.is_empty(), "{}", call.stderr);
    assert_eq!(authority.requests()[before..], [METADATA]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_code_fails_clearly_and_the_next_run_authorizes() {
    let fx = Fixture::start().await;
    let authority = &fx.authority;
    let issuer = authority.issuer.clone();
    let config = ConfigDir::new("refused");
    let port = support::closed_port().to_string();
    let args = list_with_oauth(&fx.url, &port);

    authority.reject_codes.store(true, Ordering::SeqCst);
    let failed = run_cli(&args, &config, &issuer).await;
    failed.expect_code(2);
    assert_eq!(failed.authorization_urls.len(), 1, "{}", failed.stderr);
    assert!(
        failed
            .stderr
            .contains("token request failed: invalid_grant (the authorization code has expired)"),
        "{}",
        failed.stderr
    );
    let tokens = config.tokens_file();
    assert!(
        failed.stderr.contains(&format!(
            "hint: run the command again to start a new authorization \
             (tokens and client registrations are kept in {})",
            tokens.display()
        )),
        "{}",
        failed.stderr
    );
    assert!(failed.stdout.is_empty(), "{}", failed.stdout);
    assert_eq!(
        authority.requests(),
        [METADATA, "POST /register", "GET /authorize", "POST /token"]
    );
    let codes = authority.codes_issued();
    assert!(!failed.stderr.contains(&codes[0]), "{}", failed.stderr);
    // The registration is kept; no token is.
    let stored = config.tokens();
    assert!(
        stored[&issuer]["client"]["client_id"].is_string(),
        "{stored}"
    );
    assert_eq!(stored[&issuer]["tokens"], json!({}), "{stored}");

    // The servers keep working: once the authorization server accepts codes
    // again, the next run reuses the registration and authorizes.
    authority.reject_codes.store(false, Ordering::SeqCst);
    let before = authority.seen().len();
    let ok = run_cli(&args, &config, &issuer).await;
    ok.expect_code(0);
    assert!(
        ok.stdout.contains("whoami — Says who is calling"),
        "{}",
        ok.stdout
    );
    assert_eq!(ok.authorization_urls.len(), 1, "{}", ok.stderr);
    assert_eq!(
        authority.requests()[before..],
        [METADATA, "GET /authorize", "POST /token"]
    );
    assert_eq!(
        config.tokens()[&issuer]["tokens"][&fx.url]["access_token"],
        authority.access_token.as_str()
    );
}
