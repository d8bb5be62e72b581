//! The Tasks extension over real transports (Streamable HTTP on
//! 127.0.0.1:0, stdio): capability rules, polling, input through
//! `tasks/update`, cancellation, expiry, principals and the cap.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use toolwire_protocol::{ElicitAction, ElicitResult, ElicitValue, Request};
use toolwire_server::auth::{AuthConfig, StaticTokens};
use toolwire_server::http::{HttpConfig, HttpServer};
use toolwire_server::{
    NoArgs, Principal, RequestContext, Server, ServerBuilder, TaskSupport, ToolBuilder, ToolError,
};

const ALICE: &str = "alice-token-0123456789abcdef";
const BOB: &str = "bob-token-0123456789abcdef01";
const TASKS: &str = "io.modelcontextprotocol/tasks";

/// `_meta` of a 2026-07-28 request, declaring the extension or not.
fn meta(tasks: bool) -> Value {
    let caps = if tasks {
        json!({"elicitation": {}, "extensions": {TASKS: {}}})
    } else {
        json!({})
    };
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
    })
}

fn request(id: i64, method: &str, mut params: Value, tasks: bool) -> Request {
    params["_meta"] = meta(tasks);
    Request::new(id, method, Some(common::as_object(params)))
}

fn call(name: &str, arguments: Value, tasks: bool) -> Request {
    request(
        1,
        "tools/call",
        json!({"name": name, "arguments": arguments}),
        tasks,
    )
}

fn task_request(method: &str, task_id: &str, extra: Value) -> Request {
    let mut params = json!({"taskId": task_id});
    if let (Value::Object(params), Value::Object(extra)) = (&mut params, extra) {
        params.extend(extra);
    }
    request(2, method, params, true)
}

/// What the slow tool's handler saw: it started, its token fired.
#[derive(Default)]
struct Probe {
    started: AtomicBool,
    cancelled: AtomicBool,
}

/// The server every test serves: a quick tool, a slow one that notes its
/// cancellation, one that asks a question, one that is always a task.
fn builder(probe: Arc<Probe>) -> ServerBuilder {
    Server::builder("tasks-test", "1")
        .task_poll_interval(Duration::from_millis(50))
        .tool(
            ToolBuilder::new("quick")
                .task_support(TaskSupport::Optional)
                .handler(|_: NoArgs, _cx: RequestContext| async { "quick done" }),
        )
        .tool(
            ToolBuilder::new("slow")
                .task_support(TaskSupport::Optional)
                .handler(move |_: NoArgs, cx: RequestContext| {
                    let probe = Arc::clone(&probe);
                    async move {
                        probe.started.store(true, Ordering::SeqCst);
                        tokio::select! {
                            () = cx.cancellation().cancelled() => {
                                probe.cancelled.store(true, Ordering::SeqCst);
                                "stopped"
                            }
                            () = tokio::time::sleep(Duration::from_secs(60)) => "slow done",
                        }
                    }
                }),
        )
        .tool(
            ToolBuilder::new("ask")
                .task_support(TaskSupport::Optional)
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
        .tool(
            ToolBuilder::new("always")
                .task_support(TaskSupport::Always)
                .handler(|_: NoArgs, _cx: RequestContext| async { "always done" }),
        )
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
        let config = HttpConfig::new().auth(auth);
        let http = HttpServer::bind("127.0.0.1:0".parse().unwrap(), server, config)
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

    /// Sends `request` as `token`'s holder with the routing headers; the JSON-RPC response.
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
        let response = post.json(request).send().await.unwrap();
        response.json().await.unwrap()
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

    /// Polls `tasks/get` until the task has `status` (within 10 s).
    async fn wait_for(&self, token: &str, task_id: &str, status: &str) -> Value {
        let get = task_request("tasks/get", task_id, json!({}));
        for _ in 0..500 {
            let task = self.result(token, &get).await;
            if task["status"] == status {
                return task;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("task {task_id} never reached {status}");
    }

    fn stop(self) {
        let _ = self.stop.send(());
    }
}

async fn serve() -> (Served, Arc<Probe>) {
    let probe = Arc::new(Probe::default());
    let server = builder(Arc::clone(&probe)).build().unwrap();
    (Served::start(server).await, probe)
}

/// Waits (up to 2 s) until `flag` is set.
async fn until(flag: &AtomicBool) -> bool {
    for _ in 0..100 {
        if flag.load(Ordering::SeqCst) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

#[tokio::test]
async fn a_client_without_the_extension_gets_a_plain_result() {
    let (served, _) = serve().await;
    let result = served.result(ALICE, &call("quick", json!({}), false)).await;
    assert_eq!(result["resultType"], "complete");
    assert_eq!(
        result["content"],
        json!([{"type": "text", "text": "quick done"}])
    );
    assert!(result.get("taskId").is_none());
    // An Always tool cannot answer it: -32021 naming the extension.
    let error = served.error(ALICE, &call("always", json!({}), false)).await;
    assert_eq!(error["code"], -32021);
    assert_eq!(
        error["data"],
        json!({"requiredCapabilities": {"extensions": {TASKS: {}}}})
    );
    // Nor may it use the task methods.
    let get = request(2, "tasks/get", json!({"taskId": "x"}), false);
    assert_eq!(served.error(ALICE, &get).await["code"], -32021);
    // The extension is advertised.
    let discover = served
        .result(ALICE, &request(3, "server/discover", json!({}), false))
        .await;
    assert_eq!(discover["capabilities"]["extensions"], json!({TASKS: {}}));
    served.stop();
}

#[tokio::test]
async fn a_task_is_polled_to_completion() {
    let (served, _) = serve().await;
    let created = served.result(ALICE, &call("quick", json!({}), true)).await;
    assert_eq!(created["resultType"], "task");
    let id = created["taskId"].as_str().unwrap().to_owned();
    assert_eq!(id.len(), 32, "128 random bits in hex: {id}");
    assert_eq!(created["ttlMs"], 3_600_000);
    assert_eq!(created["pollIntervalMs"], 50);
    for absent in ["result", "error", "inputRequests", "requestState"] {
        assert!(created.get(absent).is_none(), "{absent} in {created}");
    }
    let done = served.wait_for(ALICE, &id, "completed").await;
    assert_eq!(done["resultType"], "complete");
    assert_eq!(done["taskId"], id.as_str());
    assert_eq!(
        done["result"]["content"],
        json!([{"type": "text", "text": "quick done"}])
    );
    assert_eq!(done["createdAt"], created["createdAt"]);
    served.stop();
}

#[tokio::test]
async fn input_required_then_tasks_update_resumes_the_task() {
    let (served, _) = serve().await;
    let created = served.result(ALICE, &call("ask", json!({}), true)).await;
    let id = created["taskId"].as_str().unwrap().to_owned();
    let waiting = served.wait_for(ALICE, &id, "input_required").await;
    assert_eq!(
        waiting["inputRequests"]["name"]["method"],
        "elicitation/create"
    );
    assert_eq!(
        waiting["inputRequests"]["name"]["params"]["message"],
        "Your name?"
    );
    // An answer to a key never asked is ignored; the ack is empty.
    let stray = task_request(
        "tasks/update",
        &id,
        json!({"inputResponses": {"other": {}}}),
    );
    let ack = served.result(ALICE, &stray).await;
    assert_eq!(ack["resultType"], "complete");
    assert!(ack.get("taskId").is_none() && ack.get("status").is_none());
    let answer = ElicitResult {
        action: ElicitAction::Accept,
        content: Some([("name".to_owned(), ElicitValue::String("Luca".into()))].into()),
    };
    let update = task_request(
        "tasks/update",
        &id,
        json!({"inputResponses": {"name": answer}}),
    );
    assert_eq!(
        served.result(ALICE, &update).await["resultType"],
        "complete"
    );
    let done = served.wait_for(ALICE, &id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "Hello, Luca!");
    assert!(done.get("inputRequests").is_none());
    served.stop();
}

#[tokio::test]
async fn tasks_cancel_fires_the_handlers_token() {
    let (served, probe) = serve().await;
    let created = served.result(ALICE, &call("slow", json!({}), true)).await;
    let id = created["taskId"].as_str().unwrap().to_owned();
    assert!(until(&probe.started).await, "the handler started");
    let ack = served
        .result(ALICE, &task_request("tasks/cancel", &id, json!({})))
        .await;
    assert_eq!(ack["resultType"], "complete");
    assert!(ack.get("status").is_none());
    let task = served.wait_for(ALICE, &id, "cancelled").await;
    assert!(task.get("result").is_none());
    assert!(until(&probe.cancelled).await, "the token fired");
    // Cancelling a finished task is the same empty ack.
    let again = served
        .result(ALICE, &task_request("tasks/cancel", &id, json!({})))
        .await;
    assert_eq!(again["resultType"], "complete");
    served.stop();
}

#[tokio::test]
async fn an_expired_task_is_forgotten_with_the_seps_error() {
    let server = builder(Arc::default())
        .task_ttl(Some(Duration::from_millis(300)))
        .build()
        .unwrap();
    let served = Served::start(server).await;
    let created = served.result(ALICE, &call("quick", json!({}), true)).await;
    assert_eq!(created["ttlMs"], 300);
    let id = created["taskId"].as_str().unwrap().to_owned();
    served.wait_for(ALICE, &id, "completed").await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    let error = served
        .error(ALICE, &task_request("tasks/get", &id, json!({})))
        .await;
    assert_eq!(
        error,
        json!({"code": -32602, "message": "Failed to retrieve task: Task has expired"})
    );
    served.stop();
}

#[tokio::test]
async fn another_principals_task_is_unknown() {
    let (served, _) = serve().await;
    let created = served.result(ALICE, &call("slow", json!({}), true)).await;
    let id = created["taskId"].as_str().unwrap().to_owned();
    let not_found = json!({"code": -32602, "message": "Failed to retrieve task: Task not found"});
    for method in ["tasks/get", "tasks/cancel"] {
        let error = served
            .error(BOB, &task_request(method, &id, json!({})))
            .await;
        assert_eq!(error, not_found, "{method}");
    }
    let update = task_request("tasks/update", &id, json!({"inputResponses": {}}));
    assert_eq!(served.error(BOB, &update).await, not_found);
    let unknown = task_request("tasks/get", "0123456789abcdef0123456789abcdef", json!({}));
    assert_eq!(served.error(ALICE, &unknown).await, not_found);
    // Bob's cancel did nothing: alice's task still runs.
    let task = served
        .result(ALICE, &task_request("tasks/get", &id, json!({})))
        .await;
    assert_eq!(task["status"], "working");
    served.stop();
}

#[tokio::test]
async fn unfinished_tasks_are_capped_per_principal() {
    let server = builder(Arc::default())
        .max_tasks_per_principal(2)
        .build()
        .unwrap();
    let served = Served::start(server).await;
    for _ in 0..2 {
        let created = served.result(ALICE, &call("slow", json!({}), true)).await;
        assert_eq!(created["resultType"], "task");
    }
    let refused = served.result(ALICE, &call("slow", json!({}), true)).await;
    assert_eq!(refused["isError"], true);
    assert_eq!(refused["resultType"], "complete");
    let text = refused["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("Too many unfinished tasks: at most 2"),
        "{text}"
    );
    // Another principal has its own allowance.
    let bobs = served.result(BOB, &call("slow", json!({}), true)).await;
    assert_eq!(bobs["resultType"], "task");
    served.stop();
}

#[tokio::test]
async fn tasks_work_over_stdio() {
    let server = builder(Arc::default()).build().unwrap();
    let mut stdio = common::ServedStdio::start(server);
    stdio.send(&call("quick", json!({}), true)).await;
    let created = stdio.next().await;
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let mut status = Value::Null;
    for _ in 0..200 {
        stdio.send(&task_request("tasks/get", &id, json!({}))).await;
        let got = stdio.next().await;
        status = got["result"]["status"].clone();
        if status == "completed" {
            assert_eq!(got["result"]["result"]["content"][0]["text"], "quick done");
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(status, "completed");
    stdio.close().await;
}

#[tokio::test]
async fn a_listener_hears_a_task_change_once_not_at_every_lease_renewal() {
    // A 30 ms lease is renewed every 10 ms while the task runs: each
    // renewal is a store update, none of them a change the client can see.
    let server = builder(Arc::default())
        .task_lease(Duration::from_millis(30))
        .build()
        .unwrap();
    let mut stdio = common::ServedStdio::start(server);
    stdio.send(&call("slow", json!({}), true)).await;
    let id = stdio.next().await["result"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let listen = request(
        5,
        "subscriptions/listen",
        json!({"notifications": {"taskIds": [id]}}),
        true,
    );
    stdio.send(&listen).await;
    let ack = stdio.next().await;
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    stdio
        .send(&task_request("tasks/cancel", &id, json!({})))
        .await;
    let mut statuses = Vec::new();
    while statuses.last().map(String::as_str) != Some("cancelled") {
        let message = stdio.next().await;
        if message["method"] == "notifications/tasks" {
            assert_eq!(message["params"]["taskId"], id.as_str());
            statuses.push(message["params"]["status"].as_str().unwrap().to_owned());
        }
    }
    assert!(
        statuses == ["cancelled"] || statuses == ["working", "cancelled"],
        "{statuses:?}"
    );
    stdio.close().await;
}
