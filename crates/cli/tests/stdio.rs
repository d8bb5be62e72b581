//! The client commands against `toolwire serve --stdio`, spawned as a child
//! process by the command under test (`-- <toolwire> serve --stdio`).

mod support;

use serde_json::json;
use support::{bin, toolwire};

/// `args` followed by `-- <toolwire> serve --stdio`.
fn over_stdio<'a>(args: &[&'a str]) -> Vec<&'a str> {
    let mut all = args.to_vec();
    all.extend(["--", bin(), "serve", "--stdio"]);
    all
}

#[test]
fn discover_over_stdio() {
    let ran = toolwire(&over_stdio(&["discover", "--json"]), "");
    ran.expect_code(0);
    let result = ran.json();
    assert_eq!(result["supportedVersions"], json!(["2026-07-28"]));
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "toolwire-demo"
    );
}

#[test]
fn list_over_stdio() {
    let ran = toolwire(&over_stdio(&["list"]), "");
    ran.expect_code(0);
    assert!(ran.stdout.contains("tools on `"), "{}", ran.stdout);
    assert!(ran.stdout.contains("  echo — Echoes the text back"));
    let names: Vec<String> = toolwire(&over_stdio(&["list", "--json"]), "").json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(names.contains(&"delete_file".to_owned()), "{names:?}");
}

#[test]
fn call_over_stdio_with_each_argument_style() {
    let ran = toolwire(
        &over_stdio(&["call", "echo", "text=true", "--yes", "--json"]),
        "",
    );
    ran.expect_code(0);
    assert_eq!(
        ran.json()["content"],
        json!([{"type": "text", "text": "true"}])
    );

    let ran = toolwire(
        &over_stdio(&[
            "call",
            "stats",
            "--args",
            r#"{"numbers": [5]}"#,
            "--yes",
            "--json",
        ]),
        "",
    );
    ran.expect_code(0);
    assert_eq!(ran.json()["structuredContent"]["count"], 1);
}

#[test]
fn confirmations_over_stdio() {
    let denied = toolwire(&over_stdio(&["call", "echo", "text=hi"]), "no\n");
    denied.expect_code(3);
    assert_eq!(denied.stdout, "");

    let confirmed = toolwire(
        &over_stdio(&["call", "delete_file", "path=/etc/motd"]),
        "yes\ny\n",
    );
    confirmed.expect_code(0);
    assert_eq!(
        confirmed.stdout,
        "Deleted /etc/motd (pretend: the demo never touches your files)\n"
    );
}

#[test]
fn errors_over_stdio() {
    let tool_error = toolwire(
        &over_stdio(&["call", "countdown", "seconds=0", "--yes"]),
        "",
    );
    tool_error.expect_code(1);
    assert!(tool_error.stderr.contains(
        "Invalid arguments for tool countdown:\n/seconds: 0 is less than the minimum of 1"
    ));

    let unknown = toolwire(&over_stdio(&["call", "stat", "--yes"]), "");
    unknown.expect_code(2);
    assert!(
        unknown.stderr.contains("did you mean `stats`?"),
        "{}",
        unknown.stderr
    );

    let missing = toolwire(&["list", "--", "/nonexistent/toolwire-server"], "");
    missing.expect_code(2);
    assert!(
        missing.stderr.contains("installed and on your PATH"),
        "{}",
        missing.stderr
    );

    let not_mcp = toolwire(&["list", "--", "sh", "-c", "echo broken >&2; exit 1"], "");
    not_mcp.expect_code(2);
    assert!(not_mcp.stderr.contains("stopped"), "{}", not_mcp.stderr);
}

#[test]
fn a_url_that_is_not_a_url_explains_the_stdio_form() {
    let ran = toolwire(&["list", "my-server"], "");
    ran.expect_code(2);
    assert!(
        ran.stderr.contains("toolwire list -- my-server"),
        "{}",
        ran.stderr
    );
    let nothing = toolwire(&["list"], "");
    nothing.expect_code(2);
    assert!(
        nothing.stderr.contains("no server given"),
        "{}",
        nothing.stderr
    );
}

#[test]
fn a_server_of_an_older_revision_is_named() {
    // Answers every request with -32022, listing only an older version. A
    // modern error even to the server/discover probe: the spec says not to
    // fall back to initialize then.
    let script = r#"while read -r line; do id=$(printf '%s' "$line" | sed -n 's/.*"id":\("[^"]*"\|[0-9]*\).*/\1/p'); [ -n "$id" ] && echo '{"jsonrpc":"2.0","id":'"$id"',"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2025-06-18"],"requested":"2026-07-28"}}}'; done"#;
    let ran = toolwire(&["list", "--", "sh", "-c", script], "");
    ran.expect_code(2);
    assert!(
        ran.stderr
            .contains("the server speaks an older MCP revision (2025-06-18)"),
        "{}",
        ran.stderr
    );
}
