//! The accept loop behind [`HttpServer`](crate::http::HttpServer): one
//! connection per task, HTTP/1.1 or HTTP/2 with prior knowledge (told apart
//! by the connection's first bytes, see [`h2c`](super::h2c)), or under TLS
//! HTTP/2 or HTTP/1.1 as ALPN chose, served by hyper directly, with a
//! deadline for the handshake and each request's headers.
//!
//! `axum::serve` would do, but its per-connection machinery (HTTP version
//! detection, upgrades) held about 5 KB more per open connection (19.6 KB
//! against 14.2 KB of RSS for an idle keep-alive connection, measured), which
//! adds up with thousands of open `subscriptions/listen` streams. Peeking at
//! the first bytes costs nothing per connection once it is decided.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::time::Instant;

use super::conn::{Routes, log_end};
use super::h2c::{self, Protocol};
use super::head_timer::ConnectionTimer;
use super::threads::{ConnectionThreads, ThreadPlan};
use super::tls::TlsConfig;

/// How the wait for the open connections went, once the server stopped
/// accepting.
pub(crate) struct Drained {
    /// How long it took.
    pub elapsed: Duration,
    /// Whether every connection closed before the deadline.
    pub complete: bool,
}

/// What every connection is served with.
#[derive(Clone)]
pub(crate) struct Connections {
    pub(super) routes: Routes,
    pub header_read_timeout: Duration,
    /// Set: every connection opens with a TLS handshake.
    pub tls: Option<Arc<TlsConfig>>,
}

impl Connections {
    /// Accepts connections until `shutdown` completes, then asks every
    /// connection to close once its request in flight is answered and
    /// waits for them all, for `drain_timeout` at most. Says how long the
    /// wait took and whether every connection closed within it.
    ///
    /// With `threads.count` above zero the connections are served on that
    /// many [`ConnectionThreads`], else in tasks of the caller's runtime.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()>,
        drain_timeout: Duration,
        threads: ThreadPlan,
    ) -> io::Result<Drained> {
        // Each connection holds a receiver: `closing.send` asks them to wind
        // down; `closing.closed()` completes when the last one has gone.
        let (closing, watcher) = watch::channel(false);
        let mut threads = match threads.count {
            0 => None,
            _ => {
                let connections = self.clone();
                let serve = move |stream, peer, closing| {
                    connections.clone().serve_one(stream, peer, closing)
                };
                Some(ConnectionThreads::start(threads, serve)?)
            }
        };
        let mut shutdown = std::pin::pin!(shutdown);
        loop {
            let accepted = tokio::select! {
                accepted = listener.accept() => accepted,
                () = &mut shutdown => break,
            };
            match accepted {
                Ok((stream, peer)) => match &mut threads {
                    Some(threads) => threads.hand(stream, peer, watcher.clone()),
                    None => {
                        tokio::spawn(self.clone().serve_one(stream, peer, watcher.clone()));
                    }
                },
                Err(error) => pause_after(error).await,
            }
        }
        drop(listener);
        drop(watcher);
        let started = Instant::now();
        let _ = closing.send(true);
        let complete = tokio::time::timeout(drain_timeout, closing.closed())
            .await
            .is_ok();
        drop(threads);
        Ok(Drained {
            elapsed: started.elapsed(),
            complete,
        })
    }

    async fn serve_one(
        self,
        mut stream: TcpStream,
        peer: SocketAddr,
        mut closing: watch::Receiver<bool>,
    ) {
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "could not set TCP_NODELAY");
        }
        // The wait for the first bytes counts against the header read timeout.
        let deadline = Instant::now() + self.header_read_timeout;
        if self.tls.is_some() {
            return self.serve_tls(stream, peer, deadline, closing).await;
        }
        match first_bytes(&stream, peer, deadline, &mut closing).await {
            Some(Protocol::Http1) => self.serve_http1(&mut stream, peer, &mut closing).await,
            Some(Protocol::Http2) => {
                let timeout = self.header_read_timeout;
                // Boxed: inline, its state (about twice HTTP/1.1's) would
                // make every connection's task that large.
                Box::pin(h2c::serve(
                    stream,
                    self.routes,
                    peer,
                    closing,
                    timeout,
                    deadline,
                ))
                .await;
            }
            None => {}
        }
    }

    /// Serves a TLS connection once its handshake is done (by `deadline`):
    /// HTTP/2 when ALPN chose `h2`, else HTTP/1.1.
    async fn serve_tls(
        self,
        stream: TcpStream,
        peer: SocketAddr,
        deadline: Instant,
        mut closing: watch::Receiver<bool>,
    ) {
        let Some(tls) = &self.tls else { return };
        let handshake = tokio::select! {
            done = tokio::time::timeout_at(deadline, tls.acceptor().accept(stream)) => done,
            _ = closing.wait_for(|closing| *closing) => return,
        };
        let mut stream = match handshake {
            Ok(Ok(stream)) => stream,
            Ok(Err(error)) => return tracing::debug!(%peer, %error, "TLS handshake failed"),
            Err(_) => {
                return tracing::debug!(%peer, "no TLS handshake within the header read timeout");
            }
        };
        if stream.get_ref().1.alpn_protocol() == Some(b"h2") {
            let timeout = self.header_read_timeout;
            Box::pin(h2c::serve(
                stream,
                self.routes,
                peer,
                closing,
                timeout,
                deadline,
            ))
            .await;
        } else {
            self.serve_http1(&mut stream, peer, &mut closing).await;
        }
    }

    /// Serves an HTTP/1.1 connection. It borrows what `serve_one` holds
    /// anyway, so that the task does not keep two copies.
    async fn serve_http1<S: AsyncRead + AsyncWrite + Unpin>(
        &self,
        stream: &mut S,
        peer: SocketAddr,
        closing: &mut watch::Receiver<bool>,
    ) {
        let routes = &self.routes;
        let service = hyper::service::service_fn(move |request| routes.route(peer, request));
        // hyper applies one timeout to every request head, the first one
        // included: a client whose first bytes began like the HTTP/2
        // preface (`P`, `PR`, ...) and then stalled gets it once more.
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(ConnectionTimer::default())
            .header_read_timeout(self.header_read_timeout)
            .serve_connection(TokioIo::new(stream), service);
        let mut connection = std::pin::pin!(connection);
        tokio::select! {
            result = connection.as_mut() => return log_end(result),
            _ = closing.wait_for(|closing| *closing) => connection.as_mut().graceful_shutdown(),
        }
        log_end(connection.await);
    }
}

/// Which protocol the connection speaks, told by its first bytes; `None`
/// when it closed, failed, or sent too little by `deadline`, or when the
/// server is closing.
async fn first_bytes(
    stream: &TcpStream,
    peer: SocketAddr,
    deadline: Instant,
    closing: &mut watch::Receiver<bool>,
) -> Option<Protocol> {
    let sniffed = tokio::select! {
        sniffed = tokio::time::timeout_at(deadline, h2c::sniff(stream)) => sniffed,
        _ = closing.wait_for(|closing| *closing) => return None,
    };
    match sniffed {
        Ok(Ok(protocol)) => protocol,
        Ok(Err(error)) => {
            tracing::trace!(%error, "connection failed before its first request");
            None
        }
        Err(_) => {
            tracing::debug!(%peer, "no request within the header read timeout");
            None
        }
    }
}

/// Running out of file descriptors (or another accept failure) should not
/// spin the loop: wait a little before accepting again.
async fn pause_after(error: io::Error) {
    use io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        error.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    ) {
        return;
    }
    tracing::warn!(%error, "accepting a connection failed; retrying in 100 ms");
    tokio::time::sleep(Duration::from_millis(100)).await;
}
