//! A task that asks the user a question mid-task (an elicitation among its
//! `inputRequests`), answered at the terminal by the real `toolwire`
//! binary: by `toolwire call` as it follows the task, and by `toolwire task
//! wait` taking up a detached task from another process. The server is a
//! real Streamable HTTP server on 127.0.0.1:0 in this test's process.

mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::toolwire;
use toolwire_server::http::{HttpConfig, HttpServer};
use toolwire_server::protocol::ElicitAction;
use toolwire_server::{RequestContext, Server, TaskSupport, ToolBuilder, ToolError};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Publish {
    /// What to publish.
    title: String,
}

/// Writes a draft, then asks where to publish it.
async fn publish(args: Publish, cx: RequestContext) -> Result<String, ToolError> {
    cx.progress(1.0, Some(2.0), Some("draft written")).await;
    let schema = json!({
        "type": "object",
        "properties": {
            "channel": {"type": "string", "title": "Channel"},
            "now": {"type": "boolean", "title": "Publish now?"}
        },
        "required": ["channel", "now"]
    });
    let title = args.title;
    let answer = cx.elicit_form("where", &format!("Where should {title} go?"), schema)?;
    let content = answer.content.unwrap_or_default();
    let channel = content.get("channel").and_then(|v| v.as_str());
    let now = content.get("now").and_then(|v| v.as_bool());
    match (answer.action, channel, now) {
        (ElicitAction::Accept, Some(channel), Some(true)) => {
            Ok(format!("Published {title} to {channel}."))
        }
        (ElicitAction::Accept, Some(channel), _) => Ok(format!("Scheduled {title} for {channel}.")),
        (ElicitAction::Cancel, ..) => Err(ToolError::new(format!("{title} was not published"))),
        _ => Ok(format!("Kept {title} as a draft.")),
    }
}

/// The server, on a runtime of its own for as long as the test holds it.
struct InProcess {
    url: String,
    _runtime: tokio::runtime::Runtime,
}

fn serve() -> InProcess {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let url = runtime.block_on(async {
        let server = Server::builder("newsroom", "1")
            .task_poll_interval(Duration::from_millis(50))
            .tool(
                ToolBuilder::new("publish")
                    .description("Publishes a piece, asking where")
                    .task_support(TaskSupport::Always)
                    .handler(publish),
            )
            .build()
            .expect("valid tools");
        let addr = "127.0.0.1:0".parse().unwrap();
        let http = HttpServer::bind(addr, server, HttpConfig::new())
            .await
            .expect("bind");
        let url = format!("http://{}/mcp", http.local_addr());
        tokio::spawn(http.run());
        url
    });
    InProcess {
        url,
        _runtime: runtime,
    }
}

/// The lines of the question and its answers, as a pipe shows them.
fn transcript(server: &str, during: &str, answers: [&str; 2]) -> Vec<String> {
    vec![
        format!("── The server {server} asks you (during tools/call {during}) ──"),
        "Where should Q3 report go?".to_owned(),
        "Answer each field (an empty line keeps the default or skips an optional field; \
         type !decline to decline or !cancel to cancel)."
            .to_owned(),
        format!("  Channel [channel] (text, required): {}", answers[0]),
        format!("  Publish now? [now] (y/n, required): {}", answers[1]),
    ]
}

/// True when `lines` holds `part` as consecutive lines.
fn contains_lines(lines: &[&str], part: &[String]) -> bool {
    lines.windows(part.len()).any(|w| w == part)
}

#[test]
fn toolwire_call_answers_a_tasks_question() {
    let server = serve();
    let url = &server.url;
    let ran = toolwire(
        &["call", url, "publish", "title=Q3 report", "--yes"],
        "news\ny\n",
    );
    ran.expect_code(0);
    assert_eq!(ran.stdout, "Published Q3 report to news.\n");
    let lines: Vec<&str> = ran.stderr.lines().collect();
    let asked = transcript(url, "publish", ["news", "y"]);
    assert!(contains_lines(&lines, &asked), "{}", ran.stderr);
    let statuses: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("task "))
        .map(|l| l.split_once(": ").unwrap().1)
        .collect();
    assert!(
        statuses.contains(&"input_required: Waiting for input"),
        "{}",
        ran.stderr
    );
    assert_eq!(statuses.last(), Some(&"completed"), "{}", ran.stderr);

    // Declined: the tool keeps the draft, and says so.
    let ran = toolwire(
        &["call", url, "publish", "title=Q3 report", "--yes"],
        "!decline\n",
    );
    ran.expect_code(0);
    assert_eq!(ran.stdout, "Kept Q3 report as a draft.\n");
}

/// Starts `publish` detached and waits (bounded) until it asks its question.
fn detached_question(url: &str) -> String {
    let ran = toolwire(
        &[
            "call",
            url,
            "publish",
            "title=Q3 report",
            "--yes",
            "--detach",
        ],
        "",
    );
    ran.expect_code(0);
    let id = ran.stdout.trim_end().to_owned();
    assert_eq!(id.len(), 32, "{}", ran.stdout);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let got = toolwire(&["task", "get", url, &id, "--json"], "");
        got.expect_code(0);
        if got.json()["status"] == "input_required" {
            return id;
        }
        assert!(Instant::now() < deadline, "never asked: {}", got.stdout);
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn toolwire_task_wait_answers_a_detached_tasks_question() {
    let server = serve();
    let url = &server.url;
    let id = detached_question(url);
    // What is waited for, before anyone answers.
    let got = toolwire(&["task", "get", url, &id], "");
    got.expect_code(0);
    assert_eq!(
        got.stdout,
        format!(
            "task {id}: input_required: Waiting for input\n  waiting for where (elicitation/create)\n"
        )
    );

    // Another process answers and prints the result.
    let waited = toolwire(&["task", "wait", url, &id], "radio\nn\n");
    waited.expect_code(0);
    assert_eq!(waited.stdout, "Scheduled Q3 report for radio.\n");
    let lines: Vec<&str> = waited.stderr.lines().collect();
    assert_eq!(
        lines[0],
        format!("task {id}: input_required: Waiting for input"),
        "{}",
        waited.stderr
    );
    let asked = transcript(url, &format!("task {id}"), ["radio", "n"]);
    assert!(contains_lines(&lines, &asked), "{}", waited.stderr);
    assert_eq!(
        lines.last(),
        Some(&format!("task {id}: completed").as_str()),
        "{}",
        waited.stderr
    );
    let done = toolwire(&["task", "get", url, &id], "");
    assert_eq!(
        done.stdout,
        format!("task {id}: completed\nScheduled Q3 report for radio.\n")
    );

    // No answer (end of input) cancels the question: the tool reports an
    // error, and so does `task wait` (exit 1).
    let id = detached_question(url);
    let waited = toolwire(&["task", "wait", url, &id], "");
    waited.expect_code(1);
    assert_eq!(waited.stdout, "");
    assert_eq!(
        waited.stderr.lines().last(),
        Some("toolwire: the task's tool reported an error: Q3 report was not published"),
        "{}",
        waited.stderr
    );
}
