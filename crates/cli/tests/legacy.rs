//! `toolwire serve` with a 2025-11-25 client, as a child process: over
//! stdio (the elicitation of `delete_file` is a real request on the pipe)
//! and over HTTP (a session, `--max-sessions`).

mod support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use serde_json::{Value, json};
use support::{Served, bin};

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"elicitation": {"form": {}}},
        "clientInfo": {"name": "legacy-child-test", "version": "1"}
    }})
}

#[test]
fn a_legacy_client_over_stdio_answers_the_confirmation_on_the_same_pipe() {
    let mut child = Command::new(bin())
        .args(["serve", "--stdio"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn toolwire serve --stdio");
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let next = || -> Value {
        let line = rx.recv_timeout(Duration::from_secs(30)).expect("a line");
        serde_json::from_str(&line).expect("JSON")
    };
    let mut send = |message: Value| writeln!(stdin, "{message}").expect("write");

    send(initialize());
    let opened = next();
    assert_eq!(opened["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(opened["result"]["serverInfo"]["name"], "toolwire-demo");
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "delete_file", "arguments": {"path": "notes.txt"}}}));
    let ask = next();
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    assert_eq!(ask["params"]["message"], "Delete notes.txt?");
    send(
        json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"confirm": true}}}),
    );
    assert_eq!(
        next(),
        json!({"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text",
            "text": "Deleted notes.txt (pretend: the demo never touches your files)"}]}})
    );

    let _ = child.kill();
    let _ = child.wait();
}

#[tokio::test]
async fn max_sessions_caps_legacy_sessions_of_toolwire_serve() {
    let served = Served::start(&["--max-sessions", "1"]);
    let client = reqwest::Client::new();
    let post = || {
        client
            .post(&served.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .json(&initialize())
    };
    let first = post().send().await.unwrap();
    assert_eq!(first.status(), 200);
    let id = first.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let second = post().send().await.unwrap();
    assert_eq!(second.status(), 503);
    let listed = client
        .post(&served.url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("Mcp-Session-Id", &id)
        .header("MCP-Protocol-Version", "2025-11-25")
        .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(listed.status(), 200);
    let listed: Value = listed.json().await.unwrap();
    assert!(listed["result"].get("resultType").is_none(), "{listed}");
    assert_eq!(listed["result"]["tools"][0]["name"], "echo");
}

/// `toolwire` as the client of legacy servers: a strictly legacy stdio
/// server found by the probe, the verdict remembered in eras.json and used
/// next time, a wrong remembered verdict found out and corrected, and our
/// own dual-era server forced to the legacy era.
mod client_side {
    use super::support::{fresh_dir, run_with_env, strict_legacy_server};

    fn eras(config: &std::path::Path) -> serde_json::Value {
        let text = std::fs::read_to_string(config.join("toolwire/eras.json")).expect("eras.json");
        serde_json::from_str(&text).expect("JSON")
    }

    fn key(command: &[String]) -> String {
        format!("stdio {}", serde_json::to_string(command).unwrap())
    }

    #[test]
    fn a_strict_legacy_server_is_found_remembered_and_used() {
        let config = fresh_dir("eras");
        let log = config.join("requests.log");
        let env = [
            ("XDG_CONFIG_HOME", config.to_str().unwrap()),
            ("STRICT_LEGACY_LOG", log.to_str().unwrap()),
        ];
        let server = strict_legacy_server();
        let mut args = vec!["discover", "--"];
        args.extend(server.iter().map(String::as_str));
        let ran = run_with_env(&args, "", &env);
        ran.expect_code(0);
        assert!(
            ran.stdout
                .contains("Protocol: 2025-06-18 (legacy era: initialize and a session)"),
            "{}",
            ran.stdout
        );
        assert_eq!(eras(&config)[key(&server)], "legacy");
        let first = std::fs::read_to_string(&log).unwrap();
        assert_eq!(
            first,
            "server/discover\ninitialize\nnotifications/initialized\n"
        );

        std::fs::remove_file(&log).unwrap();
        let mut args = vec!["call", "--yes", "add", "a=2", "b=3", "--"];
        args.extend(server.iter().map(String::as_str));
        let ran = run_with_env(&args, "", &env);
        ran.expect_code(0);
        assert_eq!(ran.stdout.trim(), "5");
        // The remembered verdict: no probe this time.
        let second = std::fs::read_to_string(&log).unwrap();
        assert_eq!(
            second,
            "initialize\nnotifications/initialized\ntools/list\ntools/call\n"
        );
    }

    #[test]
    fn a_wrong_remembered_verdict_is_found_out_and_corrected() {
        let config = fresh_dir("eras");
        let server = strict_legacy_server();
        std::fs::create_dir_all(config.join("toolwire")).unwrap();
        let wrong = serde_json::json!({ key(&server): "modern" });
        std::fs::write(config.join("toolwire/eras.json"), wrong.to_string()).unwrap();
        let env = [("XDG_CONFIG_HOME", config.to_str().unwrap())];
        let mut args = vec!["list", "--json", "--"];
        args.extend(server.iter().map(String::as_str));
        let ran = run_with_env(&args, "", &env);
        ran.expect_code(0);
        let listed: serde_json::Value = serde_json::from_str(&ran.stdout).expect("JSON");
        assert_eq!(listed["tools"][0]["name"], "add");
        assert_eq!(eras(&config)[key(&server)], "legacy");
    }

    /// The confirmation `delete_file` asks for is a real `elicitation/create`
    /// request in the legacy era; the same terminal prompt answers it.
    #[test]
    fn a_legacy_servers_elicitation_is_the_same_prompt() {
        let bin = super::bin();
        for protocol in ["legacy", "modern"] {
            let ran = run_with_env(
                &[
                    "call",
                    "--protocol",
                    protocol,
                    "delete_file",
                    "path=/etc/motd",
                    "--yes",
                    "--",
                    bin,
                    "serve",
                    "--stdio",
                ],
                "y\n",
                &[],
            );
            ran.expect_code(0);
            assert_eq!(
                ran.stdout, "Deleted /etc/motd (pretend: the demo never touches your files)\n",
                "{protocol}"
            );
            assert!(
                ran.stderr
                    .contains("asks you (during tools/call delete_file)"),
                "{protocol}: {}",
                ran.stderr
            );
        }
    }

    /// Over HTTP too: the elicitation arrives on the call's SSE stream and
    /// the answer is POSTed on the session.
    #[test]
    fn a_legacy_http_servers_elicitation_is_the_same_prompt() {
        let served = super::Served::start(&[]);
        let ran = run_with_env(
            &[
                "call",
                "--protocol",
                "legacy",
                &served.url,
                "delete_file",
                "path=/etc/motd",
                "--yes",
            ],
            "y\n",
            &[],
        );
        ran.expect_code(0);
        assert_eq!(
            ran.stdout,
            "Deleted /etc/motd (pretend: the demo never touches your files)\n"
        );
        let discovered = run_with_env(&["discover", "--protocol", "legacy", &served.url], "", &[]);
        discovered.expect_code(0);
        assert!(
            discovered
                .stdout
                .contains("Protocol: 2025-11-25 (legacy era: initialize and a session)"),
            "{}",
            discovered.stdout
        );
    }

    #[test]
    fn protocol_legacy_forces_the_legacy_era_on_the_dual_era_server() {
        let bin = super::bin();
        let ran = run_with_env(
            &[
                "discover",
                "--protocol",
                "legacy",
                "--",
                bin,
                "serve",
                "--stdio",
            ],
            "",
            &[],
        );
        ran.expect_code(0);
        assert!(
            ran.stdout
                .contains("Protocol: 2025-11-25 (legacy era: initialize and a session)"),
            "{}",
            ran.stdout
        );
        let ran = run_with_env(&["discover", "--", bin, "serve", "--stdio"], "", &[]);
        ran.expect_code(0);
        assert!(
            ran.stdout
                .contains("Protocol: 2026-07-28 (modern era: stateless)"),
            "{}",
            ran.stdout
        );
    }
}
