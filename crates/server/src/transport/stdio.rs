//! The stdio transport: newline-delimited JSON-RPC on stdin and stdout.
//!
//! Requests are handled concurrently (up to a bound), one task writes
//! stdout, `notifications/cancelled` stops a handler and suppresses its
//! response, and nothing but MCP messages is ever written to stdout.
//!
//! Both eras on one pipe: a request with 2026-07-28 `_meta` is served
//! statelessly; an `initialize` without it makes the process a legacy
//! session (2025-11-25 and earlier) for the requests that follow without
//! `_meta`: handlers' input requests become real requests to the client on
//! this pipe, its responses are matched by id, and list changes and
//! resource updates are sent as notifications.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinSet;
use tokio_util::codec::FramedRead;
use tokio_util::sync::CancellationToken;
use toolwire_protocol::lines::{Line, LineCodec};
use toolwire_protocol::{ErrorObject, ErrorResponse, Message, Notification, Request, RequestId};

use super::legacy::{LegacySession, forward_changes, is_modern, opens_session};
use crate::context::encode::encode_message;
use crate::context::{Outbox, Principal, RequestEnv};
use crate::server::Server;

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
    /// How long to let running requests finish after stdin closes.
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

/// Requests being handled: their cancellation tokens, and whether each is a
/// long-lived `subscriptions/listen` (ended, not awaited, when stdin closes).
type InFlight = Arc<Mutex<HashMap<RequestId, (CancellationToken, bool)>>>;

/// Serves `server` over any reader and writer (a pipe, a socket, a test buffer).
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
    // Everything written goes through one queue of encoded lines.
    let (out_tx, out_rx) = mpsc::channel::<Bytes>(1024);
    let writer_task = tokio::spawn(write_lines(writer, out_rx));
    let in_flight: InFlight = Arc::default();
    let permits = Arc::new(Semaphore::new(config.max_in_flight.max(1)));
    let mut tasks = JoinSet::new();
    let mut lines = FramedRead::new(reader, LineCodec::new(config.max_line_bytes));

    let mut legacy: Option<Arc<LegacySession>> = None;
    // Ends a legacy session's change notifications (they hold the writer open).
    let stop_forwarding = CancellationToken::new();
    let _stop_on_error = stop_forwarding.clone().drop_guard();

    while let Some(line) = lines.next().await {
        while tasks.try_join_next().is_some() {}
        let line = line?;
        if line.is_blank() {
            continue;
        }
        let line = match line {
            Line::Text(line) => line,
            Line::TooLong => {
                let error = ErrorObject::invalid_request(format!(
                    "message longer than {} bytes",
                    config.max_line_bytes
                ));
                let _ = out_tx
                    .send(encode_line(&Message::Error(ErrorResponse::new(
                        None, error,
                    ))))
                    .await;
                continue;
            }
        };
        match Message::from_slice(&line) {
            Ok(Message::Request(request)) if legacy.is_none() && opens_session(&request) => {
                let (reply, session) = initialize(&server, request);
                let _ = out_tx.send(encode_line(&reply)).await;
                if let Some(session) = session {
                    let outbox = Outbox::encoding(out_tx.clone(), encode_line);
                    let forward = forward_changes(
                        server.clone(),
                        session.subscriptions(),
                        outbox,
                        stop_forwarding.clone(),
                    );
                    tokio::spawn(forward);
                    legacy = Some(session);
                }
            }
            Ok(Message::Request(request)) => {
                let is_listen = request.method == "subscriptions/listen";
                // Registered before the task starts, so a cancellation on the
                // very next line always finds it.
                let cancel = CancellationToken::new();
                in_flight
                    .lock()
                    .expect("in-flight lock")
                    .insert(request.id.clone(), (cancel.clone(), is_listen));
                let session = legacy.clone().filter(|_| !is_modern(&request));
                let job = RequestJob {
                    server: server.clone(),
                    session,
                    out: out_tx.clone(),
                    in_flight: Arc::clone(&in_flight),
                    principal: config.principal.clone(),
                    cancel,
                };
                // The permit is awaited in the task, not here: this loop
                // must stay free to read the cancellations and answers that
                // let running requests end. Listens, open until cancelled,
                // take none (the dispatcher caps them per principal).
                let permits = (!is_listen).then(|| Arc::clone(&permits));
                tasks.spawn(async move {
                    let _permit = match permits {
                        Some(permits) => Some(permits.acquire_owned().await),
                        None => None,
                    };
                    job.run(request).await;
                });
            }
            Ok(Message::Notification(notification)) => cancel_if_asked(&notification, &in_flight),
            // Answers to a legacy session's requests; without a session
            // the server sent none, so nothing awaits them.
            Ok(response) => {
                if let Some(session) = &legacy {
                    session.answer(response);
                }
            }
            Err(error) => {
                let _ = out_tx
                    .send(encode_line(&Message::Error(error.to_response())))
                    .await;
            }
        }
    }

    stop_forwarding.cancel();
    // No answer can come any more: calls waiting on one end now, and the
    // requests queued behind them get their turn within the grace period.
    if let Some(session) = &legacy {
        session.close();
    }
    // Subscriptions live as long as the connection: end them now.
    for (token, is_listen) in in_flight.lock().expect("in-flight lock").values() {
        if *is_listen {
            token.cancel();
        }
    }
    let _ = tokio::time::timeout(config.shutdown_grace, async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    tasks.abort_all();
    drop(out_tx);
    writer_task.await.map_err(std::io::Error::other)?
}

/// One request's run: register for cancellation, dispatch, answer unless cancelled.
struct RequestJob {
    server: Server,
    /// The legacy session the request belongs to, if any.
    session: Option<Arc<LegacySession>>,
    out: mpsc::Sender<Bytes>,
    in_flight: InFlight,
    principal: Principal,
    cancel: CancellationToken,
}

impl RequestJob {
    async fn run(self, request: Request) {
        let id = request.id.clone();
        let cancel = self.cancel;
        let env = RequestEnv::new()
            .with_principal(self.principal)
            .with_outbox(Outbox::encoding(self.out.clone(), encode_line))
            .with_cancel(cancel.clone());
        let line = tokio::select! {
            line = serve_line(&self.server, self.session.as_deref(), request, env) => Some(line),
            _ = cancel.cancelled() => None,
        };
        self.in_flight.lock().expect("in-flight lock").remove(&id);
        if let Some(line) = line.filter(|_| !cancel.is_cancelled()) {
            let _ = self.out.send(line).await;
        }
    }
}

/// Serves one request, statelessly or in the legacy session, and encodes
/// its response as a line.
async fn serve_line(
    server: &Server,
    session: Option<&LegacySession>,
    request: Request,
    env: RequestEnv,
) -> Bytes {
    match session {
        Some(session) => encode_line(&session.serve(request, env).await),
        None => {
            let reply = server.reply(request, env).await;
            let mut line = Vec::with_capacity(256);
            reply.encode(&mut line);
            line.push(b'\n');
            Bytes::from(line)
        }
    }
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
            (reply, Some(Arc::new(session)))
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

async fn write_lines<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut rx: mpsc::Receiver<Bytes>,
) -> std::io::Result<()> {
    while let Some(line) = rx.recv().await {
        writer.write_all(&line).await?;
        if rx.is_empty() {
            writer.flush().await?;
        }
    }
    writer.flush().await
}
