//! OAuth 2.1 authorization against a mock authorization server and a
//! protected MCP server: discovery, registration, the code flow and its
//! checks, token endpoint authentication, refresh and step-up.

mod auth_mock;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use auth_mock::{AsConfig, Iss, MetadataAt, PrmAt, RsConfig, World, auth_error, call};
use toolwire_client::auth::{
    AuthError, FollowRedirect, MemoryStore, OAuth, PreRegistered, RedirectHandler, TokenStore,
};
use toolwire_client::transport::BoxFuture;

async fn world(as_config: AsConfig, rs_config: RsConfig) -> World {
    World::start(as_config, rs_config).await
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn full_flow_then_the_token_is_reused() {
    let w = world(AsConfig::default(), RsConfig::default()).await;
    let t = w.transport(w.oauth().build().unwrap());
    let result = call(&t, "tools/list").await.unwrap();
    assert_eq!(result["tools"][0]["name"], "echo");
    call(&t, "tools/call").await.unwrap();
    w.assert_clean();
    // One registration, one authorization, one token; the unauthenticated
    // first POST and then two authorized ones.
    assert_eq!(w.log.at("as", "/register").len(), 1);
    assert_eq!(w.log.at("as", "/authorize").len(), 1);
    assert_eq!(w.log.at("as", "/token").len(), 1);
    let posts = w.log.at("rs", "/mcp");
    assert_eq!(posts.len(), 3, "{:#?}", w.log.all());
    assert!(posts[0].authorization.is_none());
    assert!(
        posts[1]
            .authorization
            .as_deref()
            .unwrap()
            .starts_with("Bearer access-")
    );
    assert_eq!(posts[1].authorization, posts[2].authorization);
    // DCR carries application_type and the redirect URI.
    let reg = w.log.at("as", "/register")[0].json.clone().unwrap();
    assert_eq!(reg["application_type"], "native");
    assert_eq!(reg["redirect_uris"][0], "http://127.0.0.1:9/callback");
    assert_eq!(reg["token_endpoint_auth_method"], "none");
}

#[tokio::test]
async fn discovery_uses_the_advertised_prm_url_first() {
    let rs = RsConfig {
        prm: PrmAt::Advertised("/custom/metadata.json".into()),
        ..Default::default()
    };
    let w = world(AsConfig::default(), rs).await;
    call(&w.transport(w.oauth().build().unwrap()), "tools/list")
        .await
        .unwrap();
    let gets: Vec<String> = w
        .log
        .paths("rs")
        .into_iter()
        .filter(|p| p.starts_with("GET"))
        .collect();
    assert_eq!(gets, ["GET /custom/metadata.json"]);
    w.assert_clean();
}

#[tokio::test]
async fn discovery_tries_path_based_then_root() {
    let w = world(
        AsConfig::default(),
        RsConfig {
            prm: PrmAt::PathBased,
            ..Default::default()
        },
    )
    .await;
    call(&w.transport(w.oauth().build().unwrap()), "tools/list")
        .await
        .unwrap();
    let gets: Vec<String> = w
        .log
        .paths("rs")
        .into_iter()
        .filter(|p| p.starts_with("GET"))
        .collect();
    assert_eq!(gets, ["GET /.well-known/oauth-protected-resource/mcp"]);

    let w = world(
        AsConfig::default(),
        RsConfig {
            prm: PrmAt::Root,
            ..Default::default()
        },
    )
    .await;
    call(&w.transport(w.oauth().build().unwrap()), "tools/list")
        .await
        .unwrap();
    let gets: Vec<String> = w
        .log
        .paths("rs")
        .into_iter()
        .filter(|p| p.starts_with("GET"))
        .collect();
    assert_eq!(
        gets,
        [
            "GET /.well-known/oauth-protected-resource/mcp",
            "GET /.well-known/oauth-protected-resource"
        ]
    );
    w.assert_clean();
}

#[tokio::test]
async fn resource_is_sent_exactly_as_published() {
    // Root metadata publishes the bare origin: no trailing slash may be added.
    let w = world(
        AsConfig::default(),
        RsConfig {
            prm: PrmAt::Root,
            ..Default::default()
        },
    )
    .await;
    call(&w.transport(w.oauth().build().unwrap()), "tools/list")
        .await
        .unwrap();
    let authorize = &w.log.at("as", "/authorize")[0];
    let token = &w.log.at("as", "/token")[0];
    assert_eq!(authorize.query["resource"], w.rs.base);
    assert_eq!(token.form["resource"], w.rs.base);
    assert!(!w.rs.base.ends_with('/'));
    w.assert_clean();
}

#[tokio::test]
async fn authorization_server_metadata_forms() {
    let cases = [
        (
            MetadataAt::OAuth,
            "",
            vec!["GET /.well-known/oauth-authorization-server"],
        ),
        (
            MetadataAt::OidcInsert,
            "",
            vec![
                "GET /.well-known/oauth-authorization-server",
                "GET /.well-known/openid-configuration",
            ],
        ),
        (
            MetadataAt::OAuth,
            "/tenant1",
            vec!["GET /.well-known/oauth-authorization-server/tenant1"],
        ),
        (
            MetadataAt::OidcInsert,
            "/tenant1",
            vec![
                "GET /.well-known/oauth-authorization-server/tenant1",
                "GET /.well-known/openid-configuration/tenant1",
            ],
        ),
        (
            MetadataAt::OidcAppend,
            "/tenant1",
            vec![
                "GET /.well-known/oauth-authorization-server/tenant1",
                "GET /.well-known/openid-configuration/tenant1",
                "GET /tenant1/.well-known/openid-configuration",
            ],
        ),
    ];
    for (at, prefix, expected) in cases {
        let a = AsConfig {
            metadata_at: at,
            prefix: prefix.into(),
            ..Default::default()
        };
        let w = world(a, RsConfig::default()).await;
        call(&w.transport(w.oauth().build().unwrap()), "tools/list")
            .await
            .unwrap();
        let gets: Vec<String> = w
            .log
            .paths("as")
            .into_iter()
            .filter(|p| p.starts_with("GET /") && p.contains("well-known"))
            .collect();
        assert_eq!(gets, expected, "{at:?} {prefix}");
        w.assert_clean();
    }
}

#[tokio::test]
async fn resource_mismatch_aborts_before_the_authorization_server() {
    let rs = RsConfig {
        resource_override: Some("https://evil.example.com/mcp".into()),
        ..Default::default()
    };
    let w = world(AsConfig::default(), rs).await;
    let t = w.transport(w.oauth().build().unwrap());
    let e = auth_error(&t, "tools/list").await;
    assert!(
        matches!(e, AuthError::ResourceMismatch { ref advertised, .. } if advertised == "https://evil.example.com/mcp"),
        "{e:?}"
    );
    assert!(w.log.paths("as").is_empty());
}

#[tokio::test]
async fn issuer_mismatch_aborts_after_the_metadata() {
    let a = AsConfig {
        issuer_override: Some("https://attacker.example.com".into()),
        ..Default::default()
    };
    let w = world(a, RsConfig::default()).await;
    let e = auth_error(&w.transport(w.oauth().build().unwrap()), "tools/list").await;
    assert!(
        matches!(e, AuthError::IssuerMismatch { ref found, .. } if found == "https://attacker.example.com"),
        "{e:?}"
    );
    assert_eq!(
        w.log.paths("as"),
        ["GET /.well-known/oauth-authorization-server"]
    );
}

#[tokio::test]
async fn pkce_support_is_required() {
    let a = AsConfig {
        pkce_methods: None,
        ..Default::default()
    };
    let w = world(a, RsConfig::default()).await;
    let e = auth_error(&w.transport(w.oauth().build().unwrap()), "tools/list").await;
    assert!(matches!(e, AuthError::PkceUnsupported(_)), "{e:?}");
    assert!(w.log.at("as", "/authorize").is_empty());
}

#[tokio::test]
async fn pkce_verifier_matches_the_challenge() {
    let w = world(AsConfig::default(), RsConfig::default()).await;
    call(&w.transport(w.oauth().build().unwrap()), "tools/list")
        .await
        .unwrap();
    let authorize = &w.log.at("as", "/authorize")[0];
    let token = &w.log.at("as", "/token")[0];
    assert_eq!(authorize.query["code_challenge_method"], "S256");
    assert_eq!(
        toolwire_client::auth::pkce::s256(&token.form["code_verifier"]),
        authorize.query["code_challenge"]
    );
    w.assert_clean();
}

/// Follows the redirect, then tampers with the callback.
#[derive(Debug)]
struct Tamper(FollowRedirect, fn(String) -> String);

impl RedirectHandler for Tamper {
    fn redirect_uri(&self) -> String {
        self.0.redirect_uri()
    }
    fn authorize<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<String, AuthError>> {
        Box::pin(async move { Ok((self.1)(self.0.authorize(url).await?)) })
    }
}

#[tokio::test]
async fn state_is_checked() {
    let w = world(AsConfig::default(), RsConfig::default()).await;
    let handler = Tamper(FollowRedirect::new("http://127.0.0.1:9/callback"), |cb| {
        cb.replace("state=", "state=x")
    });
    let t = w.transport(OAuth::builder(handler).build().unwrap());
    assert_eq!(auth_error(&t, "tools/list").await, AuthError::StateMismatch);
    assert!(w.log.at("as", "/token").is_empty());
}

#[tokio::test]
async fn scope_selection_order() {
    // The challenge wins over scopes_supported.
    let rs = RsConfig {
        challenge_scope: Some("from:challenge".into()),
        scopes_supported: Some(strings(&["from:prm"])),
        ..Default::default()
    };
    let w = world(AsConfig::default(), rs).await;
    call(&w.transport(w.oauth().build().unwrap()), "tools/list")
        .await
        .unwrap();
    assert_eq!(
        w.log.at("as", "/authorize")[0].query["scope"],
        "from:challenge"
    );

    // Else all of scopes_supported.
    let rs = RsConfig {
        scopes_supported: Some(strings(&["a", "b", "c"])),
        ..Default::default()
    };
    let w = world(AsConfig::default(), rs).await;
    call(&w.transport(w.oauth().build().unwrap()), "tools/list")
        .await
        .unwrap();
    assert_eq!(w.log.at("as", "/authorize")[0].query["scope"], "a b c");

    // Else no scope parameter at all.
    let w = world(AsConfig::default(), RsConfig::default()).await;
    call(&w.transport(w.oauth().build().unwrap()), "tools/list")
        .await
        .unwrap();
    assert!(!w.log.at("as", "/authorize")[0].query.contains_key("scope"));
    w.assert_clean();
}

#[tokio::test]
async fn offline_access_only_when_offered() {
    let rs = RsConfig {
        scopes_supported: Some(strings(&["mcp:basic"])),
        ..Default::default()
    };
    let offered = AsConfig {
        scopes_supported: Some(strings(&["mcp:basic", "offline_access"])),
        ..Default::default()
    };
    let w = world(offered, rs.clone()).await;
    call(&w.transport(w.oauth().build().unwrap()), "tools/list")
        .await
        .unwrap();
    assert_eq!(
        w.log.at("as", "/authorize")[0].query["scope"],
        "mcp:basic offline_access"
    );
    let reg = w.log.at("as", "/register")[0].json.clone().unwrap();
    assert_eq!(
        reg["grant_types"],
        serde_json::json!(["authorization_code", "refresh_token"])
    );

    let not_offered = AsConfig {
        scopes_supported: Some(strings(&["mcp:basic", "mcp:read"])),
        ..Default::default()
    };
    let w = world(not_offered, rs.clone()).await;
    call(&w.transport(w.oauth().build().unwrap()), "tools/list")
        .await
        .unwrap();
    assert_eq!(w.log.at("as", "/authorize")[0].query["scope"], "mcp:basic");

    // Switched off by the caller.
    let offered = AsConfig {
        scopes_supported: Some(strings(&["mcp:basic", "offline_access"])),
        ..Default::default()
    };
    let w = world(offered, rs).await;
    call(
        &w.transport(w.oauth().offline_access(false).build().unwrap()),
        "tools/list",
    )
    .await
    .unwrap();
    assert_eq!(w.log.at("as", "/authorize")[0].query["scope"], "mcp:basic");
    w.assert_clean();
}

#[tokio::test]
async fn iss_parameter_checks() {
    // (advertised, what the server sends, accepted?)
    let cases = [
        (Some(true), Iss::Correct, true),
        (Some(true), Iss::Omit, false),
        (Some(true), Iss::Wrong, false),
        (Some(true), Iss::TrailingSlash, false),
        (None, Iss::Omit, true),
        (None, Iss::Correct, true),
        (None, Iss::Wrong, false),
        (Some(false), Iss::TrailingSlash, false),
    ];
    for (advertised, iss, accepted) in cases {
        let a = AsConfig {
            iss_supported: advertised,
            iss,
            ..Default::default()
        };
        let w = world(a, RsConfig::default()).await;
        let t = w.transport(w.oauth().build().unwrap());
        let outcome = call(&t, "tools/list").await;
        assert_eq!(
            outcome.is_ok(),
            accepted,
            "{advertised:?} {iss:?}: {outcome:?}"
        );
        if !accepted {
            // The code never reaches the token endpoint.
            assert!(
                w.log.at("as", "/token").is_empty(),
                "{advertised:?} {iss:?}"
            );
            let e = auth_error(&t, "tools/list").await;
            match iss {
                Iss::Omit => assert!(matches!(e, AuthError::IssMissing { .. }), "{e:?}"),
                _ => assert!(matches!(e, AuthError::IssMismatch { .. }), "{e:?}"),
            }
        }
    }
}

#[tokio::test]
async fn token_endpoint_auth_methods() {
    for method in ["client_secret_basic", "client_secret_post", "none"] {
        let a = AsConfig {
            auth_methods: vec![method.into()],
            ..Default::default()
        };
        let w = world(a, RsConfig::default()).await;
        call(&w.transport(w.oauth().build().unwrap()), "tools/list")
            .await
            .unwrap();
        w.assert_clean();
        let token = &w.log.at("as", "/token")[0];
        let basic = token
            .authorization
            .as_deref()
            .is_some_and(|a| a.starts_with("Basic "));
        let post = token.form.contains_key("client_secret");
        assert_eq!(
            (basic, post),
            (
                method == "client_secret_basic",
                method == "client_secret_post"
            ),
            "{method}"
        );
        if method != "client_secret_basic" {
            assert!(token.form.contains_key("client_id"), "{method}");
        }
    }
}

#[tokio::test]
async fn pre_registered_credentials_for_their_issuer_only() {
    let a = AsConfig {
        dcr: false,
        auth_methods: vec!["client_secret_basic".into()],
        pre_registered: Some(("pre-id".into(), "pre-secret".into())),
        ..Default::default()
    };
    let w = world(a.clone(), RsConfig::default()).await;
    let oauth = w
        .oauth()
        .pre_registered(PreRegistered::new(w.auth.issuer(), "pre-id").secret("pre-secret"))
        .build()
        .unwrap();
    call(&w.transport(oauth), "tools/list").await.unwrap();
    w.assert_clean();
    assert!(w.log.at("as", "/register").is_empty());
    assert_eq!(w.log.at("as", "/authorize")[0].query["client_id"], "pre-id");

    // Credentials for another issuer are never offered here.
    let w = world(a, RsConfig::default()).await;
    let oauth = w
        .oauth()
        .pre_registered(PreRegistered::new("https://other.example", "pre-id").secret("pre-secret"))
        .build()
        .unwrap();
    let e = auth_error(&w.transport(oauth), "tools/list").await;
    assert!(matches!(e, AuthError::NoRegistration { .. }), "{e:?}");
    assert!(w.log.at("as", "/authorize").is_empty());
    assert!(w.log.at("as", "/token").is_empty());
}

#[tokio::test]
async fn client_id_metadata_document_when_supported() {
    let url = "https://client.example/toolwire.json";
    let w = world(
        AsConfig {
            cimd: true,
            ..Default::default()
        },
        RsConfig::default(),
    )
    .await;
    call(
        &w.transport(w.oauth().client_metadata_url(url).build().unwrap()),
        "tools/list",
    )
    .await
    .unwrap();
    w.assert_clean();
    assert!(w.log.at("as", "/register").is_empty());
    assert_eq!(w.log.at("as", "/authorize")[0].query["client_id"], url);
    assert_eq!(w.log.at("as", "/token")[0].form["client_id"], url);

    // Not advertised: Dynamic Client Registration instead.
    let w = world(AsConfig::default(), RsConfig::default()).await;
    call(
        &w.transport(w.oauth().client_metadata_url(url).build().unwrap()),
        "tools/list",
    )
    .await
    .unwrap();
    assert_eq!(w.log.at("as", "/register").len(), 1);
    assert!(
        OAuth::builder(FollowRedirect::new("http://127.0.0.1:9/cb"))
            .client_metadata_url("http://client.example/x.json")
            .build()
            .is_err()
    );
}

#[tokio::test]
async fn refresh_before_expiry() {
    let a = AsConfig {
        refresh_tokens: true,
        expires_in: 120,
        ..Default::default()
    };
    let w = world(a, RsConfig::default()).await;
    // Every token expires within the margin, so it is refreshed before use.
    let t = w.transport(
        w.oauth()
            .refresh_margin(Duration::from_secs(3600))
            .build()
            .unwrap(),
    );
    call(&t, "tools/list").await.unwrap();
    call(&t, "tools/call").await.unwrap();
    w.assert_clean();
    assert_eq!(w.log.at("as", "/authorize").len(), 1);
    let grants: Vec<String> = w
        .log
        .at("as", "/token")
        .iter()
        .map(|s| s.form["grant_type"].clone())
        .collect();
    assert_eq!(
        grants,
        ["authorization_code", "refresh_token", "refresh_token"]
    );
    // Each authorized POST used the token just refreshed, never an old one.
    let posts: Vec<Option<String>> = w
        .log
        .at("rs", "/mcp")
        .into_iter()
        .map(|s| s.authorization)
        .collect();
    assert_eq!(posts.len(), 3);
    assert!(posts[0].is_none());
    assert_ne!(posts[1], posts[2]);
}

#[tokio::test]
async fn no_refresh_while_the_token_is_fresh() {
    let a = AsConfig {
        refresh_tokens: true,
        expires_in: 3600,
        ..Default::default()
    };
    let w = world(a, RsConfig::default()).await;
    let t = w.transport(w.oauth().build().unwrap());
    call(&t, "tools/list").await.unwrap();
    call(&t, "tools/list").await.unwrap();
    assert_eq!(w.log.at("as", "/token").len(), 1);
}

#[tokio::test]
async fn step_up_requests_the_union_of_scopes() {
    let rs = RsConfig {
        challenge_scope: Some("read".into()),
        required: HashMap::from([
            ("tools/list".to_owned(), strings(&["read"])),
            ("tools/call".to_owned(), strings(&["write"])),
        ]),
        ..Default::default()
    };
    let w = world(AsConfig::default(), rs).await;
    let t = w.transport(w.oauth().build().unwrap());
    call(&t, "tools/list").await.unwrap();
    call(&t, "tools/call").await.unwrap();
    call(&t, "tools/list").await.unwrap();
    w.assert_clean();
    let scopes: Vec<String> = w
        .log
        .at("as", "/authorize")
        .iter()
        .map(|s| s.query["scope"].clone())
        .collect();
    assert_eq!(scopes, ["read", "read write"]);
    // The registration is reused for the step-up.
    assert_eq!(w.log.at("as", "/register").len(), 1);
}

#[tokio::test]
async fn step_up_is_bounded() {
    // The server asks for a new scope every time: two step-ups, then give up.
    let rs = RsConfig {
        challenge_scope: Some("s".into()),
        always_forbid: Some(None),
        ..Default::default()
    };
    let w = world(AsConfig::default(), rs).await;
    let t = w.transport(w.oauth().build().unwrap());
    let e = auth_error(&t, "tools/list").await;
    assert!(matches!(e, AuthError::InsufficientScope { .. }), "{e:?}");
    assert_eq!(w.log.at("as", "/authorize").len(), 3);

    // The server asks again for a scope already granted: no step-up at all.
    let rs = RsConfig {
        challenge_scope: Some("admin".into()),
        always_forbid: Some(Some("admin".into())),
        ..Default::default()
    };
    let w = world(AsConfig::default(), rs).await;
    let t = w.transport(w.oauth().max_step_ups(5).build().unwrap());
    let e = auth_error(&t, "tools/list").await;
    assert_eq!(
        e,
        AuthError::InsufficientScope {
            required: strings(&["admin"])
        }
    );
    assert_eq!(w.log.at("as", "/authorize").len(), 1);
}

#[tokio::test]
async fn authorization_server_migration_registers_again() {
    let w = world(AsConfig::default(), RsConfig::default()).await;
    let t = w.transport(w.oauth().build().unwrap());
    call(&t, "tools/list").await.unwrap();
    let first_client = w.log.at("as", "/authorize")[0].query["client_id"].clone();

    let as2 = w.another_as("as2", AsConfig::default()).await;
    *w.rs.authorization_server.lock().unwrap() = as2.issuer();
    call(&t, "tools/call").await.unwrap();
    w.assert_clean();
    assert_eq!(w.log.at("as2", "/register").len(), 1);
    for seen in w.log.all().into_iter().filter(|s| s.server == "as2") {
        let text = format!("{seen:?}");
        assert!(!text.contains(&first_client), "{text}");
    }
}

#[tokio::test]
async fn concurrent_requests_share_one_authorization() {
    let w = world(AsConfig::default(), RsConfig::default()).await;
    let t = Arc::new(w.transport(w.oauth().build().unwrap()));
    let calls: Vec<_> = (0..4)
        .map(|_| {
            let t = t.clone();
            tokio::spawn(async move { call(&t, "tools/list").await })
        })
        .collect();
    for c in calls {
        c.await.unwrap().unwrap();
    }
    assert_eq!(w.log.at("as", "/authorize").len(), 1);
    w.assert_clean();
}

#[tokio::test]
async fn stored_tokens_are_used_by_a_new_session() {
    let w = world(AsConfig::default(), RsConfig::default()).await;
    let store = Arc::new(MemoryStore::new());
    let oauth = w.oauth().shared_store(store.clone()).build().unwrap();
    call(&w.transport(oauth.clone()), "tools/list")
        .await
        .unwrap();
    // A second transport (a restarted program) finds the token by issuer.
    call(&w.transport(oauth), "tools/list").await.unwrap();
    assert_eq!(w.log.at("as", "/authorize").len(), 1);
    let record = store.load(&w.auth.issuer()).await.unwrap().unwrap();
    assert!(record.client.is_some());
    assert_eq!(
        record.tokens.keys().cloned().collect::<Vec<_>>(),
        [w.rs.url()]
    );
    w.assert_clean();
}

#[tokio::test]
async fn a_rejected_fresh_token_ends_the_request() {
    let rs = RsConfig {
        reject_all: true,
        ..Default::default()
    };
    let w = world(AsConfig::default(), rs).await;
    let t = w.transport(w.oauth().build().unwrap());
    assert_eq!(auth_error(&t, "tools/list").await, AuthError::Rejected);
    assert_eq!(w.log.at("as", "/authorize").len(), 1);
    assert_eq!(w.log.at("rs", "/mcp").len(), 2);
}

#[tokio::test]
async fn a_registration_the_server_forgot_is_replaced() {
    let a = AsConfig {
        auth_methods: vec!["client_secret_post".into()],
        ..Default::default()
    };
    let w = world(a, RsConfig::default()).await;
    let store = Arc::new(MemoryStore::new());
    let oauth = w.oauth().shared_store(store.clone()).build().unwrap();
    call(&w.transport(oauth.clone()), "tools/list")
        .await
        .unwrap();
    // The stored secret goes stale, and the tokens with it.
    let issuer = w.auth.issuer();
    let mut record = store.load(&issuer).await.unwrap().unwrap();
    record.client.as_mut().unwrap().client_secret = Some("stale".into());
    record.tokens.clear();
    store.save(&issuer, record).await.unwrap();
    let t = w.transport(oauth);
    let e = auth_error(&t, "tools/list").await;
    assert!(
        matches!(e, AuthError::Token { ref error, .. } if error == "invalid_client"),
        "{e:?}"
    );
    // The next request registers again and succeeds.
    call(&t, "tools/list").await.unwrap();
    assert_eq!(w.log.at("as", "/register").len(), 2);
}
