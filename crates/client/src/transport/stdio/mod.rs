//! The stdio transport: newline-delimited JSON-RPC over a child process's
//! stdin and stdout (or any byte stream a [`Connector`] opens).
//!
//! Many requests share the one pipe: a reader task routes each response by
//! id, progress by token, subscription notifications by subscription id, and
//! log messages to the requests that asked for them. The child's stderr is
//! kept in a ring buffer for diagnostics. When the process dies, pending
//! requests fail and the next request starts a fresh process. Shutdown closes
//! stdin, then sends SIGTERM after a grace period, then SIGKILL.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::future::Future;
use std::io;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use toolwire_protocol::{Message, Request};

use super::{
    BoxFuture, Era, Exchange, InboundHandler, InboundSlot, OutgoingRequest, ProtocolMode,
    Transport, TransportError, TransportKind,
};

mod config;
mod connector;
mod legacy;
mod link;

use config::StdioConfig;
use connector::FnConnector;
pub use connector::{ChildProcess, Connection, Connector};
use link::{Link, lock};

/// Configures a [`StdioTransport`].
#[derive(Debug)]
pub struct StdioTransportBuilder {
    connector: Box<dyn Connector>,
    config: StdioConfig,
    era_hint: Option<Era>,
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

    /// Which era to speak (default [`ProtocolMode::Auto`]: probe each new
    /// process with `server/discover`).
    pub fn protocol(mut self, mode: ProtocolMode) -> Self {
        self.config.mode = mode;
        self
    }

    /// How long auto mode waits for the probe's answer before it takes the
    /// server for a legacy one (default 3 s).
    pub fn probe_timeout(mut self, timeout: Duration) -> Self {
        self.config.probe_timeout = timeout;
        self
    }

    /// In auto mode, the era found on an earlier run: the probe is skipped.
    /// A remembered legacy era whose `initialize` is refused is probed
    /// again; a remembered modern era is trusted, so a caller whose requests
    /// then fail as a legacy server fails them (-32600, -32601) should drop
    /// the hint and retry (the `toolwire` program does).
    pub fn era_hint(mut self, era: Option<Era>) -> Self {
        self.era_hint = era;
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
                verdict: Mutex::new(self.era_hint),
                inbound: InboundSlot::default(),
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
            era_hint: None,
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
    /// The era found (or hinted); kept across restarts of the process.
    verdict: Mutex<Option<Era>>,
    inbound: InboundSlot,
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
            era_hint: None,
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
            let (link, probe_reply) = self.inner.live_link(&request.request).await?;
            if let Some(reply) = probe_reply {
                return Ok(Exchange::ready(vec![Ok(reply)]));
            }
            match link.legacy() {
                None => link.send(request.request),
                Some(session) => {
                    let timeout = self.inner.config.handshake_timeout;
                    legacy::send(&link, &session, request.request, timeout).await
                }
            }
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

    fn era(&self) -> Option<Era> {
        match self.inner.config.mode {
            ProtocolMode::Modern => Some(Era::Modern),
            ProtocolMode::Legacy => Some(Era::Legacy),
            ProtocolMode::Auto => *lock(&self.inner.verdict),
        }
    }

    fn negotiated_version(&self) -> Option<String> {
        let link = self.inner.link.try_lock().ok()?;
        let session = link.as_ref()?.legacy()?;
        Some(session.version().to_owned())
    }

    fn set_inbound(&self, handler: Arc<dyn InboundHandler>) {
        self.inner.inbound.set(handler);
    }
}

impl StdioInner {
    /// The open link, or a fresh one when there is none or it died; a
    /// fresh one first settles the era (probe, handshake) for `first`.
    /// Also returns the reply to `first` when the probe already answered it.
    async fn live_link(
        &self,
        first: &Request,
    ) -> Result<(Arc<Link>, Option<Message>), TransportError> {
        if self.shut_down.load(Ordering::SeqCst) {
            return Err(TransportError::Shutdown);
        }
        let mut slot = self.link.lock().await;
        if let Some(link) = slot.as_ref().filter(|l| l.is_alive()) {
            return Ok((Arc::clone(link), None));
        }
        let link = self.start_link().await?;
        match self.settle_era(&link, first).await {
            Ok(reply) => {
                *slot = Some(Arc::clone(&link));
                Ok((link, reply))
            }
            Err(error) => {
                let config = self.config.clone();
                tokio::spawn(async move { link.shutdown(&config).await });
                Err(error)
            }
        }
    }

    async fn start_link(&self) -> Result<Arc<Link>, TransportError> {
        let generation = self.starts.fetch_add(1, Ordering::SeqCst);
        if generation > 0 {
            tracing::warn!(server = %self.connector.describe(), "stdio server is gone; starting it again");
        }
        let connection = self.connector.connect().await.map_err(|e| {
            TransportError::Io(format!("cannot start {}: {e}", self.connector.describe()))
        })?;
        let inbound = self.inbound.clone();
        Ok(Link::start(
            connection,
            &self.config,
            Arc::clone(&self.stderr),
            inbound,
        ))
    }

    /// Finds the era of a new connection (forced, remembered or probed) and
    /// opens a legacy session on it when that is the era. A remembered
    /// legacy verdict whose handshake fails is probed once more.
    async fn settle_era(
        &self,
        link: &Arc<Link>,
        first: &Request,
    ) -> Result<Option<Message>, TransportError> {
        let config = &self.config;
        let remembered = *lock(&self.verdict);
        let era = match (config.mode, remembered) {
            (ProtocolMode::Modern, _) => return Ok(None),
            (ProtocolMode::Legacy, _) => Era::Legacy,
            (ProtocolMode::Auto, Some(era)) => era,
            (ProtocolMode::Auto, None) => {
                let (era, reply) = legacy::probe(link, first, config.probe_timeout).await?;
                if era == Era::Modern {
                    *lock(&self.verdict) = Some(era);
                    return Ok(reply);
                }
                era
            }
        };
        *lock(&self.verdict) = Some(era);
        if era == Era::Modern {
            return Ok(None);
        }
        let opened = legacy::handshake(link, first, config.handshake_timeout).await;
        let session = match opened {
            Ok(session) => session,
            Err(TransportError::Handshake(reason))
                if config.mode == ProtocolMode::Auto && remembered.is_some() =>
            {
                tracing::info!(%reason, "the remembered legacy verdict failed; probing again");
                let (era, reply) = legacy::probe(link, first, config.probe_timeout).await?;
                *lock(&self.verdict) = Some(era);
                if era == Era::Modern {
                    return Ok(reply);
                }
                legacy::handshake(link, first, config.handshake_timeout).await?
            }
            Err(error) => return Err(error),
        };
        link.set_legacy(session);
        Ok(None)
    }
}
