//! The Tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663): a
//! `tools/call` answered with a task handle ([`CreateTaskResult`],
//! `resultType: "task"`) that the client polls with `tasks/get`, feeds with
//! `tasks/update` and stops with `tasks/cancel`; `notifications/tasks`
//! carry the same [`DetailedTask`] to `subscriptions/listen` streams.
//!
//! ```
//! use toolwire_protocol::{DetailedTask, TaskStatus};
//! let task: DetailedTask = serde_json::from_str(r#"{
//!     "taskId": "t1", "status": "completed",
//!     "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:01Z",
//!     "ttlMs": 60000, "result": {"content": []}
//! }"#).unwrap();
//! assert_eq!(task.task.status, TaskStatus::Completed);
//! assert!(task.result.is_some());
//! ```

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::JsonObject;
use crate::capabilities::ClientCapabilities;
use crate::error::{ErrorObject, code};
use crate::meta::Meta;
use crate::mrtr::InputResponses;
use crate::result::ResultType;

/// The extension's identifier, the key under `capabilities.extensions`.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// Method name of `tasks/get`.
pub const METHOD_TASKS_GET: &str = "tasks/get";
/// Method name of `tasks/update`.
pub const METHOD_TASKS_UPDATE: &str = "tasks/update";
/// Method name of `tasks/cancel`.
pub const METHOD_TASKS_CANCEL: &str = "tasks/cancel";
/// Method name of `notifications/tasks`.
pub const METHOD_TASKS_NOTIFICATION: &str = "notifications/tasks";

/// Where a task is in its life. `completed`, `failed` and `cancelled` are terminal.
///
/// ```
/// use toolwire_protocol::TaskStatus;
/// assert_eq!(serde_json::to_string(&TaskStatus::InputRequired).unwrap(), r#""input_required""#);
/// assert!(TaskStatus::Cancelled.is_terminal() && !TaskStatus::Working.is_terminal());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// The request is being processed.
    Working,
    /// The server waits for answers to the task's `inputRequests`.
    InputRequired,
    /// Finished with a result (a tool result with `isError: true` included).
    Completed,
    /// Finished with a JSON-RPC error.
    Failed,
    /// Cancelled before it finished.
    Cancelled,
}

impl TaskStatus {
    /// True for `completed`, `failed` and `cancelled`: the state no longer changes.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }
}

/// A task's operational metadata (the SEP's `Task`).
///
/// ```
/// use toolwire_protocol::{Task, TaskStatus};
/// let task = Task::new("t1", TaskStatus::Working, "2026-01-01T00:00:00Z", None);
/// let json = serde_json::to_value(&task).unwrap();
/// assert_eq!(json["ttlMs"], serde_json::Value::Null);
/// assert!(json.get("pollIntervalMs").is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// Stable identifier of the task.
    pub task_id: String,
    /// Current status.
    pub status: TaskStatus,
    /// What is going on, for a person or a model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// ISO 8601 creation time.
    pub created_at: String,
    /// ISO 8601 time of the last change.
    pub last_updated_at: String,
    /// Time to live from creation in milliseconds; `None` (`null`) for unlimited.
    pub ttl_ms: Option<u64>,
    /// Suggested polling interval in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<u64>,
}

impl Task {
    /// A task created at `created_at` (also its last update).
    pub fn new(
        task_id: impl Into<String>,
        status: TaskStatus,
        created_at: impl Into<String>,
        ttl_ms: Option<u64>,
    ) -> Self {
        let created_at = created_at.into();
        Task {
            task_id: task_id.into(),
            status,
            status_message: None,
            last_updated_at: created_at.clone(),
            created_at,
            ttl_ms,
            poll_interval_ms: None,
        }
    }
}

/// A task with the payload of its status inlined: `inputRequests` when
/// `input_required`, `result` when `completed`, `error` when `failed`. The
/// shape of `tasks/get` results and `notifications/tasks` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DetailedTask {
    /// The task's metadata.
    #[serde(flatten)]
    pub task: Task,
    /// Outstanding server-to-client requests (MRTR shape), by key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<JsonObject>,
    /// The final result of the original request (a `CallToolResult`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<JsonObject>,
    /// The JSON-RPC error the request failed with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorObject>,
}

impl From<Task> for DetailedTask {
    fn from(task: Task) -> Self {
        DetailedTask {
            task,
            input_requests: None,
            result: None,
            error: None,
        }
    }
}

/// The answer to a request served as a task: `resultType: "task"` and the
/// task's seed state, flat (`Result & Task`).
///
/// ```
/// use toolwire_protocol::{CreateTaskResult, Task, TaskStatus};
/// let r = CreateTaskResult::new(Task::new("t1", TaskStatus::Working, "2026-01-01T00:00:00Z", Some(60_000)));
/// let json = serde_json::to_value(&r).unwrap();
/// assert_eq!(json["resultType"], "task");
/// assert_eq!(json["taskId"], "t1");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateTaskResult {
    /// Always [`ResultType::Task`].
    pub result_type: ResultType,
    /// The task.
    #[serde(flatten)]
    pub task: Task,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl CreateTaskResult {
    /// The result announcing `task`.
    pub fn new(task: Task) -> Self {
        CreateTaskResult {
            result_type: ResultType::Task,
            task,
            meta: None,
        }
    }
}

/// The result of `tasks/get`: `resultType: "complete"` and the [`DetailedTask`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskResult {
    /// Always [`ResultType::Complete`].
    #[serde(default)]
    pub result_type: ResultType,
    /// The task and its payload.
    #[serde(flatten)]
    pub task: DetailedTask,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Parameters of `tasks/get` and `tasks/cancel`.
///
/// ```
/// use toolwire_protocol::TaskIdParams;
/// let p: TaskIdParams = serde_json::from_str(r#"{"taskId":"t1"}"#).unwrap();
/// assert_eq!(p.task_id, "t1");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskIdParams {
    /// The task.
    pub task_id: String,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Parameters of `tasks/get`.
pub type GetTaskRequestParams = TaskIdParams;
/// Parameters of `tasks/cancel`.
pub type CancelTaskRequestParams = TaskIdParams;

/// Parameters of `tasks/update`: answers to the task's outstanding `inputRequests`.
///
/// ```
/// use toolwire_protocol::UpdateTaskRequestParams;
/// let p: UpdateTaskRequestParams = serde_json::from_str(
///     r#"{"taskId":"t1","inputResponses":{"name":{"action":"accept","content":{"name":"Luca"}}}}"#,
/// ).unwrap();
/// assert!(p.input_responses.contains_key("name"));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateTaskRequestParams {
    /// The task.
    pub task_id: String,
    /// Answers keyed like the task's `inputRequests`.
    pub input_responses: InputResponses,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// The result of `tasks/update` and `tasks/cancel`: an empty acknowledgement.
pub type TaskAckResult = crate::result::EmptyResult;

/// Params of `notifications/tasks`: the task as `tasks/get` would show it.
pub type TaskStatusNotificationParams = DetailedTask;

impl ClientCapabilities {
    /// True when the client declared the extension `id` under `extensions`.
    ///
    /// ```
    /// use toolwire_protocol::{ClientCapabilities, TASKS_EXTENSION};
    /// let caps: ClientCapabilities = serde_json::from_str(
    ///     r#"{"extensions":{"io.modelcontextprotocol/tasks":{}}}"#).unwrap();
    /// assert!(caps.declares_extension(TASKS_EXTENSION));
    /// assert!(!ClientCapabilities::default().declares_extension(TASKS_EXTENSION));
    /// ```
    pub fn declares_extension(&self, id: &str) -> bool {
        self.extensions
            .as_ref()
            .is_some_and(|extensions| extensions.contains_key(id))
    }
}

impl ErrorObject {
    /// -32021 naming a missing extension: `data.requiredCapabilities.extensions[id]` is `{}`.
    ///
    /// ```
    /// use toolwire_protocol::{ErrorObject, TASKS_EXTENSION};
    /// let e = ErrorObject::missing_extension(TASKS_EXTENSION);
    /// assert_eq!(e.code, -32021);
    /// assert!(e.data.unwrap()["requiredCapabilities"]["extensions"][TASKS_EXTENSION].is_object());
    /// ```
    pub fn missing_extension(id: &str) -> Self {
        ErrorObject::new(
            code::MISSING_REQUIRED_CLIENT_CAPABILITY,
            format!("Missing required client capability: extension {id}"),
        )
        .with_data(json!({"requiredCapabilities": {"extensions": {id: {}}}}))
    }

    /// -32602 for a `taskId` that is unknown (or belongs to someone else).
    ///
    /// ```
    /// let e = toolwire_protocol::ErrorObject::task_not_found();
    /// assert_eq!((e.code, e.message.as_str()), (-32602, "Failed to retrieve task: Task not found"));
    /// ```
    pub fn task_not_found() -> Self {
        ErrorObject::invalid_params("Failed to retrieve task: Task not found")
    }

    /// -32602 for a task whose time to live ran out.
    ///
    /// ```
    /// let e = toolwire_protocol::ErrorObject::task_expired();
    /// assert_eq!((e.code, e.message.as_str()), (-32602, "Failed to retrieve task: Task has expired"));
    /// ```
    pub fn task_expired() -> Self {
        ErrorObject::invalid_params("Failed to retrieve task: Task has expired")
    }
}
