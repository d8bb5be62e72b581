//! The floor of any gateway: bare hyper 1.x (HTTP/1.1, keep-alive,
//! TCP_NODELAY) forwarding every request, headers and body unchanged, to an
//! upstream, and its response back. Each downstream connection gets one
//! upstream connection of its own, opened when it arrives. No parsing, no
//! checks, no audit: the cost of the extra hop and nothing else.
//!
//! ```text
//! hyper-proxy <port> <upstream port>
//! ```

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Mutex;

type Upstream = Arc<Mutex<SendRequest<Full<Bytes>>>>;

/// Forwards one request on the connection's upstream link.
async fn forward(
    upstream: Upstream,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, hyper::Error> {
    let (parts, body) = request.into_parts();
    let body = body.collect().await?.to_bytes();
    let response = upstream
        .lock()
        .await
        .send_request(Request::from_parts(parts, Full::new(body)))
        .await;
    let Ok(response) = response else {
        let mut refused = Response::new(Full::new(Bytes::new()));
        *refused.status_mut() = StatusCode::BAD_GATEWAY;
        return Ok(refused);
    };
    let (parts, body) = response.into_parts();
    let body = body.collect().await?.to_bytes();
    Ok(Response::from_parts(parts, Full::new(body)))
}

/// Opens the upstream link of one downstream connection.
async fn connect(upstream: SocketAddr) -> std::io::Result<Upstream> {
    let stream = TcpStream::connect(upstream).await?;
    stream.set_nodelay(true)?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(std::io::Error::other)?;
    tokio::spawn(connection);
    Ok(Arc::new(Mutex::new(sender)))
}

toolwire_bench::allocator_from_features!();

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut ports = std::env::args().skip(1).map(|p| p.parse::<u16>().ok());
    let (Some(Some(port)), Some(Some(upstream_port))) = (ports.next(), ports.next()) else {
        eprintln!("usage: hyper-proxy <port> <upstream port>");
        std::process::exit(2);
    };
    toolwire_bench::raise_nofile_limit();
    let upstream = SocketAddr::new(toolwire_bench::LOOPBACK, upstream_port);
    let listener = TcpListener::bind(SocketAddr::new(toolwire_bench::LOOPBACK, port)).await?;
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(_) => {
                // Out of descriptors or similar: back off instead of spinning.
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        tokio::spawn(async move {
            let Ok(link) = connect(upstream).await else {
                return;
            };
            let service = service_fn(move |request| forward(Arc::clone(&link), request));
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
