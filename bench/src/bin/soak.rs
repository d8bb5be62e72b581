//! soak: a bounded mixed run against `toolwire serve` with its security
//! switches on (bearer tokens, a rate limit, a short handle TTL, a short
//! legacy session idle timeout), sampling the server's memory, descriptors
//! and threads, then waiting for the idle timeouts and checking that RSS
//! plateaued and descriptors came back to their baseline.
//!
//! ```text
//! soak [--duration SECS] [--sample SECS] [--server PATH] [--ttl SECS] [--idle-wait SECS]
//! ```
//!
//! Every loop stops at the deadline; every operation has its own timeout.
//! Everything runs on 127.0.0.1.

use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{sleep, timeout};
use toolwire_bench::LOOPBACK;
use toolwire_bench::process::{Memory, binary_dir};

const USAGE: &str = "usage: soak [--duration SECS (default 600)] [--sample SECS (default 5)] \
[--server PATH (default $TOOLWIRE_BIN or target/release/toolwire)] [--ttl SECS (handle TTL and \
session idle timeout, default 20)] [--idle-wait SECS (after the load, default ttl + ttl/4 + 20)]";

/// The token with the `delete` scope, and the one without.
const WRITER: &str = "soak-writer";
const READER: &str = "soak-reader";
const TOKENS: [&str; 2] = [WRITER, READER];
/// The server's body limit (`DEFAULT_MAX_BODY_BYTES`), and what oversize sends.
const BODY_LIMIT: usize = 4 * 1024 * 1024;
const OVERSIZE: usize = BODY_LIMIT + 1024 * 1024;
/// The server's header read timeout (`DEFAULT_HEADER_READ_TIMEOUT`).
const HEADER_TIMEOUT: Duration = Duration::from_secs(30);
/// The server's body read timeout (`DEFAULT_BODY_READ_TIMEOUT`).
const BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest any ordinary exchange may take.
const OP_TIMEOUT: Duration = Duration::from_secs(10);

struct Options {
    duration: Duration,
    sample: Duration,
    server: PathBuf,
    ttl: u64,
    idle_wait: Option<Duration>,
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        duration: Duration::from_secs(600),
        sample: Duration::from_secs(5),
        server: default_server(),
        ttl: 20,
        idle_wait: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next()
                .ok_or_else(|| format!("{arg} needs a value\n{USAGE}"))
        };
        let secs = |v: String| {
            v.parse::<u64>()
                .ok()
                .filter(|s| *s > 0)
                .ok_or_else(|| format!("not a positive number of seconds: {v}"))
        };
        match arg.as_str() {
            "--duration" => options.duration = Duration::from_secs(secs(value()?)?),
            "--sample" => options.sample = Duration::from_secs(secs(value()?)?),
            "--server" => options.server = PathBuf::from(value()?),
            "--ttl" => options.ttl = secs(value()?)?,
            "--idle-wait" => options.idle_wait = Some(Duration::from_secs(secs(value()?)?)),
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    Ok(options)
}

fn default_server() -> PathBuf {
    if let Some(path) = std::env::var_os("TOOLWIRE_BIN") {
        return PathBuf::from(path);
    }
    // bench/target/release/soak → target/release/toolwire of the root workspace.
    binary_dir().join("../../../target/release/toolwire")
}

// ---------------------------------------------------------------------------
// Counting

#[derive(Default, Clone)]
struct OpStats {
    /// Behaved as it must (a refusal that must happen counts here).
    ok: u64,
    /// A tool error saying the rate limit was reached.
    limited: u64,
    /// Anything else: an unexpected status, answer or failure.
    unexpected: u64,
    examples: Vec<String>,
}

enum Outcome {
    Ok,
    Limited,
    Unexpected(String),
}

#[derive(Default)]
struct Stats {
    ops: Mutex<BTreeMap<&'static str, OpStats>>,
    facts: Mutex<BTreeMap<&'static str, u64>>,
    slowloris_cut: Mutex<Vec<f64>>,
    half_body_cut: Mutex<Vec<f64>>,
}

impl Stats {
    fn record(&self, op: &'static str, outcome: Outcome) {
        let mut ops = self.ops.lock().unwrap();
        let entry = ops.entry(op).or_default();
        match outcome {
            Outcome::Ok => entry.ok += 1,
            Outcome::Limited => entry.limited += 1,
            Outcome::Unexpected(why) => {
                entry.unexpected += 1;
                if entry.examples.len() < 3 {
                    entry.examples.push(why);
                }
            }
        }
    }

    fn fact(&self, name: &'static str, n: u64) {
        *self.facts.lock().unwrap().entry(name).or_default() += n;
    }

    fn totals(&self) -> (u64, u64) {
        let ops = self.ops.lock().unwrap();
        ops.values().fold((0, 0), |(n, e), s| {
            (n + s.ok + s.limited + s.unexpected, e + s.unexpected)
        })
    }
}

// ---------------------------------------------------------------------------
// Raw HTTP/1.1

struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

fn parse_reply(raw: &[u8]) -> Result<Reply, String> {
    let end = find(raw, b"\r\n\r\n").ok_or("no complete response head")?;
    let head = String::from_utf8_lossy(&raw[..end]);
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or("no status line")?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let rest = &raw[end + 4..];
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked {
        dechunk(rest)
    } else {
        rest.to_vec()
    };
    Ok(Reply {
        status,
        headers,
        body,
    })
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(line_end) = find(data, b"\r\n") {
        let size_text = String::from_utf8_lossy(&data[..line_end]);
        let size_text = size_text.split(';').next().unwrap_or("").trim().to_owned();
        let Ok(size) = usize::from_str_radix(&size_text, 16) else {
            break;
        };
        data = &data[line_end + 2..];
        if size == 0 || data.len() < size {
            out.extend_from_slice(&data[..size.min(data.len())]);
            break;
        }
        out.extend_from_slice(&data[..size]);
        data = data.get(size + 2..).unwrap_or(&[]);
    }
    out
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Sends one request on a fresh connection (`Connection: close`) and reads
/// the whole reply.
async fn exchange(addr: SocketAddr, raw: &[u8]) -> Result<Reply, String> {
    timeout(OP_TIMEOUT, async {
        let mut stream = TcpStream::connect(addr)
            .await
            .map_err(|e| format!("connect: {e}"))?;
        stream
            .write_all(raw)
            .await
            .map_err(|e| format!("write: {e}"))?;
        let mut buf = Vec::new();
        stream
            .read_to_end(&mut buf)
            .await
            .map_err(|e| format!("read: {e}"))?;
        parse_reply(&buf)
    })
    .await
    .map_err(|_| format!("no reply within {OP_TIMEOUT:?}"))?
}

fn head(port: u16, method: &str, token: Option<&str>, headers: &[(&str, String)]) -> String {
    let mut text = format!(
        "{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\
         Accept: application/json, text/event-stream\r\n"
    );
    if let Some(token) = token {
        text.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    for (name, value) in headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    text
}

fn post(port: u16, token: Option<&str>, headers: &[(&str, String)], body: &str) -> Vec<u8> {
    let mut text = head(port, "POST", token, headers);
    text.push_str(&format!(
        "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    ));
    text.into_bytes()
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "toolwire-soak", "version": "0.1.0"}
    })
}

/// A 2026-07-28 request.
fn modern(port: u16, token: Option<&str>, id: u64, method: &str, mut params: Value) -> Vec<u8> {
    let mut headers = vec![
        ("MCP-Protocol-Version", "2026-07-28".to_owned()),
        ("Mcp-Method", method.to_owned()),
    ];
    if let Some(name) = params.get("name").and_then(Value::as_str) {
        headers.push(("Mcp-Name", name.to_owned()));
    }
    let mut m = meta();
    if let Some(extra) = params.get("_meta").and_then(Value::as_object) {
        for (k, v) in extra {
            m[k] = v.clone();
        }
    }
    params["_meta"] = m;
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    post(port, token, &headers, &body.to_string())
}

/// The JSON-RPC message answering `id` (JSON, or the one in an SSE stream),
/// and how many progress notifications came before it.
fn rpc(reply: &Reply, id: u64) -> Result<(Value, usize), String> {
    let sse = reply
        .header("content-type")
        .is_some_and(|t| t.starts_with("text/event-stream"));
    if !sse {
        let value: Value = serde_json::from_slice(&reply.body).map_err(|e| {
            format!(
                "HTTP {}: body not JSON ({e}): {}",
                reply.status,
                snippet(&reply.body)
            )
        })?;
        return Ok((value, 0));
    }
    let text = String::from_utf8_lossy(&reply.body);
    let mut progress = 0;
    for line in text.lines() {
        let Some(data) = line.strip_prefix("data:") else {
            continue;
        };
        let Ok(value) = serde_json::from_str::<Value>(data.trim()) else {
            continue;
        };
        if value.get("method").and_then(Value::as_str) == Some("notifications/progress") {
            progress += 1;
        }
        if value.get("id").and_then(Value::as_u64) == Some(id) {
            return Ok((value, progress));
        }
    }
    Err(format!(
        "SSE stream without the answer: {}",
        snippet(&reply.body)
    ))
}

fn snippet(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    text.chars().take(160).collect()
}

fn tool_text(result: &Value) -> &str {
    result
        .pointer("/content/0/text")
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn is_tool_error(result: &Value) -> bool {
    result.get("isError").and_then(Value::as_bool) == Some(true)
}

fn is_limited(result: &Value) -> bool {
    is_tool_error(result) && tool_text(result).to_ascii_lowercase().contains("rate")
}

// ---------------------------------------------------------------------------
// The load

struct Ctx {
    addr: SocketAddr,
    stats: Stats,
    stop: AtomicBool,
    deadline: Instant,
    ids: AtomicU64,
    rng: AtomicU64,
    ttl: Duration,
    /// Baskets (id, owner, last use) waiting to be looked at after expiry.
    baskets: Mutex<VecDeque<(String, usize, Instant)>>,
    /// Legacy sessions (id, owner, last use), abandoned.
    sessions: Mutex<VecDeque<(String, usize, Instant)>>,
}

impl Ctx {
    fn running(&self) -> bool {
        !self.stop.load(Ordering::Relaxed) && Instant::now() < self.deadline
    }

    fn id(&self) -> u64 {
        self.ids.fetch_add(1, Ordering::Relaxed)
    }

    fn port(&self) -> u16 {
        self.addr.port()
    }

    /// A pseudo-random number below `n` (xorshift; good enough for a mix).
    fn pick(&self, n: u64) -> u64 {
        let mut x = self.rng.load(Ordering::Relaxed);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng.store(x, Ordering::Relaxed);
        x % n.max(1)
    }

    /// `tools/call` `name` as `token`: the HTTP status and the JSON-RPC answer.
    async fn call(
        &self,
        token: Option<&str>,
        name: &str,
        arguments: Value,
        extra: Value,
    ) -> Result<(u16, Value, usize), String> {
        let id = self.id();
        let mut params = json!({"name": name, "arguments": arguments});
        if let Some(extra) = extra.as_object() {
            for (k, v) in extra {
                params[k] = v.clone();
            }
        }
        let reply = exchange(
            self.addr,
            &modern(self.port(), token, id, "tools/call", params),
        )
        .await?;
        let (message, progress) = rpc(&reply, id)?;
        Ok((reply.status, message, progress))
    }
}

/// A result that must be a successful tool result; `check` looks at it.
fn expect_result(
    answer: Result<(u16, Value, usize), String>,
    check: impl FnOnce(&Value, usize) -> Result<(), String>,
) -> Outcome {
    match answer {
        Err(why) => Outcome::Unexpected(why),
        Ok((status, message, progress)) => match message.get("result") {
            Some(result) if is_limited(result) => Outcome::Limited,
            Some(result) if status == 200 && !is_tool_error(result) => {
                match check(result, progress) {
                    Ok(()) => Outcome::Ok,
                    Err(why) => Outcome::Unexpected(why),
                }
            }
            _ => Outcome::Unexpected(format!("HTTP {status}: {message}")),
        },
    }
}

/// A call that must be refused: a tool error or a JSON-RPC error.
fn expect_refusal(answer: Result<(u16, Value, usize), String>) -> Outcome {
    match answer {
        Err(why) => Outcome::Unexpected(why),
        Ok((_, message, _)) => match message.get("result") {
            Some(result) if is_limited(result) => Outcome::Limited,
            Some(result) if is_tool_error(result) => Outcome::Ok,
            Some(result) => Outcome::Unexpected(format!("not refused: {result}")),
            None if message.get("error").is_some() => Outcome::Ok,
            None => Outcome::Unexpected(format!("neither result nor error: {message}")),
        },
    }
}

/// Ordinary calls and the refusals that must happen, in a mix.
async fn caller(ctx: Arc<Ctx>, worker: usize) {
    let mut i = 0u64;
    while ctx.running() {
        i += 1;
        let who = (worker + i as usize) % 2;
        let token = Some(TOKENS[who]);
        match ctx.pick(20) {
            0..=5 => {
                let text = format!("soak {worker} {i} ✓");
                let answer = ctx
                    .call(token, "echo", json!({"text": text}), json!({}))
                    .await;
                let outcome = expect_result(answer, |r, _| {
                    (tool_text(r) == text)
                        .then_some(())
                        .ok_or(format!("echo answered {r}"))
                });
                ctx.stats.record("tools/call echo", outcome);
            }
            6..=7 => {
                let answer = ctx
                    .call(token, "stats", json!({"numbers": [1, 2, 6]}), json!({}))
                    .await;
                let outcome = expect_result(answer, |r, _| {
                    (r.pointer("/structuredContent/count") == Some(&json!(3)))
                        .then_some(())
                        .ok_or(format!("stats answered {r}"))
                });
                ctx.stats.record("tools/call stats", outcome);
            }
            8 => {
                let extra = json!({"_meta": {"progressToken": ctx.id()}});
                let answer = ctx
                    .call(
                        token,
                        "countdown",
                        json!({"seconds": 1, "step_ms": 250}),
                        extra,
                    )
                    .await;
                let outcome = expect_result(answer, |r, progress| {
                    (progress > 0)
                        .then_some(())
                        .ok_or(format!("countdown without progress: {r}"))
                });
                ctx.stats
                    .record("tools/call countdown (SSE progress)", outcome);
            }
            9 => {
                let id = ctx.id();
                let raw = modern(ctx.port(), token, id, "tools/list", json!({}));
                let outcome = match exchange(ctx.addr, &raw).await.and_then(|r| rpc(&r, id)) {
                    Ok((m, _)) if m.pointer("/result/tools/0/name").is_some() => Outcome::Ok,
                    Ok((m, _)) => Outcome::Unexpected(format!("tools/list answered {m}")),
                    Err(why) => Outcome::Unexpected(why),
                };
                ctx.stats.record("tools/list", outcome);
            }
            10..=11 => basket(&ctx, who).await,
            12 => {
                // A handle that never existed, and one of the other principal.
                let answer = ctx
                    .call(
                        token,
                        "view_basket",
                        json!({"basket_id": "bsk_soaknotarealbasket0000000"}),
                        json!({}),
                    )
                    .await;
                ctx.stats
                    .record("invalid handle (refused)", expect_refusal(answer));
                let theirs = ctx
                    .baskets
                    .lock()
                    .unwrap()
                    .iter()
                    .rev()
                    .find(|b| b.1 != who)
                    .map(|b| b.0.clone());
                if let Some(theirs) = theirs {
                    let answer = ctx
                        .call(
                            token,
                            "view_basket",
                            json!({"basket_id": theirs}),
                            json!({}),
                        )
                        .await;
                    ctx.stats
                        .record("other principal's handle (refused)", expect_refusal(answer));
                }
            }
            13 => expired_handles(&ctx).await,
            14 => {
                let extra = json!({"requestState": format!("soak-garbage-{i}"), "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": true}}}});
                let answer = ctx.call(token, "echo", json!({"text": "x"}), extra).await;
                ctx.stats
                    .record("invalid requestState (refused)", expect_refusal(answer));
            }
            15..=16 => mrtr(&ctx, i).await,
            17 => {
                let bad = if i.is_multiple_of(2) {
                    None
                } else {
                    Some("soak-wrong-token")
                };
                let raw = modern(
                    ctx.port(),
                    bad,
                    ctx.id(),
                    "tools/call",
                    json!({"name": "echo", "arguments": {"text": "x"}}),
                );
                let outcome = match exchange(ctx.addr, &raw).await {
                    Ok(r) if r.status == 401 => Outcome::Ok,
                    Ok(r) => {
                        Outcome::Unexpected(format!("HTTP {} without a valid token", r.status))
                    }
                    Err(why) => Outcome::Unexpected(why),
                };
                ctx.stats.record("no or wrong token (401)", outcome);
            }
            18 => {
                // delete_file is not even listed for the reader.
                let answer = ctx
                    .call(Some(READER), "delete_file", json!({"path": "x"}), json!({}))
                    .await;
                ctx.stats.record(
                    "delete_file without scope (refused)",
                    expect_refusal(answer),
                );
            }
            _ => {
                if ctx.pick(10) == 0 {
                    let answer = ctx
                        .call(Some(WRITER), "toggle_extras", json!({}), json!({}))
                        .await;
                    ctx.stats.record(
                        "tools/call toggle_extras",
                        expect_result(answer, |_, _| Ok(())),
                    );
                } else {
                    // Present or not, depending on the last toggle: either answer is fine.
                    let outcome = match ctx.call(token, "extra_tool", json!({}), json!({})).await {
                        Ok((_, m, _)) if m.get("result").is_some_and(is_limited) => {
                            Outcome::Limited
                        }
                        Ok((_, m, _)) if m.get("result").is_some() || m.get("error").is_some() => {
                            Outcome::Ok
                        }
                        Ok((s, m, _)) => Outcome::Unexpected(format!("HTTP {s}: {m}")),
                        Err(why) => Outcome::Unexpected(why),
                    };
                    ctx.stats
                        .record("tools/call extra_tool (present or not)", outcome);
                }
            }
        }
        sleep(Duration::from_millis(20)).await;
    }
}

async fn basket(ctx: &Ctx, who: usize) {
    let token = Some(TOKENS[who]);
    let created = ctx.call(token, "create_basket", json!({}), json!({})).await;
    let mut basket_id = None;
    let outcome = expect_result(created, |r, _| {
        basket_id = r
            .pointer("/structuredContent/basket_id")
            .and_then(Value::as_str)
            .map(str::to_owned);
        basket_id
            .as_ref()
            .map(|_| ())
            .ok_or(format!("no basket_id in {r}"))
    });
    ctx.stats.record("basket: create, add, view", outcome);
    let Some(id) = basket_id else { return };
    let added = ctx
        .call(
            token,
            "add_item",
            json!({"basket_id": id, "sku": "apple", "quantity": 2}),
            json!({}),
        )
        .await;
    ctx.stats.record(
        "basket: create, add, view",
        expect_result(added, |_, _| Ok(())),
    );
    let viewed = ctx
        .call(token, "view_basket", json!({"basket_id": id}), json!({}))
        .await;
    let outcome = expect_result(viewed, |r, _| {
        (r.pointer("/structuredContent/total_quantity") == Some(&json!(2)))
            .then_some(())
            .ok_or(format!("view_basket answered {r}"))
    });
    ctx.stats.record("basket: create, add, view", outcome);
    if ctx.pick(4) == 0 {
        let done = ctx
            .call(token, "checkout", json!({"basket_id": id}), json!({}))
            .await;
        ctx.stats
            .record("basket: checkout", expect_result(done, |_, _| Ok(())));
        return;
    }
    let mut baskets = ctx.baskets.lock().unwrap();
    if baskets.len() < 2000 {
        baskets.push_back((id, who, Instant::now()));
    }
}

/// Baskets left alone for longer than the TTL must be gone.
async fn expired_handles(ctx: &Ctx) {
    let wait = ctx.ttl + Duration::from_secs(5);
    let old = {
        let mut baskets = ctx.baskets.lock().unwrap();
        match baskets.front() {
            Some(b) if b.2.elapsed() > wait => baskets.pop_front(),
            _ => None,
        }
    };
    let Some((id, who, _)) = old else { return };
    let answer = ctx
        .call(
            Some(TOKENS[who]),
            "view_basket",
            json!({"basket_id": id}),
            json!({}),
        )
        .await;
    ctx.stats
        .record("expired handle (refused)", expect_refusal(answer));
}

/// `delete_file` asks to confirm (`input_required`); most rounds are
/// abandoned there, some are retried with a tampered or someone else's
/// `requestState`, some are finished.
async fn mrtr(ctx: &Ctx, i: u64) {
    let path = format!("soak-{i}.txt");
    let first = ctx
        .call(
            Some(WRITER),
            "delete_file",
            json!({"path": path}),
            json!({}),
        )
        .await;
    let state = match &first {
        Ok((_, m, _)) => m
            .pointer("/result/requestState")
            .and_then(Value::as_str)
            .map(str::to_owned),
        Err(_) => None,
    };
    let asked = first.as_ref().is_ok_and(|(_, m, _)| {
        m.pointer("/result/resultType").and_then(Value::as_str) == Some("input_required")
    });
    let outcome = match (&first, asked, &state) {
        (_, true, Some(_)) => Outcome::Ok,
        (Ok((_, m, _)), _, _) if m.get("result").is_some_and(is_limited) => Outcome::Limited,
        (Ok((s, m, _)), _, _) => Outcome::Unexpected(format!("HTTP {s}: no input_required: {m}")),
        (Err(why), _, _) => Outcome::Unexpected(why.clone()),
    };
    ctx.stats
        .record("MRTR: input_required (then abandoned)", outcome);
    let Some(state) = state else { return };
    let answers = json!({"confirm": {"action": "accept", "content": {"confirm": true}}});
    match ctx.pick(4) {
        0 => {
            let mut tampered = state.into_bytes();
            let at = tampered.len() / 2;
            tampered[at] = if tampered[at] == b'A' { b'B' } else { b'A' };
            let tampered = String::from_utf8_lossy(&tampered).into_owned();
            let extra = json!({"requestState": tampered, "inputResponses": answers});
            let answer = ctx
                .call(Some(WRITER), "delete_file", json!({"path": path}), extra)
                .await;
            ctx.stats.record(
                "MRTR: tampered requestState (refused)",
                expect_refusal(answer),
            );
        }
        1 => {
            let extra = json!({"requestState": state, "inputResponses": answers});
            let answer = ctx
                .call(Some(READER), "delete_file", json!({"path": path}), extra)
                .await;
            ctx.stats.record(
                "MRTR: other principal's requestState (refused)",
                expect_refusal(answer),
            );
        }
        2 => {
            let extra = json!({"requestState": state, "inputResponses": answers});
            let answer = ctx
                .call(Some(WRITER), "delete_file", json!({"path": path}), extra)
                .await;
            let outcome = expect_result(answer, |r, _| {
                tool_text(r)
                    .starts_with("Deleted")
                    .then_some(())
                    .ok_or(format!("retry answered {r}"))
            });
            ctx.stats.record("MRTR: finished", outcome);
        }
        _ => {}
    }
}

/// `subscriptions/listen` streams opened, held 1–6 s, dropped.
async fn listener(ctx: Arc<Ctx>) {
    while ctx.running() {
        let hold = Duration::from_millis(1000 + ctx.pick(5000));
        let token = Some(TOKENS[ctx.pick(2) as usize]);
        let raw = modern(
            ctx.port(),
            token,
            ctx.id(),
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true}}),
        );
        let outcome = listen_once(&ctx, &raw, hold).await;
        ctx.stats
            .record("subscriptions/listen opened and dropped", outcome);
        sleep(Duration::from_millis(100)).await;
    }
}

async fn listen_once(ctx: &Ctx, raw: &[u8], hold: Duration) -> Outcome {
    let Ok(Ok(mut stream)) = timeout(OP_TIMEOUT, TcpStream::connect(ctx.addr)).await else {
        return Outcome::Unexpected("connect failed".into());
    };
    if stream.write_all(raw).await.is_err() {
        return Outcome::Unexpected("write failed".into());
    }
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    let until = Instant::now() + hold;
    let mut head_ok = None;
    while Instant::now() < until {
        match timeout(until - Instant::now(), stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => break,
            Ok(Ok(n)) => seen.extend_from_slice(&buf[..n.min(buf.len())]),
            Err(_) => break,
        }
        if head_ok.is_none() && find(&seen, b"\r\n\r\n").is_some() {
            let reply = parse_reply(&seen);
            head_ok = Some(reply.is_ok_and(|r| {
                r.status == 200
                    && r.header("content-type")
                        .is_some_and(|t| t.starts_with("text/event-stream"))
            }));
        }
        if seen.len() > 1 << 20 {
            seen.drain(..seen.len() / 2);
        }
    }
    let changed = String::from_utf8_lossy(&seen)
        .matches("notifications/tools/list_changed")
        .count();
    ctx.stats.fact(
        "list_changed notifications seen on listen streams",
        changed as u64,
    );
    match head_ok {
        Some(true) => Outcome::Ok,
        _ => Outcome::Unexpected(format!("listen: {}", snippet(&seen))),
    }
}

/// Headers dribbled a byte a second: the server must cut the connection
/// (its header read timeout is 30 s).
async fn slowloris(ctx: Arc<Ctx>) {
    while ctx.running() {
        let outcome = slowloris_once(&ctx).await;
        if let Some(outcome) = outcome {
            ctx.stats
                .record("slow-loris header dribble (cut by server)", outcome);
        }
    }
}

async fn slowloris_once(ctx: &Ctx) -> Option<Outcome> {
    let Ok(Ok(mut stream)) = timeout(OP_TIMEOUT, TcpStream::connect(ctx.addr)).await else {
        return Some(Outcome::Unexpected("connect failed".into()));
    };
    let start = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nX-Slow: ",
        ctx.port()
    );
    if stream.write_all(start.as_bytes()).await.is_err() {
        return Some(Outcome::Unexpected("write failed".into()));
    }
    let began = Instant::now();
    let mut buf = [0u8; 512];
    let limit = HEADER_TIMEOUT + Duration::from_secs(15);
    loop {
        if !ctx.running() {
            return None;
        }
        if began.elapsed() > limit {
            return Some(Outcome::Unexpected(format!(
                "still open after {:.0} s of dribbled headers",
                began.elapsed().as_secs_f64()
            )));
        }
        tokio::select! {
            read = stream.read(&mut buf) => {
                if let Ok(n) = read
                    && n > 0
                    && buf[..n].starts_with(b"HTTP/1.1 408")
                {
                    ctx.stats.fact("slow-loris answered 408", 1);
                }
                break;
            }
            () = sleep(Duration::from_secs(1)) => {
                if stream.write_all(b"a").await.is_err() {
                    break;
                }
            }
        }
    }
    let cut = began.elapsed().as_secs_f64();
    ctx.stats.slowloris_cut.lock().unwrap().push(cut);
    Some(if cut + 1.0 >= HEADER_TIMEOUT.as_secs_f64() {
        Outcome::Ok
    } else {
        Outcome::Unexpected(format!("cut after only {cut:.1} s"))
    })
}

/// Content-Length larger than what is sent, then either close at once or
/// wait: the server must answer 408 and close when its body read timeout
/// (30 s) runs out.
async fn half_body(ctx: Arc<Ctx>) {
    while ctx.running() {
        let held = ctx.pick(2) == 0;
        let Some(outcome) = half_body_once(&ctx, held).await else {
            break;
        };
        let op = if held {
            "half-written body, held (408 from the server)"
        } else {
            "half-written body, then close"
        };
        ctx.stats.record(op, outcome);
        sleep(Duration::from_millis(200)).await;
    }
}

async fn half_body_once(ctx: &Ctx, held: bool) -> Option<Outcome> {
    let Ok(Ok(mut stream)) = timeout(OP_TIMEOUT, TcpStream::connect(ctx.addr)).await else {
        return Some(Outcome::Unexpected("connect failed".into()));
    };
    let body = modern(
        ctx.port(),
        Some(WRITER),
        ctx.id(),
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "half"}}),
    );
    let split = find(&body, b"\r\n\r\n").unwrap_or(0) + 4;
    let head = String::from_utf8_lossy(&body[..split]).into_owned();
    let sent = &body[split..];
    let head = head.replace(
        &format!("Content-Length: {}", sent.len()),
        &format!("Content-Length: {}", sent.len() + 2000),
    );
    let half = &sent[..sent.len() / 2];
    if stream.write_all(head.as_bytes()).await.is_err() || stream.write_all(half).await.is_err() {
        return Some(Outcome::Unexpected("write failed".into()));
    }
    if !held {
        return Some(Outcome::Ok);
    }
    let began = Instant::now();
    let mut reply = Vec::new();
    let limit = BODY_TIMEOUT + Duration::from_secs(15);
    let mut buf = [0u8; 512];
    // Read until the server closes, looking at the deadline every second.
    let closed = loop {
        if !ctx.running() {
            return None;
        }
        if began.elapsed() > limit {
            break false;
        }
        match timeout(Duration::from_secs(1), stream.read(&mut buf)).await {
            Err(_) => continue,
            Ok(Ok(0) | Err(_)) => break true,
            Ok(Ok(n)) => reply.extend_from_slice(&buf[..n]),
        }
    };
    let waited = began.elapsed().as_secs_f64();
    Some(match closed {
        false => Outcome::Unexpected(format!("half body still open after {waited:.0} s")),
        true if !reply.starts_with(b"HTTP/1.1 408") => Outcome::Unexpected(format!(
            "half body: {:?} after {waited:.1} s",
            String::from_utf8_lossy(&reply[..reply.len().min(60)])
        )),
        true if waited + 1.0 < BODY_TIMEOUT.as_secs_f64() => {
            Outcome::Unexpected(format!("half body cut after only {waited:.1} s"))
        }
        true => {
            ctx.stats.half_body_cut.lock().unwrap().push(waited);
            Outcome::Ok
        }
    })
}

/// Bodies over the 4 MiB limit: declared by Content-Length (headers only),
/// or streamed chunked; both must get 413 (or a reset after it).
async fn oversize(ctx: Arc<Ctx>) {
    while ctx.running() {
        let chunked = ctx.pick(2) == 0;
        let outcome = oversize_once(&ctx, chunked).await;
        let op = if chunked {
            "oversize body, chunked 5 MiB (413)"
        } else {
            "oversize body, Content-Length 5 MiB (413)"
        };
        ctx.stats.record(op, outcome);
        sleep(Duration::from_millis(700)).await;
    }
}

async fn oversize_once(ctx: &Ctx, chunked: bool) -> Outcome {
    let result = timeout(OP_TIMEOUT, async {
        let mut stream = TcpStream::connect(ctx.addr)
            .await
            .map_err(|e| format!("connect: {e}"))?;
        let mut text = head(
            ctx.port(),
            "POST",
            Some(WRITER),
            &[
                ("MCP-Protocol-Version", "2026-07-28".to_owned()),
                ("Mcp-Method", "tools/call".to_owned()),
                ("Mcp-Name", "echo".to_owned()),
            ],
        );
        text.push_str("Content-Type: application/json\r\n");
        if chunked {
            text.push_str("Transfer-Encoding: chunked\r\n\r\n");
        } else {
            text.push_str(&format!("Content-Length: {OVERSIZE}\r\n\r\n"));
        }
        stream
            .write_all(text.as_bytes())
            .await
            .map_err(|e| format!("write: {e}"))?;
        if chunked {
            let chunk = vec![b' '; 64 * 1024];
            let mut sent = 0;
            while sent < OVERSIZE {
                let frame = format!("{:x}\r\n", chunk.len());
                if stream.write_all(frame.as_bytes()).await.is_err()
                    || stream.write_all(&chunk).await.is_err()
                    || stream.write_all(b"\r\n").await.is_err()
                {
                    break;
                }
                sent += chunk.len();
            }
            let _ = stream.write_all(b"0\r\n\r\n").await;
        }
        let mut buf = Vec::new();
        let mut piece = [0u8; 4096];
        loop {
            match stream.read(&mut piece).await {
                Ok(0) | Err(_) => break,
                Ok(n) => buf.extend_from_slice(&piece[..n]),
            }
            if buf.len() > 1 << 16 {
                break;
            }
        }
        Ok::<_, String>(buf)
    })
    .await;
    match result {
        Err(_) => Outcome::Unexpected(format!("no answer within {OP_TIMEOUT:?}")),
        Ok(Err(why)) => Outcome::Unexpected(why),
        Ok(Ok(buf)) if buf.is_empty() => {
            ctx.stats
                .fact("oversize: connection reset with no reply", 1);
            Outcome::Ok
        }
        Ok(Ok(buf)) => match parse_reply(&buf) {
            Ok(r) if r.status == 413 => Outcome::Ok,
            Ok(r) => Outcome::Unexpected(format!("HTTP {}: {}", r.status, snippet(&r.body))),
            Err(why) => Outcome::Unexpected(format!("{why}: {}", snippet(&buf))),
        },
    }
}

/// 2025-11-25 sessions: `initialize`, `notifications/initialized`, maybe a
/// call and a GET stream, then abandoned (no DELETE). Sessions idle for
/// longer than the timeout must answer 404.
async fn legacy(ctx: Arc<Ctx>) {
    let mut i = 0u64;
    while ctx.running() {
        i += 1;
        let who = (i % 2) as usize;
        legacy_once(&ctx, who, i).await;
        let wait = ctx.ttl + ctx.ttl / 4 + Duration::from_secs(3);
        let old = {
            let mut sessions = ctx.sessions.lock().unwrap();
            match sessions.front() {
                Some(s) if s.2.elapsed() > wait => sessions.pop_front(),
                _ => None,
            }
        };
        if let Some((id, who, _)) = old {
            let body = r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"text":"late"}}}"#;
            let headers = [
                ("Mcp-Session-Id", id),
                ("MCP-Protocol-Version", "2025-11-25".to_owned()),
            ];
            let outcome = match exchange(
                ctx.addr,
                &post(ctx.port(), Some(TOKENS[who]), &headers, body),
            )
            .await
            {
                Ok(r) if r.status == 404 => Outcome::Ok,
                Ok(r) => Outcome::Unexpected(format!("expired session answered HTTP {}", r.status)),
                Err(why) => Outcome::Unexpected(why),
            };
            ctx.stats.record("legacy: expired session (404)", outcome);
        }
        sleep(Duration::from_millis(150)).await;
    }
}

async fn legacy_once(ctx: &Ctx, who: usize, i: u64) {
    let token = Some(TOKENS[who]);
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"toolwire-soak","version":"0.1.0"}}}"#;
    let reply = exchange(ctx.addr, &post(ctx.port(), token, &[], init)).await;
    let session = match &reply {
        Ok(r) if r.status == 200 => r.header("mcp-session-id").map(str::to_owned),
        _ => None,
    };
    let Some(session) = session else {
        let why = match reply {
            Ok(r) => format!("initialize: HTTP {}: {}", r.status, snippet(&r.body)),
            Err(why) => why,
        };
        ctx.stats
            .record("legacy: initialize, abandon", Outcome::Unexpected(why));
        return;
    };
    let headers = [
        ("Mcp-Session-Id", session.clone()),
        ("MCP-Protocol-Version", "2025-11-25".to_owned()),
    ];
    let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let outcome = match exchange(ctx.addr, &post(ctx.port(), token, &headers, note)).await {
        Ok(r) if r.status == 202 => Outcome::Ok,
        Ok(r) => Outcome::Unexpected(format!("initialized: HTTP {}", r.status)),
        Err(why) => Outcome::Unexpected(why),
    };
    ctx.stats.record("legacy: initialize, abandon", outcome);
    if i.is_multiple_of(2) {
        let text = format!("legacy {i}");
        let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": text}}});
        let outcome = match exchange(
            ctx.addr,
            &post(ctx.port(), token, &headers, &body.to_string()),
        )
        .await
        .and_then(|r| rpc(&r, 2))
        {
            Ok((m, _)) if m.get("result").is_some_and(is_limited) => Outcome::Limited,
            Ok((m, _)) if m.get("result").map(tool_text) == Some(text.as_str()) => Outcome::Ok,
            Ok((m, _)) => Outcome::Unexpected(format!("legacy echo answered {m}")),
            Err(why) => Outcome::Unexpected(why),
        };
        ctx.stats
            .record("legacy: tools/call echo in session", outcome);
    }
    if i % 4 == 1 {
        let mut raw = head(ctx.port(), "GET", token, &headers).replace(
            "Accept: application/json, text/event-stream",
            "Accept: text/event-stream",
        );
        raw.push_str("\r\n");
        let outcome = match timeout(OP_TIMEOUT, TcpStream::connect(ctx.addr)).await {
            Ok(Ok(mut stream)) => {
                let _ = stream.write_all(raw.as_bytes()).await;
                let mut buf = [0u8; 1024];
                match timeout(Duration::from_secs(2), stream.read(&mut buf)).await {
                    Ok(Ok(n)) if buf[..n].starts_with(b"HTTP/1.1 200") => {
                        sleep(Duration::from_millis(500 + ctx.pick(1500))).await;
                        Outcome::Ok
                    }
                    Ok(Ok(n)) => Outcome::Unexpected(format!("GET stream: {}", snippet(&buf[..n]))),
                    _ => Outcome::Unexpected("GET stream: no answer in 2 s".into()),
                }
            }
            _ => Outcome::Unexpected("connect failed".into()),
        };
        ctx.stats
            .record("legacy: GET stream opened and dropped", outcome);
    }
    let mut sessions = ctx.sessions.lock().unwrap();
    if sessions.len() < 5000 {
        sessions.push_back((session, who, Instant::now()));
    }
}

// ---------------------------------------------------------------------------
// The server and the samples

struct Server {
    child: Child,
    pid: u32,
    addr: SocketAddr,
    log: Arc<Mutex<LogStats>>,
}

#[derive(Default)]
struct LogStats {
    lines: u64,
    warnings: u64,
    errors: u64,
    panics: u64,
    examples: Vec<String>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_server(options: &Options) -> Result<(Server, Vec<String>), String> {
    let ttl = options.ttl.to_string();
    let args: Vec<String> = [
        "serve",
        "--http",
        "127.0.0.1:0",
        "--token",
        "soak-writer:delete",
        "--token",
        READER,
        "--rate-limit",
        "3000/60",
        "--handle-ttl",
        &ttl,
        "--session-idle-timeout",
        &ttl,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut child = Command::new(&options.server)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            format!(
                "could not start {}: {e} (build it with `cargo build --release -p toolwire-cli`, \
                 or pass --server PATH / TOOLWIRE_BIN)",
                options.server.display()
            )
        })?;
    let pid = child.id();
    let stderr = child.stderr.take().ok_or("no stderr")?;
    let (port_tx, port_rx) = std::sync::mpsc::channel();
    let log = Arc::new(Mutex::new(LogStats::default()));
    let log_writer = Arc::clone(&log);
    std::thread::spawn(move || {
        let mut port_tx = Some(port_tx);
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if let Some(tx) = &port_tx
                && let Some(rest) = line.split("http://127.0.0.1:").nth(1)
            {
                let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                if let Ok(port) = digits.parse::<u16>() {
                    let _ = tx.send(port);
                    port_tx = None;
                }
            }
            let mut log = log_writer.lock().unwrap();
            log.lines += 1;
            let lower = line.to_ascii_lowercase();
            let panic = lower.contains("panicked");
            let error = line.contains("ERROR");
            let warn = line.contains("WARN");
            log.panics += u64::from(panic);
            log.errors += u64::from(error);
            log.warnings += u64::from(warn);
            if (panic || error || warn) && log.examples.len() < 5 {
                log.examples.push(line.chars().take(300).collect());
            }
        }
    });
    let mut server = Server {
        child,
        pid,
        addr: SocketAddr::new(LOOPBACK, 0),
        log,
    };
    let port = port_rx
        .recv_timeout(Duration::from_secs(20))
        .map_err(|_| "the server printed no address within 20 s".to_owned())?;
    server.addr = SocketAddr::new(LOOPBACK, port);
    Ok((server, args))
}

#[derive(Clone, Copy)]
struct Sample {
    t: f64,
    rss: u64,
    anon: u64,
    threads: u64,
    fds: u64,
    ops: u64,
    unexpected: u64,
}

fn sample(pid: u32, t: f64, stats: &Stats) -> Sample {
    let memory = Memory::of(pid);
    let threads = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Threads:"))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(0);
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count() as u64);
    let (ops, unexpected) = stats.totals();
    Sample {
        t,
        rss: memory.rss,
        anon: memory.anon,
        threads,
        fds,
        ops,
        unexpected,
    }
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn mean(values: &[u64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.iter().sum::<u64>() as f64 / values.len() as f64
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let options = match parse_options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(options).await {
        eprintln!("soak: {e}");
        std::process::exit(1);
    }
}

async fn run(options: Options) -> Result<(), String> {
    let (mut server, args) = start_server(&options)?;
    let ttl = Duration::from_secs(options.ttl);
    let idle_wait = options
        .idle_wait
        .unwrap_or(ttl + ttl / 4 + Duration::from_secs(20));
    println!(
        "# Soak: `{} {}`\n",
        options.server.display(),
        args.join(" ")
    );
    println!(
        "load {} s, samples every {} s, then {} s idle (pid {}, {})\n",
        options.duration.as_secs(),
        options.sample.as_secs(),
        idle_wait.as_secs(),
        server.pid,
        server.addr
    );
    sleep(Duration::from_millis(500)).await;
    let began = Instant::now();
    let ctx = Arc::new(Ctx {
        addr: server.addr,
        stats: Stats::default(),
        stop: AtomicBool::new(false),
        deadline: began + options.duration,
        ids: AtomicU64::new(1000),
        rng: AtomicU64::new(0x9e37_79b9_7f4a_7c15 ^ u64::from(server.pid)),
        ttl,
        baskets: Mutex::new(VecDeque::new()),
        sessions: Mutex::new(VecDeque::new()),
    });
    let mut samples = vec![sample(server.pid, 0.0, &ctx.stats)];
    let mut tasks = Vec::new();
    for w in 0..3 {
        tasks.push(tokio::spawn(caller(Arc::clone(&ctx), w)));
    }
    for _ in 0..3 {
        tasks.push(tokio::spawn(listener(Arc::clone(&ctx))));
    }
    for _ in 0..4 {
        tasks.push(tokio::spawn(slowloris(Arc::clone(&ctx))));
    }
    tasks.push(tokio::spawn(half_body(Arc::clone(&ctx))));
    tasks.push(tokio::spawn(half_body(Arc::clone(&ctx))));
    tasks.push(tokio::spawn(oversize(Arc::clone(&ctx))));
    tasks.push(tokio::spawn(legacy(Arc::clone(&ctx))));

    let mut crashed = None;
    while Instant::now() < ctx.deadline {
        sleep(options.sample.min(ctx.deadline - Instant::now())).await;
        if let Ok(Some(status)) = server.child.try_wait() {
            crashed = Some(status.to_string());
            break;
        }
        samples.push(sample(
            server.pid,
            began.elapsed().as_secs_f64(),
            &ctx.stats,
        ));
    }
    ctx.stop.store(true, Ordering::Relaxed);
    for task in tasks {
        // Every operation has its own timeout; this bounds the wait anyway.
        let _ = timeout(OP_TIMEOUT + Duration::from_secs(5), task).await;
    }
    let load_end = samples.len();
    let idle_from = Instant::now();
    while crashed.is_none() && idle_from.elapsed() < idle_wait {
        sleep(options.sample.min(idle_wait - idle_from.elapsed())).await;
        if let Ok(Some(status)) = server.child.try_wait() {
            crashed = Some(status.to_string());
            break;
        }
        samples.push(sample(
            server.pid,
            began.elapsed().as_secs_f64(),
            &ctx.stats,
        ));
    }
    report(&options, &ctx, &samples, load_end, crashed, &server);
    Ok(())
}

fn report(
    options: &Options,
    ctx: &Ctx,
    samples: &[Sample],
    load_end: usize,
    crashed: Option<String>,
    server: &Server,
) {
    let duration = options.duration.as_secs_f64();
    println!("| t s | phase | VmRSS MiB | RssAnon MiB | threads | fds | operations | unexpected |");
    println!("|---:|---|---:|---:|---:|---:|---:|---:|");
    let mut shown = Vec::new();
    for tenth in 0..=10 {
        let target = duration * f64::from(tenth) / 10.0;
        if let Some((i, _)) = samples[..load_end]
            .iter()
            .enumerate()
            .min_by(|a, b| (a.1.t - target).abs().total_cmp(&(b.1.t - target).abs()))
            && !shown.contains(&i)
        {
            shown.push(i);
        }
    }
    if samples.len() > load_end {
        shown.push(samples.len() - 1);
    }
    for i in shown {
        let s = samples[i];
        let phase = if i == 0 {
            "baseline"
        } else if i < load_end {
            "load"
        } else {
            "idle end"
        };
        println!(
            "| {:.0} | {phase} | {:.1} | {:.1} | {} | {} | {} | {} |",
            s.t,
            mib(s.rss),
            mib(s.anon),
            s.threads,
            s.fds,
            s.ops,
            s.unexpected
        );
    }

    println!("\n| operation | as expected | rate-limited | unexpected |");
    println!("|---|---:|---:|---:|");
    let ops = ctx.stats.ops.lock().unwrap().clone();
    for (name, s) in &ops {
        println!("| {name} | {} | {} | {} |", s.ok, s.limited, s.unexpected);
    }
    let (total, unexpected) = ctx.stats.totals();
    println!("| **all** | | | **{unexpected}** of {total} |");
    for (name, s) in &ops {
        for e in &s.examples {
            println!("- unexpected in {name}: {e}");
        }
    }
    println!();
    for (name, n) in ctx.stats.facts.lock().unwrap().iter() {
        println!("- {name}: {n}");
    }
    print_cuts("slow-loris connections", &ctx.stats.slowloris_cut);
    print_cuts(
        "half-body connections answered 408",
        &ctx.stats.half_body_cut,
    );
    {
        let log = server.log.lock().unwrap();
        println!(
            "- server stderr: {} lines, {} WARN, {} ERROR, {} panics",
            log.lines, log.warnings, log.errors, log.panics
        );
        for e in &log.examples {
            println!("  - `{e}`");
        }
    }

    // Verdict.
    let load = &samples[1..load_end.max(1)];
    let third = |lo: f64, hi: f64, f: fn(&Sample) -> u64| -> Vec<u64> {
        load.iter()
            .filter(|s| s.t >= duration * lo && s.t <= duration * hi)
            .map(f)
            .collect()
    };
    let middle_rss = mean(&third(1.0 / 3.0, 2.0 / 3.0, |s| s.rss));
    let last_rss = mean(&third(2.0 / 3.0, 1.0, |s| s.rss));
    let middle_anon = mean(&third(1.0 / 3.0, 2.0 / 3.0, |s| s.anon));
    let last_anon = mean(&third(2.0 / 3.0, 1.0, |s| s.anon));
    let growth = |a: f64, b: f64| if a > 0.0 { (b - a) / a * 100.0 } else { 0.0 };
    // Plateau: the last third's mean within 5 % (or 1 MiB) of the middle third's.
    let plateau =
        last_rss <= middle_rss * 1.05 + 1048576.0 && last_anon <= middle_anon * 1.05 + 1048576.0;
    let base = samples[0];
    let end = *samples.last().unwrap_or(&base);
    let peak_fds = samples.iter().map(|s| s.fds).max().unwrap_or(0);
    let peak_threads = samples.iter().map(|s| s.threads).max().unwrap_or(0);
    println!("\n## Verdict\n");
    if let Some(status) = &crashed {
        println!("- **the server exited during the run: {status}**");
    }
    println!(
        "- RSS: mean VmRSS {:.1} MiB in the middle third, {:.1} MiB in the last third ({:+.1} %); \
         RssAnon {:.1} → {:.1} MiB ({:+.1} %): {}",
        mib(middle_rss as u64),
        mib(last_rss as u64),
        growth(middle_rss, last_rss),
        mib(middle_anon as u64),
        mib(last_anon as u64),
        growth(middle_anon, last_anon),
        if plateau {
            "**plateaued** (last third within 5 % + 1 MiB of the middle third)"
        } else {
            "**still growing** (last third more than 5 % + 1 MiB over the middle third)"
        }
    );
    println!(
        "- descriptors: baseline {}, peak {peak_fds}, after {} s idle {}: {}",
        base.fds,
        options
            .idle_wait
            .map_or(0, |d| d.as_secs())
            .max((end.t - samples[load_end.saturating_sub(1)].t).round() as u64),
        end.fds,
        if end.fds <= base.fds {
            "**back to baseline**"
        } else {
            "**not back to baseline**"
        }
    );
    println!(
        "- threads: baseline {}, peak {peak_threads}, end {}; RssAnon baseline {:.1} MiB, end {:.1} MiB",
        base.threads,
        end.threads,
        mib(base.anon),
        mib(end.anon)
    );
    println!(
        "- operations: {total}, unexpected: {unexpected}{}",
        if crashed.is_some() {
            ", server crashed"
        } else {
            ""
        }
    );
}

fn print_cuts(what: &str, cuts: &Mutex<Vec<f64>>) {
    let cuts = cuts.lock().unwrap();
    if !cuts.is_empty() {
        let min = cuts.iter().copied().fold(f64::MAX, f64::min);
        let max = cuts.iter().copied().fold(0.0, f64::max);
        println!("- {what}: {} (after {min:.1}–{max:.1} s)", cuts.len());
    }
}
