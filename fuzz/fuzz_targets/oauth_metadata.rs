//! The client's OAuth parsers, all public: `WWW-Authenticate` challenges
//! (RFC 9110 / 6750 / 9728), protected-resource and authorization-server
//! metadata documents, token responses, and the discovery URL helpers.
//!
//! Every input is tried as each of them.
#![no_main]

use std::sync::LazyLock;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use toolwire_client::auth::challenge::{parse, split_scope};
use toolwire_client::auth::discovery::{
    authorization_server_metadata_urls, protected_resource_metadata_urls, resource_matches,
};
use toolwire_client::auth::{
    AuthorizationServerMetadata, BearerChallenge, ProtectedResourceMetadata, TokenSet,
};
use url::Url;

static SERVER_URL: LazyLock<Url> =
    LazyLock::new(|| Url::parse("https://mcp.example.com/tenant/mcp?x=1").unwrap());

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);

    // WWW-Authenticate: the whole input as one header value, and its lines
    // as several.
    for challenge in parse(&text) {
        let _ = challenge.param("scope");
        let bearer = BearerChallenge::from_challenge(&challenge);
        let _ = bearer.is_insufficient_scope();
    }
    if let Some(bearer) = BearerChallenge::from_headers(text.lines()) {
        let _ = bearer.is_insufficient_scope();
        if let Some(advertised) = bearer.resource_metadata.as_deref() {
            let _ = protected_resource_metadata_urls(&SERVER_URL, Some(advertised));
        }
    }
    let _ = split_scope(&text);

    // Metadata documents and token responses.
    if let Ok(prm) = serde_json::from_slice::<ProtectedResourceMetadata>(data) {
        let _ = serde_json::to_vec(&prm).unwrap();
    }
    if let Ok(asm) = serde_json::from_slice::<AuthorizationServerMetadata>(data) {
        let _ = asm.supports_scope("offline_access");
        let _ = asm.token_auth_methods();
        let _ = asm.supports_s256();
        let _ = asm.allows_grant("authorization_code");
        let _ = serde_json::to_vec(&asm).unwrap();
    }
    if let Ok(tokens) = serde_json::from_slice::<TokenSet>(data) {
        let _ = tokens.expires_within(Duration::from_secs(60));
    }

    // Discovery helpers on untrusted issuer / resource strings.
    let _ = resource_matches(&SERVER_URL, &text);
    let _ = authorization_server_metadata_urls(&text);
    let _ = protected_resource_metadata_urls(&SERVER_URL, Some(&text));
    if let Ok(url) = Url::parse(&text) {
        let _ = protected_resource_metadata_urls(&url, None);
        let _ = resource_matches(&url, SERVER_URL.as_str());
    }
});
