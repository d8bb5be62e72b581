//! Server-Sent Events framing of one request's stream: notifications first,
//! the final response last, keep-alive comments while quiet.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::HeaderValue;
use http::header::{self, HeaderName};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::DropGuard;
use toolwire_protocol::Message;

use crate::context::encode::encode_message;
use crate::dispatch::{Heard, Listening};

/// The state of one request's SSE stream. Dropping it before the final
/// response (the client closed the stream) cancels the request.
pub(super) struct SseStream {
    pub(super) pending: Option<Bytes>,
    pub(super) receiver: mpsc::Receiver<Bytes>,
    pub(super) response: Option<oneshot::Receiver<Message>>,
    pub(super) guard: Option<DropGuard>,
    pub(super) keep_alive: Option<Duration>,
}

/// What a streamed request produced next.
pub(super) enum Next {
    /// A notification, already encoded as an SSE event.
    Event(Bytes),
    /// The final response.
    Response(Message),
    /// The request ended without a response (or after it).
    Ended,
}

impl SseStream {
    /// The request is over: dropping the stream no longer cancels anything,
    /// and the next poll ends it.
    pub(super) fn disarm(&mut self) {
        if let Some(guard) = self.guard.take() {
            guard.disarm();
        }
    }

    /// The next notification, or the final response once every notification
    /// sent before it has been taken.
    pub(super) async fn next(&mut self) -> Next {
        let Some(response) = self.response.as_mut() else {
            return Next::Ended;
        };
        tokio::select! {
            // A handler's notifications are queued before it returns, so
            // taking events first keeps them ahead of the response.
            biased;
            Some(event) = self.receiver.recv() => Next::Event(event),
            result = response => {
                self.response = None;
                result.map_or(Next::Ended, Next::Response)
            }
        }
    }

    pub(super) async fn next_chunk(mut self) -> Option<(Result<Bytes, Infallible>, SseStream)> {
        self.guard.as_ref()?;
        if let Some(event) = self.pending.take() {
            return Some((Ok(event), self));
        }
        let next = match self.keep_alive {
            Some(interval) => match tokio::time::timeout(interval, self.next()).await {
                Ok(next) => next,
                Err(_) => return Some((Ok(Bytes::from_static(b":\n\n")), self)),
            },
            None => self.next().await,
        };
        match next {
            Next::Event(event) => Some((Ok(event), self)),
            Next::Response(message) => {
                self.disarm();
                Some((Ok(sse_event(&message)), self))
            }
            Next::Ended => {
                self.disarm();
                None
            }
        }
    }
}

/// The response of an admitted `subscriptions/listen`: its notifications as
/// events, a keep-alive comment after each quiet `keep_alive`, and the final
/// result last (on a graceful shutdown). The body holds the subscription and
/// nothing else; dropping it (the client went away) ends the subscription.
pub(super) fn listen_reply(listening: Listening, keep_alive: Option<Duration>) -> Response {
    let events = futures::stream::unfold(Some(listening), move |listening| async move {
        let mut listening = listening?;
        let heard = match keep_alive {
            Some(interval) => match tokio::time::timeout(interval, listening.next()).await {
                Ok(heard) => heard,
                Err(_) => return Some((Ok(Bytes::from_static(b":\n\n")), Some(listening))),
            },
            None => listening.next().await,
        };
        Some(match heard {
            Heard::Notification(message) => {
                (Ok::<_, Infallible>(sse_event(&message)), Some(listening))
            }
            Heard::Done(message) => (Ok(sse_event(&message)), None),
        })
    });
    sse_response(Body::from_stream(events))
}

pub(super) fn sse_reply(stream: SseStream) -> Response {
    sse_response(Body::from_stream(futures::stream::unfold(
        stream,
        SseStream::next_chunk,
    )))
}

/// A `text/event-stream` response with `body`, never cached or buffered.
pub(super) fn sse_response(body: Body) -> Response {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(
        HeaderName::from_static("x-accel-buffering"),
        HeaderValue::from_static("no"),
    );
    response
}

/// One SSE event: the message on a single `data:` line (JSON text never
/// contains a raw newline).
pub(super) fn sse_event(message: &Message) -> Bytes {
    let mut bytes = Vec::with_capacity(256);
    bytes.extend_from_slice(b"data: ");
    encode_message(&mut bytes, message);
    bytes.extend_from_slice(b"\n\n");
    Bytes::from(bytes)
}
