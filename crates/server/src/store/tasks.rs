//! Where tasks live ([`TaskStore`]): the trait and the in-memory store.
//! A shared store (Redis) implements the same trait so that any instance
//! can answer `tasks/get`, `tasks/update` and `tasks/cancel` for a task
//! another instance runs.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use tokio::sync::broadcast;

use crate::store::task_record::{TaskRecord, now_ms};

/// Why a task store could not do what was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TaskStoreError {
    /// The owner already has the most unfinished tasks allowed.
    #[error("too many unfinished tasks (limit {limit})")]
    Full {
        /// The limit.
        limit: usize,
    },
    /// The store is not reachable (a shared store's backend is down).
    #[error("task store unavailable: {0}")]
    Unavailable(String),
}

/// What a lookup found.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskLookup {
    /// The task, as it is now.
    Found(Box<TaskRecord>),
    /// The task's time to live ran out; its state is forgotten.
    Expired,
    /// No task by that id belongs to that owner.
    Missing,
}

/// A change made by [`TaskStore::update`].
pub type TaskChange<'a> = Box<dyn FnOnce(&mut TaskRecord) + Send + 'a>;

/// Where tasks live. The default is [`InMemoryTaskStore`]; a store shared
/// by several instances implements this trait.
///
/// Every lookup names the owner (a principal's key): a store must treat a
/// task of another owner exactly like a missing one. A store applies the
/// record's rules when it reads one: past its time to live a task is
/// [`TaskLookup::Expired`] (and forgotten), and an unfinished task whose
/// worker's lease ran out is settled as `failed` ([`TaskRecord::settle`]).
/// `create` must be strongly consistent: once it returns, `get` finds the task.
pub trait TaskStore: Send + Sync + fmt::Debug + 'static {
    /// Stores a new task; fails with [`TaskStoreError::Full`] when its
    /// owner already has `max_unfinished_per_owner` unfinished, unexpired tasks.
    fn create<'a>(
        &'a self,
        record: TaskRecord,
        max_unfinished_per_owner: usize,
    ) -> BoxFuture<'a, Result<(), TaskStoreError>>;

    /// The task `id` of `owner`.
    fn get<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
    ) -> BoxFuture<'a, Result<TaskLookup, TaskStoreError>>;

    /// Runs `change` on the task `id` of `owner` (when found) and returns
    /// it as changed; watchers of the task are told.
    fn update<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
        change: TaskChange<'a>,
    ) -> BoxFuture<'a, Result<TaskLookup, TaskStoreError>>;

    /// Every later change of the tasks `ids`, as the changed record. A slow
    /// watcher may miss changes: it reads the task again when it must know.
    fn watch(&self, ids: Vec<String>) -> BoxStream<'static, TaskRecord>;
}

/// How long an expired task is remembered as expired (then: unknown).
const EXPIRED_KEPT_MS: u64 = 10 * 60 * 1000;

enum Slot {
    Live(Box<TaskRecord>),
    /// Expired at `at`; only the owner is kept.
    Expired {
        owner: String,
        at: u64,
    },
}

#[derive(Default)]
struct Table {
    slots: HashMap<String, Slot>,
    by_owner: HashMap<String, HashSet<String>>,
    creates: usize,
}

/// Tasks in this process's memory. Its worker never dies without it, so a
/// lease never runs out here unless the worker hangs; the rule is the
/// same as a shared store's.
///
/// ```
/// # tokio_test_block_on(async {
/// use toolwire_server::{InMemoryTaskStore, TaskLookup, TaskRecord, TaskStore};
/// let store = InMemoryTaskStore::new();
/// let now = 1_000_000;
/// let record = TaskRecord::new("t1", "s:alice", "build", now, None, 500, u64::MAX / 2);
/// store.create(record, 10).await.unwrap();
/// assert!(matches!(store.get("t1", "s:alice").await.unwrap(), TaskLookup::Found(_)));
/// assert_eq!(store.get("t1", "s:bob").await.unwrap(), TaskLookup::Missing);
/// # });
/// # fn tokio_test_block_on<F: std::future::Future>(f: F) -> F::Output {
/// #     tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
/// # }
/// ```
pub struct InMemoryTaskStore {
    table: Mutex<Table>,
    changes: broadcast::Sender<Arc<TaskRecord>>,
    clock: fn() -> u64,
}

impl fmt::Debug for InMemoryTaskStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let len = self.table.lock().map_or(0, |t| t.slots.len());
        f.debug_struct("InMemoryTaskStore")
            .field("tasks", &len)
            .finish()
    }
}

impl Default for InMemoryTaskStore {
    fn default() -> Self {
        InMemoryTaskStore::with_clock(now_ms)
    }
}

impl InMemoryTaskStore {
    /// An empty store.
    pub fn new() -> Self {
        InMemoryTaskStore::default()
    }

    /// An empty store reading the time (milliseconds since the Unix epoch)
    /// from `clock`, for tests.
    pub fn with_clock(clock: fn() -> u64) -> Self {
        InMemoryTaskStore {
            table: Mutex::new(Table::default()),
            changes: broadcast::channel(1024).0,
            clock,
        }
    }

    /// Tasks held (expired ones still remembered included).
    pub fn len(&self) -> usize {
        self.table.lock().map_or(0, |t| t.slots.len())
    }

    /// True when no task is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Looks `id` up for `owner` at `now`, applying expiry and the lease
    /// rule; `change` runs on a found record. Returns the lookup and
    /// whether the record changed (to be published).
    fn lookup(&self, id: &str, owner: &str, change: Option<TaskChange<'_>>) -> (TaskLookup, bool) {
        let now = (self.clock)();
        let mut table = self.table.lock().expect("task table lock");
        let table = &mut *table;
        let Some(slot) = table.slots.get_mut(id) else {
            return (TaskLookup::Missing, false);
        };
        let record = match slot {
            Slot::Expired { owner: o, .. } if o == owner => return (TaskLookup::Expired, false),
            Slot::Expired { .. } => return (TaskLookup::Missing, false),
            Slot::Live(record) if record.owner != owner => return (TaskLookup::Missing, false),
            Slot::Live(record) => record,
        };
        if record.is_expired(now) {
            *slot = Slot::Expired {
                owner: owner.to_owned(),
                at: now,
            };
            return (TaskLookup::Expired, false);
        }
        let mut changed = record.settle(now);
        if let Some(change) = change {
            change(record);
            changed = true;
        }
        (TaskLookup::Found(record.clone()), changed)
    }

    fn publish(&self, lookup: &TaskLookup, changed: bool) {
        if let (TaskLookup::Found(record), true) = (lookup, changed) {
            let _ = self.changes.send(Arc::new((**record).clone()));
        }
    }
}

impl Table {
    /// Forgets expired tasks that have been remembered long enough, and
    /// marks expired the live ones whose time ran out.
    fn sweep(&mut self, now: u64) {
        let mut gone = Vec::new();
        for (id, slot) in &mut self.slots {
            match slot {
                Slot::Live(record) if record.is_expired(now) => {
                    *slot = Slot::Expired {
                        owner: record.owner.clone(),
                        at: now,
                    };
                }
                Slot::Expired { owner, at } if now.saturating_sub(*at) >= EXPIRED_KEPT_MS => {
                    gone.push((id.clone(), owner.clone()));
                }
                _ => {}
            }
        }
        for (id, owner) in gone {
            self.slots.remove(&id);
            if let Some(ids) = self.by_owner.get_mut(&owner) {
                ids.remove(&id);
                if ids.is_empty() {
                    self.by_owner.remove(&owner);
                }
            }
        }
    }

    /// The owner's tasks that are neither finished nor expired at `now`.
    fn unfinished(&self, owner: &str, now: u64) -> usize {
        let Some(ids) = self.by_owner.get(owner) else {
            return 0;
        };
        ids.iter()
            .filter(|id| match self.slots.get(*id) {
                Some(Slot::Live(r)) => {
                    !r.status.is_terminal() && !r.is_expired(now) && !r.lease_lapsed(now)
                }
                _ => false,
            })
            .count()
    }
}

impl TaskStore for InMemoryTaskStore {
    fn create<'a>(
        &'a self,
        record: TaskRecord,
        max_unfinished_per_owner: usize,
    ) -> BoxFuture<'a, Result<(), TaskStoreError>> {
        let now = (self.clock)();
        let mut table = self.table.lock().expect("task table lock");
        table.creates += 1;
        if table.creates % 64 == 0 {
            table.sweep(now);
        }
        let result = if table.unfinished(&record.owner, now) >= max_unfinished_per_owner {
            Err(TaskStoreError::Full {
                limit: max_unfinished_per_owner,
            })
        } else {
            table
                .by_owner
                .entry(record.owner.clone())
                .or_default()
                .insert(record.id.clone());
            table
                .slots
                .insert(record.id.clone(), Slot::Live(Box::new(record)));
            Ok(())
        };
        futures::future::ready(result).boxed()
    }

    fn get<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
    ) -> BoxFuture<'a, Result<TaskLookup, TaskStoreError>> {
        let (lookup, changed) = self.lookup(id, owner, None);
        self.publish(&lookup, changed);
        futures::future::ready(Ok(lookup)).boxed()
    }

    fn update<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
        change: TaskChange<'a>,
    ) -> BoxFuture<'a, Result<TaskLookup, TaskStoreError>> {
        let (lookup, changed) = self.lookup(id, owner, Some(change));
        self.publish(&lookup, changed);
        futures::future::ready(Ok(lookup)).boxed()
    }

    fn watch(&self, ids: Vec<String>) -> BoxStream<'static, TaskRecord> {
        watch_changes(self.changes.subscribe(), ids)
    }
}

/// The records `changes` carries for the tasks `ids`: what a store's
/// [`TaskStore::watch`] gives when its changes travel on a broadcast
/// channel. A slow watcher misses changes (it reads the task again).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use futures::StreamExt;
/// let (tx, rx) = tokio::sync::broadcast::channel(8);
/// let mut watched = toolwire_server::watch_changes(rx, vec!["b".into()]);
/// for id in ["a", "b"] {
///     let record = toolwire_server::TaskRecord::new(id, "", "tool", 0, None, 100, 1_000);
///     tx.send(std::sync::Arc::new(record)).unwrap();
/// }
/// assert_eq!(watched.next().await.unwrap().id, "b");
/// # }
/// ```
pub fn watch_changes(
    changes: broadcast::Receiver<Arc<TaskRecord>>,
    ids: Vec<String>,
) -> BoxStream<'static, TaskRecord> {
    let ids: HashSet<String> = ids.into_iter().collect();
    let changes = futures::stream::unfold(changes, |mut rx| async move {
        loop {
            match rx.recv().await {
                Ok(record) => return Some((record, rx)),
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    });
    changes
        .filter_map(move |record| {
            let wanted = ids.contains(&record.id).then(|| (*record).clone());
            futures::future::ready(wanted)
        })
        .boxed()
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use toolwire_protocol::TaskStatus;

    use super::*;

    static NOW: AtomicU64 = AtomicU64::new(1_000);

    fn clock() -> u64 {
        NOW.load(Ordering::SeqCst)
    }

    fn found(lookup: TaskLookup) -> TaskRecord {
        match lookup {
            TaskLookup::Found(record) => *record,
            other => panic!("expected a task, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn expiry_lease_and_cap() {
        let store = InMemoryTaskStore::with_clock(clock);
        let task = |id: &str| TaskRecord::new(id, "s:a", "x", clock(), Some(10_000), 100, 1_000);
        store.create(task("a"), 2).await.unwrap();
        store.create(task("b"), 2).await.unwrap();
        assert_eq!(
            store.create(task("c"), 2).await,
            Err(TaskStoreError::Full { limit: 2 })
        );
        // A finished task no longer counts.
        store
            .update(
                "a",
                "s:a",
                Box::new(|r| r.finish(TaskStatus::Completed, None, 1_000)),
            )
            .await
            .unwrap();
        store.create(task("c"), 2).await.unwrap();
        // Another owner sees nothing.
        assert_eq!(store.get("b", "s:z").await.unwrap(), TaskLookup::Missing);
        // b's worker stops renewing: after the lease, b is failed.
        NOW.store(2_001, Ordering::SeqCst);
        let b = found(store.get("b", "s:a").await.unwrap());
        assert_eq!(b.status, TaskStatus::Failed);
        assert_eq!(b.error.unwrap().code, -32603);
        // Past the time to live: expired for the owner, unknown to others.
        NOW.store(11_000, Ordering::SeqCst);
        assert_eq!(store.get("a", "s:a").await.unwrap(), TaskLookup::Expired);
        assert_eq!(store.get("a", "s:z").await.unwrap(), TaskLookup::Missing);
        assert_eq!(
            store.update("a", "s:a", Box::new(|_| {})).await.unwrap(),
            TaskLookup::Expired
        );
    }

    #[tokio::test]
    async fn watchers_see_changes_of_their_tasks() {
        let store = InMemoryTaskStore::new();
        let now = now_ms();
        for id in ["w1", "w2"] {
            let record = TaskRecord::new(id, "", "x", now, None, 100, 60_000);
            store.create(record, 10).await.unwrap();
        }
        let mut watch = store.watch(vec!["w2".into()]);
        for id in ["w1", "w2"] {
            let change: TaskChange<'_> = Box::new(|r| r.finish(TaskStatus::Cancelled, None, now));
            store.update(id, "", change).await.unwrap();
        }
        let seen = watch.next().await.unwrap();
        assert_eq!(
            (seen.id.as_str(), seen.status),
            ("w2", TaskStatus::Cancelled)
        );
    }
}
