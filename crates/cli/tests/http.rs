//! `toolwire discover|list|call|read|prompt` against a real
//! `toolwire serve` over Streamable HTTP.

mod support;

use serde_json::json;
use support::{Served, closed_port, toolwire};

const VERSION: &str = env!("CARGO_PKG_VERSION");

fn server_info() -> serde_json::Value {
    json!({"io.modelcontextprotocol/serverInfo": {
        "name": "toolwire-demo", "title": "toolwire demo", "version": VERSION
    }})
}

#[test]
fn discover_shows_versions_and_capabilities() {
    let server = Served::start(&[]);
    let human = toolwire(&["discover", &server.url], "");
    human.expect_code(0);
    assert!(
        human
            .stdout
            .contains(&format!("Server: toolwire-demo {VERSION}")),
        "{}",
        human.stdout
    );
    assert!(human.stdout.contains("Protocol versions: 2026-07-28"));
    assert!(human.stdout.contains("Capabilities: tools"));

    let json = toolwire(&["discover", &server.url, "--json"], "");
    json.expect_code(0);
    let result = json.json();
    assert_eq!(result["supportedVersions"], json!(["2026-07-28"]));
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["_meta"], server_info());
    assert!(result["capabilities"]["tools"].is_object());
}

#[test]
fn list_shows_every_tool_with_untrusted_annotations() {
    let server = Served::start(&[]);
    let human = toolwire(&["list", &server.url], "");
    human.expect_code(0);
    for name in [
        "echo",
        "stats",
        "countdown",
        "delete_file",
        "summarize",
        "show_roots",
    ] {
        assert!(
            human.stdout.contains(&format!("  {name}")),
            "{name} missing:\n{}",
            human.stdout
        );
    }
    assert!(human.stdout.contains("arguments: text (string, required)"));
    assert!(human.stdout.contains("annotations (untrusted): read-only"));
    assert!(human.stdout.contains("[destructive]"));

    let trusted = toolwire(&["list", &server.url, "--trust-annotations"], "");
    assert!(trusted.stdout.contains("annotations (trusted): read-only"));

    let json = toolwire(&["list", &server.url, "--json"], "");
    json.expect_code(0);
    let listed = json.json();
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.starts_with(&[
        "echo",
        "stats",
        "countdown",
        "delete_file",
        "summarize",
        "show_roots"
    ]));
    assert_eq!(
        listed["tools"][0]["inputSchema"]["properties"]["text"]["type"],
        "string"
    );
    assert_eq!(listed.as_object().unwrap().len(), 1, "only tools: {listed}");

    let all = toolwire(&["list", &server.url, "--all", "--json"], "").json();
    assert_eq!(all["resources"][0]["uri"], "toolwire://demo/about");
    assert_eq!(all["prompts"][0]["name"], "greet");
}

#[test]
fn call_with_key_value_pairs_prints_exactly_the_result_object() {
    let server = Served::start(&[]);
    // `text` is a string property: 42 stays the string "42".
    let ran = toolwire(
        &["call", &server.url, "echo", "text=42", "--yes", "--json"],
        "",
    );
    ran.expect_code(0);
    assert_eq!(
        ran.json(),
        json!({
            "resultType": "complete",
            "content": [{"type": "text", "text": "42"}],
            "_meta": server_info()
        })
    );

    let human = toolwire(
        &["call", &server.url, "echo", "text=hello world", "--yes"],
        "",
    );
    human.expect_code(0);
    assert_eq!(human.stdout, "hello world\n");
    assert!(
        human.stderr.contains(r#"calling `echo` on "#),
        "{}",
        human.stderr
    );
}

#[test]
fn call_with_a_json_object_and_structured_output() {
    let server = Served::start(&[]);
    let ran = toolwire(
        &[
            "call",
            &server.url,
            "stats",
            "--args",
            r#"{"numbers": [1, 2, 6]}"#,
            "--yes",
            "--json",
        ],
        "",
    );
    ran.expect_code(0);
    let result = ran.json();
    assert_eq!(
        result["structuredContent"],
        json!({"count": 3, "mean": 3.0, "min": 1.0, "max": 6.0})
    );
    let twin: serde_json::Value =
        serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(twin, result["structuredContent"]);
    assert!(result.get("isError").is_none());

    // key=value parsed as JSON where the schema wants an array; pairs override --args.
    let human = toolwire(
        &[
            "call",
            &server.url,
            "stats",
            "--args",
            r#"{"numbers": [100]}"#,
            "numbers=[2,4]",
            "--yes",
        ],
        "",
    );
    human.expect_code(0);
    let shown: serde_json::Value = serde_json::from_str(&human.stdout).unwrap();
    assert_eq!(
        shown,
        json!({"count": 2, "mean": 3.0, "min": 2.0, "max": 4.0})
    );
}

#[test]
fn confirmation_shows_the_tool_and_exact_arguments_and_yes_calls_it() {
    let server = Served::start(&[]);
    let ran = toolwire(&["call", &server.url, "echo", "text=hi"], "y\n");
    ran.expect_code(0);
    assert_eq!(ran.stdout, "hi\n");
    assert!(ran.stderr.contains("Tool echo on"), "{}", ran.stderr);
    assert!(ran.stderr.contains("annotations (untrusted): read-only"));
    assert!(
        ran.stderr
            .contains("Arguments (exactly as sent):\n  {\n    \"text\": \"hi\"\n  }")
    );
    assert!(ran.stderr.contains("Call echo? [y/N]"));
}

#[test]
fn answering_no_denies_with_exit_3_and_nothing_is_called() {
    let server = Served::start(&[]);
    for answer in ["n\n", "", "maybe\n"] {
        let ran = toolwire(
            &["call", &server.url, "delete_file", "path=/tmp/precious"],
            answer,
        );
        ran.expect_code(3);
        assert_eq!(ran.stdout, "");
        assert!(ran.stderr.contains("DESTRUCTIVE"), "{}", ran.stderr);
        assert!(ran.stderr.contains("not called"), "{}", ran.stderr);
    }
    // A later call shows up in the server's log; the denied ones never did.
    toolwire(&["call", &server.url, "echo", "text=marker", "--yes"], "").expect_code(0);
    server.wait_for_log("tool=\"echo\"");
    let log = server.log().join("\n");
    assert!(
        !log.contains("delete_file"),
        "a denied call reached the server:\n{log}"
    );
}

#[test]
fn an_mrtr_confirmation_is_answered_on_stdin() {
    let server = Served::start(&[]);
    let yes = toolwire(
        &["call", &server.url, "delete_file", "path=/tmp/x"],
        "y\ny\n",
    );
    yes.expect_code(0);
    assert_eq!(
        yes.stdout,
        "Deleted /tmp/x (pretend: the demo never touches your files)\n"
    );
    assert!(yes.stderr.contains("Delete /tmp/x?"), "{}", yes.stderr);
    assert!(
        yes.stderr
            .contains("Really delete? [confirm] (y/n, required):")
    );

    // A bad answer is asked again; "no" keeps the file.
    let no = toolwire(
        &["call", &server.url, "delete_file", "path=/tmp/x", "--yes"],
        "perhaps\nno\n",
    );
    no.expect_code(0);
    assert_eq!(no.stdout, "Kept /tmp/x\n");
    assert!(no.stderr.contains("answer y or n"), "{}", no.stderr);

    let declined = toolwire(
        &["call", &server.url, "delete_file", "path=/tmp/x", "--yes"],
        "!decline\n",
    );
    declined.expect_code(0);
    assert_eq!(declined.stdout, "Kept /tmp/x\n");

    let eof = toolwire(
        &["call", &server.url, "delete_file", "path=/tmp/x", "--yes"],
        "",
    );
    eof.expect_code(0);
    assert_eq!(eof.stdout, "Cancelled: kept /tmp/x\n");
}

#[test]
fn a_tool_error_exits_1() {
    let server = Served::start(&[]);
    let human = toolwire(&["call", &server.url, "stats", "numbers=[]", "--yes"], "");
    human.expect_code(1);
    assert_eq!(human.stdout, "");
    assert!(
        human
            .stderr
            .contains("tool `stats` reported an error: Invalid arguments for tool stats:\n/numbers: [] has less than 1 item\n"),
        "{}",
        human.stderr
    );
    let json = toolwire(
        &[
            "call",
            &server.url,
            "stats",
            "numbers=[]",
            "--yes",
            "--json",
        ],
        "",
    );
    json.expect_code(1);
    let result = json.json();
    assert_eq!(result["isError"], true);
    assert_eq!(result["resultType"], "complete");
}

#[test]
fn an_unknown_tool_exits_2_with_the_closest_names() {
    let server = Served::start(&[]);
    let ran = toolwire(&["call", &server.url, "ecko", "text=hi", "--yes"], "");
    ran.expect_code(2);
    assert_eq!(ran.stdout, "");
    assert!(
        ran.stderr
            .contains("has no tool `ecko`; did you mean `echo`?"),
        "{}",
        ran.stderr
    );
    let ran = toolwire(&["call", &server.url, "delete", "--yes"], "");
    ran.expect_code(2);
    assert!(
        ran.stderr.contains("did you mean `delete_file`?"),
        "{}",
        ran.stderr
    );
}

#[test]
fn invalid_arguments() {
    let server = Served::start(&[]);
    // The server reports schema violations as a tool execution error, so
    // the model can correct itself: exit 1.
    let ran = toolwire(&["call", &server.url, "echo", "--yes"], "");
    ran.expect_code(1);
    assert!(
        ran.stderr.contains("\"text\" is a required property"),
        "{}",
        ran.stderr
    );
    // Without --yes the mismatch is shown before anything is sent.
    let shown = toolwire(&["call", &server.url, "echo"], "n\n");
    shown.expect_code(3);
    assert!(
        shown.stderr.contains("do not match the tool's inputSchema"),
        "{}",
        shown.stderr
    );
    let ran = toolwire(&["call", &server.url, "echo", "novalue", "--yes"], "");
    ran.expect_code(2);
    assert!(
        ran.stderr.contains("not a KEY=VALUE pair"),
        "{}",
        ran.stderr
    );
}

#[test]
fn connection_refused_exits_2_with_a_hint() {
    let url = format!("http://127.0.0.1:{}/mcp", closed_port());
    let ran = toolwire(&["list", &url], "");
    ran.expect_code(2);
    assert!(ran.stderr.contains("connection refused"), "{}", ran.stderr);
    assert!(
        ran.stderr
            .contains("is the server running? Start the demo with `toolwire serve`"),
        "{}",
        ran.stderr
    );
}

#[test]
fn a_wrong_path_says_where_the_endpoint_is() {
    let server = Served::start(&[]);
    let root = server.url.trim_end_matches("/mcp").to_owned();
    let ran = toolwire(&["list", &root], "");
    ran.expect_code(2);
    assert!(ran.stderr.contains("HTTP 404"), "{}", ran.stderr);
    assert!(
        ran.stderr.contains(&format!("e.g. {root}/mcp")),
        "{}",
        ran.stderr
    );
}

#[test]
fn progress_and_logs_go_to_stderr() {
    let server = Served::start(&[]);
    let ran = toolwire(
        &[
            "call",
            &server.url,
            "countdown",
            "seconds=3",
            "step_ms=10",
            "--yes",
        ],
        "",
    );
    ran.expect_code(0);
    assert_eq!(ran.stdout, "Lift-off!\n");
    assert!(
        ran.stderr
            .contains("[server info] countdown: counting down from 3"),
        "{}",
        ran.stderr
    );
    let quiet = toolwire(
        &[
            "call",
            &server.url,
            "countdown",
            "seconds=1",
            "step_ms=10",
            "--yes",
            "--log-level",
            "error",
        ],
        "",
    );
    quiet.expect_code(0);
    assert!(!quiet.stderr.contains("counting down"), "{}", quiet.stderr);
}

#[test]
fn sampling_is_refused_unless_a_command_answers_it() {
    let server = Served::start(&[]);
    let refused = toolwire(
        &["call", &server.url, "summarize", "text=hello", "--yes"],
        "",
    );
    refused.expect_code(2);
    assert!(
        refused.stderr.contains("--sampling-command"),
        "{}",
        refused.stderr
    );

    let answered = toolwire(
        &[
            "call",
            &server.url,
            "summarize",
            "text=hello there",
            "--yes",
            "--sampling-command",
            "grep -c 'hello there'",
        ],
        "",
    );
    answered.expect_code(0);
    assert_eq!(
        answered.stdout,
        "Summary (by command:grep -c 'hello there'): 1\n"
    );
}

#[test]
fn roots_come_from_root_flags() {
    let server = Served::start(&[]);
    let refused = toolwire(&["call", &server.url, "show_roots", "--yes"], "");
    refused.expect_code(2);
    assert!(refused.stderr.contains("--root"), "{}", refused.stderr);
    let ran = toolwire(
        &[
            "call",
            &server.url,
            "show_roots",
            "--yes",
            "--root",
            "/tmp",
            "--root",
            "file:///srv/data",
        ],
        "",
    );
    ran.expect_code(0);
    assert_eq!(
        ran.stdout,
        "The client's roots:\nfile:///tmp (tmp)\nfile:///srv/data\n"
    );
}

#[test]
fn read_and_prompt() {
    let server = Served::start(&[]);
    let read = toolwire(&["read", &server.url, "toolwire://demo/about"], "");
    read.expect_code(0);
    assert!(
        read.stdout.starts_with("# The toolwire demo server"),
        "{}",
        read.stdout
    );
    let json = toolwire(
        &["read", &server.url, "toolwire://demo/about", "--json"],
        "",
    )
    .json();
    assert_eq!(json["contents"][0]["mimeType"], "text/markdown");

    let prompt = toolwire(&["prompt", &server.url, "greet", "name=Ada"], "");
    prompt.expect_code(0);
    assert!(
        prompt
            .stdout
            .contains("[user] Say hello to Ada in one friendly sentence."),
        "{}",
        prompt.stdout
    );
    let missing = toolwire(&["prompt", &server.url, "greet"], "");
    missing.expect_code(2);
}

#[test]
fn extra_headers_are_sent() {
    let server = Served::start(&[]);
    // A header the server ignores must not break anything; a malformed one is refused.
    toolwire(&["list", &server.url, "--header", "X-Trace: abc"], "").expect_code(0);
    let bad = toolwire(&["list", &server.url, "--header", "nocolon"], "");
    bad.expect_code(2);
    assert!(bad.stderr.contains("expected NAME:VALUE"), "{}", bad.stderr);
}

#[test]
fn a_foreign_origin_is_refused_unless_allowed() {
    let server = Served::start(&["--allow-origin", "https://app.example.com"]);
    let allowed = toolwire(
        &[
            "list",
            &server.url,
            "--header",
            "Origin: https://app.example.com",
        ],
        "",
    );
    allowed.expect_code(0);
    let refused = toolwire(
        &[
            "list",
            &server.url,
            "--header",
            "Origin: https://evil.example.com",
        ],
        "",
    );
    refused.expect_code(2);
    assert!(
        refused.stderr.contains("is not allowed"),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains("toolwire serve --allow-origin"),
        "{}",
        refused.stderr
    );
}

#[test]
fn a_timeout_says_how_to_wait_longer() {
    let server = Served::start(&[]);
    let ran = toolwire(
        &[
            "call",
            &server.url,
            "countdown",
            "seconds=2",
            "step_ms=5000",
            "--yes",
            "--timeout",
            "0.3",
        ],
        "",
    );
    ran.expect_code(2);
    assert!(
        ran.stderr.contains("did not answer within"),
        "{}",
        ran.stderr
    );
    assert!(ran.stderr.contains("--timeout SECS"), "{}", ran.stderr);
}
