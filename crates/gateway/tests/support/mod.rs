//! What the gateway's tests share: a server on a loopback port.

use toolwire_server::Server;
use toolwire_server::http::{HttpConfig, HttpServer};

/// Serves `server` on 127.0.0.1 (a free port) until the test ends; its
/// MCP URL.
pub async fn serve(server: Server) -> String {
    let addr = "127.0.0.1:0".parse().unwrap();
    let http = HttpServer::bind(addr, server, HttpConfig::new())
        .await
        .unwrap();
    let url = format!("http://{}/mcp", http.local_addr());
    tokio::spawn(http.run());
    url
}
