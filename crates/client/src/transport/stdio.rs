//! The stdio transport: newline-delimited JSON-RPC over a child process's
//! stdin and stdout (or any byte stream a [`Connector`] opens).
//!
//! Many requests share the one pipe: a reader task routes each response by
//! id, progress by token, subscription notifications by subscription id, and
//! log messages to the requests that asked for them. The child's stderr is
//! kept in a ring buffer for diagnostics. When the process dies, pending
//! requests fail and the next request starts a fresh process. Shutdown closes
//! stdin, then sends SIGTERM after a grace period, then SIGKILL.

use std::collections::{HashMap, VecDeque};
use std::ffi::OsString;
use std::fmt;
use std::future::Future;
use std::io;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::process::{Child, ChildStderr};
use tokio::sync::mpsc;
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};
use tokio_util::sync::CancellationToken;
use toolwire_protocol::{Message, Notification, ProgressToken, RequestId, keys};

use super::{BoxFuture, Exchange, OutgoingRequest, Transport, TransportError, TransportKind};

/// An open byte stream to a server: its output, its input, and the process
/// behind it (if any).
pub struct Connection {
    reader: Box<dyn AsyncRead + Send + Unpin>,
    writer: Box<dyn AsyncWrite + Send + Unpin>,
    child: Option<Child>,
    stderr: Option<ChildStderr>,
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("child", &self.child.as_ref().and_then(Child::id))
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// A connection over any reader (the server's output) and writer (its input).
    pub fn new(
        reader: impl AsyncRead + Send + Unpin + 'static,
        writer: impl AsyncWrite + Send + Unpin + 'static,
    ) -> Self {
        Connection {
            reader: Box::new(reader),
            writer: Box::new(writer),
            child: None,
            stderr: None,
        }
    }
}

/// Opens a [`Connection`]; called again to restart after the server died.
pub trait Connector: Send + Sync + fmt::Debug {
    /// Opens a fresh connection.
    fn connect(&self) -> BoxFuture<'_, io::Result<Connection>>;

    /// Names the server (a command line), for cache keys and messages.
    fn describe(&self) -> String;
}

/// Spawns a child process with piped stdin, stdout and stderr.
#[derive(Debug, Clone)]
pub struct ChildProcess {
    program: OsString,
    args: Vec<OsString>,
    envs: Vec<(OsString, OsString)>,
    cwd: Option<PathBuf>,
}

impl ChildProcess {
    /// Runs `program` (looked up on `PATH`).
    pub fn new(program: impl Into<OsString>) -> Self {
        ChildProcess {
            program: program.into(),
            args: Vec::new(),
            envs: Vec::new(),
            cwd: None,
        }
    }
}

impl Connector for ChildProcess {
    fn connect(&self) -> BoxFuture<'_, io::Result<Connection>> {
        Box::pin(async move {
            let mut command = tokio::process::Command::new(&self.program);
            command
                .args(&self.args)
                .envs(self.envs.iter().map(|(k, v)| (k, v)))
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .kill_on_drop(true);
            if let Some(cwd) = &self.cwd {
                command.current_dir(cwd);
            }
            let mut child = command.spawn()?;
            let missing = || io::Error::other("child pipes missing");
            let stdin = child.stdin.take().ok_or_else(missing)?;
            let stdout = child.stdout.take().ok_or_else(missing)?;
            let stderr = child.stderr.take();
            Ok(Connection {
                reader: Box::new(stdout),
                writer: Box::new(stdin),
                child: Some(child),
                stderr,
            })
        })
    }

    fn describe(&self) -> String {
        let mut parts = vec![self.program.to_string_lossy().into_owned()];
        parts.extend(self.args.iter().map(|a| a.to_string_lossy().into_owned()));
        parts.join(" ")
    }
}

struct FnConnector<F> {
    description: String,
    connect: F,
}

impl<F> fmt::Debug for FnConnector<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnConnector")
            .field("description", &self.description)
            .finish()
    }
}

impl<F, Fut> Connector for FnConnector<F>
where
    F: Fn() -> Fut + Send + Sync,
    Fut: Future<Output = io::Result<Connection>> + Send + 'static,
{
    fn connect(&self) -> BoxFuture<'_, io::Result<Connection>> {
        Box::pin((self.connect)())
    }

    fn describe(&self) -> String {
        self.description.clone()
    }
}

/// Settings of a [`StdioTransport`].
#[derive(Debug, Clone)]
struct StdioConfig {
    shutdown_grace: Duration,
    term_grace: Duration,
    max_line_bytes: usize,
    stderr_lines: usize,
}

impl Default for StdioConfig {
    fn default() -> Self {
        StdioConfig {
            shutdown_grace: Duration::from_secs(5),
            term_grace: Duration::from_secs(2),
            max_line_bytes: 16 * 1024 * 1024,
            stderr_lines: 200,
        }
    }
}

/// Configures a [`StdioTransport`].
#[derive(Debug)]
pub struct StdioTransportBuilder {
    connector: Box<dyn Connector>,
    config: StdioConfig,
}

impl StdioTransportBuilder {
    /// How long to wait for the process to exit after stdin is closed (default 5 s).
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.config.shutdown_grace = grace;
        self
    }

    /// How long to wait after SIGTERM before SIGKILL (default 2 s).
    pub fn term_grace(mut self, grace: Duration) -> Self {
        self.config.term_grace = grace;
        self
    }

    /// The longest line accepted from the server (default 16 MiB).
    pub fn max_line_bytes(mut self, bytes: usize) -> Self {
        self.config.max_line_bytes = bytes;
        self
    }

    /// How many stderr lines to keep for diagnostics (default 200).
    pub fn stderr_lines(mut self, lines: usize) -> Self {
        self.config.stderr_lines = lines.max(1);
        self
    }

    /// Makes the transport. Nothing starts until the first request.
    pub fn build(self) -> StdioTransport {
        StdioTransport {
            inner: Arc::new(StdioInner {
                connector: self.connector,
                stderr: Arc::new(Mutex::new(VecDeque::new())),
                config: self.config,
                link: tokio::sync::Mutex::new(None),
                shut_down: AtomicBool::new(false),
                starts: AtomicU64::new(0),
            }),
        }
    }
}

/// Builds the command of a child-process transport.
#[derive(Debug)]
pub struct CommandBuilder {
    process: ChildProcess,
    config: StdioConfig,
}

impl CommandBuilder {
    /// Adds an argument.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.process.args.push(arg.into());
        self
    }

    /// Adds arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.process.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets an environment variable for the child.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.process.envs.push((key.into(), value.into()));
        self
    }

    /// Runs the child in `dir`.
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.process.cwd = Some(dir.into());
        self
    }

    /// Continues with the transport settings.
    pub fn transport(self) -> StdioTransportBuilder {
        StdioTransportBuilder {
            connector: Box::new(self.process),
            config: self.config,
        }
    }

    /// Makes the transport with default settings.
    pub fn build(self) -> StdioTransport {
        self.transport().build()
    }
}

/// Talks to a server over newline-delimited JSON on a byte stream, usually
/// a child process's stdin and stdout.
///
/// ```no_run
/// use toolwire_client::transport::StdioTransport;
/// let transport = StdioTransport::command("my-mcp-server").arg("--quiet").build();
/// # drop(transport);
/// ```
#[derive(Debug, Clone)]
pub struct StdioTransport {
    inner: Arc<StdioInner>,
}

#[derive(Debug)]
struct StdioInner {
    connector: Box<dyn Connector>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    config: StdioConfig,
    link: tokio::sync::Mutex<Option<Arc<Link>>>,
    shut_down: AtomicBool,
    starts: AtomicU64,
}

impl StdioTransport {
    /// A transport that runs `program` as a child process.
    pub fn command(program: impl Into<OsString>) -> CommandBuilder {
        CommandBuilder {
            process: ChildProcess::new(program),
            config: StdioConfig::default(),
        }
    }

    /// A transport over connections made by `connector`.
    pub fn with_connector(connector: impl Connector + 'static) -> StdioTransportBuilder {
        StdioTransportBuilder {
            connector: Box::new(connector),
            config: StdioConfig::default(),
        }
    }

    /// A transport over connections made by a closure (e.g. an in-process
    /// server on a `tokio::io::duplex` pipe).
    pub fn from_fn<F, Fut>(description: impl Into<String>, connect: F) -> StdioTransportBuilder
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = io::Result<Connection>> + Send + 'static,
    {
        Self::with_connector(FnConnector {
            description: description.into(),
            connect,
        })
    }

    /// The last lines the server wrote to stderr (kept across restarts).
    pub fn stderr_tail(&self) -> Vec<String> {
        lock(&self.inner.stderr).iter().cloned().collect()
    }

    /// How many times a connection (process) was started.
    pub fn starts(&self) -> u64 {
        self.inner.starts.load(Ordering::SeqCst)
    }

    /// True while a connection is open and has not failed.
    pub async fn is_connected(&self) -> bool {
        let link = self.inner.link.lock().await;
        link.as_ref().is_some_and(|l| l.is_alive())
    }

    /// Closes stdin, waits for the process to exit, then escalates to
    /// SIGTERM and SIGKILL. Returns the exit status of the process, if any.
    /// Later requests fail with [`TransportError::Shutdown`].
    pub async fn shutdown(&self) -> Option<ExitStatus> {
        self.inner.shut_down.store(true, Ordering::SeqCst);
        let link = self.inner.link.lock().await.take()?;
        link.shutdown(&self.inner.config).await
    }
}

impl Transport for StdioTransport {
    fn send(&self, request: OutgoingRequest) -> BoxFuture<'_, Result<Exchange, TransportError>> {
        Box::pin(async move {
            let link = self.inner.live_link().await?;
            link.send(request.request)
        })
    }

    fn kind(&self) -> TransportKind {
        TransportKind::Stdio
    }

    fn server_key(&self) -> String {
        format!("stdio:{}", self.inner.connector.describe())
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.shutdown().await;
        })
    }
}

impl StdioInner {
    /// The open link, or a fresh one when there is none or it died.
    async fn live_link(&self) -> Result<Arc<Link>, TransportError> {
        if self.shut_down.load(Ordering::SeqCst) {
            return Err(TransportError::Shutdown);
        }
        let mut slot = self.link.lock().await;
        if let Some(link) = slot.as_ref().filter(|l| l.is_alive()) {
            return Ok(Arc::clone(link));
        }
        let generation = self.starts.fetch_add(1, Ordering::SeqCst);
        if generation > 0 {
            tracing::warn!(server = %self.connector.describe(), "stdio server is gone; starting it again");
        }
        let connection = self.connector.connect().await.map_err(|e| {
            TransportError::Io(format!("cannot start {}: {e}", self.connector.describe()))
        })?;
        let link = Link::start(connection, &self.config, Arc::clone(&self.stderr));
        *slot = Some(Arc::clone(&link));
        Ok(link)
    }
}

type Sender = mpsc::UnboundedSender<Result<Message, TransportError>>;

/// Where messages for one pending request go.
#[derive(Debug)]
struct Route {
    tx: Sender,
    progress_token: Option<ProgressToken>,
    wants_logs: bool,
}

/// One open connection: a writer task, a reader task and the routes.
#[derive(Debug)]
struct Link {
    writer: mpsc::UnboundedSender<Vec<u8>>,
    routes: Mutex<HashMap<RequestId, Route>>,
    closed: CancellationToken,
    stop_writing: CancellationToken,
    child: tokio::sync::Mutex<Option<Child>>,
}

impl Link {
    fn start(
        connection: Connection,
        config: &StdioConfig,
        stderr_ring: Arc<Mutex<VecDeque<String>>>,
    ) -> Arc<Link> {
        let (tx, rx) = mpsc::unbounded_channel();
        let link = Arc::new(Link {
            writer: tx,
            routes: Mutex::new(HashMap::new()),
            closed: CancellationToken::new(),
            stop_writing: CancellationToken::new(),
            child: tokio::sync::Mutex::new(connection.child),
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
        let lines = FramedRead::new(
            connection.reader,
            LinesCodec::new_with_max_length(config.max_line_bytes),
        );
        tokio::spawn(read_lines(lines, Arc::downgrade(&link)));
        link
    }

    fn is_alive(&self) -> bool {
        !self.closed.is_cancelled()
    }

    fn send(
        self: &Arc<Self>,
        request: toolwire_protocol::Request,
    ) -> Result<Exchange, TransportError> {
        let id = request.id.clone();
        let meta = request.params.as_ref().and_then(|p| p.get("_meta"));
        let progress_token: Option<ProgressToken> = meta
            .and_then(|m| m.get(keys::PROGRESS_TOKEN))
            .and_then(|t| serde_json::from_value(t.clone()).ok());
        let wants_logs = meta.is_some_and(|m| m.get(keys::LOG_LEVEL).is_some());
        let route_of = |tx| Route {
            tx,
            progress_token,
            wants_logs,
        };
        let line = encode_line(&Message::Request(request))?;
        let (tx, rx) = mpsc::unbounded_channel();
        {
            let mut routes = lock(&self.routes);
            if routes.contains_key(&id) {
                return Err(TransportError::Io(format!(
                    "request id {id} is already in flight"
                )));
            }
            routes.insert(id.clone(), route_of(tx));
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
            Message::Notification(n) => self.notify(n),
            Message::Request(r) => {
                tracing::warn!(method = %r.method, "stdio server sent a request; servers must not (ignored)");
            }
        }
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
                .filter(|r| token.is_some() && r.progress_token == token)
                .collect()
        } else if notification.method == "notifications/message" {
            routes.values().filter(|r| r.wants_logs).collect()
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
    }

    async fn shutdown(&self, config: &StdioConfig) -> Option<ExitStatus> {
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
            _ = stop.cancelled() => break,
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
    mut lines: FramedRead<Box<dyn AsyncRead + Send + Unpin>, LinesCodec>,
    link: Weak<Link>,
) {
    let reason = loop {
        let line = match lines.next().await {
            None => break " (the server closed its output)".to_owned(),
            Some(Ok(line)) => line,
            Some(Err(LinesCodecError::MaxLineLengthExceeded)) => {
                tracing::warn!("stdio server sent an over-long line (dropped)");
                continue;
            }
            Some(Err(LinesCodecError::Io(e))) => break format!(" (reading failed: {e})"),
        };
        let Some(link) = link.upgrade() else { return };
        if line.trim().is_empty() {
            continue;
        }
        match Message::from_slice(line.as_bytes()) {
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
    let mut lines = FramedRead::new(stderr, LinesCodec::new_with_max_length(4096));
    while let Some(line) = lines.next().await {
        let line = match line {
            Ok(line) => line,
            Err(LinesCodecError::MaxLineLengthExceeded) => {
                "[over-long stderr line dropped]".to_owned()
            }
            Err(LinesCodecError::Io(_)) => break,
        };
        tracing::debug!(target: "toolwire::stderr", "{line}");
        let mut ring = lock(&ring);
        if ring.len() >= keep {
            ring.pop_front();
        }
        ring.push_back(line);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
