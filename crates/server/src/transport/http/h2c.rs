//! HTTP/2 over cleartext TCP with prior knowledge (h2c, RFC 9113 §3.3) on
//! the same port as HTTP/1.1: a connection whose first bytes are the HTTP/2
//! connection preface is served by hyper's HTTP/2 server, any other by the
//! HTTP/1.1 one. The router, and so every check of the endpoint, is the
//! same; it runs once per stream.
//!
//! The settings bound what one connection can hold ([`MAX_STREAMS`],
//! [`STREAM_WINDOW`], [`CONNECTION_WINDOW`], [`MAX_HEADER_LIST_BYTES`],
//! [`MAX_SEND_BUFFER_BYTES`]). A connection with no open stream for the
//! header read timeout is closed with GOAWAY, as an idle HTTP/1.1 connection
//! is closed when no request head arrives in that time; a peer that stops
//! answering pings ([`PING_INTERVAL`], [`PING_TIMEOUT`]) is dropped.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Body, Frame, SizeHint};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::Instant;

use super::conn::{Routes, log_end};

/// The first bytes an HTTP/2 client sends (RFC 9113 §3.4).
const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Streams one connection may have open at once
/// (`SETTINGS_MAX_CONCURRENT_STREAMS`): a client or proxy that needs more
/// opens another connection. Bounds what one connection holds to this many
/// requests (and their handlers), as that many HTTP/1.1 connections would.
pub(super) const MAX_STREAMS: u32 = 256;

/// How much request body a client may send on one stream before the server
/// has read it (`SETTINGS_INITIAL_WINDOW_SIZE`; hyper's default). The
/// endpoint reads bodies as they come, up to the body size limit.
pub(super) const STREAM_WINDOW: u32 = 1 << 20;

/// How much request body a client may have sent and the server not yet read,
/// over all the streams of a connection: 1 MiB (hyper's default).
pub(super) const CONNECTION_WINDOW: u32 = 1 << 20;

/// The largest header list accepted (`SETTINGS_MAX_HEADER_LIST_SIZE`,
/// decoded, counting 32 bytes per field as RFC 9113 does): 64 KiB, room for
/// many `Mcp-Param-*` headers. A larger one resets its stream.
pub(super) const MAX_HEADER_LIST_BYTES: u32 = 64 << 10;

/// Reply bytes one stream may queue beyond what the client's flow-control
/// window lets through: 64 KiB (hyper's default is about 400 KiB). A client
/// that reads slowly then holds back its stream's producer (a listen
/// stream's notifications wait in their bounded queue) instead of filling
/// server memory.
pub(super) const MAX_SEND_BUFFER_BYTES: usize = 64 << 10;

/// How long a connection may stay quiet before the server pings it.
pub(super) const PING_INTERVAL: Duration = Duration::from_secs(30);

/// How long the server waits for a ping's answer before dropping the
/// connection: a peer that vanished without closing is noticed within
/// [`PING_INTERVAL`] + this.
pub(super) const PING_TIMEOUT: Duration = Duration::from_secs(20);

/// A stream's reply, as hyper's HTTP/2 server awaits it.
type BoxFuture<T> = Pin<Box<dyn Future<Output = Result<T, Infallible>> + Send>>;

/// What a connection's first bytes say it speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Protocol {
    Http1,
    Http2,
}

/// Reads (without consuming) the first bytes of `stream` until they either
/// are the HTTP/2 preface or differ from it. `None`: the peer closed first.
///
/// A peer that sends part of the preface and waits keeps this waiting: the
/// caller bounds it with a deadline.
pub(super) async fn sniff(stream: &TcpStream) -> io::Result<Option<Protocol>> {
    let mut start = [0u8; PREFACE.len()];
    // Peeking again returns at once while the bytes already seen are all
    // there are, so a partial preface is polled with a growing pause.
    let mut pause = Duration::from_millis(1);
    loop {
        let seen = stream.peek(&mut start).await?;
        if seen == 0 {
            return Ok(None);
        }
        if start[..seen] != PREFACE[..seen] {
            return Ok(Some(Protocol::Http1));
        }
        if seen == PREFACE.len() {
            return Ok(Some(Protocol::Http2));
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(100));
    }
}

/// Serves one HTTP/2 connection until it ends, is idle (no open stream) for
/// `idle_timeout` (the first time: until `first_deadline`), or `closing`
/// turns true; the last two close it gracefully (GOAWAY, then the open
/// streams finish).
pub(super) async fn serve<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(
    stream: S,
    routes: Routes,
    peer: SocketAddr,
    mut closing: watch::Receiver<bool>,
    idle_timeout: Duration,
    first_deadline: Instant,
) {
    let (open, mut idle) = watch::channel(0usize);
    let open = Arc::new(open);
    let service = hyper::service::service_fn(move |request| {
        let guard = OpenStream::new(Arc::clone(&open));
        let reply = routes.route(peer, request);
        // hyper spawns a task per stream that holds this future until the
        // reply's head is ready, then the body for the stream's life. Boxed,
        // the future (the request and the router's state, about 600 bytes)
        // is freed once the reply starts, instead of sizing every stream's
        // task for as long as it streams.
        let reply: BoxFuture<_> = Box::pin(async move {
            let response = reply.await?;
            Ok(response.map(|body| Tracked { body, _open: guard }))
        });
        reply
    });
    let connection = builder().serve_connection(TokioIo::new(stream), service);
    let mut connection = std::pin::pin!(connection);
    tokio::select! {
        result = connection.as_mut() => return log_end(result),
        _ = closing.wait_for(|closing| *closing) => {}
        () = quiet(&mut idle, idle_timeout, first_deadline) => {}
    }
    connection.as_mut().graceful_shutdown();
    log_end(connection.await);
}

fn builder() -> hyper::server::conn::http2::Builder<TokioExecutor> {
    let mut builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
    builder
        .timer(TokioTimer::new())
        .max_concurrent_streams(MAX_STREAMS)
        .initial_stream_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .max_header_list_size(MAX_HEADER_LIST_BYTES)
        .max_send_buf_size(MAX_SEND_BUFFER_BYTES)
        .keep_alive_interval(PING_INTERVAL)
        .keep_alive_timeout(PING_TIMEOUT);
    builder
}

/// Completes once no stream has been open for `timeout` (the first time:
/// from now until `first_deadline`).
async fn quiet(open: &mut watch::Receiver<usize>, timeout: Duration, first_deadline: Instant) {
    let mut deadline = first_deadline;
    loop {
        if open.wait_for(|count| *count == 0).await.is_err() {
            return std::future::pending().await;
        }
        // Any change (a stream opening) restarts the wait.
        if tokio::time::timeout_at(deadline, open.changed())
            .await
            .is_err()
        {
            return;
        }
        deadline = Instant::now() + timeout;
    }
}

/// Counts one open stream of a connection while it lives: from the request
/// until its reply's body is done or dropped.
struct OpenStream(Arc<watch::Sender<usize>>);

impl OpenStream {
    fn new(open: Arc<watch::Sender<usize>>) -> OpenStream {
        open.send_modify(|count| *count += 1);
        OpenStream(open)
    }
}

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.0.send_modify(|count| *count -= 1);
    }
}

/// A reply body that keeps its stream counted as open.
struct Tracked {
    body: axum::body::Body,
    _open: OpenStream,
}

impl Body for Tracked {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;
    use tokio::net::TcpListener;

    async fn sniffed(bytes: &[u8]) -> Option<Protocol> {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        client.write_all(bytes).await.unwrap();
        client.shutdown().await.unwrap();
        let (server, _) = listener.accept().await.unwrap();
        sniff(&server).await.unwrap()
    }

    #[tokio::test]
    async fn the_preface_is_http2_anything_else_http1() {
        assert_eq!(
            sniffed(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0").await,
            Some(Protocol::Http2)
        );
        assert_eq!(
            sniffed(b"POST /mcp HTTP/1.1\r\n").await,
            Some(Protocol::Http1)
        );
        assert_eq!(sniffed(b"PRI * HTTP/1.1\r\n").await, Some(Protocol::Http1));
        assert_eq!(sniffed(b"").await, None);
    }
}
