//! Client SDKs under load: N concurrent callers sharing ONE client object,
//! each with one `tools/call echo` in flight, against a server on
//! 127.0.0.1 (`hyper-echo`, so that the server costs as little as it can).
//!
//! ```text
//! client-load <port> [toolwire|rmcp|rmcp-pooled]
//!             [--concurrency N] [--warmup SECS] [--duration SECS]
//!             [--requests N [--warmup-calls N] [--callgrind]]
//! ```
//!
//! - `toolwire`: `toolwire_client::Client::builder(HttpTransport::new(url)?).build()`,
//!   every default kept: protocol mode auto (it settles on 2026-07-28 from
//!   the first reply), HTTP/1.1 on reqwest with rustls, same-origin
//!   redirects only, the 16 MiB reply limit, the tool list fetched before
//!   the first call (the `x-mcp-header` and output schema checks), approval
//!   hook `AllowAll`. No tracing subscriber is installed, as in an
//!   application without one, so its per-call `toolwire::audit` event (and
//!   the SHA-256 of the arguments it carries) is skipped.
//! - `rmcp`: rmcp 3.11's client, `().serve_with_lifecycle(transport,
//!   ClientLifecycleMode::Discover { preferred_versions: [2026-07-28] })`
//!   (`server/discover`, then stateless requests) over
//!   `StreamableHttpClientTransport::from_config` with its default reqwest
//!   client, which keeps no idle connections (`pool_max_idle_per_host(0)`,
//!   rmcp's choice against delayed-ACK stalls): every call opens a new TCP
//!   connection. `max_concurrent_requests` is raised from rmcp's default
//!   16 to `--concurrency`, so that its callers are not queued.
//! - `rmcp-pooled`: the same, with `StreamableHttpClientTransport::with_client`
//!   and a plain `reqwest::Client::new()` (keep-alive pool), to see rmcp's
//!   own cost without the new connection per call.
//!
//! Every call sends a text of its own (`c<caller>-<n>`), and its result
//! must be one text block equal to it, not an error: anything else counts
//! as an error, not as a call. Timed mode (the default): `--warmup` seconds
//! (2) not counted, then `--duration` seconds (10) measured: calls/s of the
//! calls that completed in the window, p50/p99 latency of those, and the
//! CPU time of this process (utime + stime of `/proc/self/stat`, every
//! thread) over the window divided by the calls.
//!
//! `--requests N`: exactly N calls (after `--warmup-calls`, 100, not
//! counted) from `--concurrency` callers (give 1 for a count per call that
//! does not depend on scheduling). With `--callgrind` (run under
//! `valgrind --tool=callgrind`), the process zeroes its own counters after
//! the warm-up (`callgrind_control -z <pid>`) and dumps them after the N
//! calls (`callgrind_control -d <pid>`), so the dump holds the N calls
//! alone, as `bench instructions` does for servers; divide its total by N.
//!
//! Prints one line: `client=… calls=… seconds=… calls_per_s=… p50_us=…
//! p99_us=… cpu_us_per_call=… user_us_per_call=… sys_us_per_call=…
//! errors=… warmup_errors=…` and the first
//! errors verbatim on stderr. Exits 1 when any call failed, warm-up included.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde_json::{Value, json};
use toolwire_bench::loadgen::new_histogram;

/// CPU time this process has used so far, user and system apart (every
/// thread), from `/proc/self/stat` (utime and stime, fields 14 and 15, in
/// USER_HZ ticks: 100 a second).
#[derive(Debug, Clone, Copy, Default)]
struct Cpu {
    user: Duration,
    system: Duration,
}

impl Cpu {
    fn now() -> Cpu {
        let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
            return Cpu::default();
        };
        // The command name is in parentheses and may hold spaces: skip it.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            return Cpu::default();
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // `rest` starts at field 3 (state).
        let ticks = |i: usize| {
            fields
                .get(i - 3)
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
        };
        Cpu {
            user: Duration::from_millis(ticks(14) * 10),
            system: Duration::from_millis(ticks(15) * 10),
        }
    }

    fn since(self, before: Cpu) -> Cpu {
        Cpu {
            user: self.user.saturating_sub(before.user),
            system: self.system.saturating_sub(before.system),
        }
    }
}

/// Longest wait for one call; a slower one is an error.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// Most calls one caller makes in one timed run (a bound, never reached).
const MAX_CALLS_PER_CALLER: u64 = 100_000_000;
/// Errors kept verbatim for the report.
const KEPT_ERRORS: usize = 5;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Sdk {
    Toolwire,
    Rmcp,
    RmcpPooled,
}

impl Sdk {
    fn label(self) -> &'static str {
        match self {
            Sdk::Toolwire => "toolwire",
            Sdk::Rmcp => "rmcp",
            Sdk::RmcpPooled => "rmcp-pooled",
        }
    }
}

#[derive(Debug)]
struct Options {
    port: u16,
    sdk: Sdk,
    concurrency: usize,
    warmup: Duration,
    duration: Duration,
    requests: Option<u64>,
    warmup_calls: u64,
    callgrind: bool,
}

const USAGE: &str = "usage: client-load <port> [toolwire|rmcp|rmcp-pooled] [--concurrency N] \
[--warmup SECS] [--duration SECS] [--requests N [--warmup-calls N] [--callgrind]]";

fn parse_args() -> Result<Options, String> {
    let mut port = None;
    let mut options = Options {
        port: 0,
        sdk: Sdk::Toolwire,
        concurrency: 32,
        warmup: Duration::from_secs(2),
        duration: Duration::from_secs(10),
        requests: None,
        warmup_calls: 100,
        callgrind: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut number = |name: &str| -> Result<f64, String> {
            args.next()
                .and_then(|v| v.parse::<f64>().ok())
                .filter(|v| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| format!("{name} needs a non-negative number"))
        };
        match arg.as_str() {
            "toolwire" => options.sdk = Sdk::Toolwire,
            "rmcp" => options.sdk = Sdk::Rmcp,
            "rmcp-pooled" => options.sdk = Sdk::RmcpPooled,
            "--concurrency" => {
                options.concurrency = number("--concurrency")?.clamp(1.0, 10_000.0) as usize
            }
            "--warmup" => options.warmup = Duration::from_secs_f64(number("--warmup")?),
            "--duration" => {
                options.duration = Duration::from_secs_f64(number("--duration")?.max(0.1))
            }
            "--requests" => options.requests = Some(number("--requests")?.max(1.0) as u64),
            "--warmup-calls" => options.warmup_calls = number("--warmup-calls")? as u64,
            "--callgrind" => options.callgrind = true,
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other if port.is_none() && !other.starts_with('-') => {
                port = Some(other.parse::<u16>().map_err(|_| USAGE.to_owned())?)
            }
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    options.port = port.ok_or_else(|| USAGE.to_owned())?;
    Ok(options)
}

/// One SDK's client, shared by every caller.
trait Caller: Send + Sync + 'static {
    /// Calls `echo` with `text` and checks the result is that text.
    fn echo(&self, text: &str) -> impl Future<Output = Result<(), String>> + Send;
}

struct ToolwireCaller(toolwire_client::Client);

impl Caller for ToolwireCaller {
    async fn echo(&self, text: &str) -> Result<(), String> {
        let result = self
            .0
            .call_tool("echo", json!({ "text": text }))
            .await
            .map_err(|e| e.to_string())?;
        match result.content.as_slice() {
            [block] if block.as_text() == Some(text) => Ok(()),
            other => Err(format!("wrong result for {text:?}: {other:?}")),
        }
    }
}

struct RmcpCaller(rmcp::service::RunningService<rmcp::RoleClient, ()>);

impl Caller for RmcpCaller {
    async fn echo(&self, text: &str) -> Result<(), String> {
        let Value::Object(arguments) = json!({ "text": text }) else {
            unreachable!("an object literal")
        };
        let params = rmcp::model::CallToolRequestParams::new("echo").with_arguments(arguments);
        let result = self.0.call_tool(params).await.map_err(|e| e.to_string())?;
        if result.is_error == Some(true) {
            return Err(format!("isError for {text:?}: {:?}", result.content));
        }
        match result.content.as_slice() {
            [block] if block.as_text().map(|t| t.text.as_str()) == Some(text) => Ok(()),
            other => Err(format!("wrong result for {text:?}: {other:?}")),
        }
    }
}

async fn toolwire_client(url: &str) -> Result<ToolwireCaller, String> {
    let transport =
        toolwire_client::transport::HttpTransport::new(url).map_err(|e| e.to_string())?;
    Ok(ToolwireCaller(
        toolwire_client::Client::builder(transport).build(),
    ))
}

async fn rmcp_client(url: &str, sdk: Sdk, concurrency: usize) -> Result<RmcpCaller, String> {
    use rmcp::model::ProtocolVersion;
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

    let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned())
        .max_concurrent_requests(concurrency);
    let transport = match sdk {
        Sdk::RmcpPooled => {
            StreamableHttpClientTransport::with_client(reqwest::Client::new(), config)
        }
        _ => StreamableHttpClientTransport::from_config(config),
    };
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let service =
        ().serve_with_lifecycle(transport, lifecycle)
            .await
            .map_err(|e| format!("rmcp client start: {e}"))?;
    Ok(RmcpCaller(service))
}

/// What the callers measured.
struct Tally {
    ok: u64,
    errors: u64,
    warmup_errors: u64,
    latency: Histogram<u64>,
    sample_errors: Vec<String>,
}

impl Tally {
    fn new() -> Self {
        Tally {
            ok: 0,
            errors: 0,
            warmup_errors: 0,
            latency: new_histogram(),
            sample_errors: Vec::new(),
        }
    }

    fn add(&mut self, other: Tally) {
        self.ok += other.ok;
        self.errors += other.errors;
        self.warmup_errors += other.warmup_errors;
        let _ = self.latency.add(&other.latency);
        for error in other.sample_errors {
            if self.sample_errors.len() < KEPT_ERRORS {
                self.sample_errors.push(error);
            }
        }
    }

    fn record(&mut self, outcome: Result<(), String>, took: Duration) {
        match outcome {
            Ok(()) => {
                self.ok += 1;
                let _ = self.latency.record((took.as_micros() as u64).max(1));
            }
            Err(error) => {
                self.errors += 1;
                if self.sample_errors.len() < KEPT_ERRORS {
                    self.sample_errors.push(error);
                }
            }
        }
    }
}

/// One call with the timeout.
async fn timed_call<C: Caller>(client: &C, text: &str) -> (Result<(), String>, Duration) {
    let started = Instant::now();
    let outcome = match tokio::time::timeout(CALL_TIMEOUT, client.echo(text)).await {
        Ok(outcome) => outcome,
        Err(_) => Err(format!("no result within {CALL_TIMEOUT:?}")),
    };
    (outcome, started.elapsed())
}

/// Timed mode: callers run until `end`; calls completing in
/// `[measure_from, end)` are counted.
async fn timed<C: Caller>(client: Arc<C>, options: &Options) -> (Tally, Duration, Cpu) {
    let start = Instant::now();
    let measure_from = start + options.warmup;
    let end = measure_from + options.duration;
    let mut tasks = Vec::with_capacity(options.concurrency);
    for caller in 0..options.concurrency {
        let client = Arc::clone(&client);
        tasks.push(tokio::spawn(async move {
            let mut tally = Tally::new();
            for n in 0..MAX_CALLS_PER_CALLER {
                if Instant::now() >= end {
                    break;
                }
                let text = format!("c{caller}-{n}");
                let (outcome, took) = timed_call(&*client, &text).await;
                let done = Instant::now();
                if done < measure_from {
                    if let Err(error) = outcome {
                        tally.warmup_errors += 1;
                        if tally.sample_errors.len() < KEPT_ERRORS {
                            tally.sample_errors.push(format!("(warm-up) {error}"));
                        }
                    }
                } else if done < end {
                    tally.record(outcome, took);
                }
            }
            tally
        }));
    }
    tokio::time::sleep_until(measure_from.into()).await;
    let cpu_before = Cpu::now();
    let window_start = Instant::now();
    tokio::time::sleep_until(end.into()).await;
    let cpu_after = Cpu::now();
    let window = window_start.elapsed();
    let mut total = Tally::new();
    for task in tasks {
        match task.await {
            Ok(tally) => total.add(tally),
            Err(e) => {
                total.errors += 1;
                total.sample_errors.push(format!("caller panicked: {e}"));
            }
        }
    }
    (total, window, cpu_after.since(cpu_before))
}

/// Exactly `n` calls from `concurrency` callers (a shared budget).
async fn counted<C: Caller>(client: &Arc<C>, n: u64, concurrency: usize, tag: &str) -> Tally {
    let budget = Arc::new(AtomicU64::new(n));
    let mut tasks = Vec::with_capacity(concurrency);
    for caller in 0..concurrency {
        let client = Arc::clone(client);
        let budget = Arc::clone(&budget);
        let tag = tag.to_owned();
        tasks.push(tokio::spawn(async move {
            let mut tally = Tally::new();
            let mut n = 0u64;
            while budget
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| b.checked_sub(1))
                .is_ok()
            {
                let text = format!("{tag}c{caller}-{n}");
                n += 1;
                let (outcome, took) = timed_call(&*client, &text).await;
                tally.record(outcome, took);
            }
            tally
        }));
    }
    let mut total = Tally::new();
    for task in tasks {
        match task.await {
            Ok(tally) => total.add(tally),
            Err(e) => {
                total.errors += 1;
                total.sample_errors.push(format!("caller panicked: {e}"));
            }
        }
    }
    total
}

/// `callgrind_control -z` (zero) or `-d` (dump) for this process.
fn callgrind_control(what: &str) -> Result<(), String> {
    let status = std::process::Command::new("callgrind_control")
        .arg(what)
        .arg(std::process::id().to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("callgrind_control {what}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("callgrind_control {what}: {status}"))
    }
}

/// Requests mode: warm-up calls, then exactly `n` (zeroed and dumped
/// around them under callgrind).
async fn requests<C: Caller>(
    client: Arc<C>,
    n: u64,
    options: &Options,
) -> Result<(Tally, Duration, Cpu), String> {
    let warm = counted(&client, options.warmup_calls, options.concurrency, "w").await;
    if options.callgrind {
        callgrind_control("-z")?;
    }
    let cpu_before = Cpu::now();
    let started = Instant::now();
    let mut tally = counted(&client, n, options.concurrency, "").await;
    let elapsed = started.elapsed();
    let cpu = Cpu::now().since(cpu_before);
    if options.callgrind {
        callgrind_control("-d")?;
    }
    tally.warmup_errors = warm.errors;
    for error in warm.sample_errors {
        if tally.sample_errors.len() < KEPT_ERRORS {
            tally.sample_errors.push(format!("(warm-up) {error}"));
        }
    }
    Ok((tally, elapsed, cpu))
}

async fn run<C: Caller>(client: C, options: &Options) -> Result<Tally, String> {
    let client = Arc::new(client);
    let (tally, window, cpu) = match options.requests {
        Some(n) => requests(client, n, options).await?,
        None => timed(client, options).await,
    };
    let quantile = |q: f64| {
        if tally.latency.is_empty() {
            0
        } else {
            tally.latency.value_at_quantile(q)
        }
    };
    let per_call = |time: Duration| time.as_secs_f64() * 1e6 / tally.ok.max(1) as f64;
    println!(
        "client={} concurrency={} calls={} seconds={:.3} calls_per_s={:.0} p50_us={} p99_us={} \
         cpu_us_per_call={:.1} user_us_per_call={:.1} sys_us_per_call={:.1} errors={} warmup_errors={}",
        options.sdk.label(),
        options.concurrency,
        tally.ok,
        window.as_secs_f64(),
        tally.ok as f64 / window.as_secs_f64().max(1e-9),
        quantile(0.5),
        quantile(0.99),
        per_call(cpu.user + cpu.system),
        per_call(cpu.user),
        per_call(cpu.system),
        tally.errors,
        tally.warmup_errors,
    );
    Ok(tally)
}

#[tokio::main]
async fn main() {
    let options = match parse_args() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(2);
        }
    };
    let url = format!("http://127.0.0.1:{}/mcp", options.port);
    let outcome = match options.sdk {
        Sdk::Toolwire => match toolwire_client(&url).await {
            Ok(client) => run(client, &options).await,
            Err(e) => Err(e),
        },
        Sdk::Rmcp | Sdk::RmcpPooled => {
            match rmcp_client(&url, options.sdk, options.concurrency).await {
                Ok(client) => run(client, &options).await,
                Err(e) => Err(e),
            }
        }
    };
    match outcome {
        Ok(tally) => {
            for error in &tally.sample_errors {
                eprintln!("client-load: {error}");
            }
            if tally.errors + tally.warmup_errors > 0 {
                std::process::exit(1);
            }
        }
        Err(message) => {
            eprintln!("client-load: {message}");
            std::process::exit(1);
        }
    }
}
