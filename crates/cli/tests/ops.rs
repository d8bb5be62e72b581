//! Operations, over real processes: the health checks of `toolwire serve
//! --health` and of a gateway with `health = true`, the graceful drain on
//! SIGTERM (HTTP and stdio), the second signal, `--log-format json`,
//! `--worker-threads` and `--connection-threads`.
#![cfg(unix)]

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Served, bin, closed_port, fresh_dir, http_get as get};

/// Sends `signal` (`TERM`, `INT`) to process `pid`.
fn kill(signal: &str, pid: u32) {
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .stdout(Stdio::null())
        .status()
        .expect("run kill");
    assert!(status.success());
}

/// A `toolwire call` child, with its stderr lines read as they come.
struct Caller {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Caller {
    /// `toolwire call URL countdown seconds=N step_ms=MS --yes`: logs
    /// `counting down from N` on its stderr when the call has started.
    fn countdown(url: &str, seconds: u32, step_ms: u32) -> Caller {
        let mut child = Command::new(bin())
            .args([
                "call",
                url,
                "countdown",
                &format!("seconds={seconds}"),
                &format!("step_ms={step_ms}"),
                "--yes",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn toolwire call");
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Caller {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Waits (bounded) until the server said the countdown started.
    fn wait_started(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(line) = self.lines.recv_timeout(Duration::from_millis(100)) {
                let started = line.contains("counting down from");
                self.seen.push(line);
                if started {
                    return;
                }
            }
        }
        panic!("the call never started; stderr:\n{}", self.seen.join("\n"));
    }

    /// Waits (bounded) for the call to end: its exit status and stdout.
    fn finish(mut self) -> (ExitStatus, String) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                let mut stdout = String::new();
                self.child
                    .stdout
                    .take()
                    .unwrap()
                    .read_to_string(&mut stdout)
                    .unwrap();
                return (status, stdout);
            }
            assert!(Instant::now() < deadline, "the call did not end");
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Caller {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn health_checks_are_served_only_with_health() {
    let plain = Served::start(&[]);
    assert_eq!(get(&plain.url, "/healthz"), (404, String::new()));
    assert_eq!(get(&plain.url, "/readyz"), (404, String::new()));

    let server = Served::start(&["--health", "--token", "s3cret"]);
    server.wait_for_log("toolwire: health checks at http://");
    // No token needed: the checks are outside the endpoint and its auth.
    assert_eq!(get(&server.url, "/healthz"), (200, "ok".into()));
    assert_eq!(
        get(&server.url, "/readyz"),
        (200, r#"{"status":"ready"}"#.into())
    );
    // The endpoint itself still wants its token.
    assert_eq!(get(&server.url, "/mcp").0, 401);
}

#[test]
fn the_gateway_is_ready_once_its_upstream_is_up() {
    let port = closed_port();
    let dir = fresh_dir("gateway-health");
    let config = dir.join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            "[gateway]\nhttp = \"127.0.0.1:0\"\nhealth = true\n\n\
             [[upstream]]\nname = \"late\"\nurl = \"http://127.0.0.1:{port}/mcp\"\n"
        ),
    )
    .unwrap();
    let gateway = Served::command(&["gateway", "--config", config.to_str().unwrap()]);
    assert_eq!(get(&gateway.url, "/healthz"), (200, "ok".into()));
    assert_eq!(
        get(&gateway.url, "/readyz"),
        (
            503,
            r#"{"status":"not ready","notReady":["upstream \"late\": backing off"]}"#.into()
        )
    );

    let addr = format!("127.0.0.1:{port}");
    let _upstream = Served::command(&["serve", "--http", &addr]);
    // The gateway tries the upstream again (1 s, doubling): ready then.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, body) = get(&gateway.url, "/readyz");
        if status == 200 {
            assert_eq!(body, r#"{"status":"ready"}"#);
            break;
        }
        assert_eq!(status, 503, "{body}");
        assert!(
            Instant::now() < deadline,
            "the gateway never became ready: {body}"
        );
        thread::sleep(Duration::from_millis(100));
    }

    let off = dir.join("off.toml");
    std::fs::write(
        &off,
        format!(
            "[gateway]\nhttp = \"127.0.0.1:0\"\n\n\
             [[upstream]]\nname = \"late\"\nurl = \"http://127.0.0.1:{port}/mcp\"\n"
        ),
    )
    .unwrap();
    let without = Served::command(&["gateway", "--config", off.to_str().unwrap()]);
    assert_eq!(get(&without.url, "/readyz"), (404, String::new()));
}

#[test]
fn sigterm_drains_the_calls_in_flight_and_exits_0() {
    let mut server = Served::start(&[]);
    let mut callers: Vec<Caller> = (0..3)
        .map(|_| Caller::countdown(&server.url, 3, 300))
        .collect();
    for caller in &mut callers {
        caller.wait_started();
    }
    kill("TERM", server.pid());
    let draining = server.wait_for_log("draining:");
    assert!(
        draining.contains("draining: 3 calls in flight, 0 listen streams, 0 sessions"),
        "{draining}"
    );
    for caller in callers {
        let (status, stdout) = caller.finish();
        assert!(status.success(), "{status:?}");
        assert_eq!(stdout, "Lift-off!\n");
    }
    let exit = server.wait_exit();
    assert_eq!(exit.code(), Some(0));
    let drained = server.wait_for_log("drained in ");
    assert!(drained.contains(" s "), "{drained}");
    server.wait_for_log("toolwire: stopped");
}

#[test]
fn a_call_past_the_drain_deadline_is_abandoned_and_the_exit_is_still_0() {
    let mut server = Served::start(&["--drain-timeout", "0.2"]);
    let mut caller = Caller::countdown(&server.url, 60, 5000);
    caller.wait_started();
    kill("TERM", server.pid());
    assert_eq!(server.wait_exit().code(), Some(0));
    let passed = server.wait_for_log("drain deadline passed");
    assert!(
        passed.contains("drain deadline passed with 1 call unfinished"),
        "{passed}"
    );
    let (status, _) = caller.finish();
    assert_eq!(status.code(), Some(2));
}

#[test]
fn a_second_signal_exits_at_once() {
    let mut server = Served::start(&["--drain-timeout", "600"]);
    let mut caller = Caller::countdown(&server.url, 60, 5000);
    caller.wait_started();
    kill("TERM", server.pid());
    server.wait_for_log("draining: 1 call in flight");
    kill("INT", server.pid());
    assert_eq!(server.wait_exit().code(), Some(130));
    server.wait_for_log("second signal: exiting at once");
    assert!(
        !server.log().iter().any(|l| l.contains("toolwire: stopped")),
        "{:?}",
        server.log()
    );
}

#[test]
fn stdio_drains_on_sigterm() {
    let mut child = Command::new(bin())
        .args(["serve", "--stdio", "--drain-timeout", "60"])
        .env("RUST_LOG", "info")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn toolwire serve --stdio");
    let mut stdin = child.stdin.take().unwrap();
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "countdown", "arguments": {"seconds": 3, "step_ms": 300},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "progressToken": "p"
        }
    }});
    writeln!(stdin, "{call}").unwrap();
    stdin.flush().unwrap();
    let (tx, lines) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let _ = tx.send(line);
        }
    });
    let next = || -> Value {
        let line = lines
            .recv_timeout(Duration::from_secs(30))
            .expect("a line on stdout");
        serde_json::from_str(&line).expect("a JSON line")
    };
    // The first progress notification: the call is in flight.
    assert_eq!(next()["method"], "notifications/progress");
    kill("TERM", child.id());
    let result = loop {
        let message = next();
        if message.get("id").is_some() {
            break message;
        }
        assert_eq!(message["method"], "notifications/progress");
    };
    assert_eq!(result["id"], 7);
    assert_eq!(result["result"]["content"][0]["text"], "Lift-off!");
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "serve --stdio did not exit");
        thread::sleep(Duration::from_millis(20));
    };
    drop(stdin);
    assert_eq!(status.code(), Some(0));
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(
        stderr.contains("draining: 1 call in flight, 0 listen streams, 0 sessions"),
        "{stderr}"
    );
    assert!(stderr.contains("drained in "), "{stderr}");
}

#[test]
fn log_format_json_writes_json_lines() {
    let mut server = Served::command(&["--log-format", "json", "serve", "--http", "127.0.0.1:0"]);
    let mut caller = Caller::countdown(&server.url, 1, 10);
    caller.wait_started();
    let (status, _) = caller.finish();
    assert!(status.success());
    kill("TERM", server.pid());
    assert_eq!(server.wait_exit().code(), Some(0));
    server.wait_for_log("drained in");
    let mut events = Vec::new();
    for line in server.log() {
        // The lines that say where it listens are for people, as text.
        if line.starts_with("toolwire: ") {
            continue;
        }
        let event: Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"));
        assert!(event["timestamp"].is_string(), "{line}");
        assert!(event["level"].is_string(), "{line}");
        events.push(event);
    }
    let draining = events
        .iter()
        .find(|e| {
            e["fields"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("draining:"))
        })
        .expect("the draining event");
    assert_eq!(draining["fields"]["calls"], 0);
    assert_eq!(draining["fields"]["transport"], "http");
    let audit = events
        .iter()
        .find(|e| e["target"] == "toolwire::audit")
        .unwrap_or_else(|| panic!("no audit event for the call: {events:?}"));
    assert_eq!(audit["fields"]["event"], "tool_call");
    assert_eq!(audit["fields"]["outcome"], "ok");
    assert!(
        audit["fields"]["tool"]
            .as_str()
            .is_some_and(|t| t.contains("countdown")),
        "{audit}"
    );
}

/// The runtime's threads of process `pid` (Tokio names its workers, and
/// its blocking threads, `tokio-rt-worker`).
fn runtime_threads(pid: u32) -> usize {
    threads_named(pid, |name| name == "tokio-rt-worker")
}

/// `toolwire ARGS serve --http 127.0.0.1:0` with `env`, once it has
/// answered an echo call from `toolwire call`.
fn serving_an_echo(args: &[&str], env: &[(&str, &str)]) -> Served {
    let mut all = args.to_vec();
    all.extend(["serve", "--http", "127.0.0.1:0"]);
    let served = Served::command_with_env(&all, env);
    let called = support::toolwire(
        &["call", &served.url, "echo", "text=hi", "--yes", "--json"],
        "",
    );
    called.expect_code(0);
    assert_eq!(called.json()["content"][0]["text"], "hi");
    served
}

/// The threads of process `pid` whose name passes `wanted`.
fn threads_named(pid: u32, wanted: impl Fn(&str) -> bool) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter(|task| {
            let comm = task.as_ref().unwrap().path().join("comm");
            std::fs::read_to_string(comm).is_ok_and(|name| wanted(name.trim()))
        })
        .count()
}

#[test]
fn a_gateway_serves_on_one_connection_thread_per_cpu_by_default() {
    let upstream = Served::start(&[]);
    let config = fresh_dir("gateway-threads").join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            "[gateway]\nhttp = \"127.0.0.1:0\"\n\n[[upstream]]\nname = \"demo\"\nurl = \"{}\"\n",
            upstream.url
        ),
    )
    .unwrap();
    let gateway = Served::command(&["gateway", "--config", config.to_str().unwrap()]);
    let called = support::toolwire(
        &[
            "call",
            &gateway.url,
            "demo__echo",
            "text=hi",
            "--yes",
            "--json",
        ],
        "",
    );
    called.expect_code(0);
    assert_eq!(called.json()["content"][0]["text"], "hi");
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let named = threads_named(gateway.pid(), |name| name.starts_with("toolwire-conn-"));
    assert_eq!(named, cpus);
}

#[test]
fn connection_threads_serve_the_connections_when_asked() {
    for (args, env, threads) in [
        (&[][..], &[][..], 0),
        (&["--connection-threads", "2"][..], &[][..], 2),
        (&[][..], &[("TOOLWIRE_CONNECTION_THREADS", "1")][..], 1),
    ] {
        let served = serving_an_echo(args, env);
        let named = threads_named(served.pid(), |name| name.starts_with("toolwire-conn-"));
        assert_eq!(named, threads, "{args:?} {env:?}");
    }
    let refused = support::toolwire(&["--connection-threads", "2000", "serve"], "");
    refused.expect_code(2);
    assert!(
        refused.stderr.contains(
            "invalid value '2000' for '--connection-threads <N>': 2000 is not in 0..=1024"
        ),
        "{}",
        refused.stderr
    );
}

#[test]
fn worker_threads_sets_how_many_threads_the_runtime_runs() {
    for (args, env, threads) in [
        (&["--worker-threads", "3"][..], &[][..], 3),
        (&[][..], &[("TOOLWIRE_WORKER_THREADS", "1")][..], 1),
    ] {
        let served = serving_an_echo(args, env);
        assert_eq!(runtime_threads(served.pid()), threads, "{args:?} {env:?}");
    }
    let refused = support::toolwire(&["--worker-threads", "0", "serve"], "");
    refused.expect_code(2);
    assert!(
        refused
            .stderr
            .contains("invalid value '0' for '--worker-threads <N>': 0 is not in 1..=1024"),
        "{}",
        refused.stderr
    );
}

/// A serving program gathers its log lines and writes them out when a
/// thread goes idle: the line of a call shows while the server runs on,
/// whichever threads served it.
#[test]
fn a_calls_log_line_is_written_once_the_server_is_idle() {
    for args in [&[][..], &["--connection-threads", "1"][..]] {
        let served = serving_an_echo(args, &[]);
        let line = served.wait_for_log("event=\"tool_call\"");
        assert!(line.contains("outcome=\"ok\""), "{args:?}: {line}");
    }
}
