//! Waiting for a task follows the server's `notifications/tasks` (through
//! `subscriptions/listen` with `taskIds`): a task whose poll interval is
//! 30 s is over for the client as soon as it ends, with no more `tasks/get`
//! than the first and the one that confirms the notification. A server
//! that refuses the subscription, or an endpoint that fails it, leaves
//! polling: the call still ends with its result. Over a real HTTP server
//! on 127.0.0.1:0 that notes the method of every request it receives.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::IntoResponse;
use serde_json::json;
use tokio::sync::Notify;
use toolwire_client::transport::HttpTransport;
use toolwire_client::{Client, ListenEvent, RequestNotification, RequestOptions, ToolCallStart};
use toolwire_protocol::{CallToolResult, SubscriptionFilter, TaskStatus};
use toolwire_server::http::{HttpConfig, router};
use toolwire_server::{NoArgs, RequestContext, Server, ServerBuilder, TaskSupport, ToolBuilder};

/// Longest a test waits for anything.
const LIMIT: Duration = Duration::from_secs(10);

/// The `Mcp-Method` of every request the server received, in order.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<String>>>);

impl Seen {
    fn methods(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }

    fn count(&self, method: &str) -> usize {
        self.methods().iter().filter(|m| *m == method).count()
    }

    /// Waits (up to [`LIMIT`]) until `method` has been received `n` times.
    async fn until(&self, method: &str, n: usize) {
        let deadline = tokio::time::Instant::now() + LIMIT;
        while self.count(method) < n {
            assert!(
                tokio::time::Instant::now() < deadline,
                "never saw {n} {method}: {:?}",
                self.methods()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// A server whose `gate` task ends once the test opens the gate.
fn server(gate: Arc<Notify>, configure: fn(ServerBuilder) -> ServerBuilder) -> Server {
    let builder = Server::builder("task-notifications", "1").tool(
        ToolBuilder::new("gate")
            .task_support(TaskSupport::Optional)
            .handler(move |_: NoArgs, _cx: RequestContext| {
                let gate = Arc::clone(&gate);
                async move {
                    gate.notified().await;
                    "through the gate"
                }
            }),
    );
    configure(builder).build().expect("valid tools")
}

/// Serves `server` on 127.0.0.1:0 noting each request's method in `seen`;
/// with `fail_listen` every `subscriptions/listen` gets an HTTP 503.
async fn serve(server: Server, seen: Seen, fail_listen: bool) -> String {
    let note = move |request: Request, next: Next| {
        let seen = seen.clone();
        async move {
            let method = request
                .headers()
                .get("mcp-method")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned();
            seen.0.lock().unwrap().push(method.clone());
            if fail_listen && method == "subscriptions/listen" {
                return (StatusCode::SERVICE_UNAVAILABLE, "no subscriptions today").into_response();
            }
            next.run(request).await
        }
    };
    let app = router(server, HttpConfig::new())
        .layer(axum::middleware::from_fn(note))
        .into_make_service_with_connect_info::<SocketAddr>();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

fn client(url: &str) -> Client {
    Client::builder(HttpTransport::new(url).unwrap()).build()
}

/// Options that collect the task statuses a wait reports.
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

/// Once the wait has read its task once (it then sleeps a whole poll
/// interval unless told), opens the gate; the wait's result, which the
/// notification must bring long before the next poll.
async fn open_gate_and_wait(
    gate: &Notify,
    seen: &Seen,
    wait: tokio::task::JoinHandle<Result<CallToolResult, toolwire_client::Error>>,
) -> CallToolResult {
    seen.until("tasks/get", 1).await;
    gate.notify_one();
    tokio::time::timeout(LIMIT, wait)
        .await
        .expect("the notification should end the wait long before the next poll")
        .unwrap()
        .unwrap()
}

fn text(result: &toolwire_protocol::CallToolResult) -> &str {
    result.content[0].as_text().unwrap()
}

#[tokio::test]
async fn a_notification_ends_the_wait_without_waiting_for_the_next_poll() {
    let gate = Arc::new(Notify::new());
    let seen = Seen::default();
    let slow_polls = |b: ServerBuilder| b.task_poll_interval(Duration::from_secs(30));
    let url = serve(server(Arc::clone(&gate), slow_polls), seen.clone(), false).await;
    let client = client(&url);
    let (statuses, options) = statuses();
    let call =
        tokio::spawn(async move { client.call_tool_with("gate", json!({}), &options).await });
    // The wait has subscribed and read the task once; it now sleeps 30 s
    // unless the server tells it something.
    let result = open_gate_and_wait(&gate, &seen, call).await;
    assert_eq!(text(&result), "through the gate");
    assert_eq!(
        seen.methods(),
        [
            "tools/list",
            "tools/call",
            "subscriptions/listen",
            "tasks/get",
            "tasks/get"
        ]
    );
    assert_eq!(
        *statuses.lock().unwrap(),
        [TaskStatus::Working, TaskStatus::Completed]
    );

    // A task taken up by id (as another process would) is followed too.
    let seen = Seen::default();
    let url = serve(server(Arc::clone(&gate), slow_polls), seen.clone(), false).await;
    let first = self::client(&url);
    let ToolCallStart::Task(task) = first.start_tool_task("gate", json!({})).await.unwrap() else {
        panic!("gate should have become a task");
    };
    let id = task.id().to_owned();
    // The first client listens to the task itself (Client::listen declares
    // the extension for a filter with taskIds).
    let filter = SubscriptionFilter {
        task_ids: Some(vec![id.clone()]),
        ..SubscriptionFilter::default()
    };
    let mut events = first.listen(filter).await.unwrap();
    assert_eq!(events.acknowledged().task_ids, Some(vec![id.clone()]));
    let second = self::client(&url);
    let resumed = second.task(&id);
    let wait = tokio::spawn(async move { resumed.wait().await });
    let result = open_gate_and_wait(&gate, &seen, wait).await;
    assert_eq!(text(&result), "through the gate");
    assert_eq!(
        seen.methods(),
        [
            "tools/list",
            "tools/call",
            "subscriptions/listen",
            "subscriptions/listen",
            "tasks/get",
            "tasks/get"
        ]
    );
    // What the first client heard: the task, completed, with its result.
    let completed = tokio::time::timeout(LIMIT, async {
        loop {
            match events.next_event().await {
                Some(Ok(ListenEvent::Other(n))) if n.method == "notifications/tasks" => {
                    let params = serde_json::Value::Object(n.params.unwrap_or_default());
                    if params["status"] == "completed" {
                        return params;
                    }
                }
                other => panic!("unexpected {other:?}"),
            }
        }
    })
    .await
    .expect("notifications/tasks of the completed task");
    assert_eq!(completed["taskId"], id.as_str());
    assert_eq!(
        completed["result"]["content"][0]["text"],
        "through the gate"
    );
}

#[tokio::test]
async fn without_notifications_the_wait_polls() {
    let quick_polls = |b: ServerBuilder| b.task_poll_interval(Duration::from_millis(50));
    let refusing = |b: ServerBuilder| {
        b.task_poll_interval(Duration::from_millis(50))
            .max_subscriptions_per_principal(0)
    };
    // The server refuses the subscription (a JSON-RPC error), or the
    // endpoint fails it (HTTP 503): the call ends all the same.
    for (what, configure, fail_listen) in [
        (
            "refused",
            refusing as fn(ServerBuilder) -> ServerBuilder,
            false,
        ),
        ("failed", quick_polls, true),
    ] {
        let gate = Arc::new(Notify::new());
        let seen = Seen::default();
        let url = serve(
            server(Arc::clone(&gate), configure),
            seen.clone(),
            fail_listen,
        )
        .await;
        let client = client(&url);
        let (statuses, options) = statuses();
        let call =
            tokio::spawn(async move { client.call_tool_with("gate", json!({}), &options).await });
        seen.until("tasks/get", 2).await;
        gate.notify_one();
        let result = tokio::time::timeout(LIMIT, call)
            .await
            .unwrap_or_else(|_| panic!("{what}: polling should have ended the wait"))
            .unwrap()
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(text(&result), "through the gate", "{what}");
        let methods = seen.methods();
        assert_eq!(
            methods[..4],
            [
                "tools/list",
                "tools/call",
                "subscriptions/listen",
                "tasks/get"
            ],
            "{what}: {methods:?}"
        );
        assert_eq!(seen.count("subscriptions/listen"), 1, "{what}: {methods:?}");
        assert!(
            methods[4..].iter().all(|m| m == "tasks/get"),
            "{what}: {methods:?}"
        );
        let statuses = statuses.lock().unwrap().clone();
        assert_eq!(statuses.last(), Some(&TaskStatus::Completed), "{what}");
        assert!(
            statuses[..statuses.len() - 1]
                .iter()
                .all(|s| *s == TaskStatus::Working),
            "{what}: {statuses:?}"
        );
    }
}
