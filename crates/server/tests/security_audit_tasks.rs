//! The audit log of tasks (the Tasks extension): the call that makes a
//! task logs `task_created` with the task's id, and the task's end is one
//! `task_end` event with principal, task id, tool, outcome and duration:
//! completed, tool_error, failed, cancelled (while it ran, and while it
//! waited for input), lease_expired (its worker died) and expired (its
//! time to live ran out while it ran). Argument values never reach the log.

mod security_support;

use std::sync::Arc;
use std::time::Duration;

use security_support::{Event, capture};
use serde_json::{Value, json};
use toolwire_protocol::{ErrorObject, Request};
use toolwire_server::{
    InMemoryTaskStore, NoArgs, Principal, RequestContext, RequestEnv, Server, ServerBuilder,
    TaskRecord, TaskStore, TaskSupport, ToolBuilder, ToolError,
};

const TASKS: &str = "io.modelcontextprotocol/tasks";

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Note {
    text: String,
}

fn builder() -> ServerBuilder {
    let task = |name: &str| ToolBuilder::new(name).task_support(TaskSupport::Always);
    Server::builder("audit-tasks", "1")
        .tool(
            task("report").handler(|note: Note, _cx: RequestContext| async move {
                tokio::time::sleep(Duration::from_millis(100)).await;
                format!("{} characters noted", note.text.len())
            }),
        )
        .tool(
            task("broken").handler(|_: NoArgs, _cx: RequestContext| async {
                Err::<String, _>(ToolError::new("the report has no sections"))
            }),
        )
        .tool(
            task("crash").handler(|_: NoArgs, _cx: RequestContext| async {
                Err::<String, _>(ToolError::Protocol(ErrorObject::internal("no printer")))
            }),
        )
        .tool(
            task("slow").handler(|_: NoArgs, cx: RequestContext| async move {
                cx.cancellation().cancelled().await;
                "stopped"
            }),
        )
        .tool(
            task("ask").handler(|_: NoArgs, cx: RequestContext| async move {
                let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
                cx.elicit_form("ok", "Go on?", schema)?;
                Ok::<_, ToolError>("went on")
            }),
        )
}

async fn send(server: &Server, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "extensions": {TASKS: {}}},
    });
    let Value::Object(params) = params else {
        unreachable!()
    };
    let request = Request::new(1, method, Some(params));
    let env = RequestEnv::new().with_principal(Principal::new("alice"));
    let reply = serde_json::to_value(server.handle_request(request, env).await).unwrap();
    assert!(reply.get("error").is_none(), "{method}: {reply}");
    reply["result"].clone()
}

/// Calls `tool` and returns the task's id.
async fn start(server: &Server, tool: &str, arguments: Value) -> String {
    let created = send(
        server,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
    .await;
    assert_eq!(created["resultType"], "task", "{created}");
    created["taskId"].as_str().unwrap().to_owned()
}

/// Polls `tasks/get` (up to 10 s) until the task has `status`.
async fn until(server: &Server, id: &str, status: &str) -> Value {
    for _ in 0..1000 {
        let task = send(server, "tasks/get", json!({"taskId": id})).await;
        if task["status"] == status {
            return task;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("task {id} never reached {status}");
}

fn task_ends(events: &[Event]) -> Vec<Event> {
    events
        .iter()
        .filter(|e| e.field("event") == "task_end")
        .cloned()
        .collect()
}

/// The one `task_end` event of task `id`: (principal, tool, outcome) and its duration.
fn ended(events: &[Event], id: &str) -> ((String, String, String), u64) {
    let task = format!("{id:?}");
    let ends: Vec<Event> = task_ends(events)
        .into_iter()
        .filter(|e| e.field("task") == task)
        .collect();
    assert_eq!(ends.len(), 1, "task {id}: {events:#?}");
    let end = &ends[0];
    let fields: Vec<&str> = end.fields.keys().map(String::as_str).collect();
    assert_eq!(
        fields,
        [
            "duration_ms",
            "event",
            "outcome",
            "principal",
            "task",
            "tool"
        ]
    );
    let summary = (
        end.field("principal").to_owned(),
        end.field("tool").to_owned(),
        end.field("outcome").to_owned(),
    );
    (summary, end.field("duration_ms").parse().unwrap())
}

fn summary(tool: &str, outcome: &str) -> (String, String, String) {
    (
        "\"alice\"".to_owned(),
        format!("{tool:?}"),
        outcome.to_owned(),
    )
}

#[tokio::test]
async fn each_end_of_a_task_is_logged_once() {
    let (captured, _guard) = capture();
    let server = builder().build().unwrap();

    let report = start(&server, "report", json!({"text": "secret-value"})).await;
    until(&server, &report, "completed").await;
    let broken = start(&server, "broken", json!({})).await;
    until(&server, &broken, "completed").await;
    let crash = start(&server, "crash", json!({})).await;
    until(&server, &crash, "failed").await;
    let slow = start(&server, "slow", json!({})).await;
    send(&server, "tasks/cancel", json!({"taskId": slow})).await;
    until(&server, &slow, "cancelled").await;
    let ask = start(&server, "ask", json!({})).await;
    until(&server, &ask, "input_required").await;
    send(&server, "tasks/cancel", json!({"taskId": ask})).await;
    until(&server, &ask, "cancelled").await;
    // Read again: logged once all the same.
    for id in [&report, &broken, &crash, &slow, &ask] {
        send(&server, "tasks/get", json!({"taskId": id})).await;
    }
    tokio::time::sleep(Duration::from_millis(50)).await;

    let events = captured.audit();
    assert_eq!(task_ends(&events).len(), 5, "{events:#?}");
    let (what, duration) = ended(&events, &report);
    assert_eq!(what, summary("report", "completed"));
    assert!(duration >= 100, "{duration}");
    assert_eq!(ended(&events, &broken).0, summary("broken", "tool_error"));
    assert_eq!(ended(&events, &crash).0, summary("crash", "failed"));
    assert_eq!(ended(&events, &slow).0, summary("slow", "cancelled"));
    assert_eq!(ended(&events, &ask).0, summary("ask", "cancelled"));

    // Each call that made a task logged its id.
    let created: Vec<(String, String)> = events
        .iter()
        .filter(|e| e.field("event") == "tool_call")
        .map(|e| (e.field("outcome").to_owned(), e.field("task").to_owned()))
        .collect();
    let expected: Vec<(String, String)> = [&report, &broken, &crash, &slow, &ask]
        .iter()
        .map(|id| ("task_created".to_owned(), format!("{id:?}")))
        .collect();
    assert_eq!(created, expected);
    assert!(!format!("{events:?}").contains("secret-value"));
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

#[tokio::test]
async fn a_task_whose_worker_died_is_logged_by_its_first_reader() {
    let (captured, _guard) = capture();
    // A worker that died: its record says working, its lease ended 1 s ago.
    let store = Arc::new(InMemoryTaskStore::new());
    let id = "0123456789abcdef0123456789abcdef";
    let owner = Principal::new("alice").key();
    let record = TaskRecord::new(id, owner, "report", now_ms() - 5_000, None, 100, 4_000);
    store.create(record, 10).await.unwrap();
    let server = builder().task_store(store).build().unwrap();
    for _ in 0..3 {
        let task = send(&server, "tasks/get", json!({"taskId": id})).await;
        assert_eq!(task["status"], "failed", "{task}");
    }
    let events = captured.audit();
    let (what, duration) = ended(&events, id);
    assert_eq!(what, summary("report", "lease_expired"));
    assert!(duration >= 5_000, "{duration}");
}

#[tokio::test]
async fn a_task_whose_time_ran_out_while_it_ran_is_logged_expired() {
    let (captured, _guard) = capture();
    let server = builder()
        .task_ttl(Some(Duration::from_millis(200)))
        .task_lease(Duration::from_millis(150))
        .build()
        .unwrap();
    let slow = start(&server, "slow", json!({})).await;
    // The worker notices at its next lease renewal (every 50 ms).
    for _ in 0..500 {
        if !task_ends(&captured.audit()).is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (what, duration) = ended(&captured.audit(), &slow);
    assert_eq!(what, summary("slow", "expired"));
    assert!(duration >= 200, "{duration}");
}
