//! Connection threads ([`HttpConfig::connection_threads`](super::HttpConfig::connection_threads)):
//! each runs a single-threaded runtime and serves the connections the
//! accept loop hands it, round robin.
//!
//! On Tokio's multi-thread runtime a connection's task, the tasks its
//! requests spawn and the connections they open (a gateway's upstream
//! calls) can each run on a different worker, and every hand-off between
//! them that crosses workers wakes a thread with a futex. On a connection
//! thread all of them stay on the thread that serves the connection.

use std::future::Future;
use std::io;
use std::net::SocketAddr;

use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};

/// A connection on its way to the thread that will serve it.
struct Handed {
    stream: std::net::TcpStream,
    peer: SocketAddr,
    closing: watch::Receiver<bool>,
}

/// The threads, as the accept loop sees them. Dropping it lets each thread
/// end once it has taken what was handed to it; the connections it still
/// serves are then closed.
pub(super) struct ConnectionThreads {
    queues: Vec<mpsc::UnboundedSender<Handed>>,
    next: usize,
}

impl ConnectionThreads {
    /// Starts `count` threads (at least one), named `toolwire-conn-N`, that
    /// serve each connection handed to them with `serve`.
    pub fn start<S, F>(count: usize, serve: S) -> io::Result<ConnectionThreads>
    where
        S: Fn(TcpStream, SocketAddr, watch::Receiver<bool>) -> F + Clone + Send + 'static,
        F: Future<Output = ()> + Send + 'static,
    {
        let mut queues = Vec::with_capacity(count);
        for index in 0..count.max(1) {
            let (queue, handed) = mpsc::unbounded_channel();
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            let serve = serve.clone();
            std::thread::Builder::new()
                .name(format!("toolwire-conn-{index}"))
                .spawn(move || {
                    runtime.block_on(serve_handed(handed, serve));
                    // Not a plain drop: that would wait for the thread's
                    // blocking tasks, which may never end.
                    runtime.shutdown_background();
                })?;
            queues.push(queue);
        }
        Ok(ConnectionThreads { queues, next: 0 })
    }

    /// Hands `stream` to the next thread.
    pub fn hand(&mut self, stream: TcpStream, peer: SocketAddr, closing: watch::Receiver<bool>) {
        let stream = match stream.into_std() {
            Ok(stream) => stream,
            Err(error) => return tracing::debug!(%peer, %error, "could not hand a connection over"),
        };
        let queue = &self.queues[self.next];
        self.next = (self.next + 1) % self.queues.len();
        let handed = Handed {
            stream,
            peer,
            closing,
        };
        if queue.send(handed).is_err() {
            tracing::warn!(%peer, "a connection thread has stopped; connection closed");
        }
    }
}

/// One thread's loop: serves each connection handed to it in a task of its
/// own, until the accept loop drops its end of the queue.
async fn serve_handed<S, F>(mut handed: mpsc::UnboundedReceiver<Handed>, serve: S)
where
    S: Fn(TcpStream, SocketAddr, watch::Receiver<bool>) -> F,
    F: Future<Output = ()> + Send + 'static,
{
    while let Some(Handed {
        stream,
        peer,
        closing,
    }) = handed.recv().await
    {
        match TcpStream::from_std(stream) {
            Ok(stream) => {
                tokio::spawn(serve(stream, peer, closing));
            }
            Err(error) => tracing::debug!(%peer, %error, "could not take a handed connection"),
        }
    }
}
