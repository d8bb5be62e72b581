//! Runs the benchmarks and prints Markdown tables.
//!
//! ```text
//! bench [compare|sse|list|schema|stdio|listen|all|instructions] [--rounds N]
//!       [--duration SECS] [--warmup SECS] [--connections N] [--window N]
//!       [--streams N] [--requests N]
//! ```
//!
//! `instructions` needs valgrind: it runs each server under callgrind, sends
//! 100 requests, zeroes the counters, sends `--requests` more (default
//! 1,000) and divides the instructions by them. Unlike throughput on a
//! shared machine, the figure is the same from run to run.
//!
//! Every HTTP scenario starts each server fresh on a free 127.0.0.1 port,
//! runs the servers interleaved (A B C A B C ...) for `--rounds` rounds, kills
//! each after its run, and prints one table with the ratios between its rows.
//! Build the servers first (`bench/run.sh` does).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header;
use http::{Method, Request};
use http_body_util::{BodyExt, Full};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::sync::Semaphore;
use toolwire_bench::loadgen::{self, LoadConfig, new_histogram};
use toolwire_bench::process::{Memory, ServerProcess, binary};
use toolwire_bench::report::{self, Row, Sample, mib};
use toolwire_bench::servers::REAL_TOOLS;
use toolwire_bench::workload::{LIST_TOOLS, PATH, PROTOCOL_VERSION, Workload};

/// Settings shared by the scenarios.
#[derive(Debug, Clone)]
struct Options {
    rounds: usize,
    duration: Duration,
    warmup: Duration,
    connections: usize,
    window: usize,
    streams: usize,
    requests: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            rounds: 2,
            duration: Duration::from_secs(5),
            warmup: Duration::from_secs(2),
            connections: 32,
            window: 64,
            streams: 10_000,
            requests: 1_000,
        }
    }
}

/// One server configuration and what it is sent.
struct Variant {
    label: &'static str,
    binary: &'static str,
    args: Vec<String>,
    workload: Workload,
}

const USAGE: &str = "usage: bench [compare|sse|list|schema|stdio|listen|all|instructions] [--rounds N] \
[--duration SECS] [--warmup SECS] [--connections N] [--window N] [--streams N] [--requests N]";

fn parse_args() -> Result<(String, Options), String> {
    let mut command = "compare".to_owned();
    let mut options = Options::default();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| -> Result<f64, String> {
            args.next()
                .and_then(|v| v.parse::<f64>().ok())
                .filter(|v| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| format!("{name} needs a non-negative number"))
        };
        match arg.as_str() {
            "--rounds" => options.rounds = value("--rounds")?.max(1.0) as usize,
            "--duration" => {
                options.duration = Duration::from_secs_f64(value("--duration")?.max(0.1))
            }
            "--warmup" => options.warmup = Duration::from_secs_f64(value("--warmup")?),
            "--connections" => options.connections = value("--connections")?.max(1.0) as usize,
            "--window" => options.window = value("--window")?.max(1.0) as usize,
            "--streams" => options.streams = value("--streams")?.max(1.0) as usize,
            "--requests" => options.requests = value("--requests")?.max(1.0) as u64,
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other if !other.starts_with('-') => command = other.to_owned(),
            other => return Err(format!("unknown option {other}\n{USAGE}")),
        }
    }
    Ok((command, options))
}

fn main() {
    let (command, options) = match parse_args() {
        Ok(parsed) => parsed,
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(2);
        }
    };
    toolwire_bench::raise_nofile_limit();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let outcome = runtime.block_on(async {
        print_machine(&options);
        match command.as_str() {
            "compare" => compare(&options).await,
            "sse" => sse(&options).await,
            "list" => list(&options).await,
            "schema" => schema(&options).await,
            "stdio" => stdio(&options).await,
            "listen" => listen(&options).await,
            "instructions" => instructions(&options).await,
            "all" => {
                compare(&options).await?;
                sse(&options).await?;
                list(&options).await?;
                schema(&options).await?;
                stdio(&options).await?;
                listen(&options).await
            }
            other => Err(format!("unknown command {other}\n{USAGE}")),
        }
    });
    if let Err(message) = outcome {
        eprintln!("bench: {message}");
        std::process::exit(1);
    }
}

fn print_machine(options: &Options) {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines().find_map(|l| {
                l.strip_prefix("model name")
                    .map(|r| r.trim_start_matches([' ', '\t', ':']).to_owned())
            })
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        "machine: {cores} cores ({cpu}); load generator and server share them. \
         {} connections, {:?} warm-up + {:?} measured per run, {} rounds.\n",
        options.connections, options.warmup, options.duration, options.rounds
    );
}

// ---------------------------------------------------------------------------
// HTTP scenarios

async fn compare(options: &Options) -> Result<(), String> {
    let variants = vec![
        Variant {
            label: "toolwire",
            binary: "toolwire-echo",
            args: vec![],
            workload: Workload::Echo,
        },
        Variant {
            label: "rmcp",
            binary: "rmcp-echo",
            args: vec![],
            workload: Workload::Echo,
        },
        Variant {
            label: "hyper (ceiling)",
            binary: "hyper-echo",
            args: vec![],
            workload: Workload::Echo,
        },
    ];
    let rows = run_interleaved(&variants, options).await?;
    println!("## tools/call echo over Streamable HTTP, JSON replies\n");
    println!("{}", report::table(&rows));
    println!("- {}", report::ratios(&rows[0], &rows[1]));
    println!("- {}", report::ratios(&rows[0], &rows[2]));
    println!("{}", report::error_samples(&rows));
    Ok(())
}

async fn sse(options: &Options) -> Result<(), String> {
    let variants = vec![
        Variant {
            label: "toolwire",
            binary: "toolwire-echo",
            args: vec![],
            workload: Workload::EchoProgress,
        },
        Variant {
            label: "rmcp",
            binary: "rmcp-echo",
            args: vec![],
            workload: Workload::EchoProgress,
        },
    ];
    let rows = run_interleaved(&variants, options).await?;
    println!(
        "## tools/call echo_progress with a progressToken: SSE replies (one progress notification, then the result)\n"
    );
    println!("{}", report::table(&rows));
    println!("- {}", report::ratios(&rows[0], &rows[1]));
    println!("{}", report::error_samples(&rows));
    Ok(())
}

async fn list(options: &Options) -> Result<(), String> {
    let toolwire_fillers = (LIST_TOOLS - REAL_TOOLS).to_string();
    // rmcp-echo has the same two real tools (echo, echo_progress).
    let rmcp_fillers = (LIST_TOOLS - REAL_TOOLS).to_string();
    let variants = vec![
        Variant {
            label: "toolwire",
            binary: "toolwire-echo",
            args: vec!["--fillers".into(), toolwire_fillers],
            workload: Workload::ToolsList,
        },
        Variant {
            label: "rmcp",
            binary: "rmcp-echo",
            args: vec!["--fillers".into(), rmcp_fillers],
            workload: Workload::ToolsList,
        },
    ];
    let rows = run_interleaved(&variants, options).await?;
    println!("## tools/list of {LIST_TOOLS} tools, one page\n");
    println!("{}", report::table(&rows));
    println!("- {}", report::ratios(&rows[0], &rows[1]));
    println!("{}", report::error_samples(&rows));
    Ok(())
}

async fn schema(options: &Options) -> Result<(), String> {
    let variants = vec![
        Variant {
            label: "echo (1 string)",
            binary: "toolwire-echo",
            args: vec!["--order-tools".into()],
            workload: Workload::Echo,
        },
        Variant {
            label: "order, validated",
            binary: "toolwire-echo",
            args: vec!["--order-tools".into()],
            workload: Workload::Order,
        },
        Variant {
            label: "order_loose, not validated",
            binary: "toolwire-echo",
            args: vec!["--order-tools".into()],
            workload: Workload::OrderLoose,
        },
    ];
    let rows = run_interleaved(&variants, options).await?;
    println!(
        "## toolwire: the cost of validating a realistic input schema (10 properties, nested object, enums, patterns)\n"
    );
    println!("{}", report::table(&rows));
    println!("- {}", report::ratios(&rows[1], &rows[2]));
    println!("- {}", report::ratios(&rows[1], &rows[0]));
    println!("{}", report::error_samples(&rows));
    Ok(())
}

/// Runs every variant once per round, in order, each against a fresh server.
async fn run_interleaved(variants: &[Variant], options: &Options) -> Result<Vec<Row>, String> {
    let mut rows: Vec<Row> = variants
        .iter()
        .map(|v| Row {
            label: v.label.to_owned(),
            samples: Vec::new(),
        })
        .collect();
    for round in 1..=options.rounds {
        for (variant, row) in variants.iter().zip(rows.iter_mut()) {
            let path = binary(variant.binary)?;
            let server = ServerProcess::start(&path, &variant.args)?;
            tokio::time::sleep(Duration::from_millis(300)).await;
            let idle = server.memory();
            let config = LoadConfig {
                addr: server.addr,
                connections: options.connections,
                warmup: options.warmup,
                duration: options.duration,
                request_timeout: Duration::from_secs(10),
                workload: variant.workload,
                max_requests: None,
            };
            let result = loadgen::run(&config).await;
            let after = server.memory();
            let server_cpu = server.cpu_time();
            server.stop();
            eprintln!(
                "round {round}/{}: {:<28} {:>9.0} req/s  p99 {:>7.3} ms  errors {}  peak RSS {} MiB",
                options.rounds,
                variant.label,
                result.rps(),
                result.latency.value_at_quantile(0.99) as f64 / 1000.0,
                result.errors,
                mib(after.peak),
            );
            row.samples.push(Sample {
                result,
                idle,
                after,
                server_cpu,
            });
            // Let the kernel settle the closed connections before the next server.
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }
    Ok(rows)
}

// ---------------------------------------------------------------------------
// stdio

async fn stdio(options: &Options) -> Result<(), String> {
    let path = binary("toolwire-echo")?;
    println!(
        "## toolwire over stdio: pipelined tools/call echo, {} requests in flight, one child process\n",
        options.window
    );
    println!(
        "| round | calls/s | p50 ms | p99 ms | p99.9 ms | errors | idle RSS MiB | peak RSS MiB |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    for round in 1..=options.rounds {
        let run = stdio_run(&path, options).await?;
        let ms = |q: f64| run.latency.value_at_quantile(q) as f64 / 1000.0;
        println!(
            "| {round} | {:.0} | {:.3} | {:.3} | {:.3} | {} | {} | {} |",
            run.ok as f64 / options.duration.as_secs_f64(),
            ms(0.5),
            ms(0.99),
            ms(0.999),
            run.errors,
            mib(run.idle.rss),
            mib(run.after.peak),
        );
        for error in &run.sample_errors {
            println!("  error: {error}");
        }
    }
    println!();
    Ok(())
}

struct StdioRun {
    ok: u64,
    errors: u64,
    latency: hdrhistogram::Histogram<u64>,
    idle: Memory,
    after: Memory,
    sample_errors: Vec<String>,
}

#[derive(serde::Deserialize)]
struct IdOnly {
    #[serde(default)]
    id: Option<u64>,
}

async fn stdio_run(path: &Path, options: &Options) -> Result<StdioRun, String> {
    let mut child = tokio::process::Command::new(path)
        .arg("--stdio")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("could not start {}: {e}", path.display()))?;
    let pid = child.id().ok_or("the stdio server exited at once")?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let idle = Memory::of(pid);
    let stdin = child.stdin.take().ok_or("no stdin")?;
    let stdout = child.stdout.take().ok_or("no stdout")?;

    let started_at = Instant::now();
    let measure_from = started_at + options.warmup;
    let end = measure_from + options.duration;
    let window = Arc::new(Semaphore::new(options.window));
    let starts: Arc<Mutex<HashMap<u64, Instant>>> = Arc::default();

    let writer = {
        let window = Arc::clone(&window);
        let starts = Arc::clone(&starts);
        tokio::spawn(async move {
            let mut out = BufWriter::new(stdin);
            let mut id: u64 = 0;
            // Bounded by the deadline and by a count no run reaches.
            while id < 100_000_000 && Instant::now() < end {
                let permit = match window.try_acquire() {
                    Ok(permit) => permit,
                    Err(_) => {
                        if out.flush().await.is_err() {
                            break;
                        }
                        match tokio::time::timeout(Duration::from_secs(10), window.acquire()).await
                        {
                            Ok(Ok(permit)) => permit,
                            _ => break,
                        }
                    }
                };
                permit.forget();
                id += 1;
                let mut line = Workload::Echo.body(id);
                line.push('\n');
                starts.lock().expect("starts").insert(id, Instant::now());
                if out.write_all(line.as_bytes()).await.is_err() {
                    break;
                }
            }
            let _ = out.flush().await;
            out // keep stdin open until the reader is done
        })
    };

    let mut run = StdioRun {
        ok: 0,
        errors: 0,
        latency: new_histogram(),
        idle,
        after: Memory::default(),
        sample_errors: Vec::new(),
    };
    let mut lines = BufReader::new(stdout).lines();
    let drain_deadline = end + Duration::from_secs(10);
    loop {
        let now = Instant::now();
        if now >= drain_deadline {
            break;
        }
        if now >= end && starts.lock().expect("starts").is_empty() && writer.is_finished() {
            break;
        }
        let line = match tokio::time::timeout(Duration::from_millis(500), lines.next_line()).await {
            Ok(Ok(Some(line))) => line,
            Ok(Ok(None)) | Ok(Err(_)) => break,
            Err(_) => continue, // no reply for a while: check the deadlines again
        };
        let id = serde_json::from_str::<IdOnly>(&line)
            .ok()
            .and_then(|m| m.id);
        let start = id.and_then(|id| starts.lock().expect("starts").remove(&id));
        window.add_permits(1);
        let (Some(id), Some(start)) = (id, start) else {
            run.errors += 1;
            if run.sample_errors.len() < 5 {
                run.sample_errors.push(format!("unexpected line: {line}"));
            }
            continue;
        };
        let measured = start >= measure_from && start < end;
        match Workload::Echo.check_message(id, line.as_bytes()) {
            Ok(()) if measured => {
                run.ok += 1;
                let micros = u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX);
                run.latency.saturating_record(micros.max(1));
            }
            Ok(()) => {}
            Err(error) => {
                if measured {
                    run.errors += 1;
                }
                if run.sample_errors.len() < 5 {
                    run.sample_errors.push(error);
                }
            }
        }
    }
    run.after = Memory::of(pid);
    let unanswered = starts.lock().expect("starts").len() as u64;
    run.errors += unanswered;
    writer.abort();
    let _ = writer.await;
    let _ = child.kill().await;
    Ok(run)
}

// ---------------------------------------------------------------------------
// 10,000 open subscriptions/listen streams

async fn listen(options: &Options) -> Result<(), String> {
    let limit = toolwire_bench::raise_nofile_limit();
    let streams = options.streams;
    if (streams as u64) + 200 > limit {
        return Err(format!(
            "{streams} streams need {} open files per process, the limit is {limit} (raise `ulimit -Hn`)",
            streams + 200
        ));
    }
    let path = binary("toolwire-echo")?;
    let server = ServerProcess::start(
        &path,
        &["--max-listeners".into(), (streams + 100).to_string()],
    )?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let idle = server.memory();
    // A short load first, so "before" is a server that has already served.
    let warm = loadgen::run(&LoadConfig {
        addr: server.addr,
        connections: 8,
        warmup: Duration::ZERO,
        duration: Duration::from_secs(1),
        request_timeout: Duration::from_secs(10),
        workload: Workload::Echo,
        max_requests: None,
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = server.memory();

    let opened_at = Instant::now();
    let mut held = Vec::with_capacity(streams);
    let mut failures = 0usize;
    let mut sample_errors: Vec<String> = Vec::new();
    const BATCH: usize = 250;
    let mut next_id = 1u64;
    while held.len() + failures < streams {
        let count = BATCH.min(streams - held.len() - failures);
        let mut batch = Vec::with_capacity(count);
        for _ in 0..count {
            let addr = server.addr;
            let id = next_id;
            next_id += 1;
            batch.push(tokio::spawn(async move {
                tokio::time::timeout(Duration::from_secs(20), open_listen(addr, id))
                    .await
                    .unwrap_or_else(|_| Err("listen stream did not open within 20 s".into()))
            }));
        }
        for task in batch {
            match task.await {
                Ok(Ok(stream)) => held.push(stream),
                Ok(Err(error)) => {
                    failures += 1;
                    if sample_errors.len() < 5 {
                        sample_errors.push(error);
                    }
                }
                Err(error) => {
                    failures += 1;
                    if sample_errors.len() < 5 {
                        sample_errors.push(error.to_string());
                    }
                }
            }
        }
    }
    let open_time = opened_at.elapsed();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let open = server.memory();
    let opened = held.len();
    drop(held);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let closed = server.memory();
    server.stop();

    let grown = open.rss.saturating_sub(before.rss);
    let per_stream = if opened > 0 {
        grown as f64 / opened as f64
    } else {
        0.0
    };
    println!(
        "## toolwire: {streams} open subscriptions/listen streams (one HTTP/1.1 connection each)\n"
    );
    println!(
        "| streams open | failed | time to open | RSS idle MiB | RSS before MiB | RSS with streams open MiB | growth MiB | bytes per stream | RSS after closing MiB | peak RSS MiB |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    println!(
        "| {opened} | {failures} | {:.1} s | {} | {} | {} | {} | {:.0} | {} | {} |",
        open_time.as_secs_f64(),
        mib(idle.rss),
        mib(before.rss),
        mib(open.rss),
        mib(grown),
        per_stream,
        mib(closed.rss),
        mib(closed.peak),
    );
    if warm.errors > 0 {
        println!("  warm-up errors: {}", warm.errors);
    }
    for error in sample_errors {
        println!("  error: {error}");
    }
    println!();
    Ok(())
}

/// What keeps one listen stream open: its connection and its response body.
type OpenStream = (
    hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    hyper::body::Incoming,
);

/// Opens one `subscriptions/listen` stream and waits for its first event.
async fn open_listen(addr: std::net::SocketAddr, id: u64) -> Result<OpenStream, String> {
    let mut sender = loadgen::connect(addr).await?;
    let body = format!(
        concat!(
            r#"{{"jsonrpc":"2.0","id":{},"method":"subscriptions/listen","params":{{"notifications":{{"toolsListChanged":true}},"#,
            r#""_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","#,
            r#""io.modelcontextprotocol/clientCapabilities":{{}},"#,
            r#""io.modelcontextprotocol/clientInfo":{{"name":"toolwire-bench","version":"0.1.0"}}}}}}}}"#
        ),
        id
    );
    let request = Request::builder()
        .method(Method::POST)
        .uri(PATH)
        .header(header::HOST, addr.to_string())
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .header("mcp-protocol-version", PROTOCOL_VERSION)
        .header("mcp-method", "subscriptions/listen")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    sender.ready().await.map_err(|e| e.to_string())?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    let sse = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    if response.status() != 200 || !sse {
        let status = response.status();
        let text = response
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        return Err(format!(
            "listen refused: HTTP {status}: {}",
            String::from_utf8_lossy(&text)
        ));
    }
    let mut body = response.into_body();
    // The first event is the acknowledgement; a few frames at most.
    for _ in 0..16 {
        match body.frame().await {
            Some(Ok(frame)) => {
                if frame
                    .data_ref()
                    .is_some_and(|d| d.windows(5).any(|w| w == b"data:"))
                {
                    return Ok((sender, body));
                }
            }
            Some(Err(error)) => return Err(error.to_string()),
            None => return Err("listen stream ended before its first event".into()),
        }
    }
    Err("no event in the first frames of the listen stream".into())
}

// ---------------------------------------------------------------------------
// Instructions per request (callgrind)

async fn instructions(options: &Options) -> Result<(), String> {
    let n = options.requests;
    let cases: Vec<(&str, &str, Vec<String>, Workload)> = vec![
        ("toolwire", "toolwire-echo", vec![], Workload::Echo),
        ("rmcp", "rmcp-echo", vec![], Workload::Echo),
        ("hyper (ceiling)", "hyper-echo", vec![], Workload::Echo),
        (
            "toolwire",
            "toolwire-echo",
            vec!["--order-tools".into()],
            Workload::Order,
        ),
        (
            "toolwire",
            "toolwire-echo",
            vec!["--order-tools".into()],
            Workload::OrderLoose,
        ),
        (
            "toolwire",
            "toolwire-echo",
            vec!["--fillers".into(), (LIST_TOOLS - REAL_TOOLS).to_string()],
            Workload::ToolsList,
        ),
        (
            "rmcp",
            "rmcp-echo",
            vec!["--fillers".into(), (LIST_TOOLS - REAL_TOOLS).to_string()],
            Workload::ToolsList,
        ),
    ];
    println!(
        "## Instructions per request (user space, callgrind; {n} requests after 100 of warm-up)\n"
    );
    println!("| server | request | instructions per request |");
    println!("|---|---|---:|");
    for (label, name, args, workload) in cases {
        let path = binary(name)?;
        let count = callgrind_count(&path, &args, workload, n).await?;
        println!(
            "| {label} | {} | {} |",
            workload.label(),
            thousands(count / n)
        );
    }
    println!();
    Ok(())
}

/// Runs `binary <port> args` under callgrind and counts the instructions of
/// `n` requests of `workload` (after 100 not counted).
async fn callgrind_count(
    binary: &Path,
    args: &[String],
    workload: Workload,
    n: u64,
) -> Result<u64, String> {
    let dir = std::env::temp_dir().join(format!("toolwire-bench-cg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let out = dir.join("callgrind.out");
    let port = toolwire_bench::process::free_port().map_err(|e| e.to_string())?;
    let mut child = std::process::Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(binary)
        .arg(port.to_string())
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("could not run valgrind (is it installed?): {e}"))?;
    let pid = child.id().to_string();
    let addr = std::net::SocketAddr::new(toolwire_bench::LOOPBACK, port);
    let outcome = async {
        let deadline = Instant::now() + Duration::from_secs(120);
        while tokio::net::TcpStream::connect(addr).await.is_err() {
            if Instant::now() >= deadline {
                return Err("the server did not listen under valgrind within 120 s".to_owned());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let load = |requests: u64| LoadConfig {
            addr,
            connections: 4,
            warmup: Duration::ZERO,
            duration: Duration::from_secs(600),
            request_timeout: Duration::from_secs(60),
            workload,
            max_requests: Some(requests),
        };
        let warm = loadgen::run(&load(100)).await;
        let control = |what: &str| {
            std::process::Command::new("callgrind_control")
                .arg(what)
                .arg(&pid)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .map_err(|e| format!("callgrind_control {what}: {e}"))
        };
        control("-z")?;
        let run = loadgen::run(&load(n)).await;
        control("-d")?;
        if warm.errors + run.errors > 0 || run.ok + run.errors < n {
            return Err(format!(
                "{}: errors under callgrind: {:?}",
                workload.label(),
                run.sample_errors
            ));
        }
        // The dump after zeroing is the file with the highest suffix.
        let mut dumps: Vec<_> = std::fs::read_dir(&dir)
            .map_err(|e| e.to_string())?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                p.extension()
                    .is_some_and(|x| x.to_string_lossy().parse::<u32>().is_ok())
            })
            .collect();
        dumps.sort();
        let dump = dumps.last().ok_or("callgrind wrote no dump")?;
        let text = std::fs::read_to_string(dump).map_err(|e| e.to_string())?;
        text.lines()
            .find_map(|l| {
                l.strip_prefix("summary:")
                    .or_else(|| l.strip_prefix("totals:"))
            })
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .ok_or_else(|| "no totals in the callgrind dump".to_owned())
    }
    .await;
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
    outcome
}

/// 87511 -> "87,511".
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}
