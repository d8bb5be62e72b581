//! Long-running calls as tasks (the Tasks extension) with the real
//! `toolwire` binary against `toolwire serve`: `toolwire call` follows a
//! task and shows its status, `--detach` prints the task's id, and
//! `toolwire task get|wait|cancel` take it up again from another process.

mod support;

use support::{Served, bin, toolwire};

/// `toolwire call URL build_report seconds=N --yes --detach [extra]`; the id printed.
fn detach(url: &str, seconds: u32, extra: &[&str]) -> String {
    let seconds = format!("seconds={seconds}");
    let mut args = vec!["call", url, "build_report", &seconds, "--yes", "--detach"];
    args.extend(extra);
    let ran = toolwire(&args, "");
    ran.expect_code(0);
    if !extra.contains(&"--json") {
        assert!(
            ran.stderr.contains("follow it with `toolwire task wait"),
            "{}",
            ran.stderr
        );
    }
    ran.stdout.trim_end().to_owned()
}

#[test]
fn call_follows_a_task_and_shows_its_status() {
    let server = Served::start(&[]);
    let ran = toolwire(
        &["call", &server.url, "build_report", "seconds=2", "--yes"],
        "",
    );
    ran.expect_code(0);
    assert_eq!(ran.stdout, "Report ready: 2 sections.\n");
    let statuses: Vec<&str> = ran
        .stderr
        .lines()
        .filter(|l| l.starts_with("task "))
        .map(|l| l.split_once(": ").unwrap().1)
        .collect();
    // Working (with the report's progress as its status message once the
    // server has some), then completed.
    assert_eq!(statuses.first(), Some(&"working"), "{}", ran.stderr);
    assert_eq!(statuses.last(), Some(&"completed"), "{}", ran.stderr);
    for status in &statuses[1..statuses.len() - 1] {
        assert!(
            [
                "working: section 1 of 2 written",
                "working: section 2 of 2 written"
            ]
            .contains(status),
            "{}",
            ran.stderr
        );
    }

    // Over stdio, the same.
    let ran = toolwire(
        &[
            "call",
            "build_report",
            "seconds=1",
            "--yes",
            "--",
            bin(),
            "serve",
            "--stdio",
        ],
        "",
    );
    ran.expect_code(0);
    assert_eq!(ran.stdout, "Report ready: 1 section.\n");
    assert!(ran.stderr.contains(": completed"), "{}", ran.stderr);
}

#[test]
fn detach_then_task_get_and_wait_from_other_processes() {
    let server = Served::start(&[]);
    let id = detach(&server.url, 2, &[]);
    assert_eq!(id.len(), 32, "{id}");
    assert!(id.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");

    let got = toolwire(&["task", "get", &server.url, &id], "");
    got.expect_code(0);
    assert!(
        got.stdout == format!("task {id}: working\n")
            || got.stdout == format!("task {id}: working: section 1 of 2 written\n"),
        "{}",
        got.stdout
    );

    let waited = toolwire(&["task", "wait", &server.url, &id], "");
    waited.expect_code(0);
    assert_eq!(waited.stdout, "Report ready: 2 sections.\n");
    assert!(
        waited.stderr.contains(&format!("task {id}: completed")),
        "{}",
        waited.stderr
    );

    let json = toolwire(&["task", "get", &server.url, &id, "--json"], "");
    json.expect_code(0);
    let task = json.json();
    assert_eq!(task["taskId"], id.as_str());
    assert_eq!(task["status"], "completed");
    assert_eq!(
        task["result"]["content"][0]["text"],
        "Report ready: 2 sections."
    );

    let human = toolwire(&["task", "get", &server.url, &id], "");
    human.expect_code(0);
    assert_eq!(
        human.stdout,
        format!("task {id}: completed\nReport ready: 2 sections.\n")
    );

    // --json --detach prints the id as JSON.
    let id = detach(&server.url, 1, &["--json"]);
    let printed: serde_json::Value = serde_json::from_str(&id).unwrap();
    let id = printed["taskId"].as_str().unwrap();
    let waited = toolwire(&["task", "wait", &server.url, id, "--json"], "");
    waited.expect_code(0);
    assert_eq!(
        waited.json()["content"][0]["text"],
        "Report ready: 1 section."
    );
}

#[test]
fn task_cancel_stops_a_task() {
    let server = Served::start(&[]);
    let id = detach(&server.url, 60, &[]);
    let cancelled = toolwire(&["task", "cancel", &server.url, &id], "");
    cancelled.expect_code(0);
    assert_eq!(cancelled.stdout, "");
    assert!(
        cancelled
            .stderr
            .contains(&format!("asked the server to cancel task {id}")),
        "{}",
        cancelled.stderr
    );
    let mut shown = String::new();
    for _ in 0..50 {
        let got = toolwire(&["task", "get", &server.url, &id], "");
        got.expect_code(0);
        shown = got.stdout;
        if !shown.contains(": working") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(
        shown,
        format!("task {id}: cancelled: Cancelled by the client\n")
    );
    let waited = toolwire(&["task", "wait", &server.url, &id], "");
    waited.expect_code(2);
    assert!(
        waited
            .stderr
            .contains(&format!("toolwire: task {id} was cancelled")),
        "{}",
        waited.stderr
    );
}

#[test]
fn an_unknown_task_and_a_missing_id_are_errors() {
    let server = Served::start(&[]);
    let unknown = toolwire(&["task", "get", &server.url, "0123abcd"], "");
    unknown.expect_code(2);
    assert!(
        unknown
            .stderr
            .contains("-32602: Failed to retrieve task: Task not found"),
        "{}",
        unknown.stderr
    );
    let missing = toolwire(&["task", "wait", &server.url], "");
    missing.expect_code(2);
    assert!(
        missing.stderr.contains("no task id given"),
        "{}",
        missing.stderr
    );
    // A tool that answers at once prints its result even under --detach.
    let quick = toolwire(
        &["call", &server.url, "echo", "text=hi", "--yes", "--detach"],
        "",
    );
    quick.expect_code(0);
    assert_eq!(quick.stdout, "hi\n");
}

#[test]
fn ctrl_c_during_a_task_cancels_it() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    let server = Served::start(&[]);
    let mut child = Command::new(bin())
        .args(["call", &server.url, "build_report", "seconds=60", "--yes"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            let _ = tx.send(line);
        }
    });
    let limit = std::time::Duration::from_secs(30);
    let id = loop {
        let line = rx.recv_timeout(limit).expect("a task status line");
        if let Some(rest) = line.strip_prefix("task ") {
            let (id, status) = rest.split_once(": ").unwrap();
            assert_eq!(status, "working");
            break id.to_owned();
        }
    };
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let mut said = Vec::new();
    while let Ok(line) = rx.recv_timeout(limit) {
        said.push(line);
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{said:?}");
    assert!(
        said.iter()
            .any(|l| l == "cancelling the task (Ctrl-C again to quit at once)"),
        "{said:?}"
    );
    assert!(
        said.iter()
            .any(|l| l == "toolwire: interrupted: the server was asked to cancel the task"),
        "{said:?}"
    );
    let got = toolwire(&["task", "get", &server.url, &id], "");
    got.expect_code(0);
    assert_eq!(
        got.stdout,
        format!("task {id}: cancelled: Cancelled by the client\n")
    );
}
