//! The accept loop behind [`HttpServer`](crate::http::HttpServer): one
//! HTTP/1.1 connection per task, served by hyper directly, with a deadline
//! for each request's headers.
//!
//! `axum::serve` would do, but its per-connection machinery (HTTP version
//! detection, upgrades) held about 5 KB more per open connection (19.6 KB
//! against 14.2 KB of RSS for an idle keep-alive connection, measured), which
//! adds up with thousands of open `subscriptions/listen` streams.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tower::ServiceExt;

/// What every connection is served with.
#[derive(Clone)]
pub(crate) struct Connections {
    pub router: Router,
    pub header_read_timeout: Duration,
}

impl Connections {
    /// Accepts connections until `shutdown` completes, then asks every
    /// connection to close once its request in flight is answered and
    /// waits for them all.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()>,
    ) -> io::Result<()> {
        // Each connection holds a receiver: `closing.send` asks them to wind
        // down; `closing.closed()` completes when the last one has gone.
        let (closing, watcher) = watch::channel(false);
        let mut shutdown = std::pin::pin!(shutdown);
        loop {
            let accepted = tokio::select! {
                accepted = listener.accept() => accepted,
                () = &mut shutdown => break,
            };
            match accepted {
                Ok((stream, peer)) => {
                    tokio::spawn(self.clone().serve_one(stream, peer, watcher.clone()));
                }
                Err(error) => pause_after(error).await,
            }
        }
        drop(listener);
        drop(watcher);
        let _ = closing.send(true);
        closing.closed().await;
        Ok(())
    }

    async fn serve_one(
        self,
        stream: TcpStream,
        peer: SocketAddr,
        mut closing: watch::Receiver<bool>,
    ) {
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "could not set TCP_NODELAY");
        }
        let router = self.router;
        let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
            let mut request = request.map(axum::body::Body::new);
            request.extensions_mut().insert(ConnectInfo(peer));
            router.clone().oneshot(request)
        });
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
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

fn log_end(result: Result<(), hyper::Error>) {
    if let Err(error) = result {
        tracing::trace!(%error, "connection ended with an error");
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
