//! `notifications/tasks` across instances: two `toolwire_server::Server`s
//! over Streamable HTTP on 127.0.0.1:0 share a `RedisTaskStore` (on a real
//! `redis-server`); a `subscriptions/listen` stream on instance A hears
//! every change of a task that runs on instance B (B's changes reach A
//! over Redis pub/sub), each notification the task as `tasks/get` shows it.

mod support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use support::{RedisServer, WAIT, eventually};
use toolwire_redis::RedisTaskStore;
use toolwire_server::http::{HttpConfig, HttpServer};
use toolwire_server::protocol::ElicitValue;
use toolwire_server::{NoArgs, RequestContext, Server, TaskSupport, ToolBuilder, ToolError};

const TASKS: &str = "io.modelcontextprotocol/tasks";

/// An instance: a server whose tasks are in Redis, with a tool that asks.
async fn instance(store: Arc<RedisTaskStore>) -> String {
    let server = Server::builder("redis-task-notifications", "1")
        .task_store(store)
        // Long enough that no lease renewal happens during the test.
        .task_lease(Duration::from_secs(600))
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
        )
        .build()
        .unwrap();
    let http = HttpServer::bind("127.0.0.1:0".parse().unwrap(), server, HttpConfig::new())
        .await
        .unwrap();
    let url = format!("http://{}/mcp", http.local_addr());
    tokio::spawn(http.run());
    url
}

/// A 2026-07-28 request declaring the Tasks extension, sent to `url`.
fn post(url: &str, id: &str, method: &str, mut params: Value) -> reqwest::RequestBuilder {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "extensions": {TASKS: {}}},
    });
    let name = params.get("taskId").or(params.get("name")).cloned();
    let mut post = reqwest::Client::new()
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", method);
    if let Some(Value::String(name)) = name {
        post = post.header("Mcp-Name", name);
    }
    post.json(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
}

/// The result of a request answered with JSON.
async fn result(url: &str, method: &str, params: Value) -> Value {
    let response: Value = post(url, "1", method, params)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(response.get("error").is_none(), "{method}: {response}");
    response["result"].clone()
}

/// The messages of an SSE response, one at a time.
struct Events {
    response: reqwest::Response,
    buffer: String,
}

impl Events {
    /// The next message (within [`WAIT`]).
    async fn next(&mut self) -> Value {
        tokio::time::timeout(WAIT, async {
            loop {
                if let Some(end) = self.buffer.find("\n\n") {
                    let event: String = self.buffer.drain(..end + 2).collect();
                    let data: Vec<&str> = event
                        .lines()
                        .filter_map(|l| l.strip_prefix("data:"))
                        .map(str::trim_start)
                        .collect();
                    if !data.is_empty() {
                        return serde_json::from_str(&data.join("\n")).unwrap();
                    }
                    continue;
                }
                let chunk = self
                    .response
                    .chunk()
                    .await
                    .unwrap()
                    .expect("the stream ended");
                self.buffer
                    .push_str(&String::from_utf8_lossy(&chunk).replace("\r\n", "\n"));
            }
        })
        .await
        .expect("no message on the subscription within the wait")
    }
}

/// Drops `resultType` and `_meta`: what a notification and `tasks/get` share.
fn task_of(mut message: Value) -> Value {
    let object = message.as_object_mut().unwrap();
    object.remove("resultType");
    object.remove("_meta");
    message
}

#[tokio::test]
async fn a_listener_on_one_instance_hears_a_task_running_on_another() {
    let redis = RedisServer::start();
    let store_a = Arc::new(RedisTaskStore::new(&redis.connect().await));
    let store_b = Arc::new(RedisTaskStore::new(&redis.connect().await));
    let channel = store_a.channel().to_owned();
    let a = instance(store_a).await;
    let b = instance(store_b).await;
    // Both instances are subscribed to the task channel.
    let raw = redis.raw().await;
    eventually("both stores subscribed", || {
        let mut command = redis::cmd("PUBSUB");
        command.arg("NUMSUB").arg(&channel);
        let mut raw = raw.clone();
        async move {
            let counts: (String, i64) = command.query_async(&mut raw).await.unwrap();
            counts.1 >= 2
        }
    })
    .await;

    // The task runs on B and waits for an answer.
    let created = result(&b, "tools/call", json!({"name": "ask", "arguments": {}})).await;
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].as_str().unwrap().to_owned();
    eventually("the task asks", || {
        let b = &b;
        let id = &id;
        async move {
            let task = result(b, "tasks/get", json!({"taskId": id})).await;
            task["status"] == "input_required"
        }
    })
    .await;

    // A listens to it: the task is in Redis, so A takes it.
    let filter = json!({"notifications": {"taskIds": [id]}});
    let response = post(&a, "listen-1", "subscriptions/listen", filter)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"].to_str().unwrap();
    assert!(
        content_type.starts_with("text/event-stream"),
        "{content_type}"
    );
    let mut events = Events {
        response,
        buffer: String::new(),
    };
    let ack = events.next().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(ack["params"]["notifications"], json!({"taskIds": [id]}));

    // Answered through B: B's worker goes on and finishes; A hears both.
    let answer = json!({"taskId": id, "inputResponses": {"name": {"action": "accept", "content": {"name": "Ada"}}}});
    result(&b, "tasks/update", answer).await;
    let working = events.next().await;
    assert_eq!(working["method"], "notifications/tasks", "{working}");
    assert_eq!(
        working["params"]["_meta"],
        json!({"io.modelcontextprotocol/subscriptionId": "listen-1"})
    );
    assert_eq!(working["params"]["taskId"], id.as_str());
    assert_eq!(working["params"]["status"], "working", "{working}");
    assert!(
        working["params"].get("inputRequests").is_none(),
        "{working}"
    );
    let completed = events.next().await;
    assert_eq!(completed["method"], "notifications/tasks", "{completed}");
    assert_eq!(completed["params"]["status"], "completed", "{completed}");
    assert_eq!(
        completed["params"]["result"]["content"][0]["text"],
        "Hello, Ada!"
    );
    // The notification is the task as tasks/get shows it, on either instance.
    for url in [&a, &b] {
        let got = result(url, "tasks/get", json!({"taskId": id})).await;
        assert_eq!(task_of(completed["params"].clone()), task_of(got));
    }
}
