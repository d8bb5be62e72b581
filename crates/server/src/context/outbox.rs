//! Where a request's own notifications go while its handler runs: the
//! [`Outbox`] a transport hands the dispatcher with each request.

use std::fmt;
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::mpsc;
use toolwire_protocol::Message;

/// Where a request's own notifications go (its stdio line or its SSE stream).
#[derive(Debug, Clone)]
pub struct Outbox {
    sink: Sink,
}

#[derive(Debug, Clone)]
enum Sink {
    Messages(mpsc::Sender<Message>),
    Encoded {
        sender: mpsc::Sender<Bytes>,
        encode: fn(&Message) -> Bytes,
    },
    Custom(Arc<dyn MessageSink>),
}

/// A transport's own destination for one request's messages, for an
/// [`Outbox`] made with [`Outbox::sink`]: a resumable event log, say.
///
/// ```
/// use toolwire_protocol::Message;
/// use toolwire_server::MessageSink;
///
/// #[derive(Debug, Default)]
/// struct Collect(std::sync::Mutex<Vec<Message>>);
/// impl MessageSink for Collect {
///     fn send(&self, message: Message) {
///         self.0.lock().unwrap().push(message);
///     }
/// }
/// let outbox = toolwire_server::Outbox::sink(std::sync::Arc::new(Collect::default()));
/// # drop(outbox);
/// ```
pub trait MessageSink: Send + Sync + fmt::Debug + 'static {
    /// Takes one message; it must not block (queue it, or drop it when full).
    fn send(&self, message: Message);

    /// Ends the connection carrying these messages without ending the
    /// request (a client may resume the stream); a no-op by default.
    fn close_stream(&self) {}
}

impl Outbox {
    /// Wraps a channel; the transport writes what arrives on the other end.
    ///
    /// ```
    /// let (sender, _receiver) = tokio::sync::mpsc::channel(16);
    /// let outbox = toolwire_server::Outbox::new(sender);
    /// # drop(outbox);
    /// ```
    pub fn new(sender: mpsc::Sender<Message>) -> Self {
        Outbox {
            sink: Sink::Messages(sender),
        }
    }

    /// Wraps a channel of bytes: each message is encoded by `encode` as it
    /// is sent. A queue of bytes is smaller than a queue of messages, which
    /// matters for transports that hold thousands of streams open.
    ///
    /// ```
    /// use bytes::Bytes;
    /// use toolwire_protocol::Message;
    ///
    /// fn line(message: &Message) -> Bytes {
    ///     let mut bytes = serde_json::to_vec(message).unwrap_or_default();
    ///     bytes.push(b'\n');
    ///     Bytes::from(bytes)
    /// }
    /// let (sender, _receiver) = tokio::sync::mpsc::channel(16);
    /// let outbox = toolwire_server::Outbox::encoding(sender, line);
    /// # drop(outbox);
    /// ```
    pub fn encoding(sender: mpsc::Sender<Bytes>, encode: fn(&Message) -> Bytes) -> Self {
        Outbox {
            sink: Sink::Encoded { sender, encode },
        }
    }

    /// Wraps a transport's own sink.
    pub fn sink(sink: Arc<dyn MessageSink>) -> Self {
        Outbox {
            sink: Sink::Custom(sink),
        }
    }

    /// Sends one message; a closed channel (the client went away) is ignored.
    pub async fn send(&self, message: Message) {
        match &self.sink {
            Sink::Messages(sender) => {
                let _ = sender.send(message).await;
            }
            Sink::Encoded { sender, encode } => {
                let _ = sender.send(encode(&message)).await;
            }
            Sink::Custom(sink) => sink.send(message),
        }
    }

    /// Sends one message without waiting: `false` when the queue is full or
    /// closed (the message is dropped).
    pub fn try_send(&self, message: Message) -> bool {
        match &self.sink {
            Sink::Messages(sender) => sender.try_send(message).is_ok(),
            Sink::Encoded { sender, encode } => sender.try_send(encode(&message)).is_ok(),
            Sink::Custom(sink) => {
                sink.send(message);
                true
            }
        }
    }

    /// Ends the connection that carries these messages, when the transport
    /// can resume it (a legacy SSE stream); otherwise does nothing.
    pub fn close_stream(&self) {
        if let Sink::Custom(sink) = &self.sink {
            sink.close_stream();
        }
    }
}
