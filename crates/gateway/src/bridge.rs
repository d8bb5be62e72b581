//! Input requests across the gateway, in both eras on both sides.
//!
//! An upstream asks for input during a call either with an `input_required`
//! round (2026-07-28) or with a real `elicitation/create`,
//! `sampling/createMessage` or `roots/list` request (2025-11-25). Either way
//! the upstream client hands the request to the call's own input handler,
//! and the gateway answers downstream with an `input_required` of its own;
//! for a 2025-11-25 client the server turns that into the real request.
//! Meanwhile the upstream call waits, parked under a random id that the
//! gateway's sealed `requestState` carries, until the client retries with
//! the answer. Parked calls live in this process: behind a load balancer,
//! a retry must reach the instance that holds its call.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use toolwire_client::handlers::BoxError;
use toolwire_client::{Client, Error as ClientError, RequestNotification, RequestOptions};
use toolwire_server::RequestContext;
use toolwire_server::audit::arguments_digest;
use toolwire_server::protocol::{
    CallToolResult, ClientCapabilities, ElicitRequestParams, InputRequest, JsonObject,
    ProgressNotificationParams,
};

/// How long a parked call waits for the client's answer.
pub(crate) const PARK_FOR: Duration = Duration::from_secs(600);
/// How many calls may wait for input at once.
pub(crate) const MAX_PARKED: usize = 1024;

/// The answer to one upstream input request.
type Answer = Result<Value, BoxError>;

/// One input request of the upstream, waiting for its answer.
pub(crate) struct Asked {
    pub(crate) request: InputRequest,
    pub(crate) reply: oneshot::Sender<Answer>,
}

/// What a forwarded call does next.
pub(crate) enum Step {
    /// The upstream answered (or failed).
    Done(Result<CallToolResult, ClientError>),
    /// The upstream asks for input.
    Ask(Asked),
    /// The call's task ended without an outcome (it panicked).
    Lost(String),
}

/// A forwarded call in flight upstream.
pub(crate) struct UpstreamCall {
    task: JoinHandle<Result<CallToolResult, ClientError>>,
    asks: mpsc::UnboundedReceiver<Asked>,
    progress: mpsc::UnboundedReceiver<ProgressNotificationParams>,
    cancel: CancellationToken,
    pub(crate) started: Instant,
    pub(crate) digest: String,
    asked: usize,
}

impl UpstreamCall {
    /// Sends `tools/call` for `tool` upstream, declaring the downstream
    /// client's capabilities, with the upstream's progress (when the
    /// client asked for it) and input requests coming back here.
    pub(crate) fn start(
        client: Arc<Client>,
        tool: String,
        args: JsonObject,
        cx: &RequestContext,
    ) -> UpstreamCall {
        let digest = arguments_digest(&args);
        let cancel = CancellationToken::new();
        let (ask_tx, asks) = mpsc::unbounded_channel();
        let (progress_tx, progress) = mpsc::unbounded_channel();
        let mut options = RequestOptions::new()
            .cancel_on(cancel.clone())
            .client_capabilities(cx.client_capabilities().clone())
            .on_input(move |request, _| ask_downstream(ask_tx.clone(), request));
        if cx.wants_progress() {
            options = options.on_notification(move |notification| {
                if let RequestNotification::Progress(p) = notification {
                    let _ = progress_tx.send(p);
                }
            });
        }
        let task = tokio::spawn(async move {
            client
                .call_tool_with(&tool, Value::Object(args), &options)
                .await
        });
        UpstreamCall {
            task,
            asks,
            progress,
            cancel,
            started: Instant::now(),
            digest,
            asked: 0,
        }
    }

    /// Waits for the upstream's next step, passing its progress on to `cx`
    /// and a cancellation of `cx` on upstream.
    pub(crate) async fn next(&mut self, cx: &RequestContext) -> Step {
        let cancelled = cx.cancellation().clone();
        let step = loop {
            tokio::select! {
                outcome = &mut self.task => break match outcome {
                    Ok(outcome) => Step::Done(outcome),
                    Err(error) => Step::Lost(error.to_string()),
                },
                Some(asked) = self.asks.recv() => break Step::Ask(asked),
                Some(p) = self.progress.recv() => {
                    cx.progress(p.progress, p.total, p.message.as_deref()).await;
                }
                _ = cancelled.cancelled(), if !self.cancel.is_cancelled() => self.cancel.cancel(),
            }
        };
        // Progress that arrived just before the step is still queued.
        while let Ok(p) = self.progress.try_recv() {
            cx.progress(p.progress, p.total, p.message.as_deref()).await;
        }
        step
    }

    /// A fresh key for the next downstream input request.
    pub(crate) fn next_key(&mut self) -> String {
        self.asked += 1;
        format!("input-{}", self.asked)
    }
}

impl Drop for UpstreamCall {
    /// A call dropped before its outcome (expired, or its downstream gone)
    /// is cancelled upstream.
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// Hands an upstream input request to the forwarding handler and waits
/// for the downstream client's answer.
async fn ask_downstream(asks: mpsc::UnboundedSender<Asked>, request: InputRequest) -> Answer {
    let (reply, answer) = oneshot::channel();
    asks.send(Asked { request, reply })
        .map_err(|_| "the downstream call has ended")?;
    answer
        .await
        .map_err(|_| "the downstream client did not answer")?
}

/// Whether a client that declared `capabilities` can answer `request`.
pub(crate) fn can_answer(capabilities: &ClientCapabilities, request: &InputRequest) -> bool {
    match request {
        InputRequest::Elicit(ElicitRequestParams::Url(_)) => capabilities
            .elicitation
            .as_ref()
            .is_some_and(|e| e.supports_url()),
        InputRequest::Elicit(_) => capabilities
            .elicitation
            .as_ref()
            .is_some_and(|e| e.supports_form()),
        InputRequest::CreateMessage(_) => capabilities.sampling.is_some(),
        InputRequest::ListRoots(_) => capabilities.roots.is_some(),
    }
}

/// What the gateway seals into `requestState` while a call waits.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Resume {
    /// The parked call's id.
    pub(crate) call: String,
}

/// A call waiting for the answer to the downstream request `key`.
pub(crate) struct Waiting {
    pub(crate) call: UpstreamCall,
    pub(crate) key: String,
    pub(crate) reply: oneshot::Sender<Answer>,
    until: Instant,
}

/// The calls waiting for input, by id.
#[derive(Default)]
pub(crate) struct Parked {
    calls: Mutex<HashMap<String, Waiting>>,
}

impl std::fmt::Debug for Parked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parked")
            .field("calls", &self.lock().len())
            .finish()
    }
}

impl Parked {
    /// Parks `call` until the answer to `key` comes; its id, or the call
    /// back when too many are waiting.
    pub(crate) fn park(
        &self,
        call: UpstreamCall,
        key: String,
        reply: oneshot::Sender<Answer>,
    ) -> Result<String, (UpstreamCall, oneshot::Sender<Answer>)> {
        let mut calls = self.lock();
        let now = Instant::now();
        calls.retain(|_, waiting| waiting.until > now);
        if calls.len() >= MAX_PARKED {
            return Err((call, reply));
        }
        let id = random_id();
        let waiting = Waiting {
            call,
            key,
            reply,
            until: now + PARK_FOR,
        };
        calls.insert(id.clone(), waiting);
        Ok(id)
    }

    /// Takes the call parked under `id`, unless it expired.
    pub(crate) fn resume(&self, id: &str) -> Option<Waiting> {
        let waiting = self.lock().remove(id)?;
        (waiting.until > Instant::now()).then_some(waiting)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Waiting>> {
        self.calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// 128 random bits, in hex.
fn random_id() -> String {
    let bits: u128 = rand::random();
    format!("{bits:032x}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolwire_server::protocol::ElicitationCapability;

    #[test]
    fn answerable_requests_follow_the_declared_capabilities() {
        let form: InputRequest = serde_json::from_value(serde_json::json!({
            "method": "elicitation/create",
            "params": {"mode": "form", "message": "ok?", "requestedSchema": {"type": "object", "properties": {}}}
        }))
        .unwrap();
        let roots = InputRequest::ListRoots(None);
        let none = ClientCapabilities::default();
        assert!(!can_answer(&none, &form));
        assert!(!can_answer(&none, &roots));
        let forms = ClientCapabilities {
            elicitation: Some(ElicitationCapability {
                form: Some(JsonObject::new()),
                url: None,
            }),
            ..Default::default()
        };
        assert!(can_answer(&forms, &form));
        assert!(!can_answer(&forms, &roots));
    }
}
