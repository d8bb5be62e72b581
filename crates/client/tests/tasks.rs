//! The Tasks extension from the client's side, over a real HTTP server:
//! `call_tool` follows a task to its result, a task's input requests are
//! answered by the client's handlers through `tasks/update`, a task started
//! by one client is finished by another (as another process would),
//! cancellation sends `tasks/cancel`, and a client that opts out gets plain
//! results.

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use tokio_util::sync::CancellationToken;
use toolwire_client::handlers::{BoxError, InputContext};
use toolwire_client::transport::HttpTransport;
use toolwire_client::{Client, Error, RequestNotification, RequestOptions, ToolCallStart};
use toolwire_protocol::{ElicitRequestParams, ElicitResult, ElicitValue, TaskStatus};
use toolwire_server::{NoArgs, RequestContext, Server, TaskSupport, ToolBuilder, ToolError};

use support::http_server;

#[derive(Default)]
struct Probe {
    started: AtomicBool,
    cancelled: AtomicBool,
}

fn server(probe: Arc<Probe>) -> Server {
    Server::builder("tasks-client-test", "1")
        .task_poll_interval(Duration::from_millis(20))
        .tool(
            ToolBuilder::new("count")
                .task_support(TaskSupport::Optional)
                .handler(|_: NoArgs, _cx: RequestContext| async {
                    tokio::time::sleep(Duration::from_millis(150)).await;
                    "counted to 3"
                }),
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
        .tool(
            ToolBuilder::new("steps")
                .task_support(TaskSupport::Optional)
                .handler(|_: NoArgs, cx: RequestContext| async move {
                    cx.progress(1.0, Some(2.0), Some("step 1 of 2")).await;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    cx.progress(2.0, Some(2.0), None).await;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    "two steps"
                }),
        )
        .tool(
            ToolBuilder::new("inline")
                .handler(|_: NoArgs, _cx: RequestContext| async { "inline done" }),
        )
        .build()
        .expect("valid tools")
}

async fn serve() -> (String, Arc<Probe>) {
    let probe = Arc::new(Probe::default());
    let url = http_server(server(Arc::clone(&probe))).await;
    (url, probe)
}

fn client(url: &str) -> Client {
    Client::builder(HttpTransport::new(url).unwrap()).build()
}

/// Waits (up to 5 s) for `flag`.
async fn until(flag: &AtomicBool) -> bool {
    for _ in 0..250 {
        if flag.load(Ordering::SeqCst) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

fn text(result: &toolwire_protocol::CallToolResult) -> &str {
    result.content[0].as_text().unwrap()
}

/// Collects the task statuses a call reports.
fn statuses() -> (Arc<Mutex<Vec<TaskStatus>>>, RequestOptions) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let options = RequestOptions::new().on_notification(move |n| {
        if let RequestNotification::Task(task) = n {
            sink.lock().unwrap().push(task.task.status);
        }
    });
    (seen, options)
}

#[tokio::test]
async fn call_tool_follows_a_task_to_its_result() {
    let (url, _) = serve().await;
    let client = client(&url);
    let (seen, options) = statuses();
    let result = client
        .call_tool_with("count", json!({}), &options)
        .await
        .unwrap();
    assert_eq!(text(&result), "counted to 3");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.last(), Some(&TaskStatus::Completed), "{seen:?}");
    assert!(
        seen[..seen.len() - 1]
            .iter()
            .all(|s| *s == TaskStatus::Working),
        "{seen:?}"
    );
    // A tool that is always a task works the same way.
    let result = client.call_tool("always", json!({})).await.unwrap();
    assert_eq!(text(&result), "always done");
}

#[tokio::test]
async fn a_tasks_input_request_is_answered_by_the_elicitation_handler() {
    let (url, _) = serve().await;
    let asked = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&asked);
    let client = Client::builder(HttpTransport::new(&url).unwrap())
        .elicitation(move |params: ElicitRequestParams, cx: InputContext| {
            log.lock()
                .unwrap()
                .push((params.message().to_owned(), cx.method, cx.target, cx.key));
            async move {
                let value: ElicitValue = serde_json::from_value(json!("Ada")).unwrap();
                Ok::<_, BoxError>(ElicitResult::accept([("name".to_owned(), value)].into()))
            }
        })
        .build();
    let (seen, options) = statuses();
    let result = client
        .call_tool_with("ask", json!({}), &options)
        .await
        .unwrap();
    assert_eq!(text(&result), "Hello, Ada!");
    // Asked once, although the task may have been polled in input_required again.
    assert_eq!(
        *asked.lock().unwrap(),
        [(
            "Your name?".to_owned(),
            "tools/call".to_owned(),
            "ask".to_owned(),
            "name".to_owned()
        )]
    );
    assert!(seen.lock().unwrap().contains(&TaskStatus::InputRequired));
}

#[tokio::test]
async fn a_task_started_by_one_client_is_finished_by_another() {
    let (url, _) = serve().await;
    let first = client(&url);
    let ToolCallStart::Task(task) = first.start_tool_task("count", json!({})).await.unwrap() else {
        panic!("count should have become a task");
    };
    let id = task.id().to_owned();
    assert!(id.len() >= 16, "{id}");
    first.close().await;
    drop(first);
    // A new client, as a restarted process would make, resumes by id.
    let second = client(&url);
    let seen = second.task(&id).get().await.unwrap();
    assert_eq!(seen.task.task_id, id);
    let result = second.task(&id).wait().await.unwrap();
    assert_eq!(text(&result), "counted to 3");
    // The task is still there to read, completed.
    let done = second.task(&id).get().await.unwrap();
    assert_eq!(done.task.status, TaskStatus::Completed);
    // A tool that is never a task answers at once.
    match second.start_tool_task("inline", json!({})).await.unwrap() {
        ToolCallStart::Done(result) => assert_eq!(text(&result), "inline done"),
        ToolCallStart::Task(task) => panic!("inline became task {}", task.id()),
    }
    // An unknown id is the SEP's error.
    let err = second.task("no-such-task").get().await.unwrap_err();
    assert_eq!(err.code(), Some(-32602), "{err}");
}

#[tokio::test]
async fn cancel_sends_tasks_cancel() {
    let (url, probe) = serve().await;
    let client = client(&url);
    let ToolCallStart::Task(task) = client.start_tool_task("slow", json!({})).await.unwrap() else {
        panic!("slow should have become a task");
    };
    until(&probe.started).await;
    task.cancel().await.unwrap();
    let err = task.wait().await.unwrap_err();
    assert!(matches!(err, Error::Cancelled), "{err}");
    assert_eq!(task.get().await.unwrap().task.status, TaskStatus::Cancelled);
    assert!(probe.cancelled.load(Ordering::SeqCst));

    // Cancelling a call that waits for its task cancels the task too.
    let (url, probe) = serve().await;
    let client = self::client(&url);
    let token = CancellationToken::new();
    let trigger = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        trigger.cancel();
    });
    let options = RequestOptions::new().cancel_on(token);
    let err = client
        .call_tool_with("slow", json!({}), &options)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Cancelled), "{err}");
    assert!(until(&probe.cancelled).await);
}

#[tokio::test]
async fn a_call_that_runs_out_of_time_cancels_its_task() {
    let (url, probe) = serve().await;
    let client = client(&url);
    let options = RequestOptions::new().max_timeout(Duration::from_millis(300));
    let err = client
        .call_tool_with("slow", json!({}), &options)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Timeout(_)), "{err}");
    assert!(until(&probe.cancelled).await);
}

#[tokio::test]
async fn a_client_that_opts_out_gets_plain_results() {
    let (url, _) = serve().await;
    let client = Client::builder(HttpTransport::new(&url).unwrap())
        .tasks(false)
        .build();
    let (seen, options) = statuses();
    let result = client
        .call_tool_with("count", json!({}), &options)
        .await
        .unwrap();
    assert_eq!(text(&result), "counted to 3");
    assert!(seen.lock().unwrap().is_empty());
    // A tool that is only ever a task needs the extension.
    let err = client.call_tool("always", json!({})).await.unwrap_err();
    assert_eq!(err.code(), Some(-32021), "{err}");
}

#[tokio::test]
async fn a_tasks_progress_is_its_status_message() {
    let (url, _) = serve().await;
    let client = client(&url);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let options = RequestOptions::new().on_notification(move |n| {
        if let RequestNotification::Task(task) = n {
            let message = task.task.status_message.clone();
            let mut seen = sink.lock().unwrap();
            if seen.last() != Some(&message) {
                seen.push(message);
            }
        }
    });
    let result = client
        .call_tool_with("steps", json!({}), &options)
        .await
        .unwrap();
    assert_eq!(text(&result), "two steps");
    let seen = seen.lock().unwrap().clone();
    let messages: Vec<&str> = seen.iter().flatten().map(String::as_str).collect();
    assert_eq!(messages, ["step 1 of 2", "2/2"], "{seen:?}");
}
