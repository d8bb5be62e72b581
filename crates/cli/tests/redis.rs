//! `toolwire serve --redis URL`: instances on one Redis (a `redis-server`
//! of the test's own on a loopback port) share baskets, rate limits and
//! the `toggle_extras` tool list, and keep serving when one of them is
//! killed mid-call, and serve one legacy (2025-11-25) session between them;
//! an unreachable Redis is refused at start.

#[allow(dead_code)]
#[path = "../../server/tests/common/legacy_http.rs"]
mod legacy_http;
#[path = "../../redis/tests/support/mod.rs"]
mod redis_support;
mod support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use redis_support::RedisServer;
use serde_json::{Value, json};
use support::{Served, bin, closed_port, http_get, toolwire};

/// Every wait of the tests below is bounded by this.
const WAIT: Duration = Duration::from_secs(30);

fn call(url: &str, args: &[&str]) -> support::Ran {
    let mut all = vec!["call", url];
    all.extend(args);
    all.extend(["--yes", "--json"]);
    toolwire(&all, "")
}

/// Calls `create_basket` on `url` and returns the new basket's id.
fn create_basket(url: &str) -> String {
    let created = call(url, &["create_basket"]);
    created.expect_code(0);
    created.json()["structuredContent"]["basket_id"]
        .as_str()
        .expect("a basket_id")
        .to_owned()
}

#[test]
fn a_basket_made_on_one_instance_is_filled_on_another_and_read_on_the_first() {
    let redis = RedisServer::start();
    let url = redis.url();
    let a = Served::start(&["--redis", &url]);
    let b = Served::start(&["--redis", &url]);
    let id = create_basket(&a.url);
    let basket = format!("basket_id={id}");
    call(&b.url, &["add_item", &basket, "sku=apple", "quantity=2"]).expect_code(0);
    call(&a.url, &["add_item", &basket, "sku=pear"]).expect_code(0);
    let viewed = call(&b.url, &["view_basket", &basket]);
    viewed.expect_code(0);
    assert_eq!(
        viewed.json()["structuredContent"],
        serde_json::json!({"basket_id": id, "items": [
            {"sku": "apple", "quantity": 2}, {"sku": "pear", "quantity": 1}],
            "total_quantity": 3})
    );
    // What the line lists grows with what is shared; where is what matters.
    let port = redis.port();
    let said = a.wait_for_log(" go through Redis at 127.0.0.1:");
    assert!(
        said.ends_with(&format!(
            " go through Redis at 127.0.0.1:{port} (key prefix toolwire:)"
        )),
        "{said}"
    );
}

#[test]
fn a_rate_limit_holds_across_instances() {
    let redis = RedisServer::start();
    let url = redis.url();
    let a = Served::start(&["--redis", &url, "--rate-limit", "3/3600"]);
    let b = Served::start(&["--redis", &url, "--rate-limit", "3/3600"]);
    for server in [&a, &b, &a] {
        call(&server.url, &["echo", "text=counted"]).expect_code(0);
    }
    let limited = toolwire(&["call", &b.url, "echo", "text=over", "--yes"], "");
    limited.expect_code(1);
    assert!(limited.stderr.contains("retry in"), "{}", limited.stderr);
}

#[test]
fn an_unreachable_redis_is_refused_at_start() {
    let url = format!("redis://127.0.0.1:{}", closed_port());
    let ran = toolwire(&["serve", "--http", "127.0.0.1:0", "--redis", &url], "");
    ran.expect_code(2);
    assert!(
        ran.stderr.starts_with("toolwire: --redis: "),
        "{}",
        ran.stderr
    );
    assert!(
        ran.stderr
            .contains("start Redis (e.g. `redis-server --port 6379`) or fix the URL"),
        "{}",
        ran.stderr
    );
}

/// Redis going away while serving: calls fail closed with errors that say
/// why (not "rate limit reached"), the server keeps running, and it
/// recovers by itself when Redis is back (empty: the baskets made before
/// are gone, new ones work).
#[test]
fn a_redis_outage_fails_closed_and_recovers() {
    let mut redis = RedisServer::start();
    let a = Served::start(&["--redis", &redis.url()]);
    let id = create_basket(&a.url);

    redis.kill();
    let basket = format!("basket_id={id}");
    let viewed = toolwire(&["call", &a.url, "view_basket", &basket, "--yes"], "");
    viewed.expect_code(1);
    assert!(
        viewed.stderr.ends_with(&format!(
            "toolwire: tool `view_basket` reported an error: Rate limits cannot be checked \
             (Redis at 127.0.0.1:{} is unreachable); retry in 1 s\n",
            redis.port()
        )),
        "{}",
        viewed.stderr
    );

    redis.restart();
    let mut recovered = None;
    for _ in 0..50 {
        let ran = call(&a.url, &["echo", "text=back"]);
        if ran.code == Some(0) {
            recovered = Some(ran);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let recovered = recovered.expect("calls work again within 10 s of Redis coming back");
    assert_eq!(recovered.json()["content"][0]["text"], "back");
    assert!(create_basket(&a.url).starts_with("bsk_"));
}

#[test]
fn readyz_says_when_redis_does_not_answer() {
    let mut redis = RedisServer::start();
    let a = Served::start(&["--redis", &redis.url(), "--health"]);
    assert_eq!(
        http_get(&a.url, "/readyz"),
        (200, r#"{"status":"ready"}"#.into())
    );
    redis.kill();
    let (status, body) = http_get(&a.url, "/readyz");
    assert_eq!(status, 503, "{body}");
    let prefix = format!(
        r#"{{"status":"not ready","notReady":["redis at 127.0.0.1:{}: "#,
        redis.port()
    );
    assert!(body.starts_with(&prefix), "{body}");
    assert!(body.ends_with(r#""]}"#), "{body}");
    assert_eq!(http_get(&a.url, "/healthz"), (200, "ok".into()));
    redis.restart();
    let deadline = Instant::now() + WAIT;
    while http_get(&a.url, "/readyz").0 != 200 {
        assert!(
            Instant::now() < deadline,
            "not ready again after Redis came back"
        );
        thread::sleep(Duration::from_millis(100));
    }
}

/// The tool names `toolwire list --json` shows, in order.
fn tool_names(url: &str) -> Vec<String> {
    let listed = toolwire(&["list", url, "--json"], "");
    listed.expect_code(0);
    listed.json()["tools"]
        .as_array()
        .expect("a tools array")
        .iter()
        .map(|t| t["name"].as_str().expect("a name").to_owned())
        .collect()
}

/// Polls `url`'s tool list (bounded) until `extra_tool` is in it (`on`) or not.
fn wait_for_extra_tool(url: &str, on: bool) {
    let deadline = Instant::now() + WAIT;
    while tool_names(url).iter().any(|n| n == "extra_tool") != on {
        assert!(
            Instant::now() < deadline,
            "{url} did not follow the flag (extra_tool {}) within {WAIT:?}",
            if on { "on" } else { "off" }
        );
        thread::sleep(Duration::from_millis(50));
    }
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

/// A POST whose answer is read as an SSE stream: the `data:` payloads.
struct Sse {
    response: reqwest::Response,
    buffer: String,
}

impl Sse {
    /// POSTs `body` (a request of `method`, naming `name` if any) to `url`.
    async fn post(url: &str, body: Value, name: Option<&str>) -> Sse {
        let method = body["method"].as_str().expect("a method").to_owned();
        let mut request = reqwest::Client::new()
            .post(url)
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", "application/json")
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", method);
        if let Some(name) = name {
            request = request.header("Mcp-Name", name);
        }
        let response = tokio::time::timeout(WAIT, request.body(body.to_string()).send())
            .await
            .expect("an answer within WAIT")
            .expect("the POST is answered");
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        Sse {
            response,
            buffer: String::new(),
        }
    }

    /// A `subscriptions/listen` stream of tool-list changes, acknowledged.
    async fn listen(url: &str) -> Sse {
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen", "params": {
            "notifications": {"toolsListChanged": true}, "_meta": meta()
        }});
        let mut listener = Sse::post(url, body, None).await;
        let ack = listener.next_message().await;
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
        listener
    }

    /// The next `data:` message, or `None` once the stream has ended
    /// (bounded wait).
    async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(end) = self.buffer.find('\n') {
                let line = self.buffer[..end].trim_end_matches('\r').to_owned();
                self.buffer.drain(..=end);
                if let Some(data) = line.strip_prefix("data:") {
                    return Some(serde_json::from_str(data.trim()).expect("JSON data"));
                }
                continue;
            }
            let chunk = tokio::time::timeout(WAIT, self.response.chunk())
                .await
                .expect("a message or the end within WAIT");
            match chunk {
                Ok(Some(chunk)) => self
                    .buffer
                    .push_str(std::str::from_utf8(&chunk).expect("UTF-8")),
                Ok(None) | Err(_) => return None,
            }
        }
    }

    async fn next_message(&mut self) -> Value {
        self.next().await.expect("the stream stays open")
    }
}

/// Runs `toolwire args...` off the async runtime.
async fn toolwire_async(args: &[&str]) -> support::Ran {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        toolwire(&args, "")
    })
    .await
    .expect("the command ran")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn toggle_extras_on_one_instance_changes_the_list_of_every_instance() {
    let redis = RedisServer::start();
    let url = redis.url();
    let a = Served::start(&["--redis", &url]);
    let b = Served::start(&["--redis", &url]);
    let mut on_b = Sse::listen(&b.url).await;

    let added = toolwire_async(&["call", &a.url, "toggle_extras", "--yes"]).await;
    added.expect_code(0);
    assert_eq!(added.stdout, "extra_tool added\n");
    assert_eq!(
        on_b.next_message().await,
        json!({
            "jsonrpc": "2.0",
            "method": "notifications/tools/list_changed",
            "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": 7}}
        })
    );
    let b_url = b.url.clone();
    tokio::task::spawn_blocking(move || wait_for_extra_tool(&b_url, true))
        .await
        .unwrap();
    assert_eq!(
        tool_names(&b.url).last().map(String::as_str),
        Some("extra_tool")
    );
    let called = toolwire_async(&["call", &b.url, "extra_tool", "--yes"]).await;
    called.expect_code(0);
    assert_eq!(called.stdout, "extra tool called\n");

    // An instance started while it is on lists it too.
    let c = Served::start(&["--redis", &url]);
    wait_for_extra_tool(&c.url, true);

    // Removed from B: gone on A and C as well.
    let removed = toolwire_async(&["call", &b.url, "toggle_extras", "--yes"]).await;
    removed.expect_code(0);
    assert_eq!(removed.stdout, "extra_tool removed\n");
    wait_for_extra_tool(&a.url, false);
    wait_for_extra_tool(&c.url, false);
    let gone = toolwire_async(&["call", &a.url, "extra_tool", "--yes"]).await;
    gone.expect_code(2);
    assert!(
        gone.stderr
            .starts_with(&format!("toolwire: {} has no tool `extra_tool`", a.url)),
        "{}",
        gone.stderr
    );
}

/// `toolwire serve --stdio --redis URL`: requests in, one reply line each.
struct StdioServer {
    child: Child,
    stdin: ChildStdin,
    replies: mpsc::Receiver<String>,
    next_id: u64,
}

impl StdioServer {
    fn start(redis: &str) -> StdioServer {
        let mut child = Command::new(bin())
            .args(["serve", "--stdio", "--redis", redis])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn toolwire serve --stdio");
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, replies) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        StdioServer {
            child,
            stdin,
            replies,
            next_id: 1,
        }
    }

    /// Sends a request of `method`; the result.
    fn request(&mut self, method: &str, mut params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        params["_meta"] = meta();
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{request}").expect("write a request");
        let line = self
            .replies
            .recv_timeout(WAIT)
            .expect("a reply within WAIT");
        let reply: Value = serde_json::from_str(&line).expect("a JSON reply");
        assert_eq!(reply["id"], id, "{reply}");
        reply["result"].clone()
    }

    /// Calls `tool` without arguments; the result.
    fn call(&mut self, tool: &str) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": {}}))
    }

    /// Whether `tools/list` shows `extra_tool`.
    fn lists_extra_tool(&mut self) -> bool {
        let listed = self.request("tools/list", json!({}));
        let tools = listed["tools"].as_array().expect("a tools array");
        tools.iter().any(|t| t["name"] == "extra_tool")
    }
}

impl Drop for StdioServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The text of a result's one content item, and whether it is an error.
fn text_of(result: &Value) -> (String, bool) {
    let text = result["content"][0]["text"].as_str().expect("a text");
    (text.to_owned(), result["isError"] == true)
}

/// While Redis is down the toggle is refused (by the rate limits, which
/// are checked first and also live in Redis) and the list stays; once Redis
/// is back (empty) the instance reads the flag again, off, and follows it.
#[test]
fn toggle_extras_while_redis_is_down_is_refused_then_follows_the_flag_again() {
    let mut redis = RedisServer::start();
    let mut server = StdioServer::start(&redis.url());
    assert_eq!(
        text_of(&server.call("toggle_extras")),
        ("extra_tool added".to_owned(), false)
    );

    redis.kill();
    assert_eq!(
        text_of(&server.call("toggle_extras")),
        (
            format!(
                "Rate limits cannot be checked (Redis at 127.0.0.1:{} is unreachable); retry in 1 s",
                redis.port()
            ),
            true
        )
    );
    assert!(server.lists_extra_tool(), "the list stays as it was");

    redis.restart();
    let deadline = Instant::now() + WAIT;
    while server.lists_extra_tool() {
        assert!(
            Instant::now() < deadline,
            "extra_tool still listed {WAIT:?} after Redis came back empty"
        );
        thread::sleep(Duration::from_millis(100));
    }
    let toggled = loop {
        let toggled = text_of(&server.call("toggle_extras"));
        if !toggled.1 || Instant::now() > deadline {
            break toggled;
        }
        thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(toggled, ("extra_tool added".to_owned(), false));
    assert!(server.lists_extra_tool());
}

/// A `tools/call` of `countdown` over SSE, with progress.
fn countdown_request() -> Value {
    let mut meta = meta();
    meta["progressToken"] = json!("lift-off");
    json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "countdown", "arguments": {"seconds": 60, "step_ms": 500}, "_meta": meta
    }})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_others_keep_serving_when_one_instance_is_killed_mid_call() {
    let redis = RedisServer::start();
    let url = redis.url();
    let flags = ["--redis", url.as_str(), "--rate-limit", "3/3600"];
    let a = Served::start(&flags);
    let b = Served::start(&flags);
    let c = Served::start(&flags);
    let id = create_basket(&a.url);

    let mut call = Sse::post(&a.url, countdown_request(), Some("countdown")).await;
    let progress = loop {
        let message = call.next_message().await;
        if message["method"] == "notifications/progress" {
            break message;
        }
    };
    assert_eq!(progress["params"]["progressToken"], "lift-off");
    drop(a); // kills the process and waits for it
    let rest = call.next().await;
    let mut rest = rest.into_iter().collect::<Vec<_>>();
    while let Some(message) = call.next().await {
        rest.push(message);
    }
    assert!(
        rest.iter().all(|m| m.get("result").is_none()),
        "no result from a killed instance: {rest:?}"
    );

    let basket = format!("basket_id={id}");
    let filled = toolwire_async(&["call", &b.url, "add_item", &basket, "sku=apple", "--yes"]).await;
    filled.expect_code(0);
    let viewed = toolwire_async(&["call", &c.url, "view_basket", &basket, "--yes", "--json"]).await;
    viewed.expect_code(0);
    assert_eq!(
        viewed.json()["structuredContent"],
        json!({"basket_id": id, "items": [{"sku": "apple", "quantity": 1}], "total_quantity": 1})
    );
    for server in [&b, &c, &b] {
        let echoed = toolwire_async(&["call", &server.url, "echo", "text=counted", "--yes"]).await;
        echoed.expect_code(0);
        assert_eq!(echoed.stdout, "counted\n");
    }
    let limited = toolwire_async(&["call", &c.url, "echo", "text=over", "--yes"]).await;
    limited.expect_code(1);
    // 3 an hour: the next one is allowed 20 minutes after the first.
    let refusal =
        "\ntoolwire: tool `echo` reported an error: Rate limit reached for tool echo; retry in ";
    let (_, wait) = limited.stderr.split_once(refusal).unwrap_or_else(|| {
        panic!("no refusal in {:?}", limited.stderr);
    });
    let seconds: u32 = wait
        .strip_suffix(" s\n")
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no wait in {:?}", limited.stderr));
    assert!((1100..=1200).contains(&seconds), "{}", limited.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_session_opened_on_one_instance_is_served_and_ended_through_the_other() {
    use legacy_http::{Events, LegacyClient, legacy};
    let redis = RedisServer::start();
    let url = redis.url();
    let (a, b) = tokio::task::spawn_blocking(move || {
        (
            Served::start(&["--redis", &url]),
            Served::start(&["--redis", &url]),
        )
    })
    .await
    .unwrap();
    let (on_a, on_b) = (
        LegacyClient::new(a.url.clone()),
        LegacyClient::new(b.url.clone()),
    );
    let id = on_a.open(None).await;

    let call = legacy(
        2,
        "tools/call",
        json!({"name": "delete_file", "arguments": {"path": "notes.txt"}}),
    );
    let mut events = Events::new(on_b.post(Some(&id), &call).send().await.unwrap());
    assert_eq!(events.next().await.unwrap().data, "", "priming event");
    let ask = events.message().await;
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    assert_eq!(ask["params"]["message"], "Delete notes.txt?");
    let answer = json!({"jsonrpc": "2.0", "id": ask["id"],
        "result": {"action": "accept", "content": {"confirm": true}}});
    let answered = on_a.post(Some(&id), &answer).send().await.unwrap();
    assert_eq!(answered.status(), 202);
    let done = events.message().await;
    assert_eq!(done["id"], 2, "{done}");
    assert_eq!(
        done["result"]["content"][0]["text"],
        "Deleted notes.txt (pretend: the demo never touches your files)"
    );

    assert_eq!(on_b.delete(&id).send().await.unwrap().status(), 204);
    let (status, _) = on_a.call(&id, &legacy(3, "ping", json!({}))).await;
    assert_eq!(status, 404, "the session ended on every instance");
    tokio::task::spawn_blocking(move || drop((a, b)))
        .await
        .unwrap();
}

/// `toolwire gateway` with `redis = URL`, in front of the demo (echo only,
/// two calls an hour per caller).
fn gateway_on(redis: &RedisServer) -> Served {
    let dir = support::fresh_dir("gateway-redis");
    let config = dir.join("gateway.toml");
    let text = format!(
        "[gateway]\nhttp = \"127.0.0.1:0\"\nredis = {:?}\n\n\
         [[upstream]]\nname = \"demo\"\ncommand = [{:?}, \"serve\", \"--stdio\"]\n\
         allow = [\"echo\"]\nrate_limit = \"2/3600\"\n",
        redis.url(),
        bin()
    );
    std::fs::write(&config, text).unwrap();
    Served::command(&["gateway", "--config", config.to_str().unwrap()])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_gateways_on_one_redis_share_rate_limits_and_legacy_sessions() {
    use legacy_http::{LegacyClient, echo, echoed};
    let redis = RedisServer::start();
    let (a, b, redis) =
        tokio::task::spawn_blocking(move || (gateway_on(&redis), gateway_on(&redis), redis))
            .await
            .unwrap();
    let (on_a, on_b) = (
        LegacyClient::new(a.url.clone()),
        LegacyClient::new(b.url.clone()),
    );
    let session = on_a.open(None).await;
    let call = |id: i64, text: &str| {
        let mut body = echo(id, text);
        body["params"]["name"] = json!("demo__echo");
        body
    };
    let mut expected = echoed(2, "one");
    assert_eq!(
        on_b.call(&session, &call(2, "one")).await,
        (200, expected.clone())
    );
    expected = echoed(3, "two");
    assert_eq!(on_a.call(&session, &call(3, "two")).await, (200, expected));
    let (status, refused) = on_b.call(&session, &call(4, "three")).await;
    assert_eq!(status, 200);
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    let text = refused["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(
        text, "Rate limit reached for tool demo__echo; retry in 1800 s",
        "the third call in an hour, across both gateways"
    );
    tokio::task::spawn_blocking(move || drop((a, b, redis)))
        .await
        .unwrap();
}
