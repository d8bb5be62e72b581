//! Requests a legacy session sends to its client (`elicitation/create`,
//! `sampling/createMessage`, `roots/list`) and the answers that come back,
//! matched by id. A request that times out or whose caller goes away is
//! withdrawn with `notifications/cancelled`.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use toolwire_protocol::{
    ErrorObject, JsonObject, Message, Notification, Params, Request, RequestId,
};

use crate::context::Outbox;
use crate::telemetry;
use toolwire_telemetry::Outcome;

/// How a request to the client ends, for telemetry.
fn peer_outcome(answer: &Result<JsonObject, PeerError>) -> Outcome {
    match answer {
        Ok(_) => Outcome::Ok,
        Err(PeerError::Refused(error)) => Outcome::RpcError(error.code),
        Err(PeerError::TimedOut(_)) => Outcome::Failed("timeout"),
        Err(PeerError::Cancelled) => Outcome::Failed("cancelled"),
        Err(PeerError::Unreachable | PeerError::Gone) => Outcome::Failed("unreachable"),
    }
}

/// How a request to the client ended without an answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PeerError {
    /// The client answered with a JSON-RPC error.
    Refused(ErrorObject),
    /// No answer within the timeout.
    TimedOut(Duration),
    /// The request being served was cancelled, or the session ended.
    Cancelled,
    /// There is no way to reach the client for this request.
    Unreachable,
    /// The client closed the connection (its stdin) before answering.
    Gone,
}

impl PeerError {
    /// A sentence for the handler's caller.
    pub(crate) fn describe(&self, method: &str) -> String {
        match self {
            PeerError::Refused(error) => format!(
                "the client answered {method} with error {}: {}",
                error.code, error.message
            ),
            PeerError::TimedOut(after) => format!(
                "the client did not answer {method} within {} s",
                after.as_secs_f64()
            ),
            PeerError::Cancelled => format!("{method} was cancelled"),
            PeerError::Unreachable => {
                format!("{method} cannot be sent: this request has no stream to the client")
            }
            PeerError::Gone => {
                format!("the client closed the connection before answering {method}")
            }
        }
    }
}

type Answer = Result<JsonObject, ErrorObject>;

/// The requests of one session awaiting the client's answer.
#[derive(Debug, Default)]
pub(crate) struct PeerRequests {
    /// Set when several instances may send requests in one session: ids
    /// are then `"<tag>-<n>"` strings, so that no two instances send the
    /// same id and an answer reaching another instance can be routed back.
    tag: Option<String>,
    next_id: AtomicI64,
    waiting: Mutex<HashMap<RequestId, oneshot::Sender<Answer>>>,
    /// The client can no longer answer: new requests fail at once.
    closed: AtomicBool,
}

impl PeerRequests {
    /// Requests whose ids start with `tag`.
    pub(crate) fn tagged(tag: &str) -> Self {
        PeerRequests {
            tag: Some(tag.to_owned()),
            ..PeerRequests::default()
        }
    }

    fn next_id(&self) -> RequestId {
        let n = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        match &self.tag {
            Some(tag) => RequestId::String(format!("{tag}-{n}")),
            None => RequestId::Number(n),
        }
    }

    /// Sends `method` to the client through `outbox` and waits for its
    /// answer, at most `timeout`, or until `cancel` fires.
    pub(crate) async fn request(
        &self,
        outbox: Option<&Outbox>,
        method: &str,
        params: Option<JsonObject>,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<JsonObject, PeerError> {
        let Some(outbox) = outbox else {
            return Err(PeerError::Unreachable);
        };
        if self.is_closed() {
            return Err(PeerError::Gone);
        }
        let id = self.next_id();
        let (answer_tx, answer_rx) = oneshot::channel();
        self.lock().insert(id.clone(), answer_tx);
        // Withdraws the request however this future ends (dropped included).
        let _pending = Pending {
            peers: self,
            id: id.clone(),
            outbox,
        };
        let mut request = Request::new(id, method, params);
        let params = request.params.get_or_insert_with(Params::default);
        if toolwire_telemetry::enabled() {
            let started = telemetry::start_peer_request(method, &request.id, params);
            let answer = self.exchange(outbox, request, answer_rx, timeout, cancel);
            return telemetry::traced(started, answer, peer_outcome).await;
        }
        self.exchange(outbox, request, answer_rx, timeout, cancel)
            .await
    }

    /// Sends `request` and waits for its answer.
    async fn exchange(
        &self,
        outbox: &Outbox,
        request: Request,
        answer_rx: oneshot::Receiver<Answer>,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<JsonObject, PeerError> {
        outbox.send(Message::Request(request)).await;
        tokio::select! {
            answer = answer_rx => match answer {
                Ok(Ok(result)) => Ok(result),
                Ok(Err(error)) => Err(PeerError::Refused(error)),
                Err(_) if self.is_closed() => Err(PeerError::Gone),
                Err(_) => Err(PeerError::Cancelled),
            },
            () = tokio::time::sleep(timeout) => Err(PeerError::TimedOut(timeout)),
            () = cancel.cancelled() => Err(PeerError::Cancelled),
        }
    }

    /// Routes a response from the client to the request awaiting it; false
    /// when nothing awaits that id.
    pub(crate) fn answer(&self, message: Message) -> bool {
        let (id, answer) = match message {
            Message::Result(response) => {
                let answer = response.result.into_object().map_err(|e| {
                    ErrorObject::parse_error(format!("the client's result cannot be read: {e}"))
                });
                (response.id, answer)
            }
            Message::Error(response) => match response.id {
                Some(id) => (id, Err(response.error)),
                None => return false,
            },
            _ => return false,
        };
        match self.lock().remove(&id) {
            Some(waiter) => {
                let _ = waiter.send(answer);
                true
            }
            None => false,
        }
    }

    /// The client is gone (its input ended): every request awaiting its
    /// answer fails now with [`PeerError::Gone`] instead of waiting out its
    /// timeout, and so does every later one.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        // Dropping the senders wakes every waiter.
        self.lock().clear();
    }

    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Requests still awaiting an answer.
    #[cfg(test)]
    pub(crate) fn waiting(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, oneshot::Sender<Answer>>> {
        self.waiting.lock().expect("peer requests lock")
    }
}

/// One request in flight. Dropped while still waiting (timed out,
/// cancelled, abandoned), it removes itself and tells the client the
/// request is withdrawn; an answered request was removed by the answer.
struct Pending<'a> {
    peers: &'a PeerRequests,
    id: RequestId,
    outbox: &'a Outbox,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if self.peers.lock().remove(&self.id).is_none() {
            return;
        }
        let mut params = JsonObject::new();
        params.insert("requestId".into(), json!(self.id));
        params.insert(
            "reason".into(),
            Value::String("the server no longer needs the answer".into()),
        );
        let cancelled =
            Message::Notification(Notification::new("notifications/cancelled", Some(params)));
        // At once, so it precedes whatever ends the request's stream; a full
        // queue gets it later (best effort: the stream may be gone).
        if !self.outbox.try_send(cancelled.clone()) {
            let outbox = self.outbox.clone();
            tokio::spawn(async move { outbox.send(cancelled).await });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolwire_protocol::{ErrorResponse, ResultResponse};

    /// Requests, an outbox whose messages `sent` receives, and a token.
    fn peers() -> (
        PeerRequests,
        Outbox,
        tokio::sync::mpsc::Receiver<Message>,
        CancellationToken,
    ) {
        let (sender, sent) = tokio::sync::mpsc::channel(8);
        let peers = PeerRequests::default();
        (peers, Outbox::new(sender), sent, CancellationToken::new())
    }

    /// The request `roots/list` sent through `outbox`, answered within `timeout`.
    async fn ask_roots(
        peers: &PeerRequests,
        outbox: &Outbox,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<JsonObject, PeerError> {
        peers
            .request(Some(outbox), "roots/list", None, timeout, cancel)
            .await
    }

    /// The next request `sent` received.
    async fn next_request(sent: &mut tokio::sync::mpsc::Receiver<Message>) -> Request {
        let Some(Message::Request(request)) = sent.recv().await else {
            panic!("a request first");
        };
        request
    }

    #[tokio::test]
    async fn answers_are_matched_by_id_and_a_timeout_withdraws_the_request() {
        let (peers, outbox, mut sent, cancel) = peers();
        let asking = ask_roots(&peers, &outbox, Duration::from_secs(5), &cancel);
        let answering = async {
            let request = next_request(&mut sent).await;
            assert_eq!(request.method, "roots/list");
            assert!(!peers.answer(Message::Result(ResultResponse::new(
                RequestId::Number(99),
                JsonObject::new()
            ))));
            let mut roots = JsonObject::new();
            roots.insert("roots".into(), json!([]));
            assert!(peers.answer(Message::Result(ResultResponse::new(request.id, roots))));
        };
        let (answer, ()) = tokio::join!(asking, answering);
        assert_eq!(Value::Object(answer.unwrap()), json!({"roots": []}));
        assert_eq!(peers.waiting(), 0);

        let refused = ask_roots(&peers, &outbox, Duration::from_secs(5), &cancel);
        let refusing = async {
            let request = next_request(&mut sent).await;
            let error = ErrorObject::method_not_found("roots/list");
            assert!(peers.answer(Message::Error(ErrorResponse::new(Some(request.id), error))));
        };
        let (outcome, ()) = tokio::join!(refused, refusing);
        assert!(matches!(outcome, Err(PeerError::Refused(e)) if e.code == -32601));

        let silent = ask_roots(&peers, &outbox, Duration::from_millis(20), &cancel);
        assert_eq!(
            silent.await,
            Err(PeerError::TimedOut(Duration::from_millis(20)))
        );
        assert_eq!(peers.waiting(), 0);
        let _request = sent.recv().await.unwrap();
        let Some(Message::Notification(withdrawn)) = sent.recv().await else {
            panic!("a cancellation");
        };
        assert_eq!(withdrawn.method, "notifications/cancelled");
        assert_eq!(
            peers
                .request(None, "roots/list", None, Duration::from_secs(1), &cancel)
                .await,
            Err(PeerError::Unreachable)
        );
    }

    #[tokio::test]
    async fn an_answer_no_tree_can_hold_is_a_parse_error_and_the_peer_keeps_serving() {
        let (peers, outbox, mut sent, cancel) = peers();
        for (answer, expected) in [
            (
                r#"{"roots":[],"n":1e400}"#,
                Err(PeerError::Refused(ErrorObject::parse_error(
                    "the client's result cannot be read: number out of range at line 1 column 21",
                ))),
            ),
            (r#"{"roots":[]}"#, Ok(json!({"roots": []}))),
        ] {
            let asking = ask_roots(&peers, &outbox, Duration::from_secs(5), &cancel);
            let answering = async {
                let request = next_request(&mut sent).await;
                let id = serde_json::to_string(&request.id).unwrap();
                let text = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{answer}}}"#);
                assert!(peers.answer(Message::from_slice(text.as_bytes()).unwrap()));
            };
            let (outcome, ()) = tokio::join!(asking, answering);
            assert_eq!(outcome.map(Value::Object), expected, "{answer}");
            assert_eq!(peers.waiting(), 0);
        }
    }
}
