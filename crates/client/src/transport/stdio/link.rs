//! One open connection of a stdio transport: a writer task, a reader task
//! that routes each incoming message to the pending requests it belongs to,
//! the child's stderr ring, and stopping the child.

use std::collections::{HashMap, VecDeque};
use std::process::ExitStatus;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use futures::StreamExt;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::process::{Child, ChildStderr};
use tokio::sync::mpsc;
use tokio_util::codec::FramedRead;
use tokio_util::sync::CancellationToken;
use toolwire_protocol::lines::{Line, LineCodec};
use toolwire_protocol::{Message, Notification, ProgressToken, RequestId, keys};

use super::config::StdioConfig;
use super::connector::Connection;
use crate::transport::legacy::{LegacySession, Related, answer_inbound, sole_related};
use crate::transport::{Exchange, InboundSlot, TransportError};

type Sender = mpsc::UnboundedSender<Result<Message, TransportError>>;

/// Where messages for one pending request go.
#[derive(Debug)]
struct Route {
    tx: Sender,
    hints: RouteHints,
}

/// What routes notifications to a request: its progress token, and whether
/// it asked for log messages.
#[derive(Debug, Clone, Default)]
pub(super) struct RouteHints {
    progress_token: Option<ProgressToken>,
    wants_logs: bool,
    related: Related,
}

impl RouteHints {
    /// The hints in a request's `_meta` (read before a legacy session strips it).
    pub(super) fn of(request: &toolwire_protocol::Request) -> RouteHints {
        let meta = request.params.as_ref().and_then(|p| p.get("_meta"));
        RouteHints {
            progress_token: meta
                .and_then(|m| m.get(keys::PROGRESS_TOKEN))
                .and_then(|t| serde_json::from_value(t.clone()).ok()),
            wants_logs: meta.is_some_and(|m| m.get(keys::LOG_LEVEL).is_some()),
            related: Related::of(request),
        }
    }
}

/// One open connection: a writer task, a reader task and the routes.
#[derive(Debug)]
pub(super) struct Link {
    writer: mpsc::UnboundedSender<Vec<u8>>,
    routes: Mutex<HashMap<RequestId, Route>>,
    closed: CancellationToken,
    stop_writing: CancellationToken,
    child: tokio::sync::Mutex<Option<Child>>,
    /// Set once a legacy session was opened on this connection.
    legacy: OnceLock<Arc<LegacySession>>,
    inbound: InboundSlot,
}

impl Link {
    pub(super) fn start(
        connection: Connection,
        config: &StdioConfig,
        stderr_ring: Arc<Mutex<VecDeque<String>>>,
        inbound: InboundSlot,
    ) -> Arc<Link> {
        let (tx, rx) = mpsc::unbounded_channel();
        let link = Arc::new(Link {
            writer: tx,
            routes: Mutex::new(HashMap::new()),
            closed: CancellationToken::new(),
            stop_writing: CancellationToken::new(),
            child: tokio::sync::Mutex::new(connection.child),
            legacy: OnceLock::new(),
            inbound,
        });
        tokio::spawn(write_lines(
            connection.writer,
            rx,
            link.stop_writing.clone(),
            link.closed.clone(),
        ));
        if let Some(stderr) = connection.stderr {
            tokio::spawn(capture_stderr(stderr, stderr_ring, config.stderr_lines));
        }
        let lines = FramedRead::new(connection.reader, LineCodec::new(config.max_line_bytes));
        tokio::spawn(read_lines(lines, Arc::downgrade(&link)));
        link
    }

    pub(super) fn is_alive(&self) -> bool {
        !self.closed.is_cancelled()
    }

    pub(super) fn send(
        self: &Arc<Self>,
        request: toolwire_protocol::Request,
    ) -> Result<Exchange, TransportError> {
        let hints = RouteHints::of(&request);
        self.send_routed(request, hints)
    }

    /// Sends `request`; notifications reach it by `hints`.
    pub(super) fn send_routed(
        self: &Arc<Self>,
        request: toolwire_protocol::Request,
        hints: RouteHints,
    ) -> Result<Exchange, TransportError> {
        let id = request.id.clone();
        let line = encode_line(&Message::Request(request))?;
        let (tx, rx) = mpsc::unbounded_channel();
        {
            let mut routes = lock(&self.routes);
            if routes.contains_key(&id) {
                return Err(TransportError::Io(format!(
                    "request id {id} is already in flight"
                )));
            }
            routes.insert(id.clone(), Route { tx, hints });
        }
        if self.writer.send(line).is_err() || !self.is_alive() {
            lock(&self.routes).remove(&id);
            return Err(TransportError::Closed(
                " (the server's input is closed)".into(),
            ));
        }
        let guard = CancelOnDrop {
            link: Arc::downgrade(self),
            id,
        };
        Ok(Exchange::new(rx, Some(Box::new(guard))))
    }

    /// Writes a notification or a response.
    pub(super) fn write(&self, message: &Message) -> Result<(), TransportError> {
        let line = encode_line(message)?;
        self.writer
            .send(line)
            .map_err(|_| TransportError::Closed(" (the server's input is closed)".into()))
    }

    /// Stops waiting for `id` without telling the server (a probe that timed out).
    pub(super) fn forget(&self, id: &RequestId) {
        lock(&self.routes).remove(id);
    }

    /// The legacy session opened on this connection, if any.
    pub(super) fn legacy(&self) -> Option<Arc<LegacySession>> {
        self.legacy.get().cloned()
    }

    pub(super) fn set_legacy(&self, session: Arc<LegacySession>) {
        let _ = self.legacy.set(session);
    }

    /// Routes one message from the server.
    fn route(&self, message: Message) {
        match message {
            Message::Result(ref r) => self.answer(&r.id.clone(), message),
            Message::Error(ref e) => match e.id.clone() {
                Some(id) => self.answer(&id, message),
                None => {
                    tracing::warn!(error = %e.error, "stdio server sent an error without an id")
                }
            },
            Message::Notification(n) => {
                if let Some(session) = self.legacy.get() {
                    session.broadcast(&n);
                }
                self.notify(n);
            }
            Message::Request(r) if self.legacy.get().is_some() => self.answer_request(r),
            Message::Request(r) => {
                tracing::warn!(method = %r.method, "stdio server sent a request outside a legacy session (ignored)");
            }
        }
    }

    /// Answers a legacy server's request in a task (the handler may wait
    /// for the user) and writes the response to the pipe.
    fn answer_request(&self, request: toolwire_protocol::Request) {
        // stdio names no request.
        let related = sole_related(lock(&self.routes).values().map(|r| &r.hints.related));
        let reply = answer_inbound(self.inbound.get(), request, related);
        let writer = self.writer.clone();
        tokio::spawn(async move {
            let response = reply.await;
            if let Ok(line) = encode_line(&response) {
                let _ = writer.send(line);
            }
        });
    }

    fn answer(&self, id: &RequestId, message: Message) {
        match lock(&self.routes).remove(id) {
            Some(route) => {
                let _ = route.tx.send(Ok(message));
            }
            None => tracing::debug!(%id, "response for a request no longer pending (ignored)"),
        }
    }

    fn notify(&self, notification: Notification) {
        let routes = lock(&self.routes);
        let params = notification.params.as_ref();
        let subscription = params
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(keys::SUBSCRIPTION_ID))
            .and_then(|v| serde_json::from_value::<RequestId>(v.clone()).ok());
        let targets: Vec<&Route> = if let Some(id) = subscription {
            routes.get(&id).into_iter().collect()
        } else if notification.method == "notifications/progress" {
            let token = params
                .and_then(|p| p.get("progressToken"))
                .and_then(|v| serde_json::from_value::<ProgressToken>(v.clone()).ok());
            routes
                .values()
                .filter(|r| token.is_some() && r.hints.progress_token == token)
                .collect()
        } else if notification.method == "notifications/message" {
            routes.values().filter(|r| r.hints.wants_logs).collect()
        } else if notification.method == "notifications/cancelled" {
            let id = params
                .and_then(|p| p.get("requestId"))
                .and_then(|v| serde_json::from_value::<RequestId>(Value::clone(v)).ok());
            id.and_then(|id| routes.get(&id)).into_iter().collect()
        } else {
            Vec::new()
        };
        if targets.is_empty() {
            tracing::debug!(method = %notification.method, "notification for no pending request (ignored)");
        }
        for route in targets {
            let _ = route
                .tx
                .send(Ok(Message::Notification(notification.clone())));
        }
    }

    /// The connection is over: every pending request fails.
    fn fail_all(&self, reason: &str) {
        self.closed.cancel();
        self.stop_writing.cancel();
        let routes = std::mem::take(&mut *lock(&self.routes));
        for (_, route) in routes {
            let _ = route
                .tx
                .send(Err(TransportError::Closed(reason.to_owned())));
        }
        if let Some(session) = self.legacy.get() {
            session.end(reason);
        }
    }

    pub(super) async fn shutdown(&self, config: &StdioConfig) -> Option<ExitStatus> {
        self.stop_writing.cancel();
        let mut child = self.child.lock().await.take();
        let status = match child.as_mut() {
            Some(child) => Some(stop_child(child, config).await),
            None => None,
        };
        self.fail_all(" (transport shut down)");
        status.flatten()
    }
}

/// Closing stdin, then SIGTERM, then SIGKILL, each after a grace period.
async fn stop_child(child: &mut Child, config: &StdioConfig) -> Option<ExitStatus> {
    if let Ok(Ok(status)) = tokio::time::timeout(config.shutdown_grace, child.wait()).await {
        return Some(status);
    }
    tracing::warn!(pid = ?child.id(), "stdio server did not exit after stdin closed; sending SIGTERM");
    terminate(child);
    if let Ok(Ok(status)) = tokio::time::timeout(config.term_grace, child.wait()).await {
        return Some(status);
    }
    tracing::warn!(pid = ?child.id(), "stdio server ignored SIGTERM; killing it");
    let _ = child.kill().await;
    child.wait().await.ok()
}

#[cfg(unix)]
fn terminate(child: &Child) {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    if let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) {
        let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
    }
}

#[cfg(not(unix))]
fn terminate(_child: &Child) {
    // No SIGTERM outside Unix: the caller goes straight on to killing the process.
}

/// Sends `notifications/cancelled` when an exchange is dropped before its response.
#[derive(Debug)]
struct CancelOnDrop {
    link: Weak<Link>,
    id: RequestId,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(link) = self.link.upgrade() else {
            return;
        };
        if lock(&link.routes).remove(&self.id).is_none() || !link.is_alive() {
            return;
        }
        let params = serde_json::json!({"requestId": self.id, "reason": "cancelled by the client"});
        let notification =
            Notification::new("notifications/cancelled", params.as_object().cloned());
        if let Ok(line) = encode_line(&Message::Notification(notification)) {
            let _ = link.writer.send(line);
        }
    }
}

fn encode_line(message: &Message) -> Result<Vec<u8>, TransportError> {
    let mut line =
        serde_json::to_vec(message).map_err(|e| TransportError::Malformed(e.to_string()))?;
    line.push(b'\n');
    Ok(line)
}

async fn write_lines(
    mut writer: Box<dyn AsyncWrite + Send + Unpin>,
    mut rx: mpsc::UnboundedReceiver<Vec<u8>>,
    stop: CancellationToken,
    closed: CancellationToken,
) {
    loop {
        let line = tokio::select! {
            biased;
            _ = stop.cancelled() => {
                // What was queued before the stop still goes out (e.g. the
                // `notifications/initialized` of a session closed at once).
                while let Ok(line) = rx.try_recv() {
                    if writer.write_all(&line).await.is_err() {
                        break;
                    }
                }
                let _ = writer.flush().await;
                break;
            }
            line = rx.recv() => line,
        };
        let Some(line) = line else { break };
        let written = async {
            writer.write_all(&line).await?;
            writer.flush().await
        };
        if let Err(e) = written.await {
            tracing::warn!(error = %e, "writing to the stdio server failed");
            closed.cancel();
            break;
        }
    }
    let _ = writer.shutdown().await;
}

async fn read_lines(
    mut lines: FramedRead<Box<dyn AsyncRead + Send + Unpin>, LineCodec>,
    link: Weak<Link>,
) {
    let reason = loop {
        let line = match lines.next().await {
            None => break " (the server closed its output)".to_owned(),
            Some(Ok(line)) if line.is_blank() => continue,
            Some(Ok(Line::Text(line))) => line,
            Some(Ok(Line::TooLong)) => {
                tracing::warn!("stdio server sent an over-long line (dropped)");
                continue;
            }
            Some(Err(e)) => break format!(" (reading failed: {e})"),
        };
        let Some(link) = link.upgrade() else { return };
        match Message::from_slice(&line) {
            Ok(message) => link.route(message),
            Err(e) => {
                tracing::warn!(error = %e, "stdio server wrote a line that is not a JSON-RPC message (ignored)")
            }
        }
    };
    if let Some(link) = link.upgrade() {
        link.fail_all(&reason);
    }
}

async fn capture_stderr(stderr: ChildStderr, ring: Arc<Mutex<VecDeque<String>>>, keep: usize) {
    // Bytes, not text: a server whose stderr is not UTF-8 must still be
    // drained, or it blocks once the pipe is full.
    let mut lines = FramedRead::new(stderr, LineCodec::new(4096));
    while let Some(line) = lines.next().await {
        let line = match line {
            Ok(Line::Text(line)) => String::from_utf8_lossy(&line).into_owned(),
            Ok(Line::TooLong) => "[over-long stderr line dropped]".to_owned(),
            Err(_) => break,
        };
        tracing::debug!(target: "toolwire::stderr", "{line}");
        let mut ring = lock(&ring);
        if ring.len() >= keep {
            ring.pop_front();
        }
        ring.push_back(line);
    }
}

pub(super) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
