//! `toolwire gateway` as a child process in front of real upstreams: two
//! `toolwire serve --stdio` children, a strictly legacy (2025-06-18) stdio
//! server, and a `toolwire serve` over HTTP. Exposed names, allow and deny,
//! scopes per principal, calls forwarded (with argument checks before
//! anything is sent), audit records, collisions and unreachable upstreams;
//! pinning in `gateway/pins.rs`, lazy starts and reloads in `gateway/ops.rs`.

#[allow(dead_code)]
#[path = "../../server/tests/common/legacy_http.rs"]
mod legacy_http;
mod support;

#[path = "gateway/ops.rs"]
mod ops;
#[path = "gateway/pins.rs"]
mod pins;

use std::path::PathBuf;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use support::{Served, bin, fresh_dir, strict_legacy_server, toolwire};

/// A configuration file with `[gateway]` lines and the upstream sections.
fn config_file(gateway: &str, upstreams: &str) -> PathBuf {
    let path = fresh_dir("gateway").join("gateway.toml");
    std::fs::write(&path, format!("[gateway]\n{gateway}\n\n{upstreams}")).unwrap();
    path
}

/// `command = [...]` for `toolwire serve --stdio`.
fn demo_command() -> String {
    format!("command = [{:?}, \"serve\", \"--stdio\"]", bin())
}

fn legacy_command() -> String {
    let command: Vec<String> = strict_legacy_server();
    format!("command = {}", json!(command))
}

/// The demo without its basket, file and sampling tools, a second demo
/// serving only echo and stats (stats needs scope admin), and the legacy
/// server under prefix `old`.
fn three_upstreams() -> String {
    format!(
        "[[upstream]]\nname = \"demo\"\n{}\n\
         deny = [\"delete_*\", \"*basket*\", \"add_item\", \"checkout\", \"summarize\", \"show_roots\", \"toggle_extras\", \"build_report\"]\n\n\
         [[upstream]]\nname = \"second\"\nprefix = \"two\"\n{}\nallow = [\"echo\", \"stats\"]\n\
         scopes = {{ \"stats\" = \"admin\" }}\n\n\
         [[upstream]]\nname = \"legacy\"\nprefix = \"old\"\n{}\n",
        demo_command(),
        demo_command(),
        legacy_command()
    )
}

fn call(url: &str, tool: &str, args: &[&str], bearer: Option<&str>) -> support::Ran {
    let mut all = vec!["call", url, tool];
    all.extend(args);
    all.extend(["--yes", "--json"]);
    if let Some(token) = bearer {
        all.extend(["--bearer", token]);
    }
    toolwire(&all, "")
}

fn tool_names(url: &str, bearer: Option<&str>) -> Vec<String> {
    let mut args = vec!["list", url, "--json"];
    if let Some(token) = bearer {
        args.extend(["--bearer", token]);
    }
    let listed = toolwire(&args, "");
    listed.expect_code(0);
    listed.json()["tools"]
        .as_array()
        .expect("a tools array")
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn check_prints_every_exposed_tool_with_its_origin() {
    let config = config_file("http = \"127.0.0.1:0\"", &three_upstreams());
    let checked = toolwire(
        &["gateway", "check", "--config", config.to_str().unwrap()],
        "",
    );
    checked.expect_code(0);
    assert_eq!(
        checked.stdout,
        "NAME             UPSTREAM / TOOL  (SCOPE)\n\
         demo__echo       demo / echo\n\
         demo__stats      demo / stats\n\
         demo__countdown  demo / countdown\n\
         two__echo        second / echo\n\
         two__stats       second / stats  (needs scope admin)\n\
         old__add         legacy / add\n"
    );
}

#[test]
fn calls_are_forwarded_checked_and_audited() {
    let dir = fresh_dir("gateway-audit");
    let audit = dir.join("audit.jsonl");
    let gateway_lines = format!(
        "http = \"127.0.0.1:0\"\naudit = {:?}",
        audit.display().to_string()
    );
    let config = config_file(&gateway_lines, &three_upstreams());
    let gateway = Served::command(&["gateway", "--config", config.to_str().unwrap()]);
    assert_eq!(
        tool_names(&gateway.url, None),
        [
            "demo__echo",
            "demo__stats",
            "demo__countdown",
            "two__echo",
            "old__add"
        ],
        "two__stats needs scope admin"
    );

    let echoed = call(&gateway.url, "demo__echo", &["text=through"], None);
    echoed.expect_code(0);
    assert_eq!(echoed.json()["content"][0]["text"], "through");
    let added = call(&gateway.url, "old__add", &["a=2", "b=3"], None);
    added.expect_code(0);
    assert_eq!(
        added.json()["content"][0]["text"],
        "5",
        "the legacy upstream answered"
    );

    let missing = call(&gateway.url, "old__add", &["a=2"], None);
    missing.expect_code(1);
    assert!(
        missing.stdout.contains("\\\"b\\\" is a required property")
            || missing.stderr.contains("\"b\" is a required property"),
        "checked before forwarding: {}{}",
        missing.stdout,
        missing.stderr
    );
    let denied = call(&gateway.url, "demo__delete_file", &["path=x"], None);
    denied.expect_code(2);
    assert!(
        denied.stderr.contains("has no tool `demo__delete_file`"),
        "{}",
        denied.stderr
    );

    let records: Vec<Value> = std::fs::read_to_string(&audit)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let summary: Vec<Value> = records
        .iter()
        .map(|r| {
            json!([
                r["principal"],
                r["upstream"],
                r["tool"],
                r["upstream_tool"],
                r["outcome"]
            ])
        })
        .collect();
    assert_eq!(
        summary,
        [
            json!(["anonymous", "demo", "demo__echo", "echo", "ok"]),
            json!(["anonymous", "legacy", "old__add", "add", "ok"]),
        ],
        "one record per forwarded call; a refused call never reached an upstream"
    );
    let digest = Sha256::digest(br#"{"text":"through"}"#);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(
        records[0]["arguments_sha256"],
        hex.as_str(),
        "canonical JSON, never the arguments"
    );
    assert!(
        records
            .iter()
            .all(|r| r["duration_ms"].is_u64() && r["time_ms"].is_u64())
    );
}

#[test]
fn a_scope_shows_and_allows_a_tool_only_to_tokens_that_hold_it() {
    let gateway_lines = "http = \"127.0.0.1:0\"\n\
         tokens = [{ env = \"GW_ADMIN\", scopes = [\"admin\"] }, { env = \"GW_READER\" }]";
    let config = config_file(gateway_lines, &three_upstreams());
    let args = ["gateway", "--config", config.to_str().unwrap()];
    let env = [("GW_ADMIN", "admin-token"), ("GW_READER", "reader-token")];
    let gateway = Served::command_with_env(&args, &env);
    let for_admin = tool_names(&gateway.url, Some("admin-token"));
    assert!(
        for_admin.contains(&"two__stats".to_owned()),
        "{for_admin:?}"
    );
    let for_reader = tool_names(&gateway.url, Some("reader-token"));
    assert!(
        !for_reader.contains(&"two__stats".to_owned()),
        "{for_reader:?}"
    );
    let stats = call(
        &gateway.url,
        "two__stats",
        &["numbers=[1,3]"],
        Some("admin-token"),
    );
    stats.expect_code(0);
    assert_eq!(stats.json()["structuredContent"]["mean"], 2.0);
    let refused = call(
        &gateway.url,
        "two__stats",
        &["numbers=[1,3]"],
        Some("reader-token"),
    );
    refused.expect_code(2);
    let anonymous = toolwire(&["list", &gateway.url], "");
    anonymous.expect_code(2);
}

#[test]
fn an_http_upstream_is_served_too() {
    let upstream = Served::start(&[]);
    let upstreams = format!(
        "[[upstream]]\nname = \"web\"\nurl = {:?}\nallow = [\"echo\"]\n",
        upstream.url
    );
    let config = config_file("http = \"127.0.0.1:0\"", &upstreams);
    let gateway = Served::command(&["gateway", "--config", config.to_str().unwrap()]);
    assert_eq!(tool_names(&gateway.url, None), ["web__echo"]);
    let echoed = call(&gateway.url, "web__echo", &["text=over http"], None);
    echoed.expect_code(0);
    assert_eq!(echoed.json()["content"][0]["text"], "over http");
}

#[test]
fn two_upstreams_with_one_prefix_are_refused_naming_both_tools() {
    let upstreams = format!(
        "[[upstream]]\nname = \"a\"\nprefix = \"same\"\n{}\nallow = [\"echo\"]\n\n\
         [[upstream]]\nname = \"b\"\nprefix = \"same\"\n{}\nallow = [\"echo\"]\n",
        demo_command(),
        demo_command()
    );
    let config = config_file("http = \"127.0.0.1:0\"", &upstreams);
    let checked = toolwire(
        &["gateway", "check", "--config", config.to_str().unwrap()],
        "",
    );
    checked.expect_code(2);
    assert!(
        checked.stderr.contains(
            "two tools would be exposed as \"same__echo\": \"echo\" of upstream \"a\" and \
             \"echo\" of upstream \"b\"; give one upstream another prefix, or deny one tool"
        ),
        "{}",
        checked.stderr
    );
}

#[test]
fn an_upstream_that_cannot_start_is_left_out_and_the_others_serve() {
    let upstreams = format!(
        "[[upstream]]\nname = \"broken\"\ncommand = [\"/nonexistent/mcp-server\"]\n\n\
         [[upstream]]\nname = \"demo\"\n{}\nallow = [\"echo\"]\n",
        demo_command()
    );
    let config = config_file("http = \"127.0.0.1:0\"", &upstreams);
    let checked = toolwire(
        &["gateway", "check", "--config", config.to_str().unwrap()],
        "",
    );
    checked.expect_code(2);
    assert!(checked.stdout.starts_with("NAME        UPSTREAM / TOOL  (SCOPE)\ndemo__echo  demo / echo\nleft out: upstream \"broken\": cannot list its tools: "), "{}", checked.stdout);
    assert!(
        checked
            .stderr
            .contains("1 of 2 upstreams could not be reached or listed"),
        "{}",
        checked.stderr
    );

    let gateway = Served::command(&["gateway", "--config", config.to_str().unwrap()]);
    assert_eq!(tool_names(&gateway.url, None), ["demo__echo"]);
}

/// Polls the gateway's tool list (every 100 ms, at most 30 s) until `done`.
fn wait_for_tools(url: &str, what: &str, done: impl Fn(&[String]) -> bool) -> Vec<String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let names = tool_names(url, None);
        if done(&names) {
            return names;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not within 30 s: {what}; tools now {names:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[test]
fn an_upstreams_list_change_reaches_the_gateways_list() {
    let upstreams = format!(
        "[[upstream]]\nname = \"demo\"\n{}\nallow = [\"echo\", \"toggle_extras\", \"extra_tool\"]\n",
        demo_command()
    );
    let config = config_file("http = \"127.0.0.1:0\"", &upstreams);
    let gateway = Served::command(&["gateway", "--config", config.to_str().unwrap()]);
    assert_eq!(
        tool_names(&gateway.url, None),
        ["demo__echo", "demo__toggle_extras"]
    );
    call(&gateway.url, "demo__toggle_extras", &[], None).expect_code(0);
    let names = wait_for_tools(&gateway.url, "demo__extra_tool served", |names| {
        names.iter().any(|n| n == "demo__extra_tool")
    });
    assert_eq!(
        names,
        ["demo__echo", "demo__toggle_extras", "demo__extra_tool"]
    );
    let extra = call(&gateway.url, "demo__extra_tool", &[], None);
    extra.expect_code(0);
    assert_eq!(extra.json()["content"][0]["text"], "extra tool called");
    call(&gateway.url, "demo__toggle_extras", &[], None).expect_code(0);
    wait_for_tools(&gateway.url, "demo__extra_tool withdrawn", |names| {
        names == ["demo__echo", "demo__toggle_extras"]
    });
}

#[test]
fn a_dead_upstreams_tools_leave_the_list_and_return_with_it() {
    let port = support::closed_port().to_string();
    let address = format!("127.0.0.1:{port}");
    let upstream = Served::command(&["serve", "--http", &address]);
    let upstreams = format!(
        "[[upstream]]\nname = \"web\"\nurl = {:?}\nallow = [\"echo\"]\n\n\
         [[upstream]]\nname = \"local\"\n{}\nallow = [\"echo\"]\n",
        upstream.url,
        demo_command()
    );
    let config = config_file("http = \"127.0.0.1:0\"", &upstreams);
    let gateway = Served::command(&["gateway", "--config", config.to_str().unwrap()]);
    assert_eq!(tool_names(&gateway.url, None), ["web__echo", "local__echo"]);

    drop(upstream);
    wait_for_tools(&gateway.url, "web__echo withdrawn", |names| {
        names == ["local__echo"]
    });
    let gone = call(&gateway.url, "web__echo", &["text=x"], None);
    gone.expect_code(2);
    let local = call(&gateway.url, "local__echo", &["text=still here"], None);
    local.expect_code(0);
    assert_eq!(local.json()["content"][0]["text"], "still here");

    let _back = Served::command(&["serve", "--http", &address]);
    wait_for_tools(&gateway.url, "web__echo back", |names| {
        names.len() == 2 && names.contains(&"web__echo".to_owned())
    });
    let echoed = call(&gateway.url, "web__echo", &["text=back"], None);
    echoed.expect_code(0);
    assert_eq!(echoed.json()["content"][0]["text"], "back");
}

#[test]
fn the_shorthand_puts_one_stdio_server_on_http_behind_a_token() {
    let gateway = Served::command(&[
        "gateway",
        "--http",
        "127.0.0.1:0",
        "--token",
        "s3cret",
        "--",
        bin(),
        "serve",
        "--stdio",
    ]);
    let names = tool_names(&gateway.url, Some("s3cret"));
    assert_eq!(names.first().map(String::as_str), Some("echo"), "{names:?}");
    assert!(names.contains(&"create_basket".to_owned()), "{names:?}");
    let echoed = call(&gateway.url, "echo", &["text=short"], Some("s3cret"));
    echoed.expect_code(0);
    assert_eq!(echoed.json()["content"][0]["text"], "short");
    let refused = toolwire(&["list", &gateway.url], "");
    refused.expect_code(2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_client_gets_the_upstreams_progress_through_the_gateway() {
    use legacy_http::{Events, LegacyClient, legacy};
    let config = config_file(
        "http = \"127.0.0.1:0\"",
        &format!(
            "[[upstream]]\nname = \"demo\"\n{}\nallow = [\"countdown\"]\n",
            demo_command()
        ),
    );
    let gateway = tokio::task::spawn_blocking(move || {
        Served::command(&["gateway", "--config", config.to_str().unwrap()])
    })
    .await
    .unwrap();
    let client = LegacyClient::new(gateway.url.clone());
    let session = client.open(None).await;
    let call = legacy(
        2,
        "tools/call",
        json!({"name": "demo__countdown", "arguments": {"seconds": 2, "step_ms": 50},
               "_meta": {"progressToken": "p1"}}),
    );
    let mut events = Events::new(client.post(Some(&session), &call).send().await.unwrap());
    assert_eq!(events.next().await.unwrap().data, "", "priming event");
    let mut progress = Vec::new();
    let result = loop {
        let message = events.message().await;
        if message["method"] == "notifications/progress" {
            assert_eq!(message["params"]["progressToken"], "p1");
            progress.push(message["params"]["progress"].clone());
        } else {
            break message;
        }
    };
    assert_eq!(
        progress,
        [json!(1.0), json!(2.0)],
        "each step of the upstream, in order"
    );
    assert_eq!(
        result,
        json!({"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "Lift-off!"}]}})
    );
    tokio::task::spawn_blocking(move || drop(gateway))
        .await
        .unwrap();
}

#[test]
fn prompts_are_served_under_exposed_names_with_the_same_policy() {
    let config = config_file("http = \"127.0.0.1:0\"", &three_upstreams());
    let gateway = Served::command(&["gateway", "--config", config.to_str().unwrap()]);
    let listed = toolwire(&["list", &gateway.url, "--prompts", "--json"], "");
    listed.expect_code(0);
    let names: Vec<Value> = listed.json()["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].clone())
        .collect();
    assert_eq!(
        names,
        [json!("demo__greet")],
        "second's allow list leaves its greet out"
    );
    let got = toolwire(
        &["prompt", &gateway.url, "demo__greet", "name=Ada", "--json"],
        "",
    );
    got.expect_code(0);
    assert_eq!(
        got.json()["messages"][0]["content"]["text"],
        "Say hello to Ada in one friendly sentence."
    );
    let missing = toolwire(&["prompt", &gateway.url, "demo__greet"], "");
    missing.expect_code(2);
    assert!(
        missing
            .stderr
            .contains("error -32602: Missing required argument \"name\" for prompt demo__greet"),
        "{}",
        missing.stderr
    );
}

#[test]
fn resources_keep_their_uris_and_one_uri_is_served_by_one_upstream() {
    let upstreams = format!(
        "[[upstream]]\nname = \"first\"\n{}\n\n[[upstream]]\nname = \"second\"\n{}\n",
        demo_command(),
        demo_command()
    );
    let config = config_file("http = \"127.0.0.1:0\"", &upstreams);
    let gateway = Served::command(&["gateway", "--config", config.to_str().unwrap()]);
    let listed = toolwire(&["list", &gateway.url, "--resources", "--json"], "");
    listed.expect_code(0);
    let uris: Vec<Value> = listed.json()["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].clone())
        .collect();
    assert_eq!(
        uris,
        [json!("toolwire://demo/about")],
        "the second upstream's copy is withheld"
    );
    let read = toolwire(
        &["read", &gateway.url, "toolwire://demo/about", "--json"],
        "",
    );
    read.expect_code(0);
    let text = read.json()["contents"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(text.starts_with("# The toolwire demo server"), "{text}");
    assert!(
        gateway
            .wait_for_log("another upstream serves this URI")
            .contains("upstream=second"),
        "the withheld copy is logged"
    );
}
