//! The stdio transport: newline-delimited JSON-RPC on stdin and stdout.
//!
//! Requests are handled concurrently (up to a bound), every line written
//! goes through one queue, `notifications/cancelled` stops a handler and
//! suppresses its response, and nothing but MCP messages is ever written to
//! stdout.
//!
//! Lines are read in large chunks and served in order. A request runs
//! inline until it first has to wait; most (a handler that awaits nothing
//! slow) are answered right there, and only one that waits goes on in a
//! task of its own while the next lines are served. Replies ready together
//! are written with one `write`. (So a handler that computes for long
//! without awaiting holds up the lines after it, as it would hold up its
//! HTTP/1.1 connection: such work belongs in `spawn_blocking`.)
//!
//! Both eras on one pipe: a request with 2026-07-28 `_meta` is served
//! statelessly; an `initialize` without it makes the process a legacy
//! session (2025-11-25 and earlier) for the requests that follow without
//! `_meta`: handlers' input requests become real requests to the client on
//! this pipe, its responses are matched by id, and list changes and
//! resource updates are sent as notifications.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::{FutureExt, StreamExt};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::JoinSet;
use tokio_util::codec::FramedRead;
use tokio_util::sync::CancellationToken;
use toolwire_protocol::lines::{Line, LineCodec};
use toolwire_protocol::{ErrorObject, ErrorResponse, Message, Notification, Request, RequestId};

use super::legacy::{LegacySession, forward_changes, is_modern, opens_session};
use crate::context::encode::encode_message;
use crate::context::{Outbox, Principal, RequestEnv};
use crate::server::Server;
use crate::transport::drain::{self, DrainStart};
use toolwire_telemetry::Network;

/// Settings of the stdio transport.
#[derive(Debug, Clone)]
pub struct StdioConfig {
    /// Requests handled at once (`subscriptions/listen` aside); further
    /// requests wait their turn while lines go on being read, so a
    /// cancellation or an answer always gets through.
    pub max_in_flight: usize,
    /// Longest accepted line in bytes; a longer one is answered with -32600.
    pub max_line_bytes: usize,
    /// The principal every request runs as (stdio has no authentication).
    pub principal: Principal,
    /// How long to let running requests finish after stdin closes, or
    /// after the shutdown signal of [`serve_until`].
    pub shutdown_grace: Duration,
}

impl Default for StdioConfig {
    fn default() -> Self {
        StdioConfig {
            max_in_flight: 256,
            max_line_bytes: 4 * 1024 * 1024,
            principal: Principal::anonymous(),
            shutdown_grace: Duration::from_secs(10),
        }
    }
}

/// Serves `server` on this process's stdin and stdout until stdin closes.
///
/// ```no_run
/// # async fn run(server: toolwire_server::Server) -> std::io::Result<()> {
/// toolwire_server::stdio::serve_stdio(server).await
/// # }
/// ```
pub async fn serve_stdio(server: Server) -> std::io::Result<()> {
    serve(
        server,
        tokio::io::stdin(),
        tokio::io::stdout(),
        StdioConfig::default(),
    )
    .await
}

/// Serves `server` on this process's stdin and stdout until stdin closes
/// or `shutdown` completes. On `shutdown` it drains: it stops reading,
/// lets the requests in flight finish within
/// [`StdioConfig::shutdown_grace`], writes their replies and returns,
/// logging what it waited for and how that ended (as
/// [`HttpServer::run_until`](crate::http::HttpServer::run_until) does).
pub async fn serve_stdio_until<F>(
    server: Server,
    config: StdioConfig,
    shutdown: F,
) -> std::io::Result<()>
where
    F: Future<Output = ()> + Send + 'static,
{
    serve_until(
        server,
        tokio::io::stdin(),
        tokio::io::stdout(),
        config,
        shutdown,
    )
    .await
}

/// Requests being handled in tasks of their own: their cancellation
/// tokens, and whether each is a long-lived `subscriptions/listen` (ended,
/// not awaited, when stdin closes).
type InFlight = Arc<Mutex<HashMap<RequestId, (CancellationToken, bool)>>>;

/// Encoded lines waiting to be written. A full queue holds up handlers'
/// notifications and the replies of requests running in tasks until stdout
/// takes more; the reading loop does not wait for it (`Connection::queue`).
const OUT_QUEUE: usize = 1024;

/// The read buffer: one `read` takes up to this many bytes, however many
/// lines they hold.
const READ_CHUNK: usize = 64 * 1024;

/// The write buffer: replies ready together go out in one `write`.
const WRITE_CHUNK: usize = 64 * 1024;

/// Serves `server` over any reader and writer (a pipe, a socket, a test buffer).
///
/// Returns at end of input, once the requests still running have ended (or
/// [`StdioConfig::shutdown_grace`] has passed) and every reply is written;
/// or at the first error reading or writing.
///
/// Reading and writing run as two loops of one task: a reply a request
/// finished at once joins the queue while the lines read with it are still
/// being served, and the writer sends what queued up in one `write`.
pub async fn serve<R, W>(
    server: Server,
    reader: R,
    writer: W,
    config: StdioConfig,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_until(server, reader, writer, config, std::future::pending()).await
}

/// [`serve`], which also drains and returns when `shutdown` completes (see
/// [`serve_stdio_until`]).
pub async fn serve_until<R, W, F>(
    server: Server,
    reader: R,
    writer: W,
    config: StdioConfig,
    shutdown: F,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
    F: Future<Output = ()> + Send + 'static,
{
    // Everything written goes through one queue of encoded lines.
    let (out_tx, out_rx) = mpsc::channel::<Bytes>(OUT_QUEUE);
    let reading = Connection::new(server, out_tx, config).read_lines(reader, shutdown);
    tokio::try_join!(reading, write_lines(writer, out_rx))?;
    Ok(())
}

/// The reading side of one connection: what it serves, where replies go,
/// and the requests still running.
struct Connection {
    server: Server,
    config: StdioConfig,
    out: mpsc::Sender<Bytes>,
    in_flight: InFlight,
    permits: Arc<Semaphore>,
    tasks: JoinSet<()>,
    /// Set once an `initialize` made this pipe a legacy session.
    legacy: Option<Arc<LegacySession>>,
    /// Ends a legacy session's change notifications (they hold the writer open).
    stop_forwarding: CancellationToken,
}

impl Connection {
    fn new(server: Server, out: mpsc::Sender<Bytes>, config: StdioConfig) -> Self {
        Connection {
            server,
            permits: Arc::new(Semaphore::new(config.max_in_flight.max(1))),
            config,
            out,
            in_flight: InFlight::default(),
            tasks: JoinSet::new(),
            legacy: None,
            stop_forwarding: CancellationToken::new(),
        }
    }

    /// Serves every line of `reader`, then ends what is still running;
    /// when `shutdown` completes first, stops reading and drains.
    async fn read_lines<R: AsyncRead + Unpin>(
        mut self,
        reader: R,
        shutdown: impl Future<Output = ()>,
    ) -> std::io::Result<()> {
        let _stop_on_error = self.stop_forwarding.clone().drop_guard();
        let codec = LineCodec::new(self.config.max_line_bytes);
        let mut lines = FramedRead::with_capacity(reader, codec, READ_CHUNK);
        let mut shutdown = std::pin::pin!(shutdown);
        loop {
            let line = tokio::select! {
                line = lines.next() => line,
                () = &mut shutdown => {
                    self.drain().await;
                    return Ok(());
                }
            };
            let Some(line) = line else { break };
            if !self.tasks.is_empty() {
                while self.tasks.try_join_next().is_some() {}
            }
            self.on_line(line?).await;
        }
        self.finish().await;
        Ok(())
    }

    /// Requests running in tasks now: calls, and listens.
    fn running(&self) -> (usize, usize) {
        let in_flight = self.in_flight.lock().expect("in-flight lock");
        let listens = in_flight.values().filter(|(_, listen)| *listen).count();
        (in_flight.len() - listens, listens)
    }

    /// After the shutdown signal: [`Connection::finish`], logged with counts.
    async fn drain(&mut self) {
        let (calls, listens) = self.running();
        DrainStart {
            calls,
            listens,
            sessions: usize::from(self.legacy.is_some()),
        }
        .log("stdio");
        let started = std::time::Instant::now();
        let complete = self.finish().await;
        let unfinished = (!complete).then(|| self.running().0);
        drain::log_end("stdio", started.elapsed(), unfinished);
    }

    async fn on_line(&mut self, line: Line) {
        if line.is_blank() {
            return;
        }
        let line = match line {
            Line::Text(line) => line,
            Line::TooLong => {
                let error = ErrorObject::invalid_request(format!(
                    "message longer than {} bytes",
                    self.config.max_line_bytes
                ));
                self.queue(encode_line(&Message::Error(ErrorResponse::new(
                    None, error,
                ))));
                return;
            }
        };
        match Message::from_slice(&line) {
            Ok(Message::Request(request)) if self.legacy.is_none() && opens_session(&request) => {
                self.initialize(request).await;
            }
            Ok(Message::Request(request)) => self.start(request),
            Ok(Message::Notification(notification)) => {
                cancel_if_asked(&notification, &self.in_flight);
            }
            // Answers to a legacy session's requests; without a session
            // the server sent none, so nothing awaits them.
            Ok(response) => {
                if let Some(session) = &self.legacy {
                    session.answer(response);
                }
            }
            Err(error) => self.queue(encode_line(&Message::Error(error.to_response()))),
        }
    }

    /// Queues `line` without waiting: when stdout is not keeping up, a
    /// task waits to queue it instead, and reading goes on (a cancellation
    /// or a legacy client's answer must get through).
    fn queue(&mut self, line: Bytes) {
        if let Err(TrySendError::Full(line)) = self.out.try_send(line) {
            let out = self.out.clone();
            self.tasks.spawn(async move {
                let _ = out.send(line).await;
            });
        }
    }

    /// Answers `initialize`; a session it opens starts sending list changes.
    async fn initialize(&mut self, request: Request) {
        let (reply, session) = initialize(&self.server, request);
        // Awaited: the reply must precede the session's first notification.
        let _ = self.out.send(encode_line(&reply)).await;
        if let Some(session) = session {
            let outbox = Outbox::encoding(self.out.clone(), encode_line);
            let forward = forward_changes(
                self.server.clone(),
                session.subscriptions(),
                outbox,
                self.stop_forwarding.clone(),
            );
            tokio::spawn(forward);
            self.legacy = Some(session);
        }
    }

    /// Starts serving `request`. Most requests are answered in their first
    /// poll (a handler that awaits nothing slow): that poll runs here, and
    /// its reply joins the queue in order. A request that has to wait goes
    /// on in a task of its own, so that the lines after it are read and
    /// served meanwhile.
    fn start(&mut self, request: Request) {
        let is_listen = request.method == "subscriptions/listen";
        let id = request.id.clone();
        let cancel = CancellationToken::new();
        let env = RequestEnv::new()
            .with_principal(self.config.principal.clone())
            .with_outbox(Outbox::encoding(self.out.clone(), encode_line))
            .with_cancel(cancel.clone())
            .with_network(Network::Pipe);
        let session = self.legacy.clone().filter(|_| !is_modern(&request));
        let mut serving = Box::pin(serve_line(self.server.clone(), session, request, env));
        let permit = self.permit(is_listen);
        if matches!(permit, Permit::Held(_)) {
            if let Some(line) = serve_now(&id, &mut serving) {
                self.queue(line);
                return;
            }
        }
        // Registered before the next line is read, so a cancellation on
        // that line always finds it.
        self.in_flight
            .lock()
            .expect("in-flight lock")
            .insert(id.clone(), (cancel.clone(), is_listen));
        let job = Job {
            id,
            cancel,
            out: self.out.clone(),
            in_flight: Arc::clone(&self.in_flight),
        };
        self.tasks.spawn(job.run(serving, permit));
    }

    /// The permit a request runs under. Listens, open until cancelled, take
    /// none (the dispatcher caps them per principal); other requests run
    /// inline only when one is free, else they wait their turn in a task.
    fn permit(&self, is_listen: bool) -> Permit {
        if is_listen {
            return Permit::None;
        }
        match Arc::clone(&self.permits).try_acquire_owned() {
            Ok(permit) => Permit::Held(permit),
            Err(_) => Permit::Wait(Arc::clone(&self.permits)),
        }
    }

    /// After end of input: no answer can come any more, so calls waiting on
    /// one end now; the requests queued behind them get their turn within
    /// the grace period, and listens end. False when the grace period
    /// passed with requests still running (they are aborted).
    async fn finish(&mut self) -> bool {
        self.stop_forwarding.cancel();
        if let Some(session) = &self.legacy {
            session.close();
        }
        for (token, is_listen) in self.in_flight.lock().expect("in-flight lock").values() {
            if *is_listen {
                token.cancel();
            }
        }
        let tasks = &mut self.tasks;
        let complete = tokio::time::timeout(self.config.shutdown_grace, async {
            while tasks.join_next().await.is_some() {}
        })
        .await
        .is_ok();
        self.tasks.abort_all();
        complete
    }
}

/// Polls `serving` (request `id`) once, with a waker that does nothing: a
/// future left pending is polled again by the task it moves to, which
/// registers that task's waker. Kept out of line so that a profile can tell
/// the dispatcher's share of a call (everything under this function) from
/// the transport's (`bench stdio-instructions`).
#[inline(never)]
fn serve_now<F>(id: &RequestId, serving: &mut F) -> Option<Bytes>
where
    F: Future<Output = Bytes> + Unpin,
{
    match std::panic::catch_unwind(AssertUnwindSafe(|| serving.now_or_never())) {
        Ok(line) => line,
        // A bug below the transport costs its request only, as it would in
        // a task of its own.
        Err(_) => {
            let error = ErrorObject::internal("the server failed while serving this request");
            let reply = Message::Error(ErrorResponse::new(Some(id.clone()), error));
            Some(encode_line(&reply))
        }
    }
}

/// The in-flight permit of a request that runs in a task.
enum Permit {
    /// Taken already (the request started inline).
    Held(OwnedSemaphorePermit),
    /// To be awaited in the task: the reading loop must stay free to read
    /// the cancellations and answers that let running requests end.
    Wait(Arc<Semaphore>),
    /// None needed (`subscriptions/listen`).
    None,
}

/// A request that goes on in a task of its own.
struct Job {
    id: RequestId,
    cancel: CancellationToken,
    out: mpsc::Sender<Bytes>,
    in_flight: InFlight,
}

impl Job {
    /// Waits for a permit if need be, finishes `serving` and queues its
    /// reply, unless the request is cancelled first.
    async fn run(self, serving: impl Future<Output = Bytes>, permit: Permit) {
        let line = tokio::select! {
            line = async {
                let _permit = match permit {
                    Permit::Wait(permits) => Some(permits.acquire_owned().await),
                    Permit::Held(permit) => Some(Ok(permit)),
                    Permit::None => None,
                };
                serving.await
            } => Some(line),
            () = self.cancel.cancelled() => None,
        };
        self.in_flight
            .lock()
            .expect("in-flight lock")
            .remove(&self.id);
        if let Some(line) = line.filter(|_| !self.cancel.is_cancelled()) {
            let _ = self.out.send(line).await;
        }
    }
}

/// Serves one request, statelessly or in the legacy session, and encodes
/// its response as a line.
async fn serve_line(
    server: Server,
    session: Option<Arc<LegacySession>>,
    request: Request,
    env: RequestEnv,
) -> Bytes {
    let mut line = Vec::with_capacity(256);
    match session {
        Some(session) => session.serve(request, env).await.encode(&mut line),
        None => server.reply(request, env).await.encode(&mut line),
    }
    line.push(b'\n');
    Bytes::from(line)
}

/// Answers `initialize`; the session it opens, unless refused.
fn initialize(server: &Server, request: Request) -> (Message, Option<Arc<LegacySession>>) {
    match LegacySession::open(server, request.params) {
        Ok((session, result)) => {
            let result = match serde_json::to_value(result) {
                Ok(Value::Object(result)) => result,
                _ => Default::default(),
            };
            let reply = Message::Result(toolwire_protocol::ResultResponse::new(request.id, result));
            (reply, Some(Arc::new(session.over(Network::Pipe))))
        }
        Err(error) => (
            Message::Error(ErrorResponse::new(Some(request.id), error)),
            None,
        ),
    }
}

/// `notifications/cancelled` naming an in-flight request cancels it.
fn cancel_if_asked(notification: &Notification, in_flight: &InFlight) {
    if notification.method != "notifications/cancelled" {
        return;
    }
    let Some(id) = notification
        .params
        .as_ref()
        .and_then(|p| p.get("requestId"))
        .and_then(|v| serde_json::from_value::<RequestId>(Value::clone(v)).ok())
    else {
        return;
    };
    if let Some((token, _)) = in_flight.lock().expect("in-flight lock").get(&id) {
        token.cancel();
    }
}

/// One message as a line of JSON.
fn encode_line(message: &Message) -> Bytes {
    let mut line = Vec::with_capacity(256);
    encode_message(&mut line, message);
    line.push(b'\n');
    Bytes::from(line)
}

/// Writes the queued lines until every sender is gone. Lines ready
/// together are written at once; the writer is flushed whenever the queue
/// is momentarily empty, so no reply waits for the next one.
async fn write_lines<W: AsyncWrite + Unpin>(
    writer: W,
    mut queue: mpsc::Receiver<Bytes>,
) -> std::io::Result<()> {
    let mut writer = BufWriter::with_capacity(WRITE_CHUNK, writer);
    let mut ready = Vec::with_capacity(64);
    while queue.recv_many(&mut ready, 256).await > 0 {
        for line in ready.drain(..) {
            writer.write_all(&line).await?;
        }
        if queue.is_empty() {
            writer.flush().await?;
        }
    }
    writer.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serve_now_answers_what_is_ready_and_leaves_what_waits() {
        let id = RequestId::Number(7);
        let mut ready = Box::pin(async { Bytes::from_static(b"done\n") });
        assert_eq!(
            serve_now(&id, &mut ready),
            Some(Bytes::from_static(b"done\n"))
        );
        let mut waiting = Box::pin(async {
            tokio::task::yield_now().await;
            Bytes::new()
        });
        assert_eq!(serve_now(&id, &mut waiting), None);
    }

    #[test]
    fn a_panic_while_serving_inline_costs_only_its_request() {
        let mut failing = Box::pin(async {
            panic!("a bug below the transport");
        });
        let line = serve_now(&RequestId::Number(7), &mut failing).unwrap();
        assert_eq!(
            serde_json::from_slice::<Value>(&line).unwrap(),
            serde_json::json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32603,
                "message": "the server failed while serving this request"}})
        );
    }
}
