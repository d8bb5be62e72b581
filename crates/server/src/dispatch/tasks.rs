//! The Tasks extension on the wire: whether a `tools/call` becomes a task,
//! its creation (`CreateTaskResult`), and `tasks/get`, `tasks/update` and
//! `tasks/cancel`. The worker that runs a task is in `task_worker`.

use std::sync::Arc;

use toolwire_protocol::{
    CallToolResult, EmptyResult, ErrorObject, GetTaskResult, JsonObject, Params, ResultType,
    TASKS_EXTENSION, TaskIdParams, TaskStatus, UpdateTaskRequestParams,
};

use super::parse;
use super::reply::Answer;
use super::task_worker::Job;
use crate::context::RequestContext;
use crate::context::mrtr::Round;
use crate::features::registry::RegisteredTool;
use crate::features::tasks::{TaskSupport, mint_task_id};
use crate::security::audit::Outcome;
use crate::server::Server;
use crate::store::task_record::{TaskRecord, now_ms};
use crate::store::tasks::{TaskLookup, TaskStoreError};

impl Server {
    /// True when this request may get a task: it declares the extension,
    /// at a revision that has it (never a legacy session).
    pub(crate) fn tasks_declared(&self, cx: &RequestContext) -> bool {
        cx.client_capabilities().declares_extension(TASKS_EXTENSION)
            && self
                .inner
                .config
                .supported_versions
                .iter()
                .any(|v| v == cx.protocol_version())
    }

    /// Whether a call of `tool` becomes a task: `Ok(false)` runs it inline,
    /// an [`TaskSupport::Always`] tool refuses a client without the extension.
    pub(super) fn task_mode(
        &self,
        tool: &RegisteredTool,
        cx: &RequestContext,
    ) -> Result<bool, ErrorObject> {
        match tool.task_support {
            TaskSupport::Never => Ok(false),
            _ if self.tasks_declared(cx) => Ok(true),
            TaskSupport::Optional => Ok(false),
            TaskSupport::Always => Err(ErrorObject::missing_extension(TASKS_EXTENSION)),
        }
    }

    /// True when the extension is offered: some enabled tool supports tasks.
    pub(crate) fn offers_tasks(&self) -> bool {
        self.inner
            .tools
            .enabled()
            .iter()
            .any(|tool| tool.task_support != TaskSupport::Never)
    }

    /// Stores a new task for this call (strongly: `tasks/get` finds it once
    /// this returns), starts its worker and answers `CreateTaskResult`.
    pub(super) async fn start_task(
        &self,
        tool: &Arc<RegisteredTool>,
        arguments: &JsonObject,
        round: Round,
        cx: &RequestContext,
    ) -> (Outcome, Result<Answer, ErrorObject>) {
        let settings = &self.inner.config.tasks;
        let name = tool.definition.name.as_str();
        let owner = cx.principal().key();
        let mut record = TaskRecord::new(
            mint_task_id(),
            owner.clone(),
            name,
            now_ms(),
            settings.ttl_ms(),
            settings.poll_interval_ms(),
            settings.lease_ms(),
        );
        record.answers = round.answers;
        record.handler_state = round.state;
        let store = &self.inner.task_store;
        match store
            .create(record.clone(), settings.max_per_principal)
            .await
        {
            Ok(()) => {}
            Err(TaskStoreError::Full { limit }) => {
                let text = format!(
                    "Too many unfinished tasks: at most {limit} may run at once for one caller. \
                     Wait for one to finish, or cancel one with tasks/cancel, then call again."
                );
                return (
                    Outcome::RateLimited,
                    Ok(self.finish_tool(name, CallToolResult::error(text))),
                );
            }
            Err(error) => {
                tracing::error!(%error, "could not store a task");
                let error = ErrorObject::internal("The task could not be stored; try again later");
                return (Outcome::ProtocolError, Err(error));
            }
        }
        let meta = cx.task_meta();
        self.spawn_task(Job {
            tool: Arc::clone(tool),
            arguments: arguments.clone(),
            id: record.id.clone(),
            owner,
            request_id: cx.request_id().clone(),
            meta,
            principal: cx.principal().clone(),
            created_at_ms: record.created_at_ms,
            arguments_sha256: cx.shared_arguments_sha256(),
        });
        let created = toolwire_protocol::CreateTaskResult::new(record.detailed().task);
        (
            Outcome::TaskCreated,
            Ok(Answer::Object(self.finish(created))),
        )
    }

    /// `tasks/get`, `tasks/update` and `tasks/cancel`. A task of another
    /// principal is answered exactly like an unknown one.
    pub(super) async fn task_request(
        &self,
        params: &Params,
        cx: &RequestContext,
    ) -> Result<JsonObject, ErrorObject> {
        if !self.tasks_declared(cx) {
            return Err(ErrorObject::missing_extension(TASKS_EXTENSION));
        }
        let owner = cx.principal().key();
        let store = &self.inner.task_store;
        let looked = match cx.method() {
            "tasks/update" => {
                let update: UpdateTaskRequestParams = parse(params)?;
                let responses = update.input_responses;
                let change = Box::new(move |r: &mut TaskRecord| take_answers(r, responses));
                store.update(&update.task_id, &owner, change).await
            }
            "tasks/cancel" => {
                let cancel: TaskIdParams = parse(params)?;
                store
                    .update(&cancel.task_id, &owner, Box::new(request_cancel))
                    .await
            }
            _ => {
                let get: TaskIdParams = parse(params)?;
                store.get(&get.task_id, &owner).await
            }
        };
        let record = match looked {
            Ok(TaskLookup::Found(record)) => record,
            Ok(TaskLookup::Expired) => return Err(ErrorObject::task_expired()),
            Ok(TaskLookup::Missing) => return Err(ErrorObject::task_not_found()),
            Err(error) => {
                tracing::error!(%error, "task store unavailable");
                return Err(ErrorObject::internal(
                    "The task store is unavailable; try again later",
                ));
            }
        };
        // A task cancelled while it waited for input, or settled after its
        // worker's lease ran out, is audited by its first reader.
        self.audit_end_once(&record).await;
        if cx.method() == "tasks/get" {
            let result = GetTaskResult {
                result_type: ResultType::Complete,
                task: record.detailed(),
                meta: None,
            };
            Ok(self.finish(result))
        } else {
            Ok(self.finish(EmptyResult::default()))
        }
    }
}

/// `tasks/update`: answers to outstanding keys are kept for the handler
/// and the keys leave `inputRequests`; any other answer is ignored. Once
/// nothing is outstanding the task is `working` again (its worker runs the
/// handler with the answers).
fn take_answers(record: &mut TaskRecord, responses: JsonObject) {
    if record.status != TaskStatus::InputRequired {
        return;
    }
    let mut taken = false;
    for (key, answer) in responses {
        if record.input_requests.remove(&key).is_some() {
            record.answers.insert(key, answer);
            taken = true;
        }
    }
    if !taken {
        return;
    }
    if record.input_requests.is_empty() {
        record.status = TaskStatus::Working;
        record.status_message = None;
    }
    record.updated_at_ms = now_ms().max(record.updated_at_ms);
}

/// `tasks/cancel`: the worker is asked to stop the handler; a task that
/// waits for input (no handler running) is cancelled at once. A finished
/// task stays as it is.
fn request_cancel(record: &mut TaskRecord) {
    if record.status.is_terminal() {
        return;
    }
    record.cancel_requested = true;
    if record.status == TaskStatus::InputRequired {
        let now = now_ms().max(record.updated_at_ms);
        record.finish(
            TaskStatus::Cancelled,
            Some("Cancelled by the client".into()),
            now,
        );
    }
}
