//! `RedisTaskStore` against a real `redis-server`: the store itself (two
//! stores on two connections, as two instances hold them), then two
//! `toolwire_server::Server`s over Streamable HTTP on 127.0.0.1:0 sharing
//! it: a task created on A is read and answered on B, a foreign principal
//! gets the unknown-task error, the cap holds across both, expiry, and a
//! task whose worker died (its instance stopped) reads as `failed`.

mod support;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use redis::AsyncCommands;
use serde_json::{Value, json};
use support::{RedisServer, WAIT, eventually};
use toolwire_redis::RedisTaskStore;
use toolwire_server::auth::{AuthConfig, StaticTokens};
use toolwire_server::http::{HttpConfig, HttpServer};
use toolwire_server::protocol::{ElicitValue, Request, TaskStatus};
use toolwire_server::{
    NoArgs, Principal, RequestContext, Server, TaskLookup, TaskRecord, TaskStore, TaskStoreError,
    TaskSupport, ToolBuilder, ToolError,
};

const ALICE: &str = "alice-token-0123456789abcdef";
const BOB: &str = "bob-token-0123456789abcdef01";
const TASKS: &str = "io.modelcontextprotocol/tasks";

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fn found(lookup: TaskLookup) -> TaskRecord {
    match lookup {
        TaskLookup::Found(record) => *record,
        other => panic!("expected a task, got {other:?}"),
    }
}

fn task(id: &str, owner: &str, ttl_ms: Option<u64>, lease_ms: u64) -> TaskRecord {
    TaskRecord::new(id, owner, "build", now_ms(), ttl_ms, 100, lease_ms)
}

// ---------------------------------------------------------------- the store

#[tokio::test]
async fn a_task_created_on_one_store_is_read_and_updated_on_another() {
    let redis = RedisServer::start();
    let a = RedisTaskStore::new(&redis.connect().await);
    let b = RedisTaskStore::new(&redis.connect().await);
    a.create(task("t1", "s:alice", Some(60_000), 30_000), 10)
        .await
        .unwrap();
    let read = found(b.get("t1", "s:alice").await.unwrap());
    assert_eq!(read.status, TaskStatus::Working);
    // Another owner: unknown, for get and update alike.
    assert_eq!(b.get("t1", "s:bob").await.unwrap(), TaskLookup::Missing);
    assert_eq!(
        b.update("t1", "s:bob", Box::new(|r| r.cancel_requested = true))
            .await
            .unwrap(),
        TaskLookup::Missing
    );
    assert_eq!(b.get("nope", "s:alice").await.unwrap(), TaskLookup::Missing);
    // Stored as JSON under the owner's key, expiring ttl + 10 min after creation.
    let mut raw = redis.raw().await;
    let key = "toolwire:task:{o:s%3Aalice}:id:t1";
    let fields: Vec<String> = raw.hkeys(key).await.unwrap();
    assert_eq!(fields, ["record"]);
    let ttl: i64 = raw.pttl(key).await.unwrap();
    assert!((600_000..=660_000).contains(&ttl), "{ttl}");
    // A watcher on A hears B's change (pub/sub).
    let mut watch = a.watch(vec!["t1".into()]);
    tokio::time::sleep(Duration::from_millis(200)).await; // subscribed
    let changed = found(
        b.update(
            "t1",
            "s:alice",
            Box::new(|r| r.finish(TaskStatus::Completed, None, now_ms())),
        )
        .await
        .unwrap(),
    );
    assert_eq!(changed.status, TaskStatus::Completed);
    let heard = tokio::time::timeout(WAIT, watch.next()).await.unwrap();
    assert_eq!(heard.unwrap().status, TaskStatus::Completed);
    assert_eq!(
        found(a.get("t1", "s:alice").await.unwrap()).status,
        TaskStatus::Completed
    );
    // Finished: no longer in the owner's unfinished set; no lock left.
    let live: Vec<String> = raw
        .zrange("toolwire:task:{o:s%3Aalice}:live", 0, -1)
        .await
        .unwrap();
    assert!(live.is_empty(), "{live:?}");
    let fields: Vec<String> = raw.hkeys(key).await.unwrap();
    assert_eq!(fields, ["record"]);
}

#[tokio::test]
async fn the_cap_holds_across_stores_and_finished_or_dead_tasks_free_it() {
    let redis = RedisServer::start();
    let a = RedisTaskStore::new(&redis.connect().await);
    let b = RedisTaskStore::new(&redis.connect().await);
    a.create(task("c1", "s:a", None, 30_000), 2).await.unwrap();
    b.create(task("c2", "s:a", None, 30_000), 2).await.unwrap();
    assert_eq!(
        a.create(task("c3", "s:a", None, 30_000), 2).await,
        Err(TaskStoreError::Full { limit: 2 })
    );
    assert_eq!(
        b.create(task("c3", "s:a", None, 30_000), 2).await,
        Err(TaskStoreError::Full { limit: 2 })
    );
    // Another owner has its own allowance.
    b.create(task("c4", "s:b", None, 30_000), 2).await.unwrap();
    // A finished task no longer counts.
    b.update(
        "c1",
        "s:a",
        Box::new(|r| r.finish(TaskStatus::Cancelled, None, now_ms())),
    )
    .await
    .unwrap();
    a.create(task("c3", "s:a", None, 30_000), 2).await.unwrap();
    // A task whose worker stopped renewing stops counting once its lease is out.
    a.create(task("d1", "s:d", None, 200), 1).await.unwrap();
    assert!(a.create(task("d2", "s:d", None, 200), 1).await.is_err());
    tokio::time::sleep(Duration::from_millis(300)).await;
    b.create(task("d2", "s:d", None, 200), 1).await.unwrap();
}

#[tokio::test]
async fn a_lapsed_lease_reads_as_failed_on_any_store() {
    let redis = RedisServer::start();
    let a = RedisTaskStore::new(&redis.connect().await);
    let b = RedisTaskStore::new(&redis.connect().await);
    // Instance A's worker renews its lease once, then A dies.
    a.create(task("l1", "s:a", Some(60_000), 300), 10)
        .await
        .unwrap();
    let renewed = found(
        a.update("l1", "s:a", Box::new(|r| r.lease_until_ms = now_ms() + 300))
            .await
            .unwrap(),
    );
    assert_eq!(renewed.status, TaskStatus::Working);
    drop(a);
    assert_eq!(
        found(b.get("l1", "s:a").await.unwrap()).status,
        TaskStatus::Working
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    let failed = found(b.get("l1", "s:a").await.unwrap());
    assert_eq!(failed.status, TaskStatus::Failed);
    let error = failed.error.unwrap();
    assert_eq!(error.code, -32603);
    assert!(error.message.contains("lease ran out"), "{}", error.message);
    // Settled in Redis, not just in B's answer: a third store agrees.
    let c = RedisTaskStore::new(&redis.connect().await);
    let mut raw = redis.raw().await;
    let json: String = raw
        .hget("toolwire:task:{o:s%3Aa}:id:l1", "record")
        .await
        .unwrap();
    assert!(json.contains(r#""status":"failed""#), "{json}");
    assert_eq!(
        found(c.get("l1", "s:a").await.unwrap()).status,
        TaskStatus::Failed
    );
}

#[tokio::test]
async fn expired_tasks_read_as_expired_for_their_owner_only() {
    let redis = RedisServer::start();
    let a = RedisTaskStore::new(&redis.connect().await);
    a.create(task("e1", "s:a", Some(200), 30_000), 10)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(a.get("e1", "s:a").await.unwrap(), TaskLookup::Expired);
    assert_eq!(
        a.update("e1", "s:a", Box::new(|_| {})).await.unwrap(),
        TaskLookup::Expired
    );
    assert_eq!(a.get("e1", "s:z").await.unwrap(), TaskLookup::Missing);
    // The key's TTL is Redis's: once it is gone, the task is unknown.
    let mut raw = redis.raw().await;
    let key = "toolwire:task:{o:s%3Aa}:id:e1";
    let _: () = raw.pexpire(key, 1).await.unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(a.get("e1", "s:a").await.unwrap(), TaskLookup::Missing);
}

#[tokio::test]
async fn concurrent_updates_from_two_stores_are_all_kept() {
    let redis = RedisServer::start();
    let a = Arc::new(RedisTaskStore::new(&redis.connect().await));
    let b = Arc::new(RedisTaskStore::new(&redis.connect().await));
    a.create(task("u1", "s:a", None, 30_000), 10).await.unwrap();
    let mut runs = Vec::new();
    for i in 0..20 {
        let store = if i % 2 == 0 { a.clone() } else { b.clone() };
        runs.push(tokio::spawn(async move {
            let change = Box::new(move |r: &mut TaskRecord| {
                r.answers.insert(format!("k{i}"), json!(i));
            });
            store.update("u1", "s:a", change).await.unwrap();
        }));
    }
    for run in runs {
        run.await.unwrap();
    }
    assert_eq!(found(a.get("u1", "s:a").await.unwrap()).answers.len(), 20);
}

#[tokio::test]
async fn without_redis_the_store_fails_closed() {
    let mut redis = RedisServer::start();
    let a = RedisTaskStore::new(&redis.connect().await);
    a.create(task("x1", "s:a", None, 30_000), 10).await.unwrap();
    redis.kill();
    let error = a.get("x1", "s:a").await.unwrap_err();
    let TaskStoreError::Unavailable(text) = &error else {
        panic!("{error:?}")
    };
    assert!(text.starts_with("Redis at 127.0.0.1:"), "{text}");
    assert!(matches!(
        a.create(task("x2", "s:a", None, 30_000), 10).await,
        Err(TaskStoreError::Unavailable(_))
    ));
    // Back (empty): the store works again by itself.
    redis.restart();
    eventually("the store answers again", || async {
        a.create(task("x3", "s:a", None, 30_000), 10).await.is_ok()
    })
    .await;
}

// ---------------------------------------------------- two servers over HTTP

/// `_meta` of a 2026-07-28 request declaring the extension.
fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "extensions": {TASKS: {}}},
    })
}

fn request(method: &str, mut params: Value) -> Request {
    params["_meta"] = meta();
    let Value::Object(params) = params else {
        unreachable!()
    };
    Request::new(1, method, Some(params))
}

fn call(name: &str) -> Request {
    request("tools/call", json!({"name": name, "arguments": {}}))
}

fn task_request(method: &str, task_id: &str, extra: Value) -> Request {
    let mut params = json!({"taskId": task_id});
    if let (Value::Object(params), Value::Object(extra)) = (&mut params, extra) {
        params.extend(extra);
    }
    request(method, params)
}

/// A server whose tasks are in Redis: an always-task tool that asks a
/// question, a slow one, a quick one.
fn server(
    store: Arc<RedisTaskStore>,
    configure: fn(toolwire_server::ServerBuilder) -> toolwire_server::ServerBuilder,
) -> Server {
    let builder = Server::builder("redis-tasks", "1")
        .task_store(store)
        .task_poll_interval(Duration::from_millis(50))
        .tool(
            ToolBuilder::new("quick")
                .task_support(TaskSupport::Always)
                .handler(|_: NoArgs, _cx: RequestContext| async { "quick done" }),
        )
        .tool(
            ToolBuilder::new("slow")
                .task_support(TaskSupport::Always)
                .handler(|_: NoArgs, cx: RequestContext| async move {
                    tokio::select! {
                        () = cx.cancellation().cancelled() => "stopped",
                        () = tokio::time::sleep(Duration::from_secs(60)) => "slow done",
                    }
                }),
        )
        .tool(
            ToolBuilder::new("ask")
                .task_support(TaskSupport::Always)
                .handler(|_: NoArgs, cx: RequestContext| async move {
                    let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]});
                    let answer = cx.elicit_form("name", "Your name?", schema)?;
                    let name = match answer.content.as_ref().and_then(|c| c.get("name")) {
                        Some(ElicitValue::String(name)) => name.clone(),
                        _ => String::new(),
                    };
                    Ok::<_, ToolError>(format!("Hello, {name}!"))
                }),
        );
    configure(builder).build().unwrap()
}

/// A server on 127.0.0.1:0 whose bearer tokens name alice and bob.
struct Served {
    url: String,
    client: reqwest::Client,
    stop: tokio::sync::oneshot::Sender<()>,
}

impl Served {
    async fn start(server: Server) -> Served {
        let tokens = StaticTokens::new()
            .token(ALICE, Principal::new("alice"))
            .token(BOB, Principal::new("bob"));
        let auth = AuthConfig::new("https://mcp.example.com/mcp", tokens).unwrap();
        let http = HttpServer::bind(
            "127.0.0.1:0".parse().unwrap(),
            server,
            HttpConfig::new().auth(auth),
        )
        .await
        .unwrap();
        let url = format!("http://{}/mcp", http.local_addr());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(http.run_until(async {
            let _ = stopped.await;
        }));
        Served {
            url,
            client: reqwest::Client::new(),
            stop,
        }
    }

    async fn send(&self, token: &str, request: &Request) -> Value {
        let params = request.params.as_ref();
        let mut post = self
            .client
            .post(&self.url)
            .bearer_auth(token)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", &request.method);
        let name = params.and_then(|p| p.get("name").or(p.get("taskId")));
        if let Some(Value::String(name)) = name {
            post = post.header("Mcp-Name", name);
        }
        post.json(request)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    async fn result(&self, token: &str, request: &Request) -> Value {
        let response = self.send(token, request).await;
        assert!(
            response.get("error").is_none(),
            "unexpected error: {response}"
        );
        response["result"].clone()
    }

    async fn error(&self, token: &str, request: &Request) -> Value {
        let response = self.send(token, request).await;
        assert!(
            response.get("result").is_none(),
            "unexpected result: {response}"
        );
        response["error"].clone()
    }

    async fn get(&self, token: &str, id: &str) -> Value {
        self.result(token, &task_request("tasks/get", id, json!({})))
            .await
    }

    /// Polls `tasks/get` until the task has `status` (within 10 s).
    async fn wait_for(&self, token: &str, id: &str, status: &str) -> Value {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let task = self.get(token, id).await;
            if task["status"] == status {
                return task;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "task {id} never reached {status}: {task}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn stop(self) {
        let _ = self.stop.send(());
    }
}

async fn two_servers(
    redis: &RedisServer,
    configure: fn(toolwire_server::ServerBuilder) -> toolwire_server::ServerBuilder,
) -> (Served, Served) {
    let a = Arc::new(RedisTaskStore::new(&redis.connect().await));
    let b = Arc::new(RedisTaskStore::new(&redis.connect().await));
    let a = Served::start(server(a, configure)).await;
    let b = Served::start(server(b, configure)).await;
    (a, b)
}

fn created_id(created: &Value) -> String {
    assert_eq!(created["resultType"], "task", "{created}");
    created["taskId"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_task_created_on_a_is_polled_answered_and_cancelled_on_b() {
    let redis = RedisServer::start();
    // A lease of 10 min: A's worker reads its task again only every
    // 200 s, so what reaches it within the test came over pub/sub.
    let long_lease = |b: toolwire_server::ServerBuilder| b.task_lease(Duration::from_secs(600));
    let (a, b) = two_servers(&redis, long_lease).await;
    // Created on A, polled to completion on B.
    let id = created_id(&a.result(ALICE, &call("quick")).await);
    let done = b.wait_for(ALICE, &id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "quick done");
    // A question asked by A's worker is answered through B; A's worker
    // hears it (pub/sub) and finishes.
    let id = created_id(&a.result(ALICE, &call("ask")).await);
    let waiting = b.wait_for(ALICE, &id, "input_required").await;
    assert!(waiting["inputRequests"]["name"].is_object(), "{waiting}");
    let answer =
        json!({"inputResponses": {"name": {"action": "accept", "content": {"name": "Ada"}}}});
    b.result(ALICE, &task_request("tasks/update", &id, answer))
        .await;
    let done = a.wait_for(ALICE, &id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "Hello, Ada!");
    // Cancelled through B: A's worker stops the handler.
    let id = created_id(&a.result(ALICE, &call("slow")).await);
    b.wait_for(ALICE, &id, "working").await;
    b.result(ALICE, &task_request("tasks/cancel", &id, json!({})))
        .await;
    let cancelled = a.wait_for(ALICE, &id, "cancelled").await;
    assert_eq!(cancelled["statusMessage"], "Cancelled by the client");
    a.stop();
    b.stop();
}

#[tokio::test]
async fn another_principal_gets_the_unknown_task_error_on_either_server() {
    let redis = RedisServer::start();
    let (a, b) = two_servers(&redis, |b| b).await;
    let id = created_id(&a.result(ALICE, &call("slow")).await);
    let not_found = json!({"code": -32602, "message": "Failed to retrieve task: Task not found"});
    for served in [&a, &b] {
        for method in ["tasks/get", "tasks/cancel"] {
            let error = served
                .error(BOB, &task_request(method, &id, json!({})))
                .await;
            assert_eq!(error, not_found, "{method}");
        }
    }
    assert_eq!(b.get(ALICE, &id).await["status"], "working");
    a.stop();
    b.stop();
}

#[tokio::test]
async fn the_cap_per_principal_holds_across_two_servers() {
    let redis = RedisServer::start();
    let (a, b) = two_servers(&redis, |b| b.max_tasks_per_principal(2)).await;
    created_id(&a.result(ALICE, &call("slow")).await);
    created_id(&b.result(ALICE, &call("slow")).await);
    for served in [&a, &b] {
        let refused = served.result(ALICE, &call("slow")).await;
        assert_eq!(refused["isError"], true, "{refused}");
        let text = refused["content"][0]["text"].as_str().unwrap();
        assert!(
            text.starts_with("Too many unfinished tasks: at most 2"),
            "{text}"
        );
    }
    created_id(&b.result(BOB, &call("slow")).await);
    a.stop();
    b.stop();
}

#[tokio::test]
async fn an_expired_task_is_forgotten_on_both_servers() {
    let redis = RedisServer::start();
    let (a, b) = two_servers(&redis, |b| b.task_ttl(Some(Duration::from_millis(300)))).await;
    let created = a.result(ALICE, &call("quick")).await;
    assert_eq!(created["ttlMs"], 300);
    let id = created_id(&created);
    b.wait_for(ALICE, &id, "completed").await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    let expired = json!({"code": -32602, "message": "Failed to retrieve task: Task has expired"});
    for served in [&a, &b] {
        let error = served
            .error(ALICE, &task_request("tasks/get", &id, json!({})))
            .await;
        assert_eq!(error, expired);
    }
    a.stop();
    b.stop();
}

#[tokio::test]
async fn a_task_whose_instance_died_ends_failed_on_the_other() {
    let redis = RedisServer::start();
    let lease = |b: toolwire_server::ServerBuilder| b.task_lease(Duration::from_millis(600));
    // A runs in a runtime of its own, dropped mid-task as a crash would.
    let url = redis.url();
    let (created_tx, created_rx) = std::sync::mpsc::channel();
    let a_thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async move {
            let redis = toolwire_redis::RedisConfig::new(url)
                .connect()
                .await
                .unwrap();
            let a = Served::start(server(Arc::new(RedisTaskStore::new(&redis)), lease)).await;
            let id = created_id(&a.result(ALICE, &call("slow")).await);
            // Let the worker renew its lease once.
            tokio::time::sleep(Duration::from_millis(400)).await;
            created_tx.send(id).unwrap();
        });
        // Dropping the runtime stops A's server and its worker for good.
        drop(runtime);
    });
    let id = created_rx.recv_timeout(WAIT).unwrap();
    a_thread.join().unwrap();
    let b = Served::start(server(
        Arc::new(RedisTaskStore::new(&redis.connect().await)),
        lease,
    ))
    .await;
    let failed = b.wait_for(ALICE, &id, "failed").await;
    assert_eq!(failed["error"]["code"], -32603, "{failed}");
    assert_eq!(
        failed["error"]["message"],
        "The task's worker stopped before it finished (its lease ran out)"
    );
    // Failed for good: read again, it stays so.
    assert_eq!(b.get(ALICE, &id).await["status"], "failed");
    b.stop();
}

#[tokio::test]
async fn a_record_with_a_lapsed_lease_reads_as_failed_over_http() {
    let redis = RedisServer::start();
    let store = Arc::new(RedisTaskStore::new(&redis.connect().await));
    // A worker that died: its record says working, its lease ended 1 s ago.
    let record = TaskRecord::new(
        "0123456789abcdef0123456789abcdef",
        Principal::new("alice").key(),
        "slow",
        now_ms() - 5_000,
        Some(60_000),
        100,
        4_000,
    );
    store
        .create(record, 10)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let b = Served::start(server(store, |b| b)).await;
    let task = b.get(ALICE, "0123456789abcdef0123456789abcdef").await;
    assert_eq!(task["status"], "failed", "{task}");
    assert_eq!(task["error"]["code"], -32603);
    b.stop();
}
