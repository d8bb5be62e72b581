//! HTTPS against our server (`HttpConfig::tls`) with certificates made at
//! run time: the client trusts a given CA (`ca_certificate_pem`) and
//! refuses an unknown one; ALPN picks HTTP/2 or HTTP/1.1 on one port; a
//! reloaded certificate is used by the next handshake.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use toolwire_client::Client;
use toolwire_client::transport::HttpTransport;
use toolwire_server::http::{HttpConfig, HttpServer, TlsConfig};
use toolwire_server::{NoArgs, RequestContext, Server, ToolBuilder};

const WAIT: Duration = Duration::from_secs(10);

/// A self-signed certificate for 127.0.0.1 and localhost, written as
/// `cert.pem` and `key.pem` in `dir`; the certificate's PEM.
fn new_certificate(dir: &Path) -> String {
    let names = vec!["127.0.0.1".to_owned(), "localhost".to_owned()];
    let made = rcgen::generate_simple_self_signed(names).unwrap();
    std::fs::write(dir.join("cert.pem"), made.cert.pem()).unwrap();
    std::fs::write(dir.join("key.pem"), made.signing_key.serialize_pem()).unwrap();
    made.cert.pem()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("toolwire-tls-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Serves a server with one tool `ping` over HTTPS on 127.0.0.1; its URL.
async fn serve(tls: Arc<TlsConfig>) -> String {
    let server = Server::builder("tls-test", "1")
        .tool(ToolBuilder::new("ping").handler(|_: NoArgs, _cx: RequestContext| async { "pong" }))
        .build()
        .unwrap();
    let addr = "127.0.0.1:0".parse().unwrap();
    let http = HttpServer::bind(addr, server, HttpConfig::new().tls(tls))
        .await
        .unwrap();
    let url = format!("https://{}/mcp", http.local_addr());
    tokio::spawn(http.run());
    url
}

fn client(url: &str, ca: Option<&str>) -> Client {
    let mut transport = HttpTransport::builder(url);
    if let Some(ca) = ca {
        transport = transport.ca_certificate_pem(ca);
    }
    Client::builder(transport.build().unwrap())
        .timeout(WAIT)
        .build()
}

async fn ping(client: &Client) -> Result<String, String> {
    let result = client
        .call_tool("ping", json!({}))
        .await
        .map_err(|e| e.to_string())?;
    Ok(serde_json::to_value(&result.content).unwrap()[0]["text"]
        .as_str()
        .unwrap()
        .to_owned())
}

#[tokio::test]
async fn a_client_trusting_the_ca_calls_and_others_are_refused() {
    let dir = temp_dir("trust");
    let ca = new_certificate(&dir);
    let tls =
        Arc::new(TlsConfig::from_pem_files(dir.join("cert.pem"), dir.join("key.pem")).unwrap());
    let url = serve(tls).await;
    assert_eq!(ping(&client(&url, Some(&ca))).await.unwrap(), "pong");

    let error = ping(&client(&url, None)).await.unwrap_err();
    assert!(
        error.contains("invalid peer certificate: UnknownIssuer"),
        "{error}"
    );

    let plain = url.replace("https://", "http://");
    assert!(
        ping(&client(&plain, None)).await.is_err(),
        "plain HTTP is not served"
    );

    let bad = HttpTransport::builder(&url)
        .ca_certificate_pem("no certificate here")
        .build();
    assert_eq!(
        bad.unwrap_err().to_string(),
        "the CA certificates hold no CERTIFICATE block"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn alpn_picks_http2_or_http1_on_one_port() {
    let dir = temp_dir("alpn");
    let ca = new_certificate(&dir);
    let tls =
        Arc::new(TlsConfig::from_pem_files(dir.join("cert.pem"), dir.join("key.pem")).unwrap());
    let url = serve(tls).await;
    let root = reqwest::Certificate::from_pem(ca.as_bytes()).unwrap();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "tls-test", "version": "0"}
    }}});
    for (http1_only, version) in [
        (false, reqwest::Version::HTTP_2),
        (true, reqwest::Version::HTTP_11),
    ] {
        let mut builder = reqwest::Client::builder()
            .use_rustls_tls()
            .add_root_certificate(root.clone());
        if http1_only {
            builder = builder.http1_only();
        }
        let response = builder
            .build()
            .unwrap()
            .post(&url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", "tools/list")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(response.version(), version);
        assert_eq!(response.status(), reqwest::StatusCode::OK);
        let reply: serde_json::Value = response.json().await.unwrap();
        assert_eq!(reply["result"]["tools"][0]["name"], "ping", "{reply}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn a_reloaded_certificate_serves_the_next_handshake() {
    let dir = temp_dir("reload");
    let first = new_certificate(&dir);
    let tls =
        Arc::new(TlsConfig::from_pem_files(dir.join("cert.pem"), dir.join("key.pem")).unwrap());
    let url = serve(Arc::clone(&tls)).await;
    assert_eq!(ping(&client(&url, Some(&first))).await.unwrap(), "pong");

    let second = new_certificate(&dir);
    assert!(
        ping(&client(&url, Some(&second))).await.is_err(),
        "not reloaded yet"
    );
    tls.reload().unwrap();
    assert_eq!(ping(&client(&url, Some(&second))).await.unwrap(), "pong");
    assert!(
        ping(&client(&url, Some(&first))).await.is_err(),
        "the old one is gone"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_ca_with_a_client_of_ones_own_is_refused() {
    let error = HttpTransport::builder("https://127.0.0.1:1/mcp")
        .http_client(reqwest::Client::new())
        .ca_certificate_pem("-----BEGIN CERTIFICATE-----")
        .build()
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "ca_certificate_pem applies to the HTTP client the transport builds; \
         with http_client, add the root certificate to that reqwest client"
    );
}
