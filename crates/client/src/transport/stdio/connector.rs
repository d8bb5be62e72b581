//! Opening the byte stream a stdio transport talks over: a child process,
//! or any reader and writer a [`Connector`] hands back.

use std::ffi::OsString;
use std::fmt;
use std::future::Future;
use std::io;
use std::path::PathBuf;
use std::process::Stdio;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::process::{Child, ChildStderr};

use crate::future::BoxFuture;

/// An open byte stream to a server: its output, its input, and the process
/// behind it (if any).
pub struct Connection {
    pub(super) reader: Box<dyn AsyncRead + Send + Unpin>,
    pub(super) writer: Box<dyn AsyncWrite + Send + Unpin>,
    pub(super) child: Option<Child>,
    pub(super) stderr: Option<ChildStderr>,
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
    pub(super) args: Vec<OsString>,
    pub(super) envs: Vec<(OsString, OsString)>,
    pub(super) cwd: Option<PathBuf>,
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

/// A [`Connector`] made of a closure.
pub(super) struct FnConnector<F> {
    pub(super) description: String,
    pub(super) connect: F,
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
