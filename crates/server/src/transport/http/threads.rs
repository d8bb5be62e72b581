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

/// How many connection threads serve connections (0: none, the caller's
/// runtime does), and what each runs just before it waits for work.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct ThreadPlan {
    pub count: usize,
    pub on_park: Option<fn()>,
}

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
    /// Starts `plan.count` threads (at least one), named `toolwire-conn-N`,
    /// that serve each connection handed to them with `serve`, each running
    /// `plan.on_park` (when set) before it waits for work.
    pub fn start<S, F>(plan: ThreadPlan, serve: S) -> io::Result<ConnectionThreads>
    where
        S: Fn(TcpStream, SocketAddr, watch::Receiver<bool>) -> F + Clone + Send + 'static,
        F: Future<Output = ()> + Send + 'static,
    {
        let mut queues = Vec::with_capacity(plan.count);
        for index in 0..plan.count.max(1) {
            let (queue, handed) = mpsc::unbounded_channel();
            let mut builder = tokio::runtime::Builder::new_current_thread();
            if let Some(hook) = plan.on_park {
                builder.on_thread_park(hook);
            }
            let runtime = builder
                .enable_all()
                .build()
                .map_err(|e| starting(index, e))?;
            let serve = serve.clone();
            std::thread::Builder::new()
                .name(format!("toolwire-conn-{index}"))
                .spawn(move || {
                    runtime.block_on(serve_handed(handed, serve));
                    // Not a plain drop: that would wait for the thread's
                    // blocking tasks, which may never end.
                    runtime.shutdown_background();
                })
                .map_err(|e| starting(index, e))?;
            queues.push(queue);
        }
        Ok(ConnectionThreads { queues, next: 0 })
    }

    /// Hands `stream` to the next thread. A thread that has stopped (its
    /// queue closed) is left out from then on, and the connection goes to
    /// the next one.
    pub fn hand(&mut self, stream: TcpStream, peer: SocketAddr, closing: watch::Receiver<bool>) {
        let stream = match stream.into_std() {
            Ok(stream) => stream,
            Err(error) => return tracing::debug!(%peer, %error, "could not hand a connection over"),
        };
        let mut handed = Handed {
            stream,
            peer,
            closing,
        };
        while !self.queues.is_empty() {
            self.next %= self.queues.len();
            match self.queues[self.next].send(handed) {
                Ok(()) => {
                    self.next += 1;
                    return;
                }
                Err(mpsc::error::SendError(back)) => {
                    tracing::error!("a connection thread has stopped; the others serve its share");
                    self.queues.remove(self.next);
                    handed = back;
                }
            }
        }
        tracing::error!(%peer, "every connection thread has stopped; connection closed");
    }
}

/// The error of a connection thread that could not start, saying which.
fn starting(index: usize, error: io::Error) -> io::Error {
    io::Error::new(
        error.kind(),
        format!("could not start connection thread {index}: {error}"),
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A connected pair over 127.0.0.1: the server's side and the peer.
    async fn accepted() -> (TcpStream, SocketAddr, TcpStream) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (server, peer) = listener.accept().await.unwrap();
        (server, peer, client)
    }

    /// Hands `count` new connections to `threads`, each with `closing`;
    /// their peers' addresses and client ends (kept open), in the order
    /// handed.
    async fn hand_new(
        threads: &mut ConnectionThreads,
        count: usize,
        closing: &watch::Receiver<bool>,
    ) -> Vec<(SocketAddr, TcpStream)> {
        let mut peers = Vec::new();
        for _ in 0..count {
            let (stream, peer, client) = accepted().await;
            threads.hand(stream, peer, closing.clone());
            peers.push((peer, client));
        }
        peers
    }

    #[tokio::test]
    async fn a_stopped_threads_share_goes_to_the_others() {
        let (stopped, gone) = mpsc::unbounded_channel();
        drop(gone);
        let (live, mut received) = mpsc::unbounded_channel();
        let mut threads = ConnectionThreads {
            queues: vec![stopped, live],
            next: 0,
        };
        let (_closing, watcher) = watch::channel(false);
        let peers = hand_new(&mut threads, 3, &watcher).await;
        assert_eq!(threads.queues.len(), 1);
        for (peer, _client) in &peers {
            assert_eq!(received.try_recv().unwrap().peer, *peer);
        }
    }

    #[tokio::test]
    async fn with_every_thread_stopped_a_connection_is_closed() {
        let (stopped, gone) = mpsc::unbounded_channel();
        drop(gone);
        let mut threads = ConnectionThreads {
            queues: vec![stopped],
            next: 0,
        };
        let (_closing, watcher) = watch::channel(false);
        let (stream, peer, mut client) = accepted().await;
        threads.hand(stream, peer, watcher);
        assert!(threads.queues.is_empty());
        let mut byte = [0u8; 1];
        let read = tokio::io::AsyncReadExt::read(&mut client, &mut byte).await;
        assert_eq!(read.unwrap(), 0, "the connection was not closed");
    }

    /// The name of the thread each time one ran [`note_park`].
    static PARKED_ON: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

    fn note_park() {
        let name = std::thread::current().name().unwrap_or("").to_owned();
        PARKED_ON.lock().unwrap().push(name);
    }

    #[tokio::test]
    async fn each_connection_thread_runs_the_park_hook_before_it_waits() {
        let (served, mut done) = mpsc::unbounded_channel::<SocketAddr>();
        let plan = ThreadPlan {
            count: 2,
            on_park: Some(note_park),
        };
        let serve = move |_stream, peer, _closing| {
            let served = served.clone();
            async move {
                let _ = served.send(peer);
            }
        };
        let mut threads = ConnectionThreads::start(plan, serve).unwrap();
        let (_closing, watcher) = watch::channel(false);
        let peers = hand_new(&mut threads, 2, &watcher).await;
        let mut handed: Vec<SocketAddr> = peers.iter().map(|(peer, _)| *peer).collect();
        let mut served = vec![done.recv().await.unwrap(), done.recv().await.unwrap()];
        handed.sort();
        served.sort();
        assert_eq!(served, handed);
        drop(threads);
        let parked = PARKED_ON.lock().unwrap().clone();
        for name in ["toolwire-conn-0", "toolwire-conn-1"] {
            assert!(
                parked.iter().any(|n| n == name),
                "{name} never ran the hook: {parked:?}"
            );
        }
    }
}
