//! The Tasks extension through the gateway, over real transports: an
//! upstream toolwire server on loopback HTTP (its tools run as upstream
//! tasks, or not), the gateway on loopback HTTP with bearer tokens, and a
//! downstream client speaking raw JSON-RPC through our HTTP transport (and
//! once our client SDK). A downstream client that declares the extension
//! gets a task of the gateway's own, never an upstream task id.

mod support;
#[path = "support/tasks_upstream.rs"]
mod upstream;

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use toolwire_client::Client;
use toolwire_client::handlers::InputContext;
use toolwire_client::transport::{HttpTransport, OutgoingRequest, Transport};
use toolwire_gateway::Gateway;
use toolwire_gateway::config::GatewayConfig;
use toolwire_server::Principal;
use toolwire_server::auth::{AuthConfig, StaticTokens};
use toolwire_server::http::{HttpConfig, HttpServer};
use toolwire_server::protocol::{ElicitRequestParams, ElicitResult, JsonObject, Message, Request};
use upstream::{REPORT, Upstream, upstream};

const ALICE: &str = "alice-token-0123456789abcdef";
const BOB: &str = "bob-token-0123456789abcdef01";
const TASKS: &str = "io.modelcontextprotocol/tasks";

/// A gateway in front of `upstream` twice: `up` (without `hidden`; `secret`
/// needs the `admin` scope) and `limited` (`report` only, one call a
/// minute), recording calls in `audit`; served on loopback HTTP where
/// alice holds `admin` and bob does not.
async fn gateway(upstream: &Upstream, audit: &std::path::Path) -> (Gateway, String) {
    let url = &upstream.url;
    let text = format!(
        "[gateway]\nhttp = \"127.0.0.1:0\"\naudit = {audit:?}\n\n\
         [[upstream]]\nname = \"up\"\nurl = {url:?}\ndeny = [\"hidden\"]\n\
         scopes = {{ \"secret\" = \"admin\" }}\n\n\
         [[upstream]]\nname = \"limited\"\nurl = {url:?}\nallow = [\"report\"]\n\
         rate_limit = \"1/60\"\n"
    );
    let config = GatewayConfig::parse(&text, "gw.toml").unwrap();
    let gateway = Gateway::start(&config).await.unwrap();
    assert_eq!(gateway.failures(), []);
    let tokens = StaticTokens::new()
        .token(ALICE, Principal::new("alice").with_scopes(["admin"]))
        .token(BOB, Principal::new("bob"));
    let auth = AuthConfig::new("https://mcp.example.com/mcp", tokens).unwrap();
    let http = HttpServer::bind(
        "127.0.0.1:0".parse().unwrap(),
        gateway.server().clone(),
        HttpConfig::new().auth(auth),
    )
    .await
    .unwrap();
    let url = format!("http://{}/mcp", http.local_addr());
    tokio::spawn(http.run());
    (gateway, url)
}

fn audit_path(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("toolwire-gw-tasks-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("audit.jsonl")
}

/// A downstream client speaking raw JSON-RPC as one token's holder; it
/// keeps every response it got, to check what it was never shown.
struct Downstream {
    transport: HttpTransport,
    next_id: AtomicI64,
    seen: Mutex<String>,
}

impl Downstream {
    fn new(url: &str, token: &str) -> Downstream {
        let transport = HttpTransport::builder(url.to_owned())
            .bearer_token(token)
            .build()
            .unwrap();
        Downstream {
            transport,
            next_id: AtomicI64::new(1),
            seen: Mutex::default(),
        }
    }

    /// Sends `method` (declaring the extension or not); the JSON-RPC response.
    async fn send(&self, method: &str, mut params: Value, tasks: bool) -> Value {
        let mut capabilities = json!({"elicitation": {}});
        if tasks {
            capabilities["extensions"] = json!({TASKS: {}});
        }
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": capabilities,
        });
        let Value::Object(params) = params else {
            unreachable!()
        };
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let request = Request::new(id, method, Some(params));
        let mut exchange = self
            .transport
            .send(OutgoingRequest::new(request))
            .await
            .unwrap();
        loop {
            let message = tokio::time::timeout(Duration::from_secs(10), exchange.next())
                .await
                .expect("an answer within 10 s")
                .expect("an answer")
                .unwrap();
            if matches!(message, Message::Result(_) | Message::Error(_)) {
                let value = serde_json::to_value(&message).unwrap();
                self.seen.lock().unwrap().push_str(&value.to_string());
                return value;
            }
        }
    }

    async fn result(&self, method: &str, params: Value, tasks: bool) -> Value {
        let response = self.send(method, params, tasks).await;
        assert!(
            response.get("error").is_none(),
            "unexpected error: {response}"
        );
        response["result"].clone()
    }

    async fn error(&self, method: &str, params: Value) -> Value {
        let response = self.send(method, params, true).await;
        assert!(
            response.get("result").is_none(),
            "unexpected result: {response}"
        );
        response["error"].clone()
    }

    /// `tools/call` of `name` with no arguments.
    async fn call(&self, name: &str, tasks: bool) -> Value {
        let params = json!({"name": name, "arguments": {}});
        self.result("tools/call", params, tasks).await
    }

    /// A new task of `name`: its id.
    async fn start(&self, name: &str) -> String {
        let created = self.call(name, true).await;
        assert_eq!(created["resultType"], "task", "{created}");
        created["taskId"].as_str().unwrap().to_owned()
    }

    async fn task(&self, method: &str, id: &str, extra: Value) -> Value {
        let mut params = json!({"taskId": id});
        if let (Value::Object(params), Value::Object(extra)) = (&mut params, extra) {
            params.extend(extra);
        }
        self.result(method, params, true).await
    }

    /// Polls `tasks/get` until the task has `status` (within 10 s).
    async fn wait_for(&self, id: &str, status: &str) -> Value {
        for _ in 0..500 {
            let task = self.task("tasks/get", id, json!({})).await;
            if task["status"] == status {
                return task;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("task {id} never reached {status}");
    }

    fn seen(&self) -> String {
        self.seen.lock().unwrap().clone()
    }
}

fn without_meta(mut result: Value) -> Value {
    result.as_object_mut().unwrap().remove("_meta");
    result
}

fn keys(value: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    keys
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_task_completes_with_the_upstreams_exact_result() {
    let upstream = upstream().await;
    let audit = audit_path("complete");
    let (_gateway, url) = gateway(&upstream, &audit).await;
    let alice = Downstream::new(&url, ALICE);
    // The extension is advertised: every forwarded tool may run as a task.
    let discover = alice.result("server/discover", json!({}), false).await;
    assert_eq!(discover["capabilities"]["extensions"], json!({TASKS: {}}));

    let created = alice.call("up__report", true).await;
    assert_eq!(
        keys(&created),
        [
            "_meta",
            "createdAt",
            "lastUpdatedAt",
            "pollIntervalMs",
            "resultType",
            "status",
            "taskId",
            "ttlMs"
        ],
        "{created}"
    );
    assert_eq!(created["resultType"], "task");
    assert_eq!(created["status"], "working");
    assert_eq!(created["ttlMs"], 3_600_000);
    assert_eq!(created["pollIntervalMs"], 1000);
    assert_eq!(
        created["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "toolwire-gateway"
    );
    let id = created["taskId"].as_str().unwrap().to_owned();
    assert_eq!(id.len(), 32, "128 random bits in hex: {id}");
    assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));

    let done = alice.wait_for(&id, "completed").await;
    assert_eq!(done["resultType"], "complete");
    assert_eq!(done["taskId"], id.as_str());
    assert_eq!(done["createdAt"], created["createdAt"]);
    // The upstream's result, exactly as the upstream gives it to a plain call.
    let direct = Downstream::new(&upstream.url, ALICE);
    let upstream_result = direct.call("report", false).await;
    assert_eq!(
        without_meta(done["result"].clone()),
        without_meta(upstream_result.clone())
    );
    assert_eq!(
        done["result"]["content"],
        json!([{"type": "text", "text": REPORT}])
    );

    // The gateway's client ran an upstream task of its own (the plain call
    // above did not): its id is never the gateway's, and never shown.
    let upstream_tasks = upstream.store.created();
    assert_eq!(upstream_tasks.len(), 1, "{upstream_tasks:?}");
    let (upstream_id, _) = &upstream_tasks[0];
    assert_ne!(upstream_id, &id);
    assert!(!alice.seen().contains(upstream_id.as_str()));
    upstream
        .store
        .until_status(&upstream_tasks[0], "completed")
        .await;

    // The gateway's audit record of the call, as for a plain one.
    let records = std::fs::read_to_string(&audit).unwrap();
    let record: Value = records
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|r| r["tool"] == "up__report")
        .unwrap_or_else(|| panic!("no record of up__report in {records}"));
    assert_eq!(record["outcome"], "ok");
    assert_eq!(record["principal"], "alice");
    assert_eq!(record["upstream_tool"], "report");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_the_extension_gets_a_plain_result() {
    let upstream = upstream().await;
    let (_gateway, url) = gateway(&upstream, &audit_path("plain")).await;
    let alice = Downstream::new(&url, ALICE);
    let result = alice.call("up__report", false).await;
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["content"], json!([{"type": "text", "text": REPORT}]));
    assert!(result.get("taskId").is_none() && result.get("status").is_none());
    // The gateway followed the upstream's task for it; its id stayed inside.
    let upstream_tasks = upstream.store.created();
    assert_eq!(upstream_tasks.len(), 1);
    assert!(!alice.seen().contains(upstream_tasks[0].0.as_str()));
    // Nor may it use the task methods (SEP-2663: -32021).
    let get = alice
        .send("tasks/get", json!({"taskId": upstream_tasks[0].0}), false)
        .await;
    assert_eq!(get["error"]["code"], -32021);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_gateway_task_cancels_the_upstream_call() {
    let upstream = upstream().await;
    let (_gateway, url) = gateway(&upstream, &audit_path("cancel")).await;
    let alice = Downstream::new(&url, ALICE);

    // The upstream runs a task: the gateway's client sends it `tasks/cancel`.
    let id = alice.start("up__slow").await;
    assert!(upstream.slow.started().await, "the upstream tool started");
    let upstream_id = upstream.store.until_created().await;
    upstream.store.until_followed(&upstream_id).await;
    let ack = alice.task("tasks/cancel", &id, json!({})).await;
    assert_eq!(keys(&ack), ["_meta", "resultType"], "{ack}");
    assert_eq!(ack["resultType"], "complete");
    alice.wait_for(&id, "cancelled").await;
    assert!(
        upstream.slow.cancelled().await,
        "the upstream tool's token fired"
    );
    let upstream_tasks = upstream.store.created();
    assert_eq!(upstream_tasks.len(), 1);
    upstream
        .store
        .until_status(&upstream_tasks[0], "cancelled")
        .await;

    // A plain upstream call: the gateway's client abandons the request.
    let id = alice.start("up__slow_plain").await;
    assert!(upstream.slow_plain.started().await);
    alice.task("tasks/cancel", &id, json!({})).await;
    alice.wait_for(&id, "cancelled").await;
    assert!(
        upstream.slow_plain.cancelled().await,
        "the upstream tool's token fired"
    );
    assert!(!alice.seen().contains(upstream_tasks[0].0.as_str()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstreams_question_makes_the_gateway_task_input_required() {
    let upstream = upstream().await;
    let (_gateway, url) = gateway(&upstream, &audit_path("input")).await;
    let alice = Downstream::new(&url, ALICE);
    // `ask` asks from an upstream task in input_required, `ask_plain` with
    // an input_required round: the downstream sees the same either way.
    for (tool, name) in [("up__ask", "Ada"), ("up__ask_plain", "Grace")] {
        let id = alice.start(tool).await;
        let waiting = alice.wait_for(&id, "input_required").await;
        let requests = waiting["inputRequests"].as_object().unwrap();
        assert_eq!(requests.len(), 1, "{waiting}");
        let (key, request) = requests.iter().next().unwrap();
        assert_eq!(request["method"], "elicitation/create");
        assert_eq!(request["params"]["message"], "Your name?");
        assert_eq!(request["params"]["mode"], "form");
        let answer = json!({"action": "accept", "content": {"name": name}});
        let ack = alice
            .task(
                "tasks/update",
                &id,
                json!({"inputResponses": {key.as_str(): answer}}),
            )
            .await;
        assert_eq!(ack["resultType"], "complete");
        let done = alice.wait_for(&id, "completed").await;
        assert_eq!(
            done["result"]["content"],
            json!([{"type": "text", "text": format!("Hello, {name}!")}]),
            "{tool}"
        );
        assert!(done.get("inputRequests").is_none());
    }
    // Only `ask` made an upstream task; it ended with the answer.
    let upstream_tasks = upstream.store.created();
    assert_eq!(upstream_tasks.len(), 1);
    upstream
        .store
        .until_status(&upstream_tasks[0], "completed")
        .await;
    assert!(!alice.seen().contains(upstream_tasks[0].0.as_str()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_cancelled_while_it_waits_for_input_cancels_the_upstream_task() {
    let upstream = upstream().await;
    let (_gateway, url) = gateway(&upstream, &audit_path("cancel-input")).await;
    let alice = Downstream::new(&url, ALICE);
    let id = alice.start("up__ask").await;
    alice.wait_for(&id, "input_required").await;
    let upstream_tasks = upstream.store.created();
    assert_eq!(upstream_tasks.len(), 1);
    upstream
        .store
        .until_status(&upstream_tasks[0], "input_required")
        .await;
    alice.task("tasks/cancel", &id, json!({})).await;
    alice.wait_for(&id, "cancelled").await;
    upstream
        .store
        .until_status(&upstream_tasks[0], "cancelled")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_principals_task_id_is_unknown() {
    let upstream = upstream().await;
    let (_gateway, url) = gateway(&upstream, &audit_path("principal")).await;
    let (alice, bob) = (Downstream::new(&url, ALICE), Downstream::new(&url, BOB));
    let id = alice.start("up__slow").await;
    let upstream_id = upstream.store.until_created().await;
    upstream.store.until_followed(&upstream_id).await;
    let not_found = json!({"code": -32602, "message": "Failed to retrieve task: Task not found"});
    for (method, extra) in [
        ("tasks/get", json!({})),
        ("tasks/cancel", json!({})),
        ("tasks/update", json!({"inputResponses": {}})),
    ] {
        let mut params = json!({"taskId": id});
        params
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        assert_eq!(bob.error(method, params).await, not_found, "{method}");
    }
    // Bob's cancel did nothing: alice's task still runs.
    let task = alice.task("tasks/get", &id, json!({})).await;
    assert_eq!(task["status"], "working");
    assert!(!upstream.slow.is_cancelled());
    alice.task("tasks/cancel", &id, json!({})).await;
    assert!(upstream.slow.cancelled().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policy_applies_to_task_calls_as_to_plain_ones() {
    let upstream = upstream().await;
    let (_gateway, url) = gateway(&upstream, &audit_path("policy")).await;
    let (alice, bob) = (Downstream::new(&url, ALICE), Downstream::new(&url, BOB));
    let unknown = |name: &str| json!({"code": -32602, "message": format!("Unknown tool: {name}")});
    let call = |name: &str| json!({"name": name, "arguments": {}});
    // Denied, and scoped to admin: unknown, with or without the extension.
    assert_eq!(
        alice.error("tools/call", call("up__hidden")).await,
        unknown("up__hidden")
    );
    assert_eq!(
        bob.error("tools/call", call("up__secret")).await,
        unknown("up__secret")
    );
    let id = alice.start("up__secret").await;
    let done = alice.wait_for(&id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "s");
    // One call a minute: the second is refused before any task is made.
    let id = alice.start("limited__report").await;
    alice.wait_for(&id, "completed").await;
    let refused = alice.call("limited__report", true).await;
    assert_eq!(refused["resultType"], "complete");
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(refused.get("taskId").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_clients_call_tool_follows_a_gateway_task_and_answers_its_question() {
    let upstream = upstream().await;
    let (_gateway, url) = gateway(&upstream, &audit_path("sdk")).await;
    let transport = HttpTransport::builder(url)
        .bearer_token(ALICE)
        .build()
        .unwrap();
    let tasks_seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let client = Client::builder(transport)
        .timeout(Duration::from_secs(10))
        .elicitation(|_: ElicitRequestParams, _: InputContext| async {
            let mut content = JsonObject::new();
            content.insert("name".into(), json!("Ada"));
            let answer: ElicitResult =
                serde_json::from_value(json!({"action": "accept", "content": content})).unwrap();
            Ok(answer)
        })
        .build();
    let seen = Arc::clone(&tasks_seen);
    let options = toolwire_client::RequestOptions::new().on_notification(move |n| {
        if let toolwire_client::RequestNotification::Task(task) = n {
            seen.lock().unwrap().push(task.task.task_id.clone());
        }
    });
    let result = tokio::time::timeout(
        Duration::from_secs(20),
        client.call_tool_with("up__ask", json!({}), &options),
    )
    .await
    .expect("done within 20 s")
    .unwrap();
    assert_eq!(result.content[0].as_text(), Some("Hello, Ada!"));
    // It followed the gateway's task, never the upstream's.
    let seen = tasks_seen.lock().unwrap().clone();
    assert!(!seen.is_empty());
    let upstream_tasks = upstream.store.created();
    assert_eq!(upstream_tasks.len(), 1);
    assert!(seen.iter().all(|id| id != &upstream_tasks[0].0), "{seen:?}");
}
