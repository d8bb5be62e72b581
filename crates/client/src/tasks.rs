//! The Tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) on the
//! client's side: a `tools/call` the server answers with a task handle is
//! polled with `tasks/get` at the task's `pollIntervalMs` (and at once when
//! the server's `notifications/tasks`, followed through
//! `subscriptions/listen`, tell of a new status), its
//! `inputRequests` are answered by the client's handlers through
//! `tasks/update`, and its final result is mapped back to the
//! `CallToolResult` the call would have returned. [`Client::call_tool`]
//! does all this by itself; [`Client::start_tool_task`] and
//! [`Client::task`] expose the task for callers that keep its id (another
//! process may resume it), and [`TaskHandle::cancel`] sends `tasks/cancel`.

use std::collections::HashSet;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use tokio::time::{Instant, sleep_until};
use toolwire_protocol::{
    CallToolResult, ClientCapabilities, DetailedTask, GetTaskResult, InputRequiredResult,
    JsonObject, METHOD_TASKS_CANCEL, METHOD_TASKS_GET, METHOD_TASKS_UPDATE, ResultBody,
    TASKS_EXTENSION, TaskStatus,
};

use crate::arguments::to_arguments;
use crate::client::{Client, cancelled, parse};
use crate::error::Error;
use crate::mrtr::answer_all;
use crate::options::{RequestNotification, RequestOptions};
use crate::task_follow::{Follow, SETTLE};

/// The polling interval when the server suggests none.
const DEFAULT_POLL: Duration = Duration::from_secs(1);
/// Bounds on the server's suggestion.
const MIN_POLL: Duration = Duration::from_millis(10);
const MAX_POLL: Duration = Duration::from_secs(30);

/// What [`Client::start_tool_task`] got back: the result at once (the server
/// chose not to make a task, or the tool does not support tasks), or a task.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum ToolCallStart {
    /// The server answered with the final result.
    Done(CallToolResult),
    /// The server answered with a task: poll it, wait for it or cancel it.
    Task(TaskHandle),
}

/// A task on the server, known by its id: [`Client::task`] makes one from an
/// id kept from an earlier [`Client::start_tool_task`] (in this process or
/// another one).
///
/// ```no_run
/// # async fn run(client: toolwire_client::Client) -> Result<(), toolwire_client::Error> {
/// use toolwire_client::ToolCallStart;
/// match client.start_tool_task("build_report", serde_json::json!({"seconds": 30})).await? {
///     ToolCallStart::Done(result) => println!("{:?}", result.content),
///     ToolCallStart::Task(task) => {
///         println!("started {}", task.id());
///         // ... later, perhaps in another process:
///         let result = client.task(task.id()).wait().await?;
///         println!("{:?}", result.content);
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct TaskHandle {
    client: Client,
    id: String,
    tool: Option<String>,
}

impl Client {
    /// A handle on the task `id` (nothing is sent until it is used).
    pub fn task(&self, id: impl Into<String>) -> TaskHandle {
        TaskHandle {
            client: self.clone(),
            id: id.into(),
            tool: None,
        }
    }

    /// Calls a tool and returns as soon as the server answers: with the
    /// result, or with the task it made ([`ToolCallStart::Task`]) without
    /// waiting for it. The extension is declared on this call even when the
    /// client was built with [`crate::ClientBuilder::tasks`]`(false)`.
    pub async fn start_tool_task(
        &self,
        name: &str,
        arguments: impl Serialize,
    ) -> Result<ToolCallStart, Error> {
        self.start_tool_task_with(name, arguments, &RequestOptions::new())
            .await
    }

    /// [`Client::start_tool_task`] with per-request options.
    pub async fn start_tool_task_with(
        &self,
        name: &str,
        arguments: impl Serialize,
        options: &RequestOptions,
    ) -> Result<ToolCallStart, Error> {
        self.call_tool_inner(name, to_arguments(arguments), options, TaskMode::Start)
            .await
    }

    /// The options of a request that declares the Tasks extension.
    pub(crate) fn with_tasks(&self, options: &RequestOptions) -> RequestOptions {
        // One copy of the options, the capabilities taken out of it.
        let mut options = options.clone();
        let mut capabilities: ClientCapabilities = options
            .capabilities
            .take()
            .unwrap_or_else(|| self.inner.capabilities.clone());
        capabilities
            .extensions
            .get_or_insert_with(Default::default)
            .insert(TASKS_EXTENSION.to_owned(), JsonObject::new());
        options.capabilities = Some(capabilities);
        options
    }

    /// Whether `call_tool` declares the extension (the builder's setting).
    pub(crate) fn tasks_enabled(&self) -> bool {
        self.inner.tasks
    }
}

/// How a call treats a task answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TaskMode {
    /// Declared only if the client enables tasks; a task is waited for.
    Transparent,
    /// Always declared; a task is returned at once.
    Start,
}

impl TaskHandle {
    pub(crate) fn for_tool(client: &Client, id: String, tool: &str) -> Self {
        TaskHandle {
            client: client.clone(),
            id,
            tool: Some(tool.to_owned()),
        }
    }

    /// The task's id: keep it to resume the task later.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// `tasks/get`: the task as the server sees it now.
    pub async fn get(&self) -> Result<DetailedTask, Error> {
        self.get_with(&RequestOptions::new()).await
    }

    /// [`TaskHandle::get`] with per-request options.
    pub async fn get_with(&self, options: &RequestOptions) -> Result<DetailedTask, Error> {
        let result = self
            .task_request(METHOD_TASKS_GET, JsonObject::new(), options)
            .await?;
        let got: GetTaskResult = parse(result)?;
        Ok(got.task)
    }

    /// `tasks/cancel`: asks the server to stop the task (cooperative: the
    /// task may still finish otherwise).
    pub async fn cancel(&self) -> Result<(), Error> {
        let options = RequestOptions::new();
        self.task_request(METHOD_TASKS_CANCEL, JsonObject::new(), &options)
            .await
            .map(drop)
    }

    /// `tasks/update`: answers to the task's `inputRequests`, by key.
    pub async fn update(&self, input_responses: JsonObject) -> Result<(), Error> {
        let mut params = JsonObject::new();
        params.insert("inputResponses".into(), Value::Object(input_responses));
        self.task_request(METHOD_TASKS_UPDATE, params, &RequestOptions::new())
            .await
            .map(drop)
    }

    /// Polls the task until it ends, answering its input requests with the
    /// client's handlers, and returns its result as `call_tool` would.
    ///
    /// Polls come at the task's `pollIntervalMs`, and sooner when the
    /// server can tell: the wait listens (`subscriptions/listen` with
    /// `taskIds`) for the task's `notifications/tasks`, and a notification
    /// of a new status is confirmed with `tasks/get` at once. A server that
    /// refuses the subscription, or a stream that breaks, leaves polling.
    pub async fn wait(&self) -> Result<CallToolResult, Error> {
        self.wait_with(&RequestOptions::new()).await
    }

    /// [`TaskHandle::wait`] with options: each status seen goes to the
    /// notification sink as [`RequestNotification::Task`]; the whole wait is
    /// bounded by the options' (or the client's) hard maximum
    /// ([`RequestOptions::max_timeout`]); when the cancellation token fires,
    /// `tasks/cancel` is sent and the wait fails with [`Error::Cancelled`].
    /// Running out of time leaves the task running.
    pub async fn wait_with(&self, options: &RequestOptions) -> Result<CallToolResult, Error> {
        self.wait_inner(options, false).await
    }

    /// The wait; `cancel_on_timeout` for a call whose caller never saw the id.
    pub(crate) async fn wait_inner(
        &self,
        options: &RequestOptions,
        cancel_on_timeout: bool,
    ) -> Result<CallToolResult, Error> {
        let started = Instant::now();
        let policy = self.client.inner.timeouts.for_request(options);
        let deadline = started + policy.max_timeout;
        let outcome = tokio::select! {
            outcome = self.poll_until_done(options) => outcome,
            () = sleep_until(deadline) => Err(Error::Timeout(started.elapsed())),
            () = cancelled(options) => Err(Error::Cancelled),
        };
        let give_up = match &outcome {
            Err(Error::Cancelled) => options.cancel.as_ref().is_some_and(|t| t.is_cancelled()),
            Err(Error::Timeout(_)) => cancel_on_timeout,
            _ => false,
        };
        if give_up && let Err(error) = self.cancel().await {
            tracing::warn!(task = %self.id, %error, "tasks/cancel failed");
        }
        outcome
    }

    async fn poll_until_done(&self, options: &RequestOptions) -> Result<CallToolResult, Error> {
        let mut answered: HashSet<String> = HashSet::new();
        let mut round = 0;
        // Polls are plain requests: the caller's token and sink are the wait's.
        let mut poll_options = options.clone();
        poll_options.cancel = None;
        poll_options.sink = None;
        // The server's notifications wake the wait early; polls confirm.
        let mut follow = Follow::start(
            &self.client,
            &self.id,
            self.client.with_tasks(&poll_options),
        );
        follow.settle(SETTLE).await;
        loop {
            let task = self.get_with(&poll_options).await?;
            if let Some(sink) = &options.sink {
                sink(RequestNotification::Task(Box::new(task.clone())));
            }
            match task.task.status {
                TaskStatus::Completed => return self.finish(task),
                TaskStatus::Failed => {
                    return Err(match task.error {
                        Some(error) => error.into(),
                        None => Error::Protocol {
                            code: toolwire_protocol::code::INTERNAL_ERROR,
                            message: task
                                .task
                                .status_message
                                .unwrap_or_else(|| "the task failed".into()),
                            data: None,
                        },
                    });
                }
                TaskStatus::Cancelled => return Err(Error::Cancelled),
                TaskStatus::InputRequired => {
                    let fresh = self.fresh_requests(&task, &answered)?;
                    if !fresh.input_requests.as_ref().is_none_or(|r| r.is_empty()) {
                        round += 1;
                        if round > self.client.inner.max_rounds {
                            return Err(Error::TooManyRounds(self.client.inner.max_rounds));
                        }
                        // A task taken up by id: its tool is not known here.
                        let target = match &self.tool {
                            Some(tool) => tool.clone(),
                            None => format!("task {}", self.id),
                        };
                        let origin = self.client.origin("tools/call", &target);
                        let responses = answer_all(
                            &self.client.inner.handlers,
                            options.input.as_ref(),
                            &origin,
                            round,
                            &fresh,
                        )
                        .await?;
                        answered.extend(responses.keys().cloned());
                        let mut params = JsonObject::new();
                        params.insert("inputResponses".into(), Value::Object(responses));
                        self.task_request(METHOD_TASKS_UPDATE, params, &poll_options)
                            .await?;
                        // The answers may take a moment to show: poll soon.
                        tokio::time::sleep(MIN_POLL).await;
                        continue;
                    }
                }
                TaskStatus::Working => {}
            }
            follow.wait(poll_interval(&task), task.task.status).await;
        }
    }

    /// The task's input requests not answered yet (SEP-2663: keys are unique
    /// over a task's life, so an answered key is never answered again).
    fn fresh_requests(
        &self,
        task: &DetailedTask,
        answered: &HashSet<String>,
    ) -> Result<InputRequiredResult, Error> {
        let mut requests = task.input_requests.clone().unwrap_or_default();
        requests.retain(|key, _| !answered.contains(key));
        let mut shape = JsonObject::new();
        shape.insert("resultType".into(), Value::String("input_required".into()));
        shape.insert("inputRequests".into(), Value::Object(requests));
        serde_json::from_value(Value::Object(shape))
            .map_err(|e| Error::InvalidReply(format!("malformed inputRequests of a task: {e}")))
    }

    /// A completed task's result as the call's.
    fn finish(&self, task: DetailedTask) -> Result<CallToolResult, Error> {
        let Some(result) = task.result else {
            return Err(Error::InvalidReply(
                "a completed task without a result".into(),
            ));
        };
        let result: CallToolResult = serde_json::from_value(Value::Object(result))
            .map_err(|e| Error::InvalidReply(format!("the task's result: {e}")))?;
        if result.is_error() {
            return Err(Error::ToolExecution {
                tool: self.tool.clone().unwrap_or_default(),
                result: Box::new(result),
            });
        }
        Ok(result)
    }

    /// One of the task methods, declaring the extension, with `taskId`.
    async fn task_request(
        &self,
        method: &str,
        mut params: JsonObject,
        options: &RequestOptions,
    ) -> Result<ResultBody, Error> {
        params.insert("taskId".into(), Value::String(self.id.clone()));
        let options = self.client.with_tasks(options);
        self.client.request(method, &params, &options, &[]).await
    }
}

/// The server's suggested interval, within bounds.
fn poll_interval(task: &DetailedTask) -> Duration {
    task.task
        .poll_interval_ms
        .map(Duration::from_millis)
        .unwrap_or(DEFAULT_POLL)
        .clamp(MIN_POLL, MAX_POLL)
}

/// The task a `tools/call` answered with (a result of type `task`).
pub(crate) fn task_id_of(result: &ResultBody) -> Result<String, Error> {
    #[derive(serde::Deserialize)]
    struct TaskAnswer {
        #[serde(rename = "taskId")]
        task_id: Option<String>,
    }
    let answer: TaskAnswer = result
        .parse()
        .map_err(|e| Error::InvalidReply(format!("a task answer: {e}")))?;
    answer.task_id.ok_or_else(|| {
        Error::InvalidReply("a task answer (resultType \"task\") without a taskId".into())
    })
}
