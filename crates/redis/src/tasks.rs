//! [`RedisTaskStore`]: the task table of the Tasks extension in Redis, so
//! that any instance answers `tasks/get`, `tasks/update` and `tasks/cancel`
//! for a task another instance runs.

use std::mem;
use std::sync::{Arc, LazyLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use redis::{Script, Value};
use serde::Deserialize;
use tokio::sync::{broadcast, mpsc};
use tokio::task::AbortHandle;
use tokio::time::Instant;
use toolwire_server::{TaskChange, TaskLookup, TaskRecord, TaskStore, TaskStoreError};

use crate::connection::{Failure, RedisConnection};
use crate::keys::{TaskKeys, task_keys};
use crate::lock::{LOCK_LEASE, LOCK_WAIT, pause, release_in_background};
use crate::subscriber::{self, listen_for_ever, publish_queued};

static CREATE: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/task_create.lua")));
static ACQUIRE: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/task_acquire.lua")));
static WRITE: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("lua/task_write.lua")));

/// How long an expired task is remembered as expired (then: unknown), as
/// in memory: its key outlives its time to live by this much.
pub const EXPIRED_KEPT: Duration = Duration::from_secs(10 * 60);

/// Changes waiting to be sent to Redis; past it new ones are not sent
/// (local watchers still hear them).
const OUTGOING_BUFFER: usize = 1024;

/// Attempts to take a busy lock, at most (the wait bounds them first).
const MAX_ATTEMPTS: u32 = 2000;

/// The task table in Redis, shared by every instance on the same Redis and
/// key prefix: a task created on one instance is read, answered and
/// cancelled on any, with the in-memory store's rules.
///
/// * A task is a hash `{prefix}task:{o:OWNER}:id:ID` holding its record as
///   JSON (`record`). The owner is part of the key: another principal's
///   lookup names another key and finds nothing (the unknown-task answer).
///   The key expires `ttlMs` + 10 min ([`EXPIRED_KEPT`]) after the task's
///   creation: past `ttlMs` the task reads as expired, 10 min later as
///   unknown. A task without a time to live has no expiry.
/// * The owner's unfinished tasks are a sorted set
///   `{prefix}task:{o:OWNER}:live`, scored by the last millisecond each
///   counts (its worker's lease end, or its expiry if sooner): the cap
///   per principal holds across instances, and a task whose worker died
///   stops counting once its lease ran out. `create` is one script call:
///   drop the stale ids, count, store.
/// * `update` is two script calls, as for state handles: one locks the
///   task and reads it, the change runs here, the other writes it and
///   unlocks (only if the lock is still this call's) and keeps the owner's
///   set right. Concurrent updates of one task, on any instances, wait for
///   each other (at most 3 s); none is lost. A lock's lease is 2 s, so a
///   crashed instance holds nobody up for long.
/// * `get` is one `HGET`. A task that is not finished and whose worker's
///   lease ran out (its instance died) is settled as `failed` with the
///   record's error ([`TaskRecord::settle`]) by an update, on whichever
///   instance reads it first: never stuck in `working`.
/// * Every change is published on `{prefix}tasks` as
///   `{"from":"<instance>","task":{record}}`; each instance hears the
///   others' and tells its watchers ([`TaskStore::watch`]), so that a
///   worker on one instance hears `tasks/update` and `tasks/cancel` sent to
///   another, and `notifications/tasks` reach listeners on any instance.
///   Messages missed during an outage are lost: a worker reads its task
///   again at each lease renewal.
///
/// Times (creation, lease, expiry) are the instances' clocks, as the
/// records carry them: keep the instances' clocks in sync (NTP).
///
/// While Redis is unreachable every method fails closed with
/// [`TaskStoreError::Unavailable`], naming Redis and its address (a call
/// cannot start a task; `tasks/get` answers an internal error). A record
/// that does not decode fails the same way.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use toolwire_redis::{RedisConfig, RedisTaskStore};
/// use toolwire_server::Server;
///
/// let redis = RedisConfig::new("redis://127.0.0.1:6379").connect().await?;
/// let server = Server::builder("builds", "1.0.0")
///     .task_store(Arc::new(RedisTaskStore::new(&redis)))
///     .build()?;
/// # drop(server);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct RedisTaskStore {
    redis: RedisConnection,
    local: broadcast::Sender<Arc<TaskRecord>>,
    id: Arc<str>,
    channel: String,
    outgoing: mpsc::Sender<String>,
    subscriber: AbortHandle,
    clock: fn() -> u64,
}

impl RedisTaskStore {
    /// A store on `redis`, listening on `{prefix}tasks` in the background.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime: it spawns its two tasks.
    pub fn new(redis: &RedisConnection) -> Self {
        RedisTaskStore::with_clock(redis, now_ms)
    }

    /// A store reading the time (milliseconds since the Unix epoch) from
    /// `clock`, for tests.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime: it spawns its two tasks.
    pub fn with_clock(redis: &RedisConnection, clock: fn() -> u64) -> Self {
        let (local, _) = broadcast::channel(1024);
        let id: Arc<str> = Arc::from(format!("{:016x}", rand::random::<u64>()));
        let channel = format!("{}tasks", redis.key_prefix());
        let (outgoing, queue) = mpsc::channel(OUTGOING_BUFFER);
        let what = "task changes";
        tokio::spawn(publish_queued(redis.clone(), channel.clone(), queue, what));
        let listener = Arc::new(Listener {
            id: id.clone(),
            local: local.clone(),
        });
        let subscriber = tokio::spawn(listen_for_ever(redis.clone(), channel.clone(), listener));
        RedisTaskStore {
            redis: redis.clone(),
            local,
            id,
            channel,
            outgoing,
            subscriber: subscriber.abort_handle(),
            clock,
        }
    }

    /// The pub/sub channel: `{prefix}tasks`.
    pub fn channel(&self) -> &str {
        &self.channel
    }

    /// The random id this instance tags its messages with.
    pub fn instance_id(&self) -> &str {
        &self.id
    }

    fn keys(&self, owner: &str, id: &str) -> TaskKeys {
        task_keys(self.redis.key_prefix(), owner, id)
    }

    fn decode(&self, id: &str, json: &[u8]) -> Result<TaskRecord, TaskStoreError> {
        serde_json::from_slice(json).map_err(|e| {
            let detail = format!("the record of task {id} does not decode: {e}");
            unavailable(self.redis.failure(&detail))
        })
    }

    async fn create_task(&self, record: TaskRecord, max: usize) -> Result<(), TaskStoreError> {
        let now = (self.clock)();
        let keys = self.keys(&record.owner, &record.id);
        let json = serde_json::to_vec(&record).expect("a task record serializes");
        let key_ttl = record.ttl_ms.map_or(0, |ttl| {
            let end = record
                .created_at_ms
                .saturating_add(ttl)
                .saturating_add(millis(EXPIRED_KEPT));
            end.saturating_sub(now).clamp(1, MAX_MILLIS)
        });
        let mut invocation = CREATE.key(&keys.task);
        invocation.key(&keys.live).arg(&record.id).arg(json);
        invocation
            .arg(now)
            .arg(max)
            .arg(score(&record).unwrap_or(now));
        invocation.arg(key_ttl);
        match self.redis.invoke::<i64>(&invocation).await {
            Ok(1) => Ok(()),
            Ok(_) => Err(TaskStoreError::Full { limit: max }),
            Err(failure) => Err(unavailable(failure)),
        }
    }

    async fn get_task(&self, id: &str, owner: &str) -> Result<TaskLookup, TaskStoreError> {
        let keys = self.keys(owner, id);
        let mut command = redis::cmd("HGET");
        command.arg(&keys.task).arg("record");
        let json: Option<Vec<u8>> = self.redis.query(&command).await.map_err(unavailable)?;
        let Some(json) = json else {
            return Ok(TaskLookup::Missing);
        };
        let record = self.decode(id, &json)?;
        let now = (self.clock)();
        if record.owner != owner {
            return Ok(TaskLookup::Missing);
        }
        if record.is_expired(now) {
            return Ok(TaskLookup::Expired);
        }
        if record.lease_lapsed(now) {
            // Its worker died: settle it (under the lock, once) for everyone.
            return self.update_task(id, owner, None).await;
        }
        Ok(TaskLookup::Found(Box::new(record)))
    }

    async fn update_task(
        &self,
        id: &str,
        owner: &str,
        change: Option<TaskChange<'_>>,
    ) -> Result<TaskLookup, TaskStoreError> {
        let keys = self.keys(owner, id);
        let Some((json, guard)) = self.acquire(&keys, id).await.map_err(unavailable)? else {
            return Ok(TaskLookup::Missing);
        };
        let mut record = self.decode(id, &json)?;
        let now = (self.clock)();
        if record.owner != owner {
            return Ok(TaskLookup::Missing);
        }
        if record.is_expired(now) {
            return Ok(TaskLookup::Expired);
        }
        let mut changed = record.settle(now);
        if let Some(change) = change {
            change(&mut record);
            changed = true;
        }
        if !changed {
            return Ok(TaskLookup::Found(Box::new(record)));
        }
        let json = serde_json::to_vec(&record).expect("a task record serializes");
        let score = score(&record).map_or(-1, |s| i64::try_from(s).unwrap_or(i64::MAX));
        if !guard.write(&json, now, score).await.map_err(unavailable)? {
            let detail = format!("task {id} was locked by another update for too long");
            return Err(unavailable(self.redis.failure(&detail)));
        }
        self.publish(&record, json);
        Ok(TaskLookup::Found(Box::new(record)))
    }

    /// Locks task `keys` and reads it: `None` when there is no such task;
    /// waits while another update holds it.
    async fn acquire(
        &self,
        keys: &TaskKeys,
        id: &str,
    ) -> Result<Option<(Vec<u8>, Guard)>, Failure> {
        let token = format!("{:032x}", rand::random::<u128>());
        let deadline = Instant::now() + LOCK_WAIT;
        for attempt in 0..MAX_ATTEMPTS {
            let mut invocation = ACQUIRE.key(&keys.task);
            invocation.arg(&token).arg(millis(LOCK_LEASE));
            match self.redis.invoke::<Value>(&invocation).await? {
                Value::BulkString(json) => {
                    let guard = Guard {
                        redis: self.redis.clone(),
                        keys: keys.clone(),
                        id: id.to_owned(),
                        token,
                        held: true,
                    };
                    return Ok(Some((json, guard)));
                }
                Value::Nil | Value::Boolean(false) => return Ok(None),
                Value::Int(_) if Instant::now() >= deadline => break,
                Value::Int(wait_ms) => tokio::time::sleep(pause(attempt, wait_ms)).await,
                other => {
                    let detail = format!("unexpected script reply {other:?}");
                    return Err(self.redis.failure(&detail));
                }
            }
        }
        let detail = format!("task {id} stayed locked by another update for {LOCK_WAIT:?}");
        Err(self.redis.failure(&detail))
    }

    /// Tells this instance's watchers at once, the others' through Redis.
    fn publish(&self, record: &TaskRecord, json: Vec<u8>) {
        let _ = self.local.send(Arc::new(record.clone()));
        let message = wire_out(&self.id, &json);
        if self.outgoing.try_send(message).is_err() {
            tracing::debug!("task change not sent to other instances: the outgoing queue is full");
        }
    }
}

impl Drop for RedisTaskStore {
    fn drop(&mut self) {
        self.subscriber.abort();
    }
}

impl TaskStore for RedisTaskStore {
    fn create<'a>(
        &'a self,
        record: TaskRecord,
        max_unfinished_per_owner: usize,
    ) -> BoxFuture<'a, Result<(), TaskStoreError>> {
        Box::pin(self.create_task(record, max_unfinished_per_owner))
    }

    fn get<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
    ) -> BoxFuture<'a, Result<TaskLookup, TaskStoreError>> {
        Box::pin(self.get_task(id, owner))
    }

    fn update<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
        change: TaskChange<'a>,
    ) -> BoxFuture<'a, Result<TaskLookup, TaskStoreError>> {
        Box::pin(self.update_task(id, owner, Some(change)))
    }

    fn watch(&self, ids: Vec<String>) -> BoxStream<'static, TaskRecord> {
        toolwire_server::watch_changes(self.local.subscribe(), ids)
    }
}

/// The lock of one task; dropped without [`Guard::write`] (an error, a
/// task that needed no change, a cancelled request), it gives the lock
/// back from a spawned task.
struct Guard {
    redis: RedisConnection,
    keys: TaskKeys,
    id: String,
    token: String,
    held: bool,
}

impl Guard {
    /// Writes `json` and unlocks, if the lock is still this one's; keeps
    /// the owner's set of unfinished tasks (`score` -1: finished).
    async fn write(mut self, json: &[u8], now: u64, score: i64) -> Result<bool, Failure> {
        let mut invocation = WRITE.key(&self.keys.task);
        invocation
            .key(&self.keys.live)
            .arg(&self.id)
            .arg(&self.token);
        invocation.arg(json).arg(now).arg(score);
        let written: i64 = self.redis.invoke(&invocation).await?;
        self.held = false;
        Ok(written == 1)
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if !self.held {
            return;
        }
        let key = mem::take(&mut self.keys.task);
        let token = mem::take(&mut self.token);
        release_in_background(&self.redis, key, token, "task");
    }
}

/// The last millisecond at which an unfinished task counts against its
/// owner's cap (its lease's end, or just before its expiry if sooner);
/// `None` for a finished task.
fn score(record: &TaskRecord) -> Option<u64> {
    if record.status.is_terminal() {
        return None;
    }
    let expiry = record.ttl_ms.map_or(u64::MAX, |ttl| {
        record.created_at_ms.saturating_add(ttl).saturating_sub(1)
    });
    Some(record.lease_until_ms.min(expiry).min(MAX_SCORE))
}

/// Scores and times passed to Lua stay exact (below 2^53).
const MAX_SCORE: u64 = 1 << 52;

/// The longest key expiry passed to Redis, in ms (about 139 years).
const MAX_MILLIS: u64 = 1 << 42;

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// Milliseconds since the Unix epoch, now.
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn unavailable(failure: Failure) -> TaskStoreError {
    TaskStoreError::Unavailable(failure.0)
}

/// One message on the channel, as sent: `{"from":"<instance>","task":<record>}`.
fn wire_out(from: &str, record_json: &[u8]) -> String {
    let from = serde_json::to_string(from).expect("a string serializes");
    let task = String::from_utf8_lossy(record_json);
    format!(r#"{{"from":{from},"task":{task}}}"#)
}

/// One message on the channel, as received.
#[derive(Deserialize)]
struct WireIn {
    from: String,
    task: TaskRecord,
}

/// Hears other instances' task changes and tells this process's watchers.
struct Listener {
    id: Arc<str>,
    local: broadcast::Sender<Arc<TaskRecord>>,
}

impl subscriber::Listener for Listener {
    fn name(&self) -> &str {
        "task changes"
    }

    /// Nothing to catch up: a worker reads its task again at each lease
    /// renewal, a listener's client polls.
    async fn subscribed(&self, _missed: bool) -> Result<(), Failure> {
        Ok(())
    }

    fn receive(&self, payload: &[u8]) {
        match serde_json::from_slice::<WireIn>(payload) {
            Ok(wire) if *wire.from == *self.id => {}
            Ok(wire) => {
                let _ = self.local.send(Arc::new(wire.task));
            }
            Err(error) => {
                let message = String::from_utf8_lossy(payload);
                tracing::debug!(%error, %message, "ignored a message on the task channel");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use toolwire_server::protocol::TaskStatus;

    use super::*;

    #[test]
    fn unfinished_tasks_count_until_their_lease_or_expiry() {
        let mut record = TaskRecord::new("t", "s:a", "x", 1_000, Some(500), 100, 10_000);
        assert_eq!(score(&record), Some(1_499));
        record.ttl_ms = None;
        assert_eq!(score(&record), Some(11_000));
        record.finish(TaskStatus::Completed, None, 2_000);
        assert_eq!(score(&record), None);
    }

    #[test]
    fn messages_carry_the_record() {
        let record = TaskRecord::new("t", "s:a", "x", 1_000, None, 100, 10_000);
        let json = serde_json::to_vec(&record).unwrap();
        let out = wire_out("i1", &json);
        let back: WireIn = serde_json::from_str(&out).unwrap();
        assert_eq!((back.from.as_str(), back.task), ("i1", record));
    }
}
