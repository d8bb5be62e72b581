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
use std::sync::Mutex;
use std::time::{Duration, Instant};

use std::future::Future;
use std::pin::Pin;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use toolwire_client::handlers::BoxError;
use toolwire_client::{Error as ClientError, Fetched, RequestNotification, RequestOptions};
use toolwire_server::protocol::{
    CallToolResult, ClientCapabilities, ElicitRequestParams, ErrorObject, GetPromptResult,
    InputRequest, ProgressNotificationParams, ReadResourceResult,
};
use toolwire_server::{InputRequired, RequestContext, ToolError};

/// How long a parked call waits for the client's answer.
pub(crate) const PARK_FOR: Duration = Duration::from_secs(600);
/// How many calls may wait for input at once.
pub(crate) const MAX_PARKED: usize = 1024;
/// How long an input request of a cancelled call stays unanswered, so that
/// the upstream client sees the cancellation first (and, for an upstream
/// task, sends `tasks/cancel`) rather than a failed answer.
const CANCELLED_ANSWER_AFTER: Duration = Duration::from_secs(1);

/// The answer to one upstream input request.
type Answer = Result<Value, BoxError>;

/// One input request of the upstream, waiting for its answer.
struct Asked {
    request: InputRequest,
    reply: oneshot::Sender<Answer>,
}

/// What a forwarded request does next.
enum Step<T> {
    /// The upstream answered (or failed).
    Done(Result<T, ClientError>),
    /// The upstream asks for input.
    Ask(Asked),
}

/// The upstream request itself, polled only while a downstream request
/// waits for it (no task of its own: one per call would cost more).
type Pending<T> = Pin<Box<dyn Future<Output = Result<T, ClientError>> + Send>>;

/// A forwarded request (`tools/call`, `prompts/get`, `resources/read`) in
/// flight upstream, answering `T`.
pub(crate) struct UpstreamCall<T: Send + 'static> {
    /// `None` once it has its outcome.
    pending: Option<Pending<T>>,
    asks: mpsc::UnboundedReceiver<Asked>,
    progress: Option<mpsc::UnboundedReceiver<ProgressNotificationParams>>,
    cancel: CancellationToken,
    pub(crate) started: Instant,
    asked: usize,
    /// Told when the request is dropped before its outcome.
    on_abandon: Option<Box<dyn FnOnce(Instant) + Send>>,
}

impl<T: Send + 'static> UpstreamCall<T> {
    /// Sends the request with `send`, given options that declare the
    /// downstream client's capabilities and bring the upstream's progress
    /// (when the client asked for it) and input requests back here.
    pub(crate) fn start<F, Fut>(cx: &RequestContext, send: F) -> UpstreamCall<T>
    where
        F: FnOnce(RequestOptions) -> Fut,
        Fut: Future<Output = Result<T, ClientError>> + Send + 'static,
    {
        let cancel = CancellationToken::new();
        let (ask_tx, asks) = mpsc::unbounded_channel();
        let asking = cancel.clone();
        let mut options = RequestOptions::new()
            .cancel_on(cancel.clone())
            .client_capabilities(cx.client_capabilities().clone())
            .on_input(move |request, _| ask_downstream(ask_tx.clone(), request, asking.clone()));
        let mut progress = None;
        if cx.wants_progress() {
            let (progress_tx, receiver) = mpsc::unbounded_channel();
            progress = Some(receiver);
            options = options.on_notification(move |notification| {
                if let RequestNotification::Progress(p) = notification {
                    let _ = progress_tx.send(p);
                }
            });
        }
        UpstreamCall {
            pending: Some(Box::pin(send(options))),
            asks,
            progress,
            cancel,
            started: Instant::now(),
            asked: 0,
            on_abandon: None,
        }
    }

    /// Calls `f` with the start time if the request is dropped before its
    /// outcome.
    pub(crate) fn on_abandon(mut self, f: impl FnOnce(Instant) + Send + 'static) -> Self {
        self.on_abandon = Some(Box::new(f));
        self
    }

    /// Waits for the upstream's next step, passing its progress on to `cx`
    /// and a cancellation of `cx` on upstream.
    async fn next(&mut self, cx: &RequestContext) -> Step<T> {
        let cancelled = cx.cancellation().clone();
        let pending = self
            .pending
            .as_mut()
            .expect("a request is not resumed after its outcome");
        let step = loop {
            tokio::select! {
                outcome = pending.as_mut() => break Step::Done(outcome),
                Some(asked) = self.asks.recv() => break Step::Ask(asked),
                Some(p) = next_progress(&mut self.progress) => forward_progress(cx, p).await,
                _ = cancelled.cancelled(), if !self.cancel.is_cancelled() => self.cancel.cancel(),
            }
        };
        if matches!(step, Step::Done(_)) {
            self.pending = None;
        }
        // Progress that arrived just before the step is still queued.
        while let Some(Ok(p)) = self.progress.as_mut().map(|r| r.try_recv()) {
            forward_progress(cx, p).await;
        }
        step
    }

    /// A fresh key for the next downstream input request.
    fn next_key(&mut self) -> String {
        self.asked += 1;
        format!("input-{}", self.asked)
    }
}

impl<T: Send + 'static> Drop for UpstreamCall<T> {
    /// A request dropped before its outcome (expired, or its downstream
    /// gone) is cancelled, and run to its end so the upstream hears it.
    fn drop(&mut self) {
        let Some(pending) = self.pending.take() else {
            return;
        };
        self.cancel.cancel();
        if let Some(abandoned) = self.on_abandon.take() {
            abandoned(self.started);
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = pending.await;
            });
        }
    }
}

/// Tells the client of the upstream's progress. Boxed: in place, its
/// future (over 1 KB) would be carried by every forwarded call's, which is
/// moved into a box per call, progress or not.
async fn forward_progress(cx: &RequestContext, p: ProgressNotificationParams) {
    Box::pin(cx.progress(p.progress, p.total, p.message.as_deref())).await;
}

/// The next progress notification, when the client asked for progress.
async fn next_progress(
    progress: &mut Option<mpsc::UnboundedReceiver<ProgressNotificationParams>>,
) -> Option<ProgressNotificationParams> {
    match progress {
        Some(receiver) => receiver.recv().await,
        None => std::future::pending().await,
    }
}

/// How one round of a forwarded request ends.
pub(crate) enum Round<T: Send + 'static> {
    /// The upstream's outcome.
    Done(UpstreamCall<T>, Result<T, ClientError>),
    /// The client is asked for input; the request waits, parked.
    Ask(InputRequired),
}

/// Runs one round of a forwarded request: starts it with `start` (or, on
/// a retry, resumes the parked one with the client's answer) and waits for
/// its outcome or the upstream's next input request for the client.
pub(crate) async fn run_round<T: Send + 'static>(
    parked: &Parked<T>,
    cx: &RequestContext,
    start: impl FnOnce() -> UpstreamCall<T>,
) -> Result<Round<T>, ToolError> {
    let mut call = match cx.state::<Resume>() {
        None => start(),
        Some(resume) => parked.resume_with_answer(&resume, cx)?,
    };
    loop {
        match call.next(cx).await {
            Step::Ask(asked) if !can_answer(cx.client_capabilities(), &asked.request) => {
                let method = asked.request.method();
                let reason = format!("the client did not declare the capability for {method}");
                let _ = asked.reply.send(Err(reason.into()));
            }
            Step::Ask(asked) => return parked.ask(call, asked).map(Round::Ask),
            Step::Done(outcome) => return Ok(Round::Done(call, outcome)),
        }
    }
}

/// Hands an upstream input request to the forwarding handler and waits
/// for the downstream client's answer. Once the call is cancelled the
/// answer fails only after [`CANCELLED_ANSWER_AFTER`]: the client's own
/// cancellation wins (for an upstream task it sends `tasks/cancel`).
async fn ask_downstream(
    asks: mpsc::UnboundedSender<Asked>,
    request: InputRequest,
    cancel: CancellationToken,
) -> Answer {
    let (reply, answer) = oneshot::channel();
    asks.send(Asked { request, reply })
        .map_err(|_| "the downstream call has ended")?;
    tokio::select! {
        biased;
        () = cancel.cancelled() => {
            tokio::time::sleep(CANCELLED_ANSWER_AFTER).await;
            Err("the call was cancelled".into())
        }
        answer = answer => answer.map_err(|_| "the downstream client did not answer")?,
    }
}

/// Whether a client that declared `capabilities` can answer `request`.
fn can_answer(capabilities: &ClientCapabilities, request: &InputRequest) -> bool {
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

/// What the gateway seals into `requestState` while a request waits.
#[derive(Debug, Serialize, Deserialize)]
struct Resume {
    /// The parked request's id.
    call: String,
}

/// A request waiting for the answer to the downstream request `key`.
struct Waiting<T: Send + 'static> {
    call: UpstreamCall<T>,
    key: String,
    reply: oneshot::Sender<Answer>,
    until: Instant,
}

/// The requests of one kind waiting for input, by id.
pub(crate) struct Parked<T: Send + 'static> {
    calls: Mutex<HashMap<String, Waiting<T>>>,
}

impl<T: Send + 'static> Default for Parked<T> {
    fn default() -> Self {
        Parked {
            calls: Mutex::default(),
        }
    }
}

/// Every kind of forwarded request waiting for input.
#[derive(Debug, Default)]
pub(crate) struct ParkedRequests {
    pub(crate) calls: Parked<CallToolResult>,
    pub(crate) prompts: Parked<GetPromptResult>,
    pub(crate) reads: Parked<Fetched<ReadResourceResult>>,
}

impl ParkedRequests {
    /// Releases the call a gateway task waited for input with, given the
    /// task's handler state (the [`Resume`] its handler kept): used once
    /// the task has ended without running its handler again (cancelled or
    /// failed while it waited).
    pub(crate) fn release_call(&self, handler_state: &Value) {
        if let Ok(resume) = Resume::deserialize(handler_state) {
            self.calls.release(&resume.call);
        }
    }
}

impl<T: Send + 'static> std::fmt::Debug for Parked<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let waiting = self.calls.lock().map(|c| c.len()).unwrap_or_default();
        f.debug_struct("Parked").field("waiting", &waiting).finish()
    }
}

impl<T: Send + 'static> Parked<T> {
    /// Parks `call` and asks the client for what the upstream asked, with
    /// the parked request's id sealed in the state; refused when too many
    /// requests are waiting.
    fn ask(&self, mut call: UpstreamCall<T>, asked: Asked) -> Result<InputRequired, ToolError> {
        let key = call.next_key();
        let ask = InputRequired::new().ask(key.clone(), &asked.request);
        let mut calls = self.lock();
        let now = Instant::now();
        calls.retain(|_, waiting| waiting.until > now);
        if calls.len() >= MAX_PARKED {
            drop(calls);
            let _ = asked
                .reply
                .send(Err("too many requests are waiting for input".into()));
            return Err(ToolError::new(
                "the gateway has too many requests waiting for input; try again later",
            ));
        }
        let id = random_id();
        let waiting = Waiting {
            call,
            key,
            reply: asked.reply,
            until: now + PARK_FOR,
        };
        calls.insert(id.clone(), waiting);
        Ok(ask.with_state(&Resume { call: id }))
    }

    /// The request parked under `resume`'s id, given the client's answer.
    fn resume_with_answer(
        &self,
        resume: &Resume,
        cx: &RequestContext,
    ) -> Result<UpstreamCall<T>, ToolError> {
        let waiting = self.lock().remove(&resume.call);
        let Some(waiting) = waiting.filter(|w| w.until > Instant::now()) else {
            return Err(ErrorObject::invalid_params(
                "the request this answer is for is no longer waiting (it expired, or another \
                 gateway instance holds it); send it again",
            )
            .into());
        };
        let answer = match cx.input_response(&waiting.key) {
            Some(answer) => Ok(answer.clone()),
            None => Err(format!("the client did not answer {:?}", waiting.key).into()),
        };
        let _ = waiting.reply.send(answer);
        Ok(waiting.call)
    }

    /// Drops the request parked under `id`, if one is: it is cancelled
    /// upstream (see [`UpstreamCall`]'s `Drop`).
    fn release(&self, id: &str) {
        let waiting = self.lock().remove(id);
        drop(waiting);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Waiting<T>>> {
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
    use toolwire_server::protocol::{ElicitationCapability, JsonObject};

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
