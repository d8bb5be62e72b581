//! Authentication over HTTP (127.0.0.1:0): the exact 401/403/400 challenges
//! for missing, bad, expired, foreign and under-scoped tokens; static tokens
//! and JWTs (HS256, RS256 and ES256 from a JWKS file); the protected
//! resource metadata document; and the next good request after each refusal.

mod security_support;

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::StatusCode;
use security_support::{Endpoint, Reply};
use serde_json::{Value, json};
use toolwire_server::auth::{AuthConfig, JwtVerifier, StaticTokens};
use toolwire_server::http::HttpConfig;
use toolwire_server::{NoArgs, Principal, RequestContext, Server, ToolBuilder};

const RESOURCE: &str = "https://mcp.example.com/mcp";
const METADATA: &str = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";
const ISSUER: &str = "https://auth.example.com";
const SECRET: &[u8] = b"test secret: 32 bytes or more, for HS256 only";
const ALICE: &str = "alice-token-0123456789abcdef";

fn server() -> Server {
    Server::builder("auth-test", "1")
        .tool(
            ToolBuilder::new("whoami").handler(|_: NoArgs, cx: RequestContext| async move {
                let p = cx.principal();
                format!(
                    "{} [{}]",
                    p.subject.as_deref().unwrap_or("anonymous"),
                    p.scopes.join(" ")
                )
            }),
        )
        .build()
        .unwrap()
}

fn static_tokens() -> StaticTokens {
    StaticTokens::new().token(ALICE, Principal::new("alice").with_scopes(["mcp:use"]))
}

async fn endpoint(auth: AuthConfig) -> Endpoint {
    Endpoint::start(server(), HttpConfig::new().auth(auth)).await
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn claims(edit: impl FnOnce(&mut Value)) -> Value {
    let mut claims = json!({
        "iss": ISSUER,
        "aud": RESOURCE,
        "sub": "bob",
        "scope": "mcp:use tools:read",
        "iat": now(),
        "exp": now() + 300,
    });
    edit(&mut claims);
    claims
}

fn hs256(claims: &Value) -> String {
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        claims,
        &EncodingKey::from_secret(SECRET),
    )
    .unwrap()
}

fn test_key(name: &str) -> Vec<u8> {
    let keys: Value = serde_json::from_str(include_str!("fixtures/jwt_test_keys.json")).unwrap();
    STANDARD.decode(keys[name].as_str().unwrap()).unwrap()
}

fn signed(alg: Algorithm, kid: Option<&str>, claims: &Value) -> String {
    let key = match alg {
        Algorithm::RS256 => EncodingKey::from_rsa_der(&test_key("rsa_pkcs1_der")),
        Algorithm::ES256 => EncodingKey::from_ec_der(&test_key("ec_pkcs8_der")),
        Algorithm::HS256 => EncodingKey::from_secret(SECRET),
        other => panic!("{other:?}"),
    };
    let mut header = Header::new(alg);
    header.kid = kid.map(str::to_owned);
    jsonwebtoken::encode(&header, claims, &key).unwrap()
}

fn jwt_auth() -> AuthConfig {
    let verifier = JwtVerifier::new(ISSUER, RESOURCE)
        .hs256_secret(SECRET)
        .unwrap()
        .jwks_file(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/jwks.json"
        ))
        .unwrap();
    AuthConfig::new(RESOURCE, verifier)
        .unwrap()
        .authorization_server(ISSUER)
}

fn invalid_token(description: &str) -> String {
    format!(
        "Bearer error=\"invalid_token\", resource_metadata=\"{METADATA}\", error_description=\"{description}\""
    )
}

/// A refusal: the status, the exact challenge, and a JSON-RPC error body.
fn assert_refused(reply: &Reply, status: StatusCode, challenge: &str) {
    assert_eq!(reply.status, status, "{}", reply.text);
    assert_eq!(reply.header("www-authenticate"), challenge);
    assert_eq!(reply.header("content-type"), "application/json");
    assert_eq!(reply.body["jsonrpc"], "2.0");
    assert_eq!(reply.body["id"], Value::Null);
    assert_eq!(reply.body["error"]["code"], -32600);
}

async fn assert_whoami(endpoint: &Endpoint, token: &str, expected: &str) {
    let reply = endpoint.call_tool(Some(token), "whoami", json!({})).await;
    assert_eq!(reply.text0(), expected, "{}", reply.text);
}

#[tokio::test]
async fn auth_is_off_by_default() {
    let endpoint = Endpoint::start(server(), HttpConfig::new()).await;
    let reply = endpoint.call_tool(None, "whoami", json!({})).await;
    assert_eq!(reply.text0(), "anonymous []");
    // No metadata document either.
    let prm = endpoint
        .get("/.well-known/oauth-protected-resource/mcp")
        .await;
    assert_eq!(prm.status, StatusCode::NOT_FOUND);
    endpoint.stop().await;
}

#[tokio::test]
async fn missing_token_gets_401_with_resource_metadata() {
    let endpoint = endpoint(AuthConfig::new(RESOURCE, static_tokens()).unwrap()).await;
    let reply = endpoint.call_tool(None, "whoami", json!({})).await;
    assert_refused(
        &reply,
        StatusCode::UNAUTHORIZED,
        &format!("Bearer resource_metadata=\"{METADATA}\""),
    );
    assert_eq!(
        reply.body["error"]["message"],
        "Unauthorized: an access token is required"
    );
    // Another scheme counts as no bearer token; so does a GET.
    let basic = endpoint
        .post_with(
            None,
            &security_support::call(1, "whoami", json!({})),
            &[("Authorization", "Basic YWxpY2U6cHc=")],
        )
        .await;
    assert_eq!(basic.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        basic.header("www-authenticate"),
        reply.header("www-authenticate")
    );
    let get = endpoint.get("/mcp").await;
    assert_eq!(get.status, StatusCode::UNAUTHORIZED);
    // The next good request is answered.
    assert_whoami(&endpoint, ALICE, "alice [mcp:use]").await;
    endpoint.stop().await;
}

#[tokio::test]
async fn unknown_static_token_gets_invalid_token() {
    let endpoint = endpoint(AuthConfig::new(RESOURCE, static_tokens()).unwrap()).await;
    for bad in ["not-a-known-token", "alice-token-0123456789abcdeF"] {
        let reply = endpoint.call_tool(Some(bad), "whoami", json!({})).await;
        assert_refused(
            &reply,
            StatusCode::UNAUTHORIZED,
            &invalid_token("The access token is not valid"),
        );
        assert_eq!(
            reply.body["error"]["message"],
            "Unauthorized: The access token is not valid"
        );
        assert_whoami(&endpoint, ALICE, "alice [mcp:use]").await;
    }
    endpoint.stop().await;
}

#[tokio::test]
async fn malformed_authorization_gets_400_invalid_request() {
    let endpoint = endpoint(AuthConfig::new(RESOURCE, static_tokens()).unwrap()).await;
    let body = security_support::call(1, "whoami", json!({}));
    let twice = endpoint
        .post_with(
            Some(ALICE),
            &body,
            &[("Authorization", "Bearer second-token")],
        )
        .await;
    assert_refused(
        &twice,
        StatusCode::BAD_REQUEST,
        &format!(
            "Bearer error=\"invalid_request\", resource_metadata=\"{METADATA}\", \
             error_description=\"Send exactly one Authorization header\""
        ),
    );
    let not_token68 = endpoint
        .post_with(None, &body, &[("Authorization", "Bearer two words")])
        .await;
    assert_refused(
        &not_token68,
        StatusCode::UNAUTHORIZED,
        &invalid_token("The access token is malformed"),
    );
    assert_whoami(&endpoint, ALICE, "alice [mcp:use]").await;
    endpoint.stop().await;
}

#[tokio::test]
async fn token_in_query_string_is_refused() {
    let auth = AuthConfig::new(RESOURCE, static_tokens()).unwrap();
    let config = HttpConfig::new().auth(auth);
    let endpoint = Endpoint::start(server(), config).await;
    let client = reqwest::Client::new();
    let body = security_support::call(1, "whoami", json!({}));
    let response = client
        .post(format!("{}?access_token={ALICE}", endpoint.url))
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", security_support::VERSION)
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "whoami")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        response.headers()["www-authenticate"],
        format!(
            "Bearer error=\"invalid_request\", resource_metadata=\"{METADATA}\", \
             error_description=\"Access tokens must be sent in the Authorization header, not the query string\""
        )
        .as_str()
    );
    assert_whoami(&endpoint, ALICE, "alice [mcp:use]").await;
    endpoint.stop().await;
}

#[tokio::test]
async fn jwt_hs256_good_bad_expired_foreign() {
    let endpoint = endpoint(jwt_auth()).await;
    let good = hs256(&claims(|_| {}));
    assert_whoami(&endpoint, &good, "bob [mcp:use tools:read]").await;

    let other_secret = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims(|_| {}),
        &EncodingKey::from_secret(b"another secret that is 32 bytes long!"),
    )
    .unwrap();
    let cases = [
        (
            hs256(&claims(|c| c["exp"] = json!(now() - 120))),
            "The access token expired",
        ),
        (
            hs256(&claims(|c| {
                c["aud"] = json!("https://other.example.com/mcp")
            })),
            "The access token was not issued for this resource",
        ),
        (
            hs256(&claims(|c| c["iss"] = json!("https://evil.example.com"))),
            "The access token was not issued by a trusted issuer",
        ),
        (other_secret, "The access token signature is invalid"),
        (
            hs256(&claims(|c| c["nbf"] = json!(now() + 600))),
            "The access token is not valid yet",
        ),
        (
            hs256(&claims(|c| {
                c.as_object_mut().unwrap().remove("sub");
            })),
            "The access token has no sub claim",
        ),
        (
            hs256(&claims(|c| {
                c.as_object_mut().unwrap().remove("aud");
            })),
            "The access token has no aud claim",
        ),
        (
            hs256(&claims(|c| {
                c.as_object_mut().unwrap().remove("exp");
            })),
            "The access token has no exp claim",
        ),
        // alg "none" is never accepted.
        (
            "eyJhbGciOiJub25lIn0.eyJzdWIiOiJib2IifQ.".to_owned(),
            "The access token is malformed",
        ),
        ("a.b.c".to_owned(), "The access token is malformed"),
    ];
    for (token, description) in cases {
        let reply = endpoint.call_tool(Some(&token), "whoami", json!({})).await;
        assert_refused(
            &reply,
            StatusCode::UNAUTHORIZED,
            &invalid_token(description),
        );
        assert_whoami(&endpoint, &good, "bob [mcp:use tools:read]").await;
    }
    // Within the leeway (30 s) an expired token still passes; `aud` may be a list.
    let skewed = hs256(&claims(|c| c["exp"] = json!(now() - 5)));
    assert_whoami(&endpoint, &skewed, "bob [mcp:use tools:read]").await;
    let listed = hs256(&claims(|c| {
        c["aud"] = json!(["https://other.example.com", RESOURCE]);
        c["scope"] = json!(null);
        c["scp"] = json!(["a", "b"]);
    }));
    assert_whoami(&endpoint, &listed, "bob [a b]").await;
    endpoint.stop().await;
}

#[tokio::test]
async fn jwt_rs256_and_es256_from_jwks_file() {
    let endpoint = endpoint(jwt_auth()).await;
    let rs = signed(Algorithm::RS256, Some("rsa-1"), &claims(|_| {}));
    assert_whoami(&endpoint, &rs, "bob [mcp:use tools:read]").await;
    let es = signed(Algorithm::ES256, Some("ec-1"), &claims(|_| {}));
    assert_whoami(&endpoint, &es, "bob [mcp:use tools:read]").await;
    // Without kid the only key of the algorithm is used.
    let es_no_kid = signed(Algorithm::ES256, None, &claims(|_| {}));
    assert_whoami(&endpoint, &es_no_kid, "bob [mcp:use tools:read]").await;

    let cases = [
        (
            signed(Algorithm::RS256, Some("rsa-2"), &claims(|_| {})),
            "The access token was signed with an unknown key",
        ),
        (
            signed(
                Algorithm::RS256,
                Some("rsa-1"),
                &claims(|c| c["exp"] = json!(now() - 3600)),
            ),
            "The access token expired",
        ),
        (
            signed(
                Algorithm::ES256,
                Some("ec-1"),
                &claims(|c| c["aud"] = json!("https://mcp.example.com")),
            ),
            "The access token was not issued for this resource",
        ),
    ];
    for (token, description) in cases {
        let reply = endpoint.call_tool(Some(&token), "whoami", json!({})).await;
        assert_refused(
            &reply,
            StatusCode::UNAUTHORIZED,
            &invalid_token(description),
        );
        assert_whoami(&endpoint, &rs, "bob [mcp:use tools:read]").await;
    }
    // A signature made by one key is refused under another key's id.
    let mut parts: Vec<String> = rs.split('.').map(str::to_owned).collect();
    let es_sig = es.split('.').nth(2).unwrap().to_owned();
    parts[2] = es_sig;
    let forged = parts.join(".");
    let reply = endpoint.call_tool(Some(&forged), "whoami", json!({})).await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    endpoint.stop().await;
}

#[tokio::test]
async fn hmac_tokens_are_refused_when_only_public_keys_are_configured() {
    // Algorithm confusion: an HS256 token "signed" with public key material.
    let verifier = JwtVerifier::new(ISSUER, RESOURCE)
        .jwks_file(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/jwks.json"
        ))
        .unwrap();
    let endpoint = endpoint(AuthConfig::new(RESOURCE, verifier).unwrap()).await;
    let jwks = include_str!("fixtures/jwks.json");
    let token = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims(|_| {}),
        &EncodingKey::from_secret(jwks.as_bytes()),
    )
    .unwrap();
    let reply = endpoint.call_tool(Some(&token), "whoami", json!({})).await;
    assert_refused(
        &reply,
        StatusCode::UNAUTHORIZED,
        &invalid_token("The access token algorithm is not accepted"),
    );
    let rs = signed(Algorithm::RS256, Some("rsa-1"), &claims(|_| {}));
    assert_whoami(&endpoint, &rs, "bob [mcp:use tools:read]").await;
    endpoint.stop().await;
}

#[tokio::test]
async fn protected_resource_metadata_is_served() {
    let auth = jwt_auth()
        .scopes_supported(["mcp:use", "tools:read"])
        .resource_name("Auth test");
    let endpoint = endpoint(auth).await;
    let reply = endpoint
        .get("/.well-known/oauth-protected-resource/mcp")
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.header("content-type"), "application/json");
    assert_eq!(
        reply.body,
        json!({
            "resource": RESOURCE,
            "authorization_servers": [ISSUER],
            "scopes_supported": ["mcp:use", "tools:read"],
            "bearer_methods_supported": ["header"],
            "resource_name": "Auth test"
        })
    );
    // The metadata needs no token; the endpoint still does.
    let reply = endpoint.call_tool(None, "whoami", json!({})).await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    endpoint.stop().await;
}

#[tokio::test]
async fn metadata_path_follows_the_resource_path() {
    let auth = AuthConfig::new("http://localhost:9/api/mcp", static_tokens())
        .unwrap()
        .authorization_server(ISSUER)
        .require_scopes(["mcp:use"]);
    let endpoint = Endpoint::start(server(), HttpConfig::new().path("/api/mcp").auth(auth)).await;
    let reply = endpoint
        .get("/.well-known/oauth-protected-resource/api/mcp")
        .await;
    assert_eq!(
        reply.body,
        json!({
            "resource": "http://localhost:9/api/mcp",
            "authorization_servers": [ISSUER],
            "scopes_supported": ["mcp:use"],
            "bearer_methods_supported": ["header"]
        })
    );
    let reply = endpoint.call_tool(None, "whoami", json!({})).await;
    assert_eq!(
        reply.header("www-authenticate"),
        "Bearer scope=\"mcp:use\", resource_metadata=\"http://localhost:9/.well-known/oauth-protected-resource/api/mcp\""
    );
    endpoint.stop().await;
}

#[tokio::test]
async fn server_wide_scope_gets_403_insufficient_scope() {
    let auth = jwt_auth().require_scopes(["mcp:use", "mcp:admin"]);
    let endpoint = endpoint(auth).await;
    // Missing token: 401 that says which scopes to ask for.
    let reply = endpoint.call_tool(None, "whoami", json!({})).await;
    assert_refused(
        &reply,
        StatusCode::UNAUTHORIZED,
        &format!("Bearer scope=\"mcp:use mcp:admin\", resource_metadata=\"{METADATA}\""),
    );
    // A valid token lacking one scope: 403 naming every required scope.
    let under = hs256(&claims(|_| {}));
    let reply = endpoint.call_tool(Some(&under), "whoami", json!({})).await;
    assert_refused(
        &reply,
        StatusCode::FORBIDDEN,
        &format!(
            "Bearer error=\"insufficient_scope\", scope=\"mcp:use mcp:admin\", \
             resource_metadata=\"{METADATA}\", error_description=\"This server needs the scope mcp:admin\""
        ),
    );
    assert_eq!(
        reply.body["error"]["message"],
        "Forbidden: This server needs the scope mcp:admin"
    );
    let enough = hs256(&claims(|c| c["scope"] = json!("mcp:use mcp:admin")));
    assert_whoami(&endpoint, &enough, "bob [mcp:use mcp:admin]").await;
    endpoint.stop().await;
}

#[tokio::test]
async fn scope_hierarchy_is_honoured() {
    let auth = jwt_auth()
        .require_scopes(["mcp:use"])
        .scope_implies("mcp:admin", ["mcp:use"]);
    let endpoint = endpoint(auth).await;
    let admin = hs256(&claims(|c| c["scope"] = json!("mcp:admin")));
    assert_whoami(&endpoint, &admin, "bob [mcp:admin mcp:use]").await;
    endpoint.stop().await;
}

#[tokio::test]
async fn stdio_runs_as_the_configured_principal() {
    use toolwire_server::stdio::{StdioConfig, serve};
    let (mut client, server_io) = tokio::io::duplex(64 * 1024);
    let (reader, writer) = tokio::io::split(server_io);
    let config = StdioConfig {
        principal: Principal::new("local-user").with_scopes(["mcp:use"]),
        ..Default::default()
    };
    let task = tokio::spawn(serve(server(), reader, writer, config));
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let line = security_support::call(1, "whoami", json!({})).to_string() + "\n";
    client.write_all(line.as_bytes()).await.unwrap();
    let mut lines = tokio::io::BufReader::new(&mut client).lines();
    let reply = tokio::time::timeout(security_support::WAIT, lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let reply: Value = serde_json::from_str(&reply).unwrap();
    assert_eq!(
        reply["result"]["content"][0]["text"],
        "local-user [mcp:use]"
    );
    drop(lines);
    drop(client);
    tokio::time::timeout(security_support::WAIT, task)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}
