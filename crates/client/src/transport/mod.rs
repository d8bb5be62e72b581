//! Transports: how one JSON-RPC request reaches a server and how its replies
//! come back.
//!
//! A [`Transport`] sends one request and hands back an [`Exchange`]: the
//! stream of messages that belong to that request (request-scoped
//! notifications, then the response; for `subscriptions/listen`, the
//! subscription's notifications). Dropping an exchange before its response
//! arrived cancels the request (HTTP: the response stream is closed; stdio:
//! `notifications/cancelled` is sent).
//!
//! Both transports also speak the 2025-11-25 era ("legacy": `initialize`,
//! sessions) when the server does: [`ProtocolMode::Auto`] (the default)
//! finds out on first contact, as the specification describes; see
//! [`legacy`] for how requests are mapped.

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, RwLock};

use tokio::sync::mpsc;
use toolwire_protocol::{Message, Request};

mod error;
pub mod http;
pub mod legacy;
#[cfg(not(feature = "fuzzing"))]
pub(crate) mod sse;
/// Exposed only for the fuzz targets in `fuzz/`; not a stable API.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod sse;
pub mod stdio;

pub use crate::future::BoxFuture;
pub use error::TransportError;
pub use http::{HttpTransport, HttpTransportBuilder};
pub use legacy::{Era, InboundHandler, ProtocolMode, Related};
pub use stdio::{
    ChildProcess, CommandBuilder, Connection, Connector, StdioTransport, StdioTransportBuilder,
};

/// Which kind of transport carries the requests; some rules depend on it
/// (`x-mcp-header` applies to HTTP only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TransportKind {
    /// Streamable HTTP.
    Http,
    /// Newline-delimited JSON over a byte stream (usually a child's stdin/stdout).
    Stdio,
}

/// One request to send, with the `Mcp-Param-*` headers mirrored from its
/// arguments (used by HTTP, ignored by stdio).
#[derive(Debug, Clone, PartialEq)]
pub struct OutgoingRequest {
    /// The JSON-RPC request, `_meta` included.
    pub request: Request,
    /// `(field name, encoded value)` pairs, e.g. `("Mcp-Param-Region", "eu")`.
    pub param_headers: Vec<(String, String)>,
    /// The protocol version `request`'s `_meta` carries, when the sender knows
    /// it; `None` makes an HTTP transport read it from `_meta` for the
    /// `MCP-Protocol-Version` header. It must equal what `_meta` says.
    pub protocol_version: Option<Cow<'static, str>>,
}

impl OutgoingRequest {
    /// A request with no parameter headers.
    pub fn new(request: Request) -> Self {
        OutgoingRequest {
            request,
            param_headers: Vec::new(),
            protocol_version: None,
        }
    }
}

/// Carries requests to one server.
///
/// Implementations must let many requests be in flight at once.
pub trait Transport: Send + Sync + fmt::Debug {
    /// Sends `request` and returns the stream of messages that answer it.
    fn send(&self, request: OutgoingRequest) -> BoxFuture<'_, Result<Exchange, TransportError>>;

    /// The kind of transport.
    fn kind(&self) -> TransportKind;

    /// Identifies the server for cache keys and audit records (a URL, a command line).
    fn server_key(&self) -> String;

    /// Identifies the credentials in use (e.g. a digest of the `Authorization`
    /// header), so `private` cache entries are never shared across them.
    fn credentials_key(&self) -> String {
        String::new()
    }

    /// Shuts the transport down; pending requests fail.
    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }

    /// The era the server was found to speak (`None` until first contact).
    fn era(&self) -> Option<Era> {
        None
    }

    /// The version a legacy session negotiated with `initialize`.
    fn negotiated_version(&self) -> Option<String> {
        None
    }

    /// Installs the handler for requests a legacy server sends to the client.
    fn set_inbound(&self, handler: Arc<dyn InboundHandler>) {
        let _ = handler;
    }
}

/// Where a transport keeps its [`InboundHandler`] (shared with its
/// connections, so one installed later still reaches them).
#[derive(Debug, Clone, Default)]
pub(crate) struct InboundSlot(Arc<RwLock<Option<Arc<dyn InboundHandler>>>>);

impl InboundSlot {
    pub(crate) fn set(&self, handler: Arc<dyn InboundHandler>) {
        *self
            .0
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(handler);
    }

    pub(crate) fn get(&self) -> Option<Arc<dyn InboundHandler>> {
        self.0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

/// The messages that belong to one request, in arrival order.
///
/// Ends after the response (or when the transport fails, with an error).
/// Dropping it before the response cancels the request.
#[derive(Debug)]
pub struct Exchange {
    receiver: mpsc::UnboundedReceiver<Result<Message, TransportError>>,
    _guard: Option<Box<dyn Send + Sync + fmt::Debug>>,
}

impl Exchange {
    /// An exchange fed by `receiver`. `guard` is dropped with the exchange
    /// (use it to cancel the request).
    pub fn new(
        receiver: mpsc::UnboundedReceiver<Result<Message, TransportError>>,
        guard: Option<Box<dyn Send + Sync + fmt::Debug>>,
    ) -> Self {
        Exchange {
            receiver,
            _guard: guard,
        }
    }

    /// An exchange holding exactly the messages given.
    pub fn ready(messages: Vec<Result<Message, TransportError>>) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        for message in messages {
            let _ = tx.send(message);
        }
        Exchange::new(rx, None)
    }

    /// The next message, or `None` when the exchange is over.
    pub async fn next(&mut self) -> Option<Result<Message, TransportError>> {
        self.receiver.recv().await
    }
}
