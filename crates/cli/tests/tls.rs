//! TLS from the command line, over real processes: `toolwire serve
//! --tls-cert --tls-key` answers `toolwire call https://… --ca`, SIGHUP
//! puts a new certificate in use, and a gateway with `tls_cert`/`tls_key`
//! and `ui = true` marks the console's cookies `Secure`.
#![cfg(unix)]

mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use support::{Served, fresh_dir, toolwire};

/// A self-signed certificate for 127.0.0.1 written as `NAME.crt` and
/// `NAME.key` in `dir`, and again as `cert.pem`/`key.pem` (the pair the
/// server is given).
fn certificate(dir: &Path, name: &str) {
    let names = vec!["127.0.0.1".to_owned(), "localhost".to_owned()];
    let made = rcgen::generate_simple_self_signed(names).unwrap();
    for (file, text) in [
        (format!("{name}.crt"), made.cert.pem()),
        ("cert.pem".to_owned(), made.cert.pem()),
        (format!("{name}.key"), made.signing_key.serialize_pem()),
        ("key.pem".to_owned(), made.signing_key.serialize_pem()),
    ] {
        std::fs::write(dir.join(file), text).unwrap();
    }
}

fn path(dir: &Path, file: &str) -> String {
    dir.join(file).display().to_string()
}

/// `toolwire call URL echo text=hi --ca CA`: its exit code and stdout.
fn echo(url: &str, ca: &str) -> (Option<i32>, String) {
    let ran = toolwire(&["call", url, "echo", "text=hi", "--ca", ca, "--yes"], "");
    (ran.code, ran.stdout.trim().to_owned())
}

#[test]
fn serve_over_tls_and_reload_the_certificate_on_sighup() {
    let dir = fresh_dir("tls-serve");
    certificate(&dir, "first");
    let server = Served::start(&[
        "--tls-cert",
        &path(&dir, "cert.pem"),
        "--tls-key",
        &path(&dir, "key.pem"),
    ]);
    assert!(
        server.url.starts_with("https://127.0.0.1:"),
        "{}",
        server.url
    );
    assert_eq!(
        echo(&server.url, &path(&dir, "first.crt")),
        (Some(0), "hi".into())
    );

    let untrusted = toolwire(&["call", &server.url, "echo", "text=hi", "--yes"], "");
    assert_ne!(untrusted.code, Some(0));
    assert!(
        untrusted.stderr.contains("UnknownIssuer"),
        "{}",
        untrusted.stderr
    );

    certificate(&dir, "second");
    let status = Command::new("kill")
        .args(["-HUP", &server.pid().to_string()])
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    server.wait_for_log("TLS certificate and key read again");
    assert_eq!(
        echo(&server.url, &path(&dir, "second.crt")),
        (Some(0), "hi".into())
    );
    assert_ne!(echo(&server.url, &path(&dir, "first.crt")).0, Some(0));
}

#[test]
fn a_missing_key_file_is_refused_at_start() {
    let dir = fresh_dir("tls-missing");
    certificate(&dir, "only");
    let missing = path(&dir, "missing.key");
    let ran = toolwire(
        &[
            "serve",
            "--http",
            "127.0.0.1:0",
            "--tls-cert",
            &path(&dir, "cert.pem"),
            "--tls-key",
            &missing,
        ],
        "",
    );
    assert_eq!(ran.code, Some(2), "{}", ran.stderr);
    assert!(
        ran.stderr.contains(&format!(
            "cannot serve TLS: {missing}: No such file or directory"
        )),
        "{}",
        ran.stderr
    );
}

#[test]
fn the_gateway_serves_tls_and_its_console_cookies_are_secure() {
    let dir = fresh_dir("tls-gateway");
    certificate(&dir, "gw");
    let config = dir.join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            "[gateway]\nhttp = \"127.0.0.1:0\"\nui = true\ntls_cert = {:?}\ntls_key = {:?}\n\
             tokens = [{{ env = \"GW_TLS_ADMIN\", scopes = [\"admin\"] }}]\n\n\
             [[upstream]]\nname = \"demo\"\ncommand = [{:?}, \"serve\", \"--stdio\"]\n",
            path(&dir, "cert.pem"),
            path(&dir, "key.pem"),
            support::bin(),
        ),
    )
    .unwrap();
    let gateway = Served::command_with_env(
        &["gateway", "--config", &config.display().to_string()],
        &[("GW_TLS_ADMIN", "tls-admin-token")],
    );
    assert!(gateway.url.starts_with("https://"), "{}", gateway.url);
    let ran = toolwire(
        &[
            "call",
            &gateway.url,
            "demo__echo",
            "text=hi",
            "--ca",
            &path(&dir, "gw.crt"),
            "--bearer",
            "tls-admin-token",
            "--yes",
        ],
        "",
    );
    assert_eq!(
        (ran.code, ran.stdout.trim()),
        (Some(0), "hi"),
        "{}",
        ran.stderr
    );

    let login = gateway.url.replace("/mcp", "/ui/login");
    let set_cookie = get_set_cookie(&login, &path(&dir, "gw.crt"));
    assert!(
        set_cookie.ends_with("; Path=/ui; HttpOnly; SameSite=Strict; Max-Age=600; Secure"),
        "{set_cookie}"
    );
}

/// The `Set-Cookie` header of a GET of `url` over TLS trusting the
/// certificate in `ca`.
fn get_set_cookie(url: &str, ca: &str) -> String {
    let root = reqwest::Certificate::from_pem(&std::fs::read(ca).unwrap()).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = reqwest::Client::builder()
            .use_rustls_tls()
            .add_root_certificate(root)
            .timeout(Duration::from_secs(20))
            .build()
            .unwrap();
        let response = client.get(url).send().await.unwrap();
        let cookie = response.headers().get("set-cookie").expect("a Set-Cookie");
        cookie.to_str().unwrap().to_owned()
    })
}
