//! Opening `subscriptions/listen` streams and keeping them open: over
//! HTTP/1.1 (a connection each) or over shared HTTP/2 (h2c) connections.
//! Used by `bench listen` and by `listen-heap`.

use std::net::SocketAddr;

use bytes::Bytes;
use http::header;
use http::{Method, Request};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;

use crate::loadgen::{self, H2Sender, Sender};
use crate::workload::{PATH, PROTOCOL_VERSION};

/// What keeps one listen stream open: its response body, and over HTTP/1.1
/// its connection.
pub type OpenStream = (Option<Sender>, Incoming);

/// `count` HTTP/2 connections to `addr`.
pub async fn h2_connections(addr: SocketAddr, count: usize) -> Result<Vec<H2Sender>, String> {
    let mut senders = Vec::with_capacity(count);
    for _ in 0..count {
        senders.push(loadgen::connect_h2(addr).await?);
    }
    Ok(senders)
}

/// Opens listen stream `id` and waits for its first event: on a connection
/// of its own (HTTP/1.1) when `senders` is empty, else on one of them
/// (HTTP/2, round robin by id).
pub fn open(
    addr: SocketAddr,
    senders: &[H2Sender],
    id: u64,
) -> impl Future<Output = Result<OpenStream, String>> + Send + 'static {
    let shared = (!senders.is_empty()).then(|| senders[id as usize % senders.len()].clone());
    async move {
        match shared {
            None => {
                let mut sender = loadgen::connect(addr).await?;
                sender.ready().await.map_err(|e| e.to_string())?;
                let response = sender
                    .send_request(request(addr, id, false)?)
                    .await
                    .map_err(|e| e.to_string())?;
                Ok((Some(sender), first_event(response).await?))
            }
            Some(mut sender) => {
                sender.ready().await.map_err(|e| e.to_string())?;
                let response = sender
                    .send_request(request(addr, id, true)?)
                    .await
                    .map_err(|e| e.to_string())?;
                Ok((None, first_event(response).await?))
            }
        }
    }
}

/// A `subscriptions/listen` request with id `id`; HTTP/2 takes the
/// authority from an absolute URI, HTTP/1.1 from `Host`.
fn request(addr: SocketAddr, id: u64, http2: bool) -> Result<Request<Full<Bytes>>, String> {
    let body = format!(
        concat!(
            r#"{{"jsonrpc":"2.0","id":{},"method":"subscriptions/listen","params":{{"notifications":{{"toolsListChanged":true}},"#,
            r#""_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","#,
            r#""io.modelcontextprotocol/clientCapabilities":{{}},"#,
            r#""io.modelcontextprotocol/clientInfo":{{"name":"toolwire-bench","version":"0.1.0"}}}}}}}}"#
        ),
        id
    );
    let request = if http2 {
        Request::builder().uri(format!("http://{addr}{PATH}"))
    } else {
        Request::builder()
            .uri(PATH)
            .header(header::HOST, addr.to_string())
    };
    request
        .method(Method::POST)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .header("mcp-protocol-version", PROTOCOL_VERSION)
        .header("mcp-method", "subscriptions/listen")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())
}

/// Checks a listen reply and waits for its first event; the body, still open.
async fn first_event(response: hyper::Response<Incoming>) -> Result<Incoming, String> {
    let sse = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    if response.status() != 200 || !sse {
        let status = response.status();
        let text = response
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        return Err(format!(
            "listen refused: HTTP {status}: {}",
            String::from_utf8_lossy(&text)
        ));
    }
    let mut body = response.into_body();
    // The first event is the acknowledgement; a few frames at most.
    for _ in 0..16 {
        match body.frame().await {
            Some(Ok(frame)) => {
                if frame
                    .data_ref()
                    .is_some_and(|d| d.windows(5).any(|w| w == b"data:"))
                {
                    return Ok(body);
                }
            }
            Some(Err(error)) => return Err(error.to_string()),
            None => return Err("listen stream ended before its first event".into()),
        }
    }
    Err("no event in the first frames of the listen stream".into())
}
