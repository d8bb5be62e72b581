//! The Streamable HTTP endpoint's header checks (Host, Origin, Accept,
//! Content-Type, MCP-Protocol-Version, Mcp-Method / Mcp-Name, Mcp-Param-*
//! against the body, Mcp-Session-Id) and body handling, through the public
//! axum router with no socket.
//!
//! Input, HTTP-like text: `METHOD PATH` on the first line, `Name: value`
//! header lines, an empty line, then the body. Lines that do not make a
//! valid method, URI or header are dropped. Each input gets a fresh router
//! (no sessions carried over between inputs); response bodies are read for
//! at most 200 ms (an SSE reply may stay open).
#![no_main]

use std::time::Duration;

use axum::body::Body;
use http_body_util::BodyExt;
use libfuzzer_sys::fuzz_target;
use tower::ServiceExt;
use toolwire_fuzz::{RT, SERVER};
use toolwire_server::http::{HttpConfig, router};

fn parse(data: &[u8]) -> Option<http::Request<Body>> {
    let split = data
        .windows(2)
        .position(|w| w == b"\n\n")
        .map_or((data, &b""[..]), |at| (&data[..at], &data[at + 2..]));
    let (head, body) = split;
    let head = String::from_utf8_lossy(head);
    let mut lines = head.lines();
    let (method, path) = lines.next()?.split_once(' ').unwrap_or(("POST", "/mcp"));
    let mut builder = http::Request::builder()
        .method(http::Method::from_bytes(method.as_bytes()).ok()?)
        .uri(path.trim());
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(name.trim().as_bytes()),
            http::HeaderValue::from_bytes(value.trim_start().as_bytes()),
        ) else {
            continue;
        };
        builder = builder.header(name, value);
    }
    builder.body(Body::from(body.to_vec())).ok()
}

fuzz_target!(|data: &[u8]| {
    let Some(request) = parse(data) else {
        return;
    };
    RT.block_on(async move {
        let app = router(
            SERVER.clone(),
            HttpConfig::new().max_body_bytes(64 * 1024).max_sessions(16),
        );
        let response = tokio::time::timeout(Duration::from_secs(3), app.oneshot(request))
            .await
            .expect("the endpoint did not answer within 3 s")
            .expect("the router is infallible");
        let status = response.status();
        assert!(
            !status.is_server_error() || status == http::StatusCode::SERVICE_UNAVAILABLE,
            "server error {status}"
        );
        let body = response.into_body();
        let _ = tokio::time::timeout(Duration::from_millis(200), body.collect()).await;
    });
});
