//! The program itself: help texts, `serve`'s address line and graceful
//! shutdown, and usage errors.

mod support;

use std::process::{Command, Stdio};

use support::{Served, bin, toolwire};

#[test]
fn help_lists_every_command_and_each_command_has_help() {
    let top = toolwire(&["--help"], "");
    top.expect_code(0);
    for command in ["serve", "discover", "list", "call", "read", "prompt"] {
        assert!(
            top.stdout.contains(&format!("  {command} ")),
            "{command}:\n{}",
            top.stdout
        );
        let help = toolwire(&[command, "--help"], "");
        help.expect_code(0);
        assert!(
            help.stdout.contains("Usage: toolwire "),
            "{command}:\n{}",
            help.stdout
        );
    }
    assert!(
        top.stdout
            .contains("toolwire list -- toolwire serve --stdio")
    );
    assert!(top.stdout.contains("Exit codes: 0 success, 1"));

    let call = toolwire(&["call", "--help"], "").stdout;
    for flag in [
        "--yes",
        "--json",
        "--args",
        "--header",
        "--bearer",
        "--timeout",
        "--root",
        "--sampling-command",
        "--trust-annotations",
        "--log-level",
    ] {
        assert!(call.contains(flag), "call --help lacks {flag}:\n{call}");
    }
    let serve = toolwire(&["serve", "--help"], "").stdout;
    for flag in [
        "--http",
        "--stdio",
        "--allow-origin",
        "--allow-host",
        "--token",
        "--rate-limit",
        "--handle-ttl",
        "--session-idle-timeout <SECS>",
        "--max-sessions <N>",
    ] {
        assert!(serve.contains(flag), "serve --help lacks {flag}:\n{serve}");
    }
    for text in [
        "HTTP only: ignored with --stdio. [default: 1800]",
        "HTTP only: ignored with --stdio. [default: 10000]",
        "2025-11-25, 2025-06-18 and 2025-03-26 clients that open with `initialize`",
    ] {
        assert!(
            serve.contains(text),
            "serve --help lacks {text:?}:\n{serve}"
        );
    }
    let version = toolwire(&["--version"], "");
    version.expect_code(0);
    assert_eq!(
        version.stdout,
        format!("toolwire {}\n", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn usage_errors_exit_2() {
    toolwire(&["frobnicate"], "").expect_code(2);
    toolwire(&["serve", "--http", "x", "--stdio"], "").expect_code(2);
    let bad_timeout = toolwire(&["list", "http://127.0.0.1:1/mcp", "--timeout", "-1"], "");
    bad_timeout.expect_code(2);
}

#[test]
fn serve_prints_its_url_and_answers_there() {
    let server = Served::start(&[]);
    assert!(
        server.url.starts_with("http://127.0.0.1:"),
        "{}",
        server.url
    );
    assert!(server.url.ends_with("/mcp"), "{}", server.url);
    let port: u16 = server
        .url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp")
        .parse()
        .expect("a port");
    assert_ne!(port, 0);
    let hint = server.wait_for_log("try `toolwire list");
    assert!(hint.contains(&server.url), "{hint}");
    toolwire(&["list", &server.url], "").expect_code(0);
}

#[test]
fn serve_explains_a_port_in_use() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let ran = toolwire(&["serve", "--http", &addr], "");
    ran.expect_code(2);
    assert!(ran.stderr.contains("already in use"), "{}", ran.stderr);
    assert!(ran.stderr.contains("--http 127.0.0.1:0"), "{}", ran.stderr);
}

#[cfg(unix)]
#[test]
fn ctrl_c_shuts_the_server_down_gracefully() {
    let mut server = Served::start(&[]);
    let status = Command::new("kill")
        .args(["-INT", &server.pid().to_string()])
        .stdout(Stdio::null())
        .status()
        .expect("run kill");
    assert!(status.success());
    let exit = server.wait_exit();
    assert!(exit.success(), "{exit:?}");
    server.wait_for_log("toolwire: stopped");
}

#[test]
fn serve_over_stdio_writes_only_mcp_on_stdout() {
    use std::io::{Read, Write};
    let mut child = Command::new(bin())
        .args(["serve", "--stdio"])
        .env("RUST_LOG", "debug")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let request = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    {
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "{request}").unwrap();
        // Dropping stdin closes it: the server answers, then exits.
    }
    let mut stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        let _ = tx.send(text);
    });
    let text = match rx.recv_timeout(std::time::Duration::from_secs(30)) {
        Ok(text) => text,
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("serve --stdio did not finish after stdin closed");
        }
    };
    let _ = child.kill();
    let _ = child.wait();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "{text}");
    let reply: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(reply["id"], 1);
    assert_eq!(reply["result"]["tools"][0]["name"], "echo");
}

#[test]
fn session_flags_refuse_zero_and_non_numbers() {
    for (args, message) in [
        (
            ["--max-sessions", "0"],
            "error: invalid value '0' for '--max-sessions <N>': must be at least 1 \
             (0 would refuse every client that opens with `initialize`)\n",
        ),
        (
            ["--max-sessions", "many"],
            "error: invalid value 'many' for '--max-sessions <N>': \
             \"many\" is not a whole number of sessions, e.g. 10000\n",
        ),
        (
            ["--max-sessions", "10k"],
            "error: invalid value '10k' for '--max-sessions <N>': \
             \"10k\" is not a whole number of sessions, e.g. 10000\n",
        ),
        (
            ["--session-idle-timeout", "0"],
            "error: invalid value '0' for '--session-idle-timeout <SECS>': \
             the session idle timeout must be between 1 and 2592000 seconds (30 days)\n",
        ),
        (
            ["--session-idle-timeout", "2592001"],
            "error: invalid value '2592001' for '--session-idle-timeout <SECS>': \
             the session idle timeout must be between 1 and 2592000 seconds (30 days)\n",
        ),
        (
            ["--session-idle-timeout", "1.5"],
            "error: invalid value '1.5' for '--session-idle-timeout <SECS>': \
             \"1.5\" is not a whole number of seconds, e.g. 1800\n",
        ),
    ] {
        let mut all = vec!["serve"];
        all.extend(args);
        let ran = toolwire(&all, "");
        ran.expect_code(2);
        assert_eq!(ran.stdout, "");
        assert!(
            ran.stderr.starts_with(message),
            "{args:?}: expected {message:?}, got:\n{}",
            ran.stderr
        );
    }
}

#[test]
fn session_flags_parse_and_the_server_serves() {
    let server = Served::start(&["--session-idle-timeout", "600", "--max-sessions", "5"]);
    let ran = toolwire(&["call", &server.url, "echo", "text=hi", "--yes"], "");
    ran.expect_code(0);
    assert_eq!(ran.stdout, "hi\n");
    // The largest values accepted.
    let server = Served::start(&["--session-idle-timeout=2592000", "--max-sessions=1"]);
    toolwire(&["list", &server.url], "").expect_code(0);
}

#[test]
fn session_flags_are_ignored_with_stdio_and_say_so() {
    use std::io::{Read, Write};
    let mut child = Command::new(bin())
        .args([
            "serve",
            "--stdio",
            "--session-idle-timeout",
            "60",
            "--max-sessions",
            "2",
        ])
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let request = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"still here"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    {
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "{request}").unwrap();
    }
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut out = String::new();
        let mut err = String::new();
        let _ = stdout.read_to_string(&mut out);
        let _ = stderr.read_to_string(&mut err);
        let _ = tx.send((out, err));
    });
    let (out, err) = match rx.recv_timeout(std::time::Duration::from_secs(30)) {
        Ok(both) => both,
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("serve --stdio did not finish after stdin closed");
        }
    };
    let _ = child.wait();
    let reply: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(
        reply["result"]["content"],
        serde_json::json!([{"type": "text", "text": "still here"}])
    );
    assert!(
        err.contains(
            "--session-idle-timeout and --max-sessions apply to HTTP sessions only; ignored with --stdio"
        ),
        "{err}"
    );
}
