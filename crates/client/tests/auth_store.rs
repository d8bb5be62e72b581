//! The file token store: owner-only permissions, records per issuer, and
//! tokens that survive a restart.

mod auth_mock;

use std::path::PathBuf;

use auth_mock::{AsConfig, RsConfig, World, call};
use toolwire_client::auth::registration::ClientSource;
use toolwire_client::auth::{ClientCredentials, FileStore, IssuerRecord, TokenSet, TokenStore};

fn temp_path(name: &str) -> PathBuf {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).unwrap();
    let unique: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    std::env::temp_dir()
        .join(format!("toolwire-auth-{unique}"))
        .join("nested")
        .join(name)
}

fn record(token: &str) -> IssuerRecord {
    let mut r = IssuerRecord {
        client: Some(ClientCredentials {
            client_secret: Some("s3cret".into()),
            ..ClientCredentials::public("client-1", ClientSource::Dynamic)
        }),
        ..Default::default()
    };
    r.tokens.insert(
        "https://mcp.example/mcp".into(),
        TokenSet {
            access_token: token.into(),
            refresh_token: Some("r".into()),
            expires_at: Some(4_000_000_000),
            scopes: vec!["a".into()],
            requested_scopes: vec!["a".into()],
        },
    );
    r
}

#[tokio::test]
async fn records_round_trip_per_issuer() {
    let path = temp_path("tokens.json");
    let store = FileStore::new(&path);
    assert_eq!(store.load("https://as.example").await.unwrap(), None);
    store
        .save("https://as.example", record("t1"))
        .await
        .unwrap();
    store
        .save("https://other.example", record("t2"))
        .await
        .unwrap();
    let again = FileStore::new(&path);
    assert_eq!(
        again.load("https://as.example").await.unwrap(),
        Some(record("t1"))
    );
    assert_eq!(
        again.load("https://other.example").await.unwrap(),
        Some(record("t2"))
    );
    assert_eq!(again.load("https://as.example/").await.unwrap(), None);
    std::fs::remove_dir_all(path.parent().unwrap().parent().unwrap()).unwrap();
}

#[cfg(unix)]
#[tokio::test]
async fn file_and_directory_are_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let path = temp_path("tokens.json");
    let store = FileStore::new(&path);
    store
        .save("https://as.example", record("t1"))
        .await
        .unwrap();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(path.parent().unwrap()), 0o700);
    // Rewrites keep it so, and leave no temporary files behind.
    store
        .save("https://as.example", record("t2"))
        .await
        .unwrap();
    assert_eq!(mode(&path), 0o600);
    let entries = std::fs::read_dir(path.parent().unwrap()).unwrap().count();
    assert_eq!(entries, 1);
    // A file someone loosened is restricted again before it is read.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert!(store.load("https://as.example").await.unwrap().is_some());
    assert_eq!(mode(&path), 0o600);
    std::fs::remove_dir_all(path.parent().unwrap().parent().unwrap()).unwrap();
}

#[tokio::test]
async fn a_corrupt_file_is_an_error_not_a_panic() {
    let path = temp_path("tokens.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, b"{not json").unwrap();
    let e = FileStore::new(&path)
        .load("https://as.example")
        .await
        .unwrap_err();
    assert!(e.to_string().contains("not a token store"), "{e}");
    std::fs::remove_dir_all(path.parent().unwrap().parent().unwrap()).unwrap();
}

#[tokio::test]
async fn tokens_survive_a_restart() {
    let path = temp_path("tokens.json");
    let w = World::start(AsConfig::default(), RsConfig::default()).await;
    let first = w.oauth().store(FileStore::new(&path)).build().unwrap();
    call(&w.transport(first), "tools/list").await.unwrap();
    // A new process: new OAuth, new transport, same file.
    let second = w.oauth().store(FileStore::new(&path)).build().unwrap();
    call(&w.transport(second), "tools/list").await.unwrap();
    assert_eq!(w.log.at("as", "/register").len(), 1);
    assert_eq!(w.log.at("as", "/authorize").len(), 1);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(&w.auth.issuer()));
    w.assert_clean();
    std::fs::remove_dir_all(path.parent().unwrap().parent().unwrap()).unwrap();
}
