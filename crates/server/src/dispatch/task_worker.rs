//! A task's worker: runs the tool's handler in the background and writes
//! what happens to the task store. A handler that asks for input parks the
//! task in `input_required`; once `tasks/update` has answered every
//! outstanding request the handler runs again with all the answers (as a
//! multi round-trip retry does). `tasks/cancel` fires the handler's
//! cancellation token. While it runs a task the worker renews its lease.
//! The end of a task goes to the audit log once (`task_end`): the worker
//! logs the end it makes; an end made elsewhere (a cancel while the task
//! waited for input, a lease that ran out) is logged by the first one to
//! read it, worker or `tasks/*` request ([`TaskRecord::end_audited`]).

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolwire_protocol::{CallToolResult, ErrorObject, JsonObject, RequestId, TaskStatus};
use tracing::Instrument;

use crate::context::mrtr::{InputRequired, Round};
use crate::context::output::{ToolError, ToolOutput};
use crate::context::{CheckedMeta, Principal, RequestContext, RequestEnv, TaskStatusSink};
use crate::features::registry::RegisteredTool;
use crate::security::audit::{self, TaskEnd, TaskEnded};
use crate::security::sanitize::SanitizeReport;
use crate::server::Server;
use crate::store::task_record::{TaskRecord, now_ms};
use crate::store::tasks::TaskLookup;

/// How long a cancelled handler may take to return after its token fired.
const CANCEL_GRACE: Duration = Duration::from_secs(5);

/// What a worker needs to run one task.
pub(crate) struct Job {
    pub tool: Arc<RegisteredTool>,
    pub arguments: JsonObject,
    pub id: String,
    pub owner: String,
    pub request_id: RequestId,
    pub meta: CheckedMeta,
    pub principal: Principal,
    /// When the task was created, milliseconds since the Unix epoch.
    pub created_at_ms: u64,
    /// The digest of `arguments` the call's audit record computed, for the
    /// handler's [`RequestContext::arguments_sha256`].
    pub arguments_sha256: Option<Arc<str>>,
}

/// What one run of the handler came to.
type Ran = Result<Result<ToolOutput, ToolError>, Box<dyn std::any::Any + Send>>;

impl Server {
    /// Runs `job` on its own tokio task.
    pub(super) fn spawn_task(&self, job: Job) {
        let server = self.clone();
        let span = toolwire_telemetry::detached_tool_span(&job.tool.definition.name);
        tokio::spawn(async move { server.work(job).await }.instrument(span));
    }

    async fn work(&self, job: Job) {
        let store = Arc::clone(&self.inner.task_store);
        let lease = Duration::from_millis(self.inner.config.tasks.lease_ms());
        let mut changes = store.watch(vec![job.id.clone()]);
        let mut renew = tokio::time::interval(lease / 3);
        renew.tick().await;
        loop {
            let record = match store.get(&job.id, &job.owner).await {
                Ok(TaskLookup::Found(record)) => record,
                Ok(TaskLookup::Expired) => {
                    audit_expired(&job);
                    return;
                }
                // Forgotten: nothing left to do.
                _ => return,
            };
            if record.status.is_terminal() {
                // Ended elsewhere: cancelled while it waited, or settled.
                self.audit_end_once(&record).await;
                return;
            }
            if record.cancel_requested {
                self.end(&job, TaskStatus::Cancelled, None, None).await;
                return;
            }
            if record.status == TaskStatus::InputRequired {
                // Waits for answers (or a cancel), renewing the lease.
                tokio::select! {
                    Some(_) = changes.next() => {}
                    _ = renew.tick() => {
                        if self.renew(&job, lease).await.is_none() {
                            return;
                        }
                    }
                }
                continue;
            }
            let cancel = CancellationToken::new();
            let running = self.run_handler(&job, &record, cancel.clone());
            tokio::pin!(running);
            let ran = loop {
                tokio::select! {
                    ran = &mut running => break Some(ran),
                    Some(change) = changes.next() => {
                        if change.cancel_requested || change.status.is_terminal() {
                            break None;
                        }
                    }
                    _ = renew.tick() => match self.renew(&job, lease).await {
                        Some(record) if !record.cancel_requested => {}
                        Some(_) => break None,
                        None => {
                            cancel.cancel();
                            return;
                        }
                    },
                }
            };
            let Some(ran) = ran else {
                cancel.cancel();
                self.end(&job, TaskStatus::Cancelled, None, None).await;
                let _ = tokio::time::timeout(CANCEL_GRACE, running).await;
                return;
            };
            if !self.conclude(&job, &record, ran).await {
                return;
            }
        }
    }

    /// One run of the handler with the answers so far, guarded against panics.
    fn run_handler(
        &self,
        job: &Job,
        record: &TaskRecord,
        cancel: CancellationToken,
    ) -> impl std::future::Future<Output = Ran> + Send + 'static {
        let env = RequestEnv::new()
            .with_principal(job.principal.clone())
            .with_cancel(cancel);
        let round = Round {
            answers: record.answers.clone(),
            state: record.handler_state.clone(),
        };
        let cx = RequestContext::new(job.request_id.clone(), "tools/call", job.meta.clone(), env)
            .with_round(round)
            .with_text_filter(self.inner.text_filter.clone())
            .with_task_status(self.status_sink(job));
        if let Some(digest) = &job.arguments_sha256 {
            cx.keep_arguments_sha256(Arc::clone(digest));
        }
        let made =
            std::panic::catch_unwind(AssertUnwindSafe(|| (job.tool.handler)(&job.arguments, cx)));
        async move {
            match made {
                Ok(future) => AssertUnwindSafe(future).catch_unwind().await,
                Err(panic) => Err(panic),
            }
        }
    }

    /// Where the handler's progress goes: the task's `statusMessage`, while
    /// it is working.
    fn status_sink(&self, job: &Job) -> TaskStatusSink {
        let store = Arc::clone(&self.inner.task_store);
        let (id, owner) = (job.id.clone(), job.owner.clone());
        TaskStatusSink(Arc::new(move |message: String| {
            let (store, id, owner) = (Arc::clone(&store), id.clone(), owner.clone());
            Box::pin(async move {
                let change = Box::new(move |r: &mut TaskRecord| {
                    if r.status == TaskStatus::Working && r.status_message != Some(message.clone())
                    {
                        r.status_message = Some(message);
                        r.updated_at_ms = now_ms().max(r.updated_at_ms);
                    }
                });
                if let Err(error) = store.update(&id, &owner, change).await {
                    tracing::debug!(task = %id, %error, "could not record the task's progress");
                }
            })
        }))
    }

    /// Records how a run ended; `true` when the handler must run again
    /// (it asked for input).
    async fn conclude(&self, job: &Job, record: &TaskRecord, ran: Ran) -> bool {
        let name = job.tool.definition.name.as_str();
        let output = match ran {
            Ok(output) => output,
            Err(_) => {
                tracing::error!(tool = name, task = %job.id, "handler panicked");
                let error =
                    ErrorObject::internal(format!("Tool {name} failed with an internal error"));
                self.fail(job, error).await;
                return false;
            }
        };
        let result = match output {
            Ok(ToolOutput::Complete(result)) => match self.check_output(&job.tool, &result) {
                Ok(()) => result,
                Err(error) => {
                    self.fail(job, error).await;
                    return false;
                }
            },
            Ok(ToolOutput::InputRequired(ask)) => return self.park(job, record, ask).await,
            Err(ToolError::InputRequired(ask)) => return self.park(job, record, *ask).await,
            Err(ToolError::Execution(message)) => CallToolResult::error(message),
            Err(ToolError::Protocol(error)) => {
                self.fail(job, error).await;
                return false;
            }
        };
        let result = self.finish_tool(name, result).into_object();
        self.end(job, TaskStatus::Completed, Some(result), None)
            .await;
        false
    }

    /// Parks the task in `input_required` with the requests not answered
    /// yet; `true` when there are any (the worker waits for them).
    async fn park(&self, job: &Job, record: &TaskRecord, ask: InputRequired) -> bool {
        if let Some(missing) = ask.missing_capabilities(&job.meta.client_capabilities) {
            self.fail(job, ErrorObject::missing_client_capability(&missing))
                .await;
            return false;
        }
        let mut requests = ask.requests;
        requests.retain(|key, _| !record.answers.contains_key(key));
        if requests.is_empty() {
            // A key is never asked twice over a task's life (SEP-2663).
            let name = &job.tool.definition.name;
            let error = ErrorObject::internal(format!(
                "Tool {name} asked again for input it was already given"
            ));
            self.fail(job, error).await;
            return false;
        }
        let mut requests = Value::Object(requests);
        // Elicitation messages reach the user, sampling messages a model.
        let mut report = SanitizeReport::default();
        self.inner
            .config
            .sanitize
            .clean_json(&mut requests, &mut report);
        let Value::Object(requests) = requests else {
            return false;
        };
        let state = ask.state;
        let change = Box::new(move |r: &mut TaskRecord| {
            if r.status.is_terminal() {
                return;
            }
            r.status = TaskStatus::InputRequired;
            r.status_message = Some("Waiting for input".into());
            r.input_requests = requests;
            r.handler_state = state;
            r.updated_at_ms = now_ms().max(r.updated_at_ms);
        });
        let store = &self.inner.task_store;
        matches!(
            store.update(&job.id, &job.owner, change).await,
            Ok(TaskLookup::Found(r)) if !r.status.is_terminal()
        )
    }

    async fn fail(&self, job: &Job, error: ErrorObject) {
        let mut error = error;
        self.inner.config.sanitize.clean_error(&mut error);
        self.end(job, TaskStatus::Failed, None, Some(error)).await;
    }

    /// Moves the task to a terminal status unless it is in one already,
    /// and audits the end (once).
    async fn end(
        &self,
        job: &Job,
        status: TaskStatus,
        result: Option<JsonObject>,
        error: Option<ErrorObject>,
    ) {
        let message = match (&status, &error) {
            (TaskStatus::Failed, Some(error)) => Some(error.message.clone()),
            (TaskStatus::Cancelled, _) => Some("Cancelled by the client".into()),
            _ => None,
        };
        let ended = AtomicBool::new(false);
        let change = Box::new(|r: &mut TaskRecord| {
            if r.status.is_terminal() {
                return;
            }
            r.finish(status, message, now_ms().max(r.updated_at_ms));
            r.result = result;
            r.error = error;
            r.end_audited = true;
            ended.store(true, Ordering::Relaxed);
        });
        let store = &self.inner.task_store;
        match store.update(&job.id, &job.owner, change).await {
            Ok(TaskLookup::Found(record)) if ended.load(Ordering::Relaxed) => audit_ended(&record),
            Ok(TaskLookup::Found(record)) => self.audit_end_once(&record).await,
            Ok(TaskLookup::Expired) => audit_expired(job),
            Ok(TaskLookup::Missing) => {}
            Err(error) => {
                tracing::error!(%error, task = %job.id, "could not record the end of a task")
            }
        }
    }

    /// Audits the end of a task ended without its worker's doing, unless
    /// that was done: the first to mark it in the store logs it.
    pub(super) async fn audit_end_once(&self, record: &TaskRecord) {
        if !record.status.is_terminal() || record.end_audited || !audit::listening() {
            return;
        }
        let marked = AtomicBool::new(false);
        let change = Box::new(|r: &mut TaskRecord| {
            if r.status.is_terminal() && !r.end_audited {
                r.end_audited = true;
                marked.store(true, Ordering::Relaxed);
            }
        });
        let store = &self.inner.task_store;
        if let Ok(TaskLookup::Found(record)) = store.update(&record.id, &record.owner, change).await
            && marked.load(Ordering::Relaxed)
        {
            audit_ended(&record);
        }
    }

    /// Renews the worker's lease; `None` when the task is gone (expired:
    /// audited so).
    async fn renew(&self, job: &Job, lease: Duration) -> Option<TaskRecord> {
        let lease_ms = u64::try_from(lease.as_millis()).unwrap_or(u64::MAX);
        let change = Box::new(move |r: &mut TaskRecord| {
            r.lease_until_ms = now_ms().saturating_add(lease_ms);
        });
        match self
            .inner
            .task_store
            .update(&job.id, &job.owner, change)
            .await
        {
            Ok(TaskLookup::Found(record)) => Some(*record),
            Ok(TaskLookup::Expired) => {
                audit_expired(job);
                None
            }
            _ => None,
        }
    }
}

/// The `task_end` audit record of a finished task.
fn audit_ended(record: &TaskRecord) {
    let is_error = || {
        let result = record.result.as_ref();
        result.and_then(|r| r.get("isError")) == Some(&Value::Bool(true))
    };
    let outcome = match record.status {
        TaskStatus::Completed if is_error() => TaskEnd::ToolError,
        TaskStatus::Completed => TaskEnd::Completed,
        TaskStatus::Failed if record.failed_by_lease() => TaskEnd::LeaseExpired,
        TaskStatus::Failed => TaskEnd::Failed,
        TaskStatus::Cancelled => TaskEnd::Cancelled,
        TaskStatus::Working | TaskStatus::InputRequired => return,
    };
    audit::task_end(&TaskEnded {
        owner: &record.owner,
        task: &record.id,
        tool: &record.tool,
        outcome,
        duration_ms: record.updated_at_ms.saturating_sub(record.created_at_ms),
    });
}

/// The `task_end` audit record of a task whose time to live ran out while
/// its worker ran it.
fn audit_expired(job: &Job) {
    audit::task_end(&TaskEnded {
        owner: &job.owner,
        task: &job.id,
        tool: &job.tool.definition.name,
        outcome: TaskEnd::Expired,
        duration_ms: now_ms().saturating_sub(job.created_at_ms),
    });
}
