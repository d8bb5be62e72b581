//! A call cancelled before its answer arrives, when the server made a task
//! for it meanwhile: the client reads the late answer and cancels the task
//! (it would otherwise run on with nobody to see it). Over a real HTTP
//! server on 127.0.0.1:0 whose answers to `tools/call` are held back.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::extract::Request;
use axum::middleware::Next;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use toolwire_client::transport::HttpTransport;
use toolwire_client::{Client, Error, RequestOptions};
use toolwire_server::http::{HttpConfig, router};
use toolwire_server::{NoArgs, RequestContext, Server, TaskSupport, ToolBuilder};

/// Longest the test waits for anything.
const LIMIT: Duration = Duration::from_secs(10);

#[tokio::test]
async fn a_task_made_after_its_call_was_cancelled_is_cancelled() {
    let stopped = Arc::new(AtomicBool::new(false));
    let probe = Arc::clone(&stopped);
    let server = Server::builder("late-task", "1")
        .tool(
            ToolBuilder::new("long")
                .task_support(TaskSupport::Optional)
                .handler(move |_: NoArgs, cx: RequestContext| {
                    let probe = Arc::clone(&probe);
                    async move {
                        cx.cancellation().cancelled().await;
                        probe.store(true, Ordering::SeqCst);
                        "stopped"
                    }
                }),
        )
        .build()
        .unwrap();
    // The task exists once the server has answered; its answer then takes
    // 400 ms more to leave, and the caller gives up (at 150 ms) before it
    // arrives, well within the client's one second of reading on.
    let hold_back = |request: Request, next: Next| async move {
        let is_call = request
            .headers()
            .get("mcp-method")
            .is_some_and(|m| m == "tools/call");
        let response = next.run(request).await;
        if is_call {
            tokio::time::sleep(Duration::from_millis(400)).await;
        }
        response
    };
    let app = router(server, HttpConfig::new())
        .layer(axum::middleware::from_fn(hold_back))
        .into_make_service_with_connect_info::<SocketAddr>();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let client = Client::builder(HttpTransport::new(url).unwrap()).build();
    let token = CancellationToken::new();
    let trigger = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(150)).await;
        trigger.cancel();
    });
    let options = RequestOptions::new().cancel_on(token);
    let called = client.call_tool_with("long", json!({}), &options).await;
    assert!(matches!(called, Err(Error::Cancelled)), "{called:?}");
    let deadline = tokio::time::Instant::now() + LIMIT;
    while !stopped.load(Ordering::SeqCst) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the task made for the cancelled call is still running"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
