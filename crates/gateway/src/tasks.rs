//! The gateway's own tasks (the Tasks extension, SEP-2663).
//!
//! Every forwarded tool supports tasks ([`toolwire_server::TaskSupport::Optional`]):
//! a `tools/call` that declares `io.modelcontextprotocol/tasks` gets a task of the
//! gateway's server (its own unguessable id, bound to the caller, in the gateway's
//! task store), and the forwarding handler runs in that task's worker. The upstream
//! call (the gateway's client) follows an upstream task by itself, so a downstream
//! client only ever sees the gateway's task ids. When the upstream asks for input,
//! the call is parked ([`crate::bridge`]) and the gateway task waits in
//! `input_required`; `tasks/update` runs the handler again, which resumes the
//! parked call with the answers.
//!
//! One thing the server's worker cannot do for the gateway: a task cancelled
//! while it waits for input has no handler running, so nothing would cancel the
//! upstream call parked for it. [`TaskEnds`] wraps the task store and releases
//! that call as soon as a record shows the task ended.

use std::sync::Arc;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use toolwire_server::{TaskLookup, TaskRecord, TaskStore, TaskStoreError};

use crate::bridge::ParkedRequests;

/// The gateway's task store: `inner`, watched for tasks that end while
/// their upstream call is parked.
#[derive(Debug)]
pub(crate) struct TaskEnds {
    inner: Arc<dyn TaskStore>,
    parked: Arc<ParkedRequests>,
}

impl TaskEnds {
    pub(crate) fn new(inner: Arc<dyn TaskStore>, parked: Arc<ParkedRequests>) -> TaskEnds {
        TaskEnds { inner, parked }
    }

    fn looked(&self, looked: &Result<TaskLookup, TaskStoreError>) {
        if let Ok(TaskLookup::Found(record)) = looked {
            seen(&self.parked, record);
        }
    }
}

/// Releases the call parked for `record`'s task once the task has ended
/// (a call still parked then is cancelled upstream; one resumed already is
/// not parked any more).
fn seen(parked: &ParkedRequests, record: &TaskRecord) {
    if record.status.is_terminal()
        && let Some(state) = &record.handler_state
    {
        parked.release_call(state);
    }
}

impl TaskStore for TaskEnds {
    fn create<'a>(
        &'a self,
        record: TaskRecord,
        max_unfinished_per_owner: usize,
    ) -> BoxFuture<'a, Result<(), TaskStoreError>> {
        self.inner.create(record, max_unfinished_per_owner)
    }

    fn get<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
    ) -> BoxFuture<'a, Result<TaskLookup, TaskStoreError>> {
        async move {
            let looked = self.inner.get(id, owner).await;
            self.looked(&looked);
            looked
        }
        .boxed()
    }

    fn update<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
        change: toolwire_server::TaskChange<'a>,
    ) -> BoxFuture<'a, Result<TaskLookup, TaskStoreError>> {
        async move {
            let looked = self.inner.update(id, owner, change).await;
            self.looked(&looked);
            looked
        }
        .boxed()
    }

    /// The worker of a task watches it: with a shared store, a cancel sent
    /// to another instance reaches the instance that holds the parked call
    /// this way.
    fn watch(&self, ids: Vec<String>) -> BoxStream<'static, TaskRecord> {
        let parked = Arc::clone(&self.parked);
        self.inner
            .watch(ids)
            .inspect(move |record| seen(&parked, record))
            .boxed()
    }
}
