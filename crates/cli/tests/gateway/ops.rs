//! Operations: upstreams started lazily on first use, and the file
//! reloaded on SIGHUP while clients stay connected.

use serde_json::{Value, json};

use super::support::{Served, bin, fresh_dir};
use super::{call, config_file, legacy_http, tool_names};

/// `command = [...]` running `toolwire serve --stdio` after appending its
/// process id to `marker`: one line per start of the process.
fn counted_demo_command(marker: &std::path::Path) -> String {
    let script = format!(
        "echo $$ >> '{}'; exec '{}' serve --stdio",
        marker.display(),
        bin()
    );
    format!("command = [\"sh\", \"-c\", {script:?}]")
}

/// How many times the process of `marker` was started.
fn starts(marker: &std::path::Path) -> usize {
    std::fs::read_to_string(marker).map_or(0, |text| text.lines().count())
}

/// The id of the `n`th process started for `marker`.
fn started_pid(marker: &std::path::Path, n: usize) -> u32 {
    let text = std::fs::read_to_string(marker).unwrap();
    text.lines()
        .nth(n)
        .expect("that many starts")
        .parse()
        .unwrap()
}

/// Waits (bounded) until process `pid` has exited (gone, or a zombie).
fn wait_exited(pid: u32, what: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let exited = match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(stat) => stat
                .rsplit_once(") ")
                .is_some_and(|(_, rest)| rest.starts_with('Z')),
        };
        if exited {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what} (process {pid}) still runs after 20 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn a_lazy_upstream_serves_its_pinned_tools_and_starts_on_first_use() {
    let dir = fresh_dir("gateway-lazy");
    let (lazy, eager) = (dir.join("lazy.starts"), dir.join("eager.starts"));
    let text = format!(
        "[gateway]\nhttp = \"127.0.0.1:0\"\nlock = {:?}\n\n\
         [[upstream]]\nname = \"lazy\"\n{}\nallow = [\"echo\", \"stats\"]\nstart = \"lazy\"\n\n\
         [[upstream]]\nname = \"eager\"\n{}\nallow = [\"echo\"]\n",
        dir.join("gateway.lock").display().to_string(),
        counted_demo_command(&lazy),
        counted_demo_command(&eager)
    );
    let config = dir.join("gateway.toml");
    std::fs::write(&config, text).unwrap();
    let args = ["gateway", "--config", config.to_str().unwrap()];
    let all = ["lazy__echo", "lazy__stats", "eager__echo"];

    let first = Served::command(&args);
    assert_eq!(tool_names(&first.url, None), all);
    assert_eq!(
        (starts(&lazy), starts(&eager)),
        (1, 1),
        "nothing was pinned for the lazy upstream: started at boot to pin its tools"
    );
    drop(first);

    let gateway = Served::command(&args);
    assert!(
        gateway
            .wait_for_log("gateway ready")
            .contains("lazy_not_started=[\"lazy\"]"),
        "{:?}",
        gateway.log()
    );
    assert_eq!(
        tool_names(&gateway.url, None),
        all,
        "the lazy upstream's pinned tools"
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(
        (starts(&lazy), starts(&eager)),
        (1, 2),
        "listed, not started"
    );
    let echoed = call(&gateway.url, "lazy__echo", &["text=woken"], None);
    echoed.expect_code(0);
    assert_eq!(echoed.json()["content"][0]["text"], "woken");
    assert_eq!(starts(&lazy), 2, "started by the first call");
    let stats = call(&gateway.url, "lazy__stats", &["numbers=[2,4]"], None);
    stats.expect_code(0);
    assert_eq!(stats.json()["structuredContent"]["mean"], 3.0);
    assert_eq!(starts(&lazy), 2, "one process serves the calls that follow");
    assert_eq!(tool_names(&gateway.url, None), all);
}

/// Sends SIGHUP to process `pid`.
fn hang_up(pid: u32) {
    let status = std::process::Command::new("kill")
        .args(["-HUP", &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -HUP {pid}");
}

/// The names in a legacy `tools/list` reply.
fn listed_names(reply: &Value) -> Vec<String> {
    reply["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("a tools list: {reply}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_reloads_the_file_while_sessions_stay_open() {
    use legacy_http::{Events, LegacyClient, legacy};
    let dir = fresh_dir("gateway-reload");
    let marker = |name: &str| dir.join(format!("{name}.starts"));
    let upstream = |name: &str, allow: &str, more: &str| {
        format!(
            "[[upstream]]\nname = \"{name}\"\n{}\nallow = {allow}\n{more}\n",
            counted_demo_command(&marker(name))
        )
    };
    let config = config_file(
        "http = \"127.0.0.1:0\"",
        &(upstream("demo", "[\"echo\"]", "")
            + &upstream("other", "[\"echo\"]", "")
            + &upstream("gone", "[\"echo\"]", "")),
    );
    let args = ["gateway", "--config", config.to_str().unwrap()];
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let gateway = tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Served::command(&args)
    })
    .await
    .unwrap();
    let client = LegacyClient::new(gateway.url.clone());
    let session = client.open(None).await;
    let list = legacy(2, "tools/list", json!({}));
    let (_, before) = client.call(&session, &list).await;
    assert_eq!(
        listed_names(&before),
        ["demo__echo", "other__echo", "gone__echo"]
    );
    let stream = client.standalone(&session).send().await.unwrap();
    assert_eq!(stream.status(), 200);
    let mut events = Events::new(stream);

    // `gone` removed, `fresh` added, `demo`'s policy changed (kept on its
    // process), `other`'s timeout changed (a new process); a new address
    // would need a restart.
    let text = format!(
        "[gateway]\nhttp = \"127.0.0.1:1\"\n\n{}{}{}",
        upstream("demo", "[\"echo\", \"countdown\"]", ""),
        upstream("other", "[\"echo\"]", "timeout_s = 30"),
        upstream("fresh", "[\"stats\"]", "")
    );
    std::fs::write(&config, text).unwrap();
    hang_up(gateway.pid());
    let changed = loop {
        let event = events.next().await.expect("an event");
        if !event.data.is_empty() {
            break serde_json::from_str::<Value>(&event.data).unwrap();
        }
    };
    assert_eq!(changed["method"], "notifications/tools/list_changed");
    let more = tokio::time::timeout(std::time::Duration::from_millis(1500), events.next()).await;
    assert!(more.is_err(), "one list_changed: {more:?}");
    let (_, after) = client
        .call(&session, &legacy(3, "tools/list", json!({})))
        .await;
    assert_eq!(
        listed_names(&after),
        [
            "demo__echo",
            "demo__countdown",
            "other__echo",
            "fresh__stats"
        ],
        "the same session sees the new list"
    );
    let stats = legacy(
        4,
        "tools/call",
        json!({"name": "fresh__stats", "arguments": {"numbers": [1, 5]}}),
    );
    let (_, stats) = client.call(&session, &stats).await;
    assert_eq!(stats["result"]["structuredContent"]["mean"], 3.0, "{stats}");
    let demo_call = legacy(
        5,
        "tools/call",
        json!({"name": "demo__echo", "arguments": {"text": "still here"}}),
    );
    let (_, echoed) = client.call(&session, &demo_call).await;
    assert_eq!(
        echoed["result"]["content"][0]["text"], "still here",
        "{echoed}"
    );
    assert_eq!(
        (
            starts(&marker("demo")),
            starts(&marker("other")),
            starts(&marker("gone"))
        ),
        (1, 2, 1),
        "only the upstream whose connection changed was started again"
    );
    let (old_other, gone) = (
        started_pid(&marker("other"), 0),
        started_pid(&marker("gone"), 0),
    );
    tokio::task::spawn_blocking(move || {
        wait_exited(gone, "the removed upstream");
        wait_exited(old_other, "the changed upstream's old process");
    })
    .await
    .unwrap();
    assert!(
        gateway
            .wait_for_log("toolwire: SIGHUP: reloaded ")
            .ends_with(
                ": added fresh; removed gone; changed other; policy changed demo; serving 4 tools"
            ),
        "{:?}",
        gateway.log()
    );
    let restart = "toolwire: SIGHUP: gateway.http changed; it takes effect only after a \
                   restart (the running value is kept)";
    assert!(
        gateway.log().iter().any(|line| line == restart),
        "{:?}",
        gateway.log()
    );

    std::fs::write(&config, "[gateway]\nhttp = 8940\n").unwrap();
    hang_up(gateway.pid());
    let refused = gateway.wait_for_log("not reloaded");
    assert_eq!(
        refused,
        format!(
            "toolwire: SIGHUP: not reloaded, the running configuration is kept: {}:2: \
             gateway.http: expected an IP address and port such as \"127.0.0.1:8940\" (host \
             names are not resolved), got 8940",
            config.display()
        )
    );
    let (_, kept) = client
        .call(&session, &legacy(6, "tools/list", json!({})))
        .await;
    assert_eq!(
        listed_names(&kept),
        [
            "demo__echo",
            "demo__countdown",
            "other__echo",
            "fresh__stats"
        ]
    );
    tokio::task::spawn_blocking(move || drop(gateway))
        .await
        .unwrap();
}

/// Waits (bounded) until the gateway logged `n` reloads.
fn wait_reloads(gateway: &Served, n: usize) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let count = || {
        let log = gateway.log();
        log.iter()
            .filter(|l| l.starts_with("toolwire: SIGHUP: reloaded "))
            .count()
    };
    while count() < n {
        assert!(
            std::time::Instant::now() < deadline,
            "not {n} reloads within 30 s: {:?}",
            gateway.log()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn sighup_after_approve_serves_the_approved_definition() {
    let dir = fresh_dir("gateway-approve-reload");
    let config = super::pins::drifting_config(&dir, false);
    let description = dir.join("description.txt");
    std::fs::write(&description, "Adds two numbers").unwrap();
    let gateway = Served::command(&["gateway", "--config", config.to_str().unwrap()]);
    assert_eq!(tool_names(&gateway.url, None), ["drift__add"]);

    std::fs::write(&description, "Adds two numbers, and then some").unwrap();
    hang_up(gateway.pid());
    wait_reloads(&gateway, 1);
    assert_eq!(
        tool_names(&gateway.url, None),
        Vec::<String>::new(),
        "listed again at the reload: the drift is withheld"
    );
    assert!(
        gateway
            .log()
            .iter()
            .any(|l| l.ends_with(": no upstream changed; serving 0 tools")),
        "{:?}",
        gateway.log()
    );

    super::pins::gateway_subcommand("approve", &config).expect_code(0);
    hang_up(gateway.pid());
    wait_reloads(&gateway, 2);
    assert_eq!(
        tool_names(&gateway.url, None),
        ["drift__add"],
        "the lock file was read again"
    );
    let added = call(&gateway.url, "drift__add", &["a=20", "b=22"], None);
    added.expect_code(0);
    assert_eq!(added.json()["content"][0]["text"], "42");
}

/// Sends SIGKILL to process `pid`.
fn kill_hard(pid: u32) {
    let status = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -KILL {pid}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_killed_mid_call_fails_that_call_and_is_restarted() {
    use legacy_http::{Events, LegacyClient, legacy};
    let dir = fresh_dir("gateway-killed");
    let (marker, audit) = (dir.join("demo.starts"), dir.join("audit.jsonl"));
    let gateway_lines = format!(
        "http = \"127.0.0.1:0\"\naudit = {:?}",
        audit.display().to_string()
    );
    let upstreams = format!(
        "[[upstream]]\nname = \"demo\"\n{}\nallow = [\"echo\", \"countdown\"]\n",
        counted_demo_command(&marker)
    );
    let config = config_file(&gateway_lines, &upstreams);
    let config_path = config.to_str().unwrap().to_owned();
    let gateway = tokio::task::spawn_blocking(move || {
        Served::command(&["gateway", "--config", &config_path])
    })
    .await
    .unwrap();
    let client = LegacyClient::new(gateway.url.clone());
    let session = client.open(None).await;
    let countdown = legacy(
        2,
        "tools/call",
        json!({"name": "demo__countdown", "arguments": {"seconds": 60, "step_ms": 50},
               "_meta": {"progressToken": "p1"}}),
    );
    let mut events = Events::new(
        client
            .post(Some(&session), &countdown)
            .send()
            .await
            .unwrap(),
    );
    assert_eq!(events.next().await.unwrap().data, "", "priming event");
    let first = events.message().await;
    assert_eq!(
        first["method"], "notifications/progress",
        "the upstream runs the call: {first}"
    );

    kill_hard(started_pid(&marker, 0));
    let result = loop {
        let message = events.message().await;
        if message["method"] != "notifications/progress" {
            break message;
        }
    };
    assert_eq!(result["id"], 2, "{result}");
    assert_eq!(result["result"]["isError"], true, "{result}");
    let text = result["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("upstream \"demo\" failed: "),
        "a tool error the model can read: {text}"
    );

    // Restarted with backoff; the session that saw the failure goes on.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let echoed = loop {
        let echo = legacy(
            3,
            "tools/call",
            json!({"name": "demo__echo", "arguments": {"text": "again"}}),
        );
        // Until then: an unknown tool (withdrawn) or a tool error.
        let (_, reply) = client.call(&session, &echo).await;
        if reply["result"].is_object() && reply["result"]["isError"] != true {
            break reply;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not restarted within 30 s: {reply}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    assert_eq!(
        echoed["result"]["content"],
        json!([{"type": "text", "text": "again"}])
    );
    assert_eq!(starts(&marker), 2, "one restart");

    let outcomes: Vec<(String, String)> = std::fs::read_to_string(&audit)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|r| r["event"] == "call")
        .map(|r| {
            let field = |k: &str| r[k].as_str().unwrap_or_default().to_owned();
            (field("tool"), field("outcome"))
        })
        .collect();
    assert_eq!(
        outcomes.first(),
        Some(&("demo__countdown".to_owned(), "upstream_error".to_owned())),
        "{outcomes:?}"
    );
    assert_eq!(
        outcomes.last(),
        Some(&("demo__echo".to_owned(), "ok".to_owned())),
        "{outcomes:?}"
    );
    tokio::task::spawn_blocking(move || drop(gateway))
        .await
        .unwrap();
}

/// A stopping gateway closes its stdio upstreams and waits for them to exit
/// (`Gateway::close`). The upstream runs under a shell that writes its exit
/// status once it exits: a gateway that killed its children as it exited
/// would kill the shell first, and no status would be written.
#[test]
fn a_stopping_gateway_lets_its_stdio_upstreams_exit() {
    let marker = fresh_dir("gateway-close").join("exit-status");
    let script = format!(
        "'{}' serve --stdio; echo $? > '{}'",
        bin(),
        marker.display()
    );
    let config = config_file(
        "http = \"127.0.0.1:0\"",
        &format!("[[upstream]]\nname = \"demo\"\ncommand = [\"sh\", \"-c\", {script:?}]\n"),
    );
    let mut gateway = Served::command(&["gateway", "--config", config.to_str().unwrap()]);
    let ran = call(&gateway.url, "demo__echo", &["text=hi"], None);
    ran.expect_code(0);
    assert_eq!(ran.json()["content"][0]["text"], "hi");
    assert!(
        !marker.exists(),
        "the upstream exited while the gateway served"
    );
    assert!(gateway.terminate().success());
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "0\n");
}
