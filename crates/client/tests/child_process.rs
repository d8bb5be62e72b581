//! The stdio transport against real child processes.
//!
//! This test binary is also the server it spawns: with `TOOLWIRE_FIXTURE`
//! set, `main` serves our demo server on stdin/stdout in the named mode
//! instead of running the tests. That gives real processes (pipes, exit
//! codes, signals, stderr) without a separate fixture binary.

mod support;

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::process::ExitCode;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use toolwire_client::transport::{StdioTransport, Transport};
use toolwire_client::{Client, Error, RequestOptions, TransportError};
use toolwire_protocol::Message;
use toolwire_server::RequestEnv;

const FIXTURE: &str = "TOOLWIRE_FIXTURE";

fn main() -> ExitCode {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    if let Ok(mode) = std::env::var(FIXTURE) {
        runtime.block_on(fixture(&mode));
        return ExitCode::SUCCESS;
    }
    run_tests(&runtime)
}

type Test = fn() -> Pin<Box<dyn Future<Output = ()>>>;

fn run_tests(runtime: &tokio::runtime::Runtime) -> ExitCode {
    let tests: &[(&str, Test)] = &[
        (
            "real_server_answers_concurrent_requests_on_one_pipe",
            || Box::pin(concurrent_requests()),
        ),
        (
            "a_timed_out_request_is_cancelled_and_the_pipe_stays_usable",
            || Box::pin(timeout_cancels()),
        ),
        ("a_crashed_server_is_restarted_on_the_next_request", || {
            Box::pin(restart_after_exit())
        }),
        ("a_request_in_flight_when_the_server_dies_fails", || {
            Box::pin(crash_in_flight())
        }),
        ("stderr_is_captured", || Box::pin(stderr_captured())),
        (
            "a_server_writing_bytes_that_are_not_utf8_is_still_understood",
            || Box::pin(garbled_output()),
        ),
        (
            "shutdown_closes_stdin_first",
            || Box::pin(shutdown_by_eof()),
        ),
        ("shutdown_escalates_to_sigterm", || {
            Box::pin(shutdown_sigterm())
        }),
        ("shutdown_escalates_to_sigkill", || {
            Box::pin(shutdown_sigkill())
        }),
        ("a_missing_program_is_a_transport_error", || {
            Box::pin(missing_program())
        }),
    ];
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let (mut passed, mut failed) = (0, 0);
    for (name, test) in tests {
        if !filter.is_empty() && !filter.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| runtime.block_on(test())));
        if outcome.is_ok() {
            passed += 1;
            println!("test {name} ... ok");
        } else {
            failed += 1;
            println!("test {name} ... FAILED");
        }
    }
    println!("\n{passed} passed, {failed} failed");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// This binary as a stdio server in `mode`.
fn child(mode: &str) -> toolwire_client::transport::StdioTransportBuilder {
    let exe = std::env::current_exe().expect("own path");
    StdioTransport::command(exe)
        .env(FIXTURE, mode)
        .transport()
        .shutdown_grace(Duration::from_millis(300))
        .term_grace(Duration::from_millis(300))
}

/// The fixture side.
async fn fixture(mode: &str) {
    let server = support::demo_server();
    if mode == "server" {
        toolwire_server::stdio::serve_stdio(server)
            .await
            .expect("serve");
        return;
    }
    // Keeps SIGTERM from killing the process.
    #[cfg(unix)]
    let _ignore_term = (mode == "stubborn").then(|| {
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("signal")
    });
    eprintln!("fixture {mode} starting");
    if mode == "garbled" {
        // More than a pipe holds: only a reader that keeps draining stderr
        // lets the fixture get past this.
        use std::io::Write;
        let line = [b"latin-1 \xe9t\xe9 ".repeat(40).as_slice(), b"\n"].concat();
        let mut stderr = std::io::stderr().lock();
        for _ in 0..400 {
            stderr.write_all(&line).unwrap();
        }
        stderr.write_all(b"garbled \xff done\n").unwrap();
    }
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut stdout = tokio::io::stdout();
    while let Ok(Some(line)) = lines.next_line().await {
        let Ok(Message::Request(request)) = Message::from_slice(line.as_bytes()) else {
            continue;
        };
        if mode == "crash" && request.method == "tools/call" {
            eprintln!("fixture: crashing on purpose");
            std::process::exit(3);
        }
        let response = server.handle_request(request, RequestEnv::new()).await;
        if mode == "garbled" {
            stdout.write_all(b"\xfe\xff not a message\n").await.unwrap();
        }
        let mut bytes = serde_json::to_vec(&response).unwrap();
        bytes.push(b'\n');
        stdout.write_all(&bytes).await.unwrap();
        stdout.flush().await.unwrap();
        if mode == "one-shot" {
            std::process::exit(0);
        }
    }
    if matches!(mode, "stubborn" | "ignore-eof") {
        loop {
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
    }
}

async fn concurrent_requests() {
    let transport = child("server").build();
    let client = Client::builder(transport.clone()).build();
    let calls = (0..20).map(|i| {
        let client = client.clone();
        async move {
            let text = format!("message {i}");
            let result = client
                .call_tool("echo", json!({"text": text}))
                .await
                .unwrap();
            assert_eq!(result.content[0].as_text(), Some(text.as_str()));
        }
    });
    futures::future::join_all(calls).await;
    assert_eq!(transport.starts(), 1);
    let status = transport.shutdown().await.expect("an exit status");
    assert!(status.success(), "{status:?}");
}

async fn timeout_cancels() {
    let transport = child("server").build();
    let client = Client::builder(transport.clone()).build();
    let options = RequestOptions::new().timeout(Duration::from_millis(200));
    let err = client
        .call_tool_with("sleep", json!({"ms": 60_000}), &options)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Timeout(_)), "{err:?}");
    let ok = client
        .call_tool("echo", json!({"text": "after"}))
        .await
        .unwrap();
    assert_eq!(ok.content[0].as_text(), Some("after"));
    // The sleeping handler was cancelled, so the server exits promptly on EOF
    // (well within the grace period) instead of waiting a minute.
    let status = transport.shutdown().await.expect("an exit status");
    assert!(status.success(), "{status:?}");
}

async fn restart_after_exit() {
    let transport = child("one-shot").build();
    let client = Client::builder(transport.clone()).build();
    let first = client.discover().await.unwrap();
    assert_eq!(first.value.supported_versions, ["2026-07-28"]);
    wait_until_disconnected(&transport).await;
    client.cache().clear();
    let second = client.discover().await.unwrap();
    assert_eq!(second.value.supported_versions, ["2026-07-28"]);
    assert_eq!(transport.starts(), 2);
}

async fn crash_in_flight() {
    let transport = child("crash").build();
    let client = Client::builder(transport.clone()).build();
    let err = client
        .call_tool("echo", json!({"text": "boom"}))
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Transport(TransportError::Closed(_))),
        "{err:?}"
    );
    wait_for_stderr(&transport, "fixture: crashing on purpose").await;
    // The next request starts a fresh process.
    client.cache().clear();
    client.list_tools().await.unwrap();
    assert_eq!(transport.starts(), 2);
}

async fn stderr_captured() {
    let transport = child("chatty").stderr_lines(10).build();
    let client = Client::builder(transport.clone()).build();
    client.discover().await.unwrap();
    wait_for_stderr(&transport, "fixture chatty starting").await;
    transport.shutdown().await;
}

async fn garbled_output() {
    let transport = child("garbled").stderr_lines(10).build();
    let client = Client::builder(transport.clone()).build();
    let result = tokio::time::timeout(
        Duration::from_secs(10),
        client.call_tool("echo", json!({"text": "through"})),
    )
    .await
    .expect("an answer despite the garbled lines")
    .unwrap();
    assert_eq!(result.content[0].as_text(), Some("through"));
    wait_for_stderr(&transport, "garbled \u{FFFD} done").await;
    assert_eq!(transport.starts(), 1);
    transport.shutdown().await;
}

async fn shutdown_by_eof() {
    let transport = child("plain").build();
    Client::builder(transport.clone())
        .build()
        .discover()
        .await
        .unwrap();
    let status = transport.shutdown().await.expect("an exit status");
    assert!(status.success(), "{status:?}");
    let err = transport
        .send(toolwire_client::transport::OutgoingRequest::new(
            toolwire_protocol::Request::new(1, "x", None),
        ))
        .await
        .unwrap_err();
    assert_eq!(err, TransportError::Shutdown);
}

#[cfg(unix)]
async fn shutdown_sigterm() {
    use std::os::unix::process::ExitStatusExt;
    let transport = child("ignore-eof").build();
    Client::builder(transport.clone())
        .build()
        .discover()
        .await
        .unwrap();
    let status = transport.shutdown().await.expect("an exit status");
    assert_eq!(status.signal(), Some(15), "{status:?}");
}

#[cfg(unix)]
async fn shutdown_sigkill() {
    use std::os::unix::process::ExitStatusExt;
    let transport = child("stubborn").build();
    Client::builder(transport.clone())
        .build()
        .discover()
        .await
        .unwrap();
    let status = transport.shutdown().await.expect("an exit status");
    assert_eq!(status.signal(), Some(9), "{status:?}");
}

#[cfg(not(unix))]
async fn shutdown_sigterm() {}

#[cfg(not(unix))]
async fn shutdown_sigkill() {}

async fn missing_program() {
    let transport = StdioTransport::command("/nonexistent/toolwire-no-such-server").build();
    let err = Client::builder(transport)
        .build()
        .list_tools()
        .await
        .unwrap_err();
    match err {
        Error::Transport(TransportError::Io(message)) => {
            assert!(
                message.starts_with("cannot start /nonexistent/toolwire-no-such-server"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
}

async fn wait_until_disconnected(transport: &StdioTransport) {
    for _ in 0..500 {
        if !transport.is_connected().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the one-shot server did not exit");
}

async fn wait_for_stderr(transport: &StdioTransport, line: &str) {
    for _ in 0..500 {
        if transport.stderr_tail().iter().any(|l| l == line) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!(
        "stderr never showed {line:?}: {:?}",
        transport.stderr_tail()
    );
}
