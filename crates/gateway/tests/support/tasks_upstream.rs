//! The upstream of `tests/tasks.rs`: a toolwire server on loopback HTTP
//! whose tools run as upstream tasks or not, with a task store that keeps
//! the ids of the tasks it made, and probes on its slow tools.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use toolwire_server::protocol::ElicitValue;
use toolwire_server::{
    InMemoryTaskStore, NoArgs, RequestContext, Server, TaskChange, TaskLookup, TaskRecord,
    TaskStore, TaskStoreError, TaskSupport, ToolBuilder, ToolError,
};

/// What `report` answers, after 100 ms.
pub const REPORT: &str = "report: 42 pages";

/// A slow tool's cancellation token, kept when its handler starts. The
/// token is what tells: a handler run inline on a plain HTTP request is
/// dropped with the request once its token has fired, and never sees it.
#[derive(Debug, Default)]
pub struct Probe {
    token: Mutex<Option<CancellationToken>>,
}

impl Probe {
    /// Waits (up to 5 s) until the handler started.
    pub async fn started(&self) -> bool {
        self.until(|token| token.is_some()).await
    }

    /// Waits (up to 5 s) until the handler's token fired.
    pub async fn cancelled(&self) -> bool {
        self.until(|token| token.is_some_and(CancellationToken::is_cancelled))
            .await
    }

    pub fn is_cancelled(&self) -> bool {
        let token = self.token.lock().unwrap();
        token.as_ref().is_some_and(CancellationToken::is_cancelled)
    }

    async fn until(&self, test: impl Fn(Option<&CancellationToken>) -> bool) -> bool {
        for _ in 0..250 {
            if test(self.token.lock().unwrap().as_ref()) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }
}

/// The upstream's task store, remembering every task it created (id and
/// owner) and how often each was read, so that a test can see the
/// upstream's side.
#[derive(Debug, Default)]
pub struct Recording {
    inner: InMemoryTaskStore,
    created: Mutex<Vec<(String, String)>>,
    reads: Mutex<HashMap<String, usize>>,
}

impl Recording {
    pub fn created(&self) -> Vec<(String, String)> {
        self.created.lock().unwrap().clone()
    }

    /// The status of the upstream task `(id, owner)`.
    async fn status(&self, (id, owner): &(String, String)) -> String {
        match self.inner.get(id, owner).await.unwrap() {
            TaskLookup::Found(record) => serde_json::to_value(record.status)
                .unwrap()
                .as_str()
                .unwrap()
                .to_owned(),
            other => format!("{other:?}"),
        }
    }

    /// The id of the first task made upstream, once there is one (within 5 s).
    pub async fn until_created(&self) -> String {
        for _ in 0..250 {
            if let Some((id, _)) = self.created().first() {
                return id.clone();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("no upstream task was made");
    }

    /// Waits (up to 5 s) until a request named the upstream task `id`
    /// (`tasks/get`, or `subscriptions/listen` with its id), that is until
    /// the gateway's client follows it: its worker reads it once before it
    /// runs the handler, any other read comes from such a request. A call
    /// cancelled before its client has the id cannot cancel the task.
    pub async fn until_followed(&self, id: &str) {
        for _ in 0..250 {
            if self.reads.lock().unwrap().get(id).copied().unwrap_or(0) >= 2 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("nothing asked for upstream task {id}");
    }

    /// Waits (up to 5 s) until the upstream task has `status`.
    pub async fn until_status(&self, task: &(String, String), status: &str) {
        for _ in 0..250 {
            if self.status(task).await == status {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!(
            "upstream task {} stayed {}",
            task.0,
            self.status(task).await
        );
    }
}

impl TaskStore for Recording {
    fn create<'a>(
        &'a self,
        record: TaskRecord,
        max: usize,
    ) -> BoxFuture<'a, Result<(), TaskStoreError>> {
        let entry = (record.id.clone(), record.owner.clone());
        self.created.lock().unwrap().push(entry);
        self.inner.create(record, max)
    }

    fn get<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
    ) -> BoxFuture<'a, Result<TaskLookup, TaskStoreError>> {
        *self.reads.lock().unwrap().entry(id.to_owned()).or_default() += 1;
        self.inner.get(id, owner)
    }

    fn update<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
        change: TaskChange<'a>,
    ) -> BoxFuture<'a, Result<TaskLookup, TaskStoreError>> {
        self.inner.update(id, owner, change)
    }

    fn watch(&self, ids: Vec<String>) -> BoxStream<'static, TaskRecord> {
        self.inner.watch(ids)
    }
}

/// A tool that waits for its cancellation (at most 60 s), noting it in `probe`.
fn slow(name: &str, support: TaskSupport, probe: Arc<Probe>) -> ToolBuilder {
    ToolBuilder::new(name)
        .task_support(support)
        .handler(move |_: NoArgs, cx: RequestContext| {
            let probe = Arc::clone(&probe);
            async move {
                *probe.token.lock().unwrap() = Some(cx.cancellation().clone());
                tokio::select! {
                    () = cx.cancellation().cancelled() => "stopped",
                    () = tokio::time::sleep(Duration::from_secs(60)) => "slow done",
                }
            }
        })
}

/// A tool that asks the user's name and greets them.
fn ask(name: &str, support: TaskSupport) -> ToolBuilder {
    ToolBuilder::new(name)
        .task_support(support)
        .handler(|_: NoArgs, cx: RequestContext| async move {
            let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]});
            let answer = cx.elicit_form("name", "Your name?", schema)?;
            let name = match answer.content.as_ref().and_then(|c| c.get("name")) {
                Some(ElicitValue::String(name)) => name.clone(),
                _ => String::new(),
            };
            Ok::<_, ToolError>(format!("Hello, {name}!"))
        })
}

/// The upstream: its tools, its task store, its URL.
pub struct Upstream {
    pub url: String,
    pub store: Arc<Recording>,
    pub slow: Arc<Probe>,
    pub slow_plain: Arc<Probe>,
}

/// Tools that run as upstream tasks (`report`, `slow`, `ask`) and ones
/// that never do (`slow_plain`, `ask_plain`), plus `secret` and `hidden`
/// for the gateway's policy.
pub async fn upstream() -> Upstream {
    let store = Arc::new(Recording::default());
    let (probe, probe_plain) = (Arc::new(Probe::default()), Arc::new(Probe::default()));
    let server = Server::builder("upstream", "1")
        .task_store(store.clone())
        .task_poll_interval(Duration::from_millis(20))
        .tool(
            ToolBuilder::new("report")
                .task_support(TaskSupport::Optional)
                .handler(|_: NoArgs, _cx: RequestContext| async {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    REPORT
                }),
        )
        .tool(slow("slow", TaskSupport::Optional, Arc::clone(&probe)))
        .tool(slow(
            "slow_plain",
            TaskSupport::Never,
            Arc::clone(&probe_plain),
        ))
        .tool(ask("ask", TaskSupport::Optional))
        .tool(ask("ask_plain", TaskSupport::Never))
        .tool(ToolBuilder::new("secret").handler(|_: NoArgs, _cx: RequestContext| async { "s" }))
        .tool(ToolBuilder::new("hidden").handler(|_: NoArgs, _cx: RequestContext| async { "h" }))
        .build()
        .unwrap();
    Upstream {
        url: super::support::serve(server).await,
        store,
        slow: probe,
        slow_plain: probe_plain,
    }
}
