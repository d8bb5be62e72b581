//! Runs the benchmarks and prints Markdown tables.
//!
//! ```text
//! bench [compare|sse|list|schema|legacy|redis|gateway|stdio|listen|sessions|all|instructions|
//!        toolwire-instructions|stdio-instructions|redis-instructions|gateway-instructions]
//!       [--rounds N] [--duration SECS] [--warmup SECS] [--connections N]
//!       [--window N] [--streams N] [--h2-connections N] [--requests N] [--session-count N]
//!       [--idle-timeout SECS] [--waves N]
//! ```
//!
//! `listen` opens `--streams` (10,000) `subscriptions/listen` streams twice,
//! each time against a fresh server: one HTTP/1.1 connection per stream,
//! then spread over `--h2-connections` (100) HTTP/2 connections; it reads
//! the server's RSS before, with the streams open and after closing them.
//!
//! `sessions` opens `--session-count` (10,000) 2025-11-25 sessions, lets
//! them expire (`--idle-timeout`, 20 s), checks their ids answer 404 and
//! opens as many again, reading the server's RSS at each step; `--waves N`
//! (2 to 5) repeats expiry and opening up to wave N.
//!
//! `instructions` needs valgrind: it runs each server under callgrind, sends
//! 100 requests, zeroes the counters, sends `--requests` more (default
//! 1,000) and divides the instructions by them. Unlike throughput on a
//! shared machine, the figure is the same from run to run.
//! `redis-instructions` does the same for echo and bump (a counter handle's
//! read-modify-write) with the stores in memory and in Redis, its own
//! `redis-server` running beside (not under callgrind), and counts with
//! `INFO commandstats` what the counted requests sent Redis.
//! `gateway-instructions` counts `tools/call echo` in toolwire-echo directly
//! and in `toolwire gateway` in front of it (`TOOLWIRE_BIN`, as `gateway`).
//! `stdio-instructions` counts `tools/call echo` over stdio (`--window` in
//! flight) and splits it into parsing, serving and the transport's share.
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
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::sync::Semaphore;
use toolwire_bench::listen;
use toolwire_bench::loadgen::{self, H2Sender, LoadConfig, new_histogram};
use toolwire_bench::process::{Memory, RedisProcess, RedisStats, ServerProcess, binary, cpu_time};
use toolwire_bench::report::{self, Row, Sample, mib};
use toolwire_bench::servers::REAL_TOOLS;
use toolwire_bench::workload::{LIST_TOOLS, PATH, Workload};

/// Settings shared by the scenarios.
#[derive(Debug, Clone)]
struct Options {
    rounds: usize,
    duration: Duration,
    warmup: Duration,
    connections: usize,
    window: usize,
    streams: usize,
    h2_connections: usize,
    requests: u64,
    session_count: usize,
    idle_timeout: Duration,
    waves: usize,
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
            h2_connections: 100,
            requests: 1_000,
            session_count: 10_000,
            idle_timeout: Duration::from_secs(20),
            waves: 2,
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

const USAGE: &str = "usage: bench [compare|sse|list|schema|legacy|redis|gateway|stdio|listen|sessions|all|instructions|toolwire-instructions|stdio-instructions|redis-instructions|gateway-instructions] \
[--rounds N] [--duration SECS] [--warmup SECS] [--connections N] [--window N] [--streams N] \
[--h2-connections N] [--requests N] [--session-count N] [--idle-timeout SECS] [--waves N]";

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
            "--h2-connections" => {
                options.h2_connections = value("--h2-connections")?.max(1.0) as usize
            }
            "--requests" => options.requests = value("--requests")?.max(1.0) as u64,
            "--session-count" => {
                options.session_count = value("--session-count")?.max(1.0) as usize
            }
            "--waves" => options.waves = value("--waves")?.clamp(2.0, 5.0) as usize,
            "--idle-timeout" => {
                options.idle_timeout =
                    Duration::from_secs(value("--idle-timeout")?.clamp(1.0, 3600.0) as u64)
            }
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
            "legacy" => legacy(&options).await,
            "redis" => redis(&options).await,
            "gateway" => gateway(&options).await,
            "stdio" => stdio(&options).await,
            "listen" => listen(&options).await,
            "sessions" => sessions(&options).await,
            "instructions" => instructions(&options).await,
            "toolwire-instructions" => toolwire_instructions(&options).await,
            "toolwire-growth" => toolwire_growth(&options).await,
            "stdio-instructions" => stdio_instructions(&options).await,
            "redis-instructions" => redis_instructions(&options).await,
            "gateway-instructions" => gateway_instructions(&options).await,
            "all" => {
                compare(&options).await?;
                sse(&options).await?;
                list(&options).await?;
                schema(&options).await?;
                legacy(&options).await?;
                stdio(&options).await?;
                listen(&options).await?;
                sessions(&options).await
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

/// The CPUs this process may run on.
fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

async fn legacy(options: &Options) -> Result<(), String> {
    let variants = vec![
        Variant {
            label: "toolwire, 2025-11-25 session",
            binary: "toolwire-echo",
            args: vec![],
            workload: Workload::LegacyEcho,
        },
        Variant {
            label: "rmcp --sessions, 2025-11-25 session",
            binary: "rmcp-echo",
            args: vec!["--sessions".into()],
            workload: Workload::LegacyEcho,
        },
        Variant {
            label: "toolwire, 2026-07-28 (reference)",
            binary: "toolwire-echo",
            args: vec![],
            workload: Workload::Echo,
        },
        Variant {
            label: "toolwire --connection-threads (one per CPU), 2025-11-25 session",
            binary: "toolwire-echo",
            args: vec!["--connection-threads".into(), cpus().to_string()],
            workload: Workload::LegacyEcho,
        },
    ];
    let rows = run_interleaved(&variants, options).await?;
    println!(
        "## tools/call echo from a 2025-11-25 client: one session per connection (initialize + notifications/initialized first), Mcp-Session-Id on every call\n"
    );
    println!("{}", report::table(&rows));
    println!("- {}", report::ratios(&rows[0], &rows[1]));
    println!("- {}", report::ratios(&rows[0], &rows[2]));
    println!("- {}", report::ratios(&rows[3], &rows[1]));
    println!("{}", report::error_samples(&rows));
    Ok(())
}

/// tools/call echo (a rate-limit check) and bump (the check and a handle
/// read-modify-write), with the buckets and counters in this process and
/// in Redis (a `redis-server` of its own on loopback), plus what each run
/// sent Redis and the CPU redis-server used meanwhile.
async fn redis(options: &Options) -> Result<(), String> {
    let redis = RedisProcess::start()?;
    let url = || ["--redis".to_owned(), redis.url.clone()];
    let counters = || "--counter-tools".to_owned();
    let variants = vec![
        Variant {
            label: "echo, buckets in memory",
            binary: "toolwire-echo",
            args: vec![],
            workload: Workload::Echo,
        },
        Variant {
            label: "echo --redis, buckets in Redis",
            binary: "toolwire-echo",
            args: url().to_vec(),
            workload: Workload::Echo,
        },
        Variant {
            label: "bump, counters in memory",
            binary: "toolwire-echo",
            args: vec![counters()],
            workload: Workload::Bump,
        },
        Variant {
            label: "bump --redis, counters in Redis",
            binary: "toolwire-echo",
            args: [vec![counters()], url().to_vec()].concat(),
            workload: Workload::Bump,
        },
    ];
    let (rows, used) = run_interleaved_with(&variants, options, Some(&redis)).await?;
    println!(
        "## tools/call echo (rate-limit check) and bump (check + handle modify), in memory and in Redis\n"
    );
    println!("{}", report::table(&rows));
    println!("- {}", report::ratios(&rows[1], &rows[0]));
    println!("- {}", report::ratios(&rows[3], &rows[2]));
    println!("- {}", report::ratios(&rows[2], &rows[0]));
    println!("- {}\n", report::ratios(&rows[3], &rows[1]));
    println!(
        "Redis per reply, over each server's whole life (warm-up, counters opened and script loads included):\n"
    );
    println!(
        "| server | replies | Redis round trips per reply | of them script calls | commands run by the scripts per reply | redis-server CPU µs per reply | commandstats µs per reply |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for (row, used) in rows.iter().zip(&used) {
        let per = |n: f64| n / used.replies.max(1) as f64;
        println!(
            "| {} | {} | {:.3} | {:.3} | {:.2} | {:.1} | {:.2} |",
            row.label,
            used.replies,
            per(used.stats.round_trips as f64),
            per(used.stats.scripts as f64),
            per(used.stats.inner as f64),
            per(used.cpu.as_secs_f64() * 1e6),
            per(used.stats.usec as f64),
        );
    }
    println!();
    println!("{}", report::error_samples(&rows));
    Ok(())
}

/// What one variant's runs cost a redis-server, summed over the rounds.
#[derive(Debug, Default, Clone, Copy)]
struct RedisUse {
    /// Replies the load generator received (warm-up included).
    replies: u64,
    /// What clients sent Redis from each server's start to its stop.
    stats: RedisStats,
    /// redis-server's CPU time over the same span.
    cpu: Duration,
}

/// Runs every variant once per round, in order, each against a fresh server.
async fn run_interleaved(variants: &[Variant], options: &Options) -> Result<Vec<Row>, String> {
    Ok(run_interleaved_with(variants, options, None).await?.0)
}

/// [`run_interleaved`], also reading what each run cost `redis` (its
/// `INFO commandstats` and CPU time before each server starts and after it
/// stops).
async fn run_interleaved_with(
    variants: &[Variant],
    options: &Options,
    redis: Option<&RedisProcess>,
) -> Result<(Vec<Row>, Vec<RedisUse>), String> {
    let mut used = vec![RedisUse::default(); variants.len()];
    let mut rows: Vec<Row> = variants
        .iter()
        .map(|v| Row {
            label: v.label.to_owned(),
            samples: Vec::new(),
        })
        .collect();
    for round in 1..=options.rounds {
        for (index, (variant, row)) in variants.iter().zip(rows.iter_mut()).enumerate() {
            let path = binary(variant.binary)?;
            let before = match redis {
                Some(redis) => Some((redis.stats()?, redis.cpu_time())),
                None => None,
            };
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
                sessions: Vec::new(),
                counters: Vec::new(),
            };
            let result = loadgen::run(&config).await;
            let after = server.memory();
            let server_cpu = server.cpu_time();
            server.stop();
            if let (Some(redis), Some((stats, cpu))) = (redis, before) {
                let tally = &mut used[index];
                tally.replies += result.replies;
                tally.stats = tally.stats.plus(redis.stats()?.since(stats));
                tally.cpu += redis.cpu_time().saturating_sub(cpu);
            }
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
    Ok((rows, used))
}

// ---------------------------------------------------------------------------
// gateway

/// What `bench gateway` sends its load to.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Front {
    /// toolwire-echo itself.
    Direct,
    /// `toolwire gateway --config FILE` in front of it; `Some(limit)` sets
    /// `[gateway] call_limit`, `None` leaves the default (100/1); the
    /// second field is `RUST_LOG` (`None`: the default, info, which logs
    /// an audit event per call).
    Gateway(Option<&'static str>, Option<&'static str>),
    /// FastMCP's proxy (`bench/gateway/fastmcp_proxy.py`) in front of it.
    FastMcp,
    /// `hyper-proxy`: bare hyper forwarding bytes, the floor of any gateway.
    HyperProxy,
}

/// The gateway's call limit in the measured rows: `u32::MAX` calls a second,
/// as toolwire-echo raises its own, so the bucket is still checked.
const GATEWAY_CALL_LIMIT: &str = "4294967295/1";

/// The `toolwire` binary: `TOOLWIRE_BIN`, else the root workspace's release build.
fn toolwire_bin() -> Result<std::path::PathBuf, String> {
    let path = std::env::var_os("TOOLWIRE_BIN")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/release/toolwire")
        });
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "{} not found: build it (cargo build --release -p toolwire-cli) or set TOOLWIRE_BIN",
            path.display()
        ))
    }
}

/// The Python with FastMCP installed: `FASTMCP_PYTHON`, else `bench/.venv`.
fn fastmcp_python() -> Result<std::path::PathBuf, String> {
    let path = std::env::var_os("FASTMCP_PYTHON")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python"));
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "{} not found: bench/run.sh gateway installs FastMCP there, or set FASTMCP_PYTHON",
            path.display()
        ))
    }
}

/// A file in `dir` for the standard error of the front on `port` (the
/// gateway's log lines: an audit event per call at the default level).
fn log_file(dir: &Path, port: u16) -> Result<std::fs::File, String> {
    let path = dir.join(format!("front-{port}.log"));
    std::fs::File::create(&path).map_err(|e| format!("could not create {}: {e}", path.display()))
}

/// Writes the config of a gateway on `port` in front of `upstream` (names
/// unchanged; `limit` sets `call_limit`) into `dir`; returns its path.
fn write_gateway_config(
    dir: &Path,
    port: u16,
    upstream: &ServerProcess,
    limit: Option<&str>,
) -> Result<String, String> {
    let url = format!("http://{}{PATH}", upstream.addr);
    let limit = limit.map_or_else(String::new, |l| format!("call_limit = \"{l}\"\n"));
    let config = dir.join(format!("gateway-{port}.toml"));
    std::fs::write(
        &config,
        format!(
            "[gateway]\nhttp = \"127.0.0.1:{port}\"\n{limit}\n\
             [[upstream]]\nname = \"echo\"\nurl = \"{url}\"\nprefix = \"\"\n"
        ),
    )
    .map_err(|e| format!("could not write {}: {e}", config.display()))?;
    Ok(config.display().to_string())
}

/// Starts the front for `front` before `upstream` (nothing for [`Front::Direct`]).
fn start_front(
    front: Front,
    upstream: &ServerProcess,
    dir: &Path,
) -> Result<Option<ServerProcess>, String> {
    let port = toolwire_bench::process::free_port().map_err(|e| format!("no free port: {e}"))?;
    let url = format!("http://{}{PATH}", upstream.addr);
    match front {
        Front::Direct => Ok(None),
        Front::Gateway(limit, log) => {
            let config = write_gateway_config(dir, port, upstream, limit)?;
            let args = vec!["gateway".to_owned(), "--config".to_owned(), config];
            let env: Vec<(&str, &str)> = log.map(|l| ("RUST_LOG", l)).into_iter().collect();
            ServerProcess::start_with(
                &toolwire_bin()?,
                &args,
                port,
                &env,
                Some(log_file(dir, port)?),
            )
            .map(Some)
        }
        Front::HyperProxy => {
            let args = vec![port.to_string(), upstream.addr.port().to_string()];
            ServerProcess::start_with(&binary("hyper-proxy")?, &args, port, &[], None).map(Some)
        }
        Front::FastMcp => {
            let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("gateway/fastmcp_proxy.py");
            let args = vec![script.display().to_string(), port.to_string(), url];
            ServerProcess::start_with(
                &fastmcp_python()?,
                &args,
                port,
                &[],
                Some(log_file(dir, port)?),
            )
            .map(Some)
        }
    }
}

/// tools/call echo from 2025-11-25 clients to toolwire-echo directly,
/// through `toolwire gateway`, and through FastMCP's proxy; each round
/// starts every target fresh (a new upstream too), runs one connection
/// (latency), then `--connections` (throughput), and stops them.
async fn gateway(options: &Options) -> Result<(), String> {
    let legacy = Workload::LegacyEcho;
    let targets: Vec<(&str, Front, Workload)> = vec![
        ("direct (toolwire-echo)", Front::Direct, legacy),
        (
            "toolwire gateway",
            Front::Gateway(Some(GATEWAY_CALL_LIMIT), None),
            legacy,
        ),
        ("FastMCP proxy", Front::FastMcp, legacy),
        (
            "toolwire gateway, RUST_LOG=warn",
            Front::Gateway(Some(GATEWAY_CALL_LIMIT), Some("warn")),
            legacy,
        ),
        (
            "toolwire gateway, default call_limit",
            Front::Gateway(None, None),
            legacy,
        ),
        ("direct, 2026-07-28 client", Front::Direct, Workload::Echo),
        (
            "toolwire gateway, 2026-07-28 client",
            Front::Gateway(Some(GATEWAY_CALL_LIMIT), None),
            Workload::Echo,
        ),
        (
            "bare hyper proxy (the extra hop alone)",
            Front::HyperProxy,
            legacy,
        ),
    ];
    // Fail early, before any load, if a binary is missing.
    toolwire_bin()?;
    fastmcp_python()?;
    let dir = std::env::temp_dir().join(format!("toolwire-bench-gateway-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let new_rows = || -> Vec<Row> {
        targets
            .iter()
            .map(|(label, _, _)| Row {
                label: (*label).to_owned(),
                samples: Vec::new(),
            })
            .collect()
    };
    let (mut latency_rows, mut throughput_rows) = (new_rows(), new_rows());
    let mut upstream_cpu = vec![(Duration::ZERO, 0u64); targets.len()];
    let echo = binary("toolwire-echo")?;
    let outcome: Result<(), String> = async {
        for round in 1..=options.rounds {
            for (index, (label, front, workload)) in targets.iter().enumerate() {
                let upstream = ServerProcess::start(&echo, &[])?;
                let proxy = start_front(*front, &upstream, &dir)?;
                let target = proxy.as_ref().unwrap_or(&upstream);
                // FastMCP and the gateway connect upstream lazily or at start;
                // let them settle before the first request.
                tokio::time::sleep(Duration::from_millis(500)).await;
                for (connections, rows) in [
                    (1, &mut latency_rows),
                    (options.connections, &mut throughput_rows),
                ] {
                    let idle = target.memory();
                    let cpu_before = target.cpu_time();
                    let upstream_before = upstream.cpu_time();
                    let config = LoadConfig {
                        addr: target.addr,
                        connections,
                        warmup: options.warmup,
                        duration: options.duration,
                        request_timeout: Duration::from_secs(10),
                        workload: *workload,
                        max_requests: None,
                        sessions: Vec::new(),
                        counters: Vec::new(),
                    };
                    let result = loadgen::run(&config).await;
                    let after = target.memory();
                    let server_cpu = target.cpu_time().saturating_sub(cpu_before);
                    if proxy.is_some() && connections > 1 {
                        let used = &mut upstream_cpu[index];
                        used.0 += upstream.cpu_time().saturating_sub(upstream_before);
                        used.1 += result.replies;
                    }
                    eprintln!(
                        "round {round}/{}: {label:<38} {connections:>3} conn {:>9.0} req/s  p50 {:>8.3} ms  p99 {:>8.3} ms  errors {}",
                        options.rounds,
                        result.rps(),
                        result.latency.value_at_quantile(0.50) as f64 / 1000.0,
                        result.latency.value_at_quantile(0.99) as f64 / 1000.0,
                        result.errors,
                    );
                    rows[index].samples.push(Sample {
                        result,
                        idle,
                        after,
                        server_cpu,
                    });
                    tokio::time::sleep(Duration::from_millis(300)).await;
                }
                if let Some(proxy) = proxy {
                    proxy.stop();
                }
                upstream.stop();
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
        }
        Ok(())
    }
    .await;
    let _ = std::fs::remove_dir_all(&dir);
    outcome?;
    println!(
        "## tools/call echo from 2025-11-25 clients: toolwire-echo directly, through `toolwire gateway`, through FastMCP's proxy\n"
    );
    println!(
        "Server CPU and RSS are the front's: toolwire-echo for the direct row, the proxy's own process otherwise (its upstream not included; CPU counted over the load phase, warm-up included).\n"
    );
    println!("### One connection (latency)\n");
    println!("{}", report::table(&latency_rows));
    println!("### {} connections (throughput)\n", options.connections);
    println!("{}", report::table(&throughput_rows));
    let (direct_l, gateway_l, fastmcp_l) = (
        latency_rows[0].summary(),
        latency_rows[1].summary(),
        latency_rows[2].summary(),
    );
    let (direct_t, gateway_t, fastmcp_t) = (
        throughput_rows[0].summary(),
        throughput_rows[1].summary(),
        throughput_rows[2].summary(),
    );
    let added = |s: &report::Summary| (s.p50_ms - direct_l.p50_ms) * 1000.0;
    println!(
        "- added p50 at one connection: gateway {:+.0} µs ({:.3} vs {:.3} ms; target ≤ 100 µs: {}), FastMCP {:+.0} µs",
        added(&gateway_l),
        gateway_l.p50_ms,
        direct_l.p50_ms,
        if added(&gateway_l) <= 100.0 {
            "met"
        } else {
            "not met"
        },
        added(&fastmcp_l),
    );
    let gateway_ratio = gateway_t.rps / direct_t.rps.max(1e-9);
    let over_fastmcp = if fastmcp_t.rps > 0.0 {
        gateway_t.rps / fastmcp_t.rps
    } else {
        f64::INFINITY
    };
    println!(
        "- throughput at {} connections: gateway ÷ direct {:.2}× (target ≥ 0.5×: {}); gateway ÷ FastMCP {:.1}× (target ≥ 10×: {}); FastMCP ÷ direct {:.3}×",
        options.connections,
        gateway_ratio,
        if gateway_ratio >= 0.5 {
            "met"
        } else {
            "not met"
        },
        over_fastmcp,
        if over_fastmcp >= 10.0 {
            "met"
        } else {
            "not met"
        },
        fastmcp_t.rps / direct_t.rps.max(1e-9),
    );
    println!(
        "- at one connection: gateway ÷ direct {:.2}×, gateway ÷ FastMCP {:.1}× in req/s",
        gateway_l.rps / direct_l.rps.max(1e-9),
        gateway_l.rps / fastmcp_l.rps.max(1e-9),
    );
    let floor = latency_rows[targets.len() - 1].summary();
    println!(
        "- the extra hop alone (bare hyper proxy) adds {:+.0} µs p50 at one connection; the gateway adds {:+.0} µs above it",
        added(&floor),
        (gateway_l.p50_ms - floor.p50_ms) * 1000.0,
    );
    for (index, (label, front, workload)) in targets.iter().enumerate() {
        // Each row against the direct row of its own workload.
        let Some(reference) = targets
            .iter()
            .position(|(_, f, w)| *f == Front::Direct && w == workload)
            .filter(|r| *r != index && *front != Front::Direct)
        else {
            continue;
        };
        let (l, t) = (
            latency_rows[index].summary(),
            throughput_rows[index].summary(),
        );
        let (dl, dt) = (
            latency_rows[reference].summary(),
            throughput_rows[reference].summary(),
        );
        println!(
            "- {label} vs {}: p50 at one connection {:+.0} µs, req/s at one connection {:.3}×, at {} connections {:.3}×",
            targets[reference].0,
            (l.p50_ms - dl.p50_ms) * 1000.0,
            l.rps / dl.rps.max(1e-9),
            options.connections,
            t.rps / dt.rps.max(1e-9),
        );
    }
    for (index, (label, _, _)) in targets.iter().enumerate().skip(1) {
        let (cpu, replies) = upstream_cpu[index];
        if replies > 0 {
            println!(
                "- {label}: its upstream's CPU {:.0} µs per reply at {} connections",
                cpu.as_secs_f64() * 1e6 / replies as f64,
                options.connections
            );
        }
    }
    println!();
    println!("{}", report::error_samples(&latency_rows));
    println!("{}", report::error_samples(&throughput_rows));
    Ok(())
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
        "| round | calls/s | p50 ms | p99 ms | p99.9 ms | errors | server CPU µs/call | \
         load generator CPU µs/call | idle RSS MiB | peak RSS MiB |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for round in 1..=options.rounds {
        let run = stdio_run(&path, options).await?;
        let ms = |q: f64| run.latency.value_at_quantile(q) as f64 / 1000.0;
        let per_call = |cpu: Duration| cpu.as_secs_f64() * 1e6 / run.replies.max(1) as f64;
        println!(
            "| {round} | {:.0} | {:.3} | {:.3} | {:.3} | {} | {:.1} | {:.1} | {} | {} |",
            run.ok as f64 / options.duration.as_secs_f64(),
            ms(0.5),
            ms(0.99),
            ms(0.999),
            run.errors,
            per_call(run.server_cpu),
            per_call(run.load_cpu),
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
    /// Correct replies, warm-up included (what the CPU times are divided by).
    replies: u64,
    /// CPU time the server used from the first request to the last reply.
    server_cpu: Duration,
    /// CPU time this process (the load generator) used meanwhile.
    load_cpu: Duration,
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

    let server_cpu_before = cpu_time(pid);
    let load_cpu_before = cpu_time(std::process::id());
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
        replies: 0,
        server_cpu: Duration::ZERO,
        load_cpu: Duration::ZERO,
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
        let checked = Workload::Echo.check_message(id, line.as_bytes());
        run.replies += u64::from(checked.is_ok());
        match checked {
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
    run.server_cpu = cpu_time(pid).saturating_sub(server_cpu_before);
    run.load_cpu = cpu_time(std::process::id()).saturating_sub(load_cpu_before);
    run.after = Memory::of(pid);
    let unanswered = starts.lock().expect("starts").len() as u64;
    run.errors += unanswered;
    writer.abort();
    let _ = writer.await;
    let _ = child.kill().await;
    Ok(run)
}

/// Instructions per `tools/call echo` over stdio under callgrind, `--window`
/// calls in flight: the whole call, then what runs under the two functions
/// the transport hands a call to, each counted alone
/// (`--toggle-collect`); what is left is the transport's own share.
async fn stdio_instructions(options: &Options) -> Result<(), String> {
    let n = options.requests;
    let path = binary("toolwire-echo")?;
    println!(
        "## toolwire over stdio: instructions per call (user space, callgrind; {n} calls of \
         tools/call echo, {} in flight, after 100 of warm-up)\n",
        options.window
    );
    let whole = stdio_callgrind(&path, None, n, options.window).await?;
    let parse = stdio_callgrind(&path, Some(STDIO_PARSE), n, options.window).await?;
    let serve = stdio_callgrind(&path, Some(STDIO_SERVE), n, options.window).await?;
    let rest = whole.saturating_sub(parse + serve);
    println!("| part | instructions per call |");
    println!("|---|---:|");
    println!("| whole call | {} |", thousands(whole / n));
    println!(
        "| parsing the line (`{STDIO_PARSE}`) | {} |",
        thousands(parse / n)
    );
    println!(
        "| serving it: dispatcher, handler, reply encoding (`{STDIO_SERVE}`) | {} |",
        thousands(serve / n)
    );
    println!(
        "| transport: reading, framing, queue, writing, the runtime (the rest) | {} |",
        thousands(rest / n)
    );
    println!();
    Ok(())
}

/// The function that parses each line read over stdio.
const STDIO_PARSE: &str = "toolwire_protocol::jsonrpc::Message::from_slice";
/// The function under which the stdio transport serves a request (its
/// first poll; echo calls end in it).
const STDIO_SERVE: &str = "toolwire_server::transport::stdio::serve_now";

/// Runs `toolwire-echo --stdio` under callgrind, sends 100 calls, zeroes
/// the counters, sends `n` more with `window` in flight and returns the
/// instructions they took: all of them, or with `only`, those under that
/// function.
async fn stdio_callgrind(
    binary: &Path,
    only: Option<&str>,
    n: u64,
    window: usize,
) -> Result<u64, String> {
    let dir = std::env::temp_dir().join(format!("toolwire-bench-stdio-cg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut valgrind = tokio::process::Command::new("valgrind");
    valgrind.arg("--tool=callgrind").arg(format!(
        "--callgrind-out-file={}",
        dir.join("callgrind.out").display()
    ));
    if let Some(function) = only {
        valgrind
            .arg("--collect-atstart=no")
            .arg(format!("--toggle-collect={function}"));
    }
    let mut child = valgrind
        .arg(binary)
        .arg("--stdio")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("could not run valgrind (is it installed?): {e}"))?;
    let pid = child.id().ok_or("valgrind exited at once")?.to_string();
    let mut stdin = BufWriter::new(child.stdin.take().ok_or("no stdin")?);
    let mut stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
    let outcome = async {
        pipelined_calls(&mut stdin, &mut stdout, 1, 100, window).await?;
        control("-z", &pid)?;
        pipelined_calls(&mut stdin, &mut stdout, 101, n, window).await?;
        control("-d", &pid)?;
        last_dump_total(&dir)
    }
    .await;
    let _ = child.kill().await;
    let _ = std::fs::remove_dir_all(&dir);
    outcome
}

/// Sends echo calls `first..first + n` with at most `window` in flight and
/// checks every reply; at most 10 minutes in all (callgrind is slow).
async fn pipelined_calls(
    stdin: &mut BufWriter<tokio::process::ChildStdin>,
    stdout: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    first: u64,
    n: u64,
    window: usize,
) -> Result<(), String> {
    let window = Semaphore::new(window);
    let sending = async {
        for id in first..first + n {
            let permit = match window.try_acquire() {
                Ok(permit) => permit,
                Err(_) => {
                    stdin.flush().await.map_err(|e| e.to_string())?;
                    window.acquire().await.map_err(|e| e.to_string())?
                }
            };
            permit.forget();
            let mut line = Workload::Echo.body(id);
            line.push('\n');
            stdin
                .write_all(line.as_bytes())
                .await
                .map_err(|e| e.to_string())?;
        }
        stdin.flush().await.map_err(|e| e.to_string())
    };
    let receiving = async {
        for _ in 0..n {
            let line = stdout
                .next_line()
                .await
                .map_err(|e| e.to_string())?
                .ok_or("the server closed stdout")?;
            let id = serde_json::from_str::<IdOnly>(&line)
                .ok()
                .and_then(|m| m.id)
                .ok_or_else(|| format!("unexpected line: {line}"))?;
            Workload::Echo.check_message(id, line.as_bytes())?;
            window.add_permits(1);
        }
        Ok::<(), String>(())
    };
    let both = async { tokio::try_join!(sending, receiving) };
    tokio::time::timeout(Duration::from_secs(600), both)
        .await
        .map_err(|_| "no end within 10 minutes under callgrind".to_owned())??;
    Ok(())
}

// ---------------------------------------------------------------------------
// 10,000 open subscriptions/listen streams, over HTTP/1.1 and over HTTP/2

/// How the `listen` scenario's client reaches the server.
#[derive(Debug, Clone, Copy)]
enum ListenVia {
    /// One HTTP/1.1 connection per stream.
    Http1,
    /// Streams spread evenly over this many h2c connections.
    Http2 { connections: usize },
}

impl ListenVia {
    fn label(self, streams: usize) -> String {
        match self {
            ListenVia::Http1 => "HTTP/1.1, one connection per stream".to_owned(),
            ListenVia::Http2 { connections } => format!(
                "HTTP/2 (h2c), {connections} connections, {} streams each",
                streams.div_ceil(connections)
            ),
        }
    }
}

/// What one run of the `listen` scenario saw.
struct ListenRun {
    label: String,
    opened: usize,
    failures: usize,
    open_time: Duration,
    idle: Memory,
    before: Memory,
    open: Memory,
    closed: Memory,
    warm_errors: u64,
    sample_errors: Vec<String>,
}

async fn listen(options: &Options) -> Result<(), String> {
    let limit = toolwire_bench::raise_nofile_limit();
    let streams = options.streams;
    if (streams as u64) + 200 > limit {
        return Err(format!(
            "{streams} streams need {} open files per process, the limit is {limit} (raise `ulimit -Hn`)",
            streams + 200
        ));
    }
    let runs = [
        listen_run(options, ListenVia::Http1).await?,
        listen_run(
            options,
            ListenVia::Http2 {
                connections: options.h2_connections.min(streams),
            },
        )
        .await?,
    ];
    println!("## toolwire: {streams} open subscriptions/listen streams\n");
    println!(
        "| client | streams open | failed | time to open | RSS idle MiB | RSS before MiB | RSS with streams open MiB | growth MiB | bytes per stream | anon bytes per stream | RSS after closing MiB | peak RSS MiB |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for run in &runs {
        let grown = run.open.rss.saturating_sub(run.before.rss);
        let anon_grown = run.open.anon.saturating_sub(run.before.anon);
        let per_stream = |bytes: u64| bytes as f64 / run.opened.max(1) as f64;
        println!(
            "| {} | {} | {} | {:.1} s | {} | {} | {} | {} | {:.0} | {:.0} | {} | {} |",
            run.label,
            run.opened,
            run.failures,
            run.open_time.as_secs_f64(),
            mib(run.idle.rss),
            mib(run.before.rss),
            mib(run.open.rss),
            mib(grown),
            per_stream(grown),
            per_stream(anon_grown),
            mib(run.closed.rss),
            mib(run.closed.peak),
        );
    }
    println!();
    for run in &runs {
        if run.warm_errors > 0 {
            println!("  {}: warm-up errors: {}", run.label, run.warm_errors);
        }
        for error in &run.sample_errors {
            println!("  {}: error: {error}", run.label);
        }
    }
    Ok(())
}

/// Starts a fresh server, warms it up, opens `--streams` listen streams
/// `via` HTTP/1.1 or HTTP/2 and reads its memory before, with them open,
/// and after closing them.
async fn listen_run(options: &Options, via: ListenVia) -> Result<ListenRun, String> {
    let streams = options.streams;
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
        sessions: Vec::new(),
        counters: Vec::new(),
    })
    .await;
    let mut warm_errors = warm.errors;
    // And a few streams opened and closed the same way, so that the code
    // they run is already paged in.
    let warm_senders = h2_senders(server.addr, via).await?;
    for id in 0..8 {
        if listen::open(server.addr, &warm_senders, id).await.is_err() {
            warm_errors += 1;
        }
    }
    drop(warm_senders);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = server.memory();

    let senders = h2_senders(server.addr, via).await?;
    let opened_at = Instant::now();
    let mut held = Vec::with_capacity(streams);
    let mut failures = 0usize;
    let mut sample_errors: Vec<String> = Vec::new();
    const BATCH: usize = 250;
    let mut next_id = 1_000u64;
    while held.len() + failures < streams {
        let count = BATCH.min(streams - held.len() - failures);
        let mut batch = Vec::with_capacity(count);
        for _ in 0..count {
            let opening = listen::open(server.addr, &senders, next_id);
            next_id += 1;
            batch.push(tokio::spawn(async move {
                tokio::time::timeout(Duration::from_secs(20), opening)
                    .await
                    .unwrap_or_else(|_| Err("listen stream did not open within 20 s".into()))
            }));
        }
        for task in batch {
            match task.await.map_err(|e| e.to_string()).and_then(|r| r) {
                Ok(stream) => held.push(stream),
                Err(error) => {
                    failures += 1;
                    if sample_errors.len() < 5 {
                        sample_errors.push(error);
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
    drop(senders);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let closed = server.memory();
    server.stop();
    Ok(ListenRun {
        label: via.label(streams),
        opened,
        failures,
        open_time,
        idle,
        before,
        open,
        closed,
        warm_errors,
        sample_errors,
    })
}

/// The HTTP/2 connections `via` asks for (none for HTTP/1.1).
async fn h2_senders(addr: std::net::SocketAddr, via: ListenVia) -> Result<Vec<H2Sender>, String> {
    match via {
        ListenVia::Http1 => Ok(Vec::new()),
        ListenVia::Http2 { connections } => listen::h2_connections(addr, connections).await,
    }
}

// ---------------------------------------------------------------------------
// 10,000 legacy sessions: memory per session, expiry, a second wave

/// Connections the `sessions` scenario opens its sessions over.
const SESSION_CONNECTIONS: usize = 16;
/// Sessions whose ids are tried after the expiry (spread over the wave).
const EXPIRY_SAMPLE: usize = 200;

async fn sessions(options: &Options) -> Result<(), String> {
    let n = options.session_count;
    let idle = options.idle_timeout.as_secs().to_string();
    let servers: Vec<(&str, &str, Vec<String>)> = vec![
        (
            "toolwire",
            "toolwire-echo",
            vec![
                "--session-idle-timeout".into(),
                idle.clone(),
                "--max-sessions".into(),
                (2 * n + 100).to_string(),
            ],
        ),
        (
            "rmcp --sessions",
            "rmcp-echo",
            vec![
                "--sessions".into(),
                "--session-idle-timeout".into(),
                idle.clone(),
            ],
        ),
    ];
    let mut results = Vec::new();
    for (label, name, args) in servers {
        let path = binary(name)?;
        eprintln!("sessions: {label}: {n} sessions, idle timeout {idle} s ...");
        results.push((
            label,
            args.join(" "),
            sessions_run(&path, &args, options).await?,
        ));
    }
    println!(
        "## {n} legacy (2025-11-25) sessions: initialize + notifications/initialized over {SESSION_CONNECTIONS} keep-alive connections, idle timeout {idle} s, then {n} more\n"
    );
    println!(
        "| server | wave 1 opened (failed) | time | anon RSS before MiB | anon RSS with wave 1 MiB | bytes per session | expired ids answering 404 | anon RSS after expiry MiB | wave 2 opened (failed) | anon RSS with wave 2 MiB | wave 2 growth over wave 1 MiB | bytes per session, wave 2 | peak RSS MiB |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (label, _, run) in &results {
        let per = |grown: i64, count: usize| {
            if count > 0 {
                format!("{:.0}", grown as f64 / count as f64)
            } else {
                "n/a".to_owned()
            }
        };
        let first = run.wave1.anon as i64 - run.before.anon as i64;
        let second = run.wave2.anon as i64 - run.wave1.anon as i64;
        println!(
            "| {label} | {} ({}) | {:.2} s | {} | {} | {} | {}/{} | {} | {} ({}) | {} | {:+.1} | {} | {} |",
            run.first.ids.len(),
            run.first.failures,
            run.first.time.as_secs_f64(),
            mib(run.before.anon),
            mib(run.wave1.anon),
            per(first, run.first.ids.len()),
            run.expired_404,
            run.expired_tried,
            mib(run.expired.anon),
            run.second.ids.len(),
            run.second.failures,
            mib(run.wave2.anon),
            second as f64 / (1024.0 * 1024.0),
            per(second, run.second.ids.len()),
            mib(run.wave2.peak),
        );
    }
    println!();
    for (label, args, run) in &results {
        println!(
            "- {label} (`{args}`): a live wave-1 session answered its call: {}; after the expiry the probe opened before wave 1 answered {}; {} of the tried ids answered something other than 404{}",
            run.live_check,
            run.probe_status,
            run.expired_tried - run.expired_404,
            run.other_statuses,
        );
        let mut previous = run.wave2;
        for (k, (expired, wave, open)) in run.later.iter().enumerate() {
            println!(
                "  - wave {}: anon RSS {} MiB once wave {} expired; {} opened ({} failed) in {:.2} s; anon RSS {} MiB with it, {:+.1} MiB over wave {}",
                k + 3,
                mib(expired.anon),
                k + 2,
                wave.ids.len(),
                wave.failures,
                wave.time.as_secs_f64(),
                mib(open.anon),
                (open.anon as i64 - previous.anon as i64) as f64 / (1024.0 * 1024.0),
                k + 2,
            );
            previous = *open;
        }
        let errors = run.first.errors.iter().chain(&run.second.errors);
        for error in errors.chain(run.later.iter().flat_map(|(_, wave, _)| &wave.errors)) {
            println!("  - error: {error}");
        }
    }
    println!();
    Ok(())
}

struct SessionsRun {
    before: Memory,
    first: Wave,
    wave1: Memory,
    live_check: String,
    probe_status: String,
    expired_404: usize,
    expired_tried: usize,
    other_statuses: String,
    expired: Memory,
    second: Wave,
    wave2: Memory,
    /// Waves 3 and on: memory once the wave before expired, the wave, memory
    /// with it open.
    later: Vec<(Memory, Wave, Memory)>,
}

async fn sessions_run(
    path: &Path,
    args: &[String],
    options: &Options,
) -> Result<SessionsRun, String> {
    let n = options.session_count;
    let server = ServerProcess::start(path, args)?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let addr = server.addr;
    // A short legacy load first, so "before" is a server that has served.
    let warm = loadgen::run(&LoadConfig {
        addr,
        connections: 8,
        warmup: Duration::ZERO,
        duration: Duration::from_secs(1),
        request_timeout: Duration::from_secs(10),
        workload: Workload::LegacyEcho,
        max_requests: None,
        sessions: Vec::new(),
        counters: Vec::new(),
    })
    .await;
    if warm.errors > 0 || warm.ok == 0 {
        return Err(format!(
            "{}: the legacy warm-up failed: {:?}",
            server.name, warm.sample_errors
        ));
    }
    let probe = open_sessions(addr, 1, 1).await;
    let Some(probe) = probe.ids.first().cloned() else {
        return Err(format!(
            "{}: could not open a session: {:?}",
            server.name, probe.errors
        ));
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = server.memory();

    let first = open_sessions(addr, n, SESSION_CONNECTIONS).await;
    if first.time > options.idle_timeout / 2 {
        eprintln!(
            "warning: opening the wave took {:.1} s, more than half the idle timeout: \
             its first sessions may expire before the memory is read",
            first.time.as_secs_f64()
        );
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let wave1 = server.memory();

    // One call in the newest session: it must be alive (and it is now the
    // session used last).
    let newest = first.ids.last().cloned().unwrap_or_else(|| probe.clone());
    let live_check = match legacy_call(addr, &newest, 1).await {
        Ok((200, content_type, body)) => {
            match Workload::LegacyEcho.check(1, 200, content_type.as_deref(), &body) {
                Ok(()) => "yes".to_owned(),
                Err(error) => format!("no ({error})"),
            }
        }
        Ok((status, _, body)) => format!("no (HTTP {status}: {})", String::from_utf8_lossy(&body)),
        Err(error) => format!("no ({error})"),
    };
    let touched = Instant::now();
    // toolwire sweeps every idle/4 (at most 30 s); rmcp's workers time out
    // on their own. Wait for both, with a margin.
    let wait = options.idle_timeout + (options.idle_timeout / 4).min(Duration::from_secs(30));
    let until = touched + wait + Duration::from_secs(3);
    eprintln!(
        "sessions: waiting {:.0} s for the sessions to expire",
        (until - Instant::now()).as_secs_f64()
    );
    tokio::time::sleep_until(until.into()).await;

    let probe_status = match legacy_call(addr, &probe, 2).await {
        Ok((status, _, _)) => format!("HTTP {status}"),
        Err(error) => error,
    };
    let mut tried: Vec<String> = Vec::new();
    if !first.ids.is_empty() {
        let step = (first.ids.len() / EXPIRY_SAMPLE).max(1);
        tried.extend(first.ids.iter().step_by(step).take(EXPIRY_SAMPLE).cloned());
        tried.push(newest.clone());
    }
    let mut expired_404 = 0;
    let mut others: HashMap<String, usize> = HashMap::new();
    for id in &tried {
        match legacy_call(addr, id, 3).await {
            Ok((404, _, _)) => expired_404 += 1,
            Ok((status, _, _)) => *others.entry(format!("HTTP {status}")).or_default() += 1,
            Err(error) => *others.entry(error).or_default() += 1,
        }
    }
    let other_statuses = if others.is_empty() {
        String::new()
    } else {
        format!(" ({others:?})")
    };
    tokio::time::sleep(Duration::from_secs(1)).await;
    let expired = server.memory();

    let second = open_sessions(addr, n, SESSION_CONNECTIONS).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let wave2 = server.memory();
    // Further waves (`--waves`), each after the one before has expired.
    let mut later = Vec::new();
    for _ in 2..options.waves {
        let until = Instant::now() + wait + Duration::from_secs(3);
        eprintln!(
            "sessions: waiting {:.0} s for the sessions to expire",
            (until - Instant::now()).as_secs_f64()
        );
        tokio::time::sleep_until(until.into()).await;
        let expired = server.memory();
        let wave = open_sessions(addr, n, SESSION_CONNECTIONS).await;
        tokio::time::sleep(Duration::from_secs(1)).await;
        later.push((expired, wave, server.memory()));
    }
    server.stop();
    Ok(SessionsRun {
        before,
        first,
        wave1,
        live_check,
        probe_status,
        expired_404,
        expired_tried: tried.len(),
        other_statuses,
        expired,
        second,
        wave2,
        later,
    })
}

/// Sessions opened by [`open_sessions`].
struct Wave {
    ids: Vec<String>,
    failures: usize,
    errors: Vec<String>,
    time: Duration,
}

/// Opens `n` legacy sessions over `connections` keep-alive connections (each
/// opens its share one after another), then closes the connections.
async fn open_sessions(addr: std::net::SocketAddr, n: usize, connections: usize) -> Wave {
    let started = Instant::now();
    let host = http::HeaderValue::from_str(&addr.to_string()).expect("an address is a valid Host");
    let connections = connections.clamp(1, n.max(1));
    let mut tasks = Vec::with_capacity(connections);
    for index in 0..connections {
        let share = n / connections + usize::from(index < n % connections);
        let host = host.clone();
        tasks.push(tokio::spawn(async move {
            let mut ids = Vec::with_capacity(share);
            let mut failures = 0usize;
            let mut errors = Vec::new();
            let mut sender: Option<loadgen::Sender> = None;
            for k in 0..share {
                // A connection that keeps failing gives up its share.
                if failures > 50 {
                    failures += share - k;
                    break;
                }
                let send = match sender.as_mut() {
                    Some(send) => send,
                    None => match loadgen::connect(addr).await {
                        Ok(send) => sender.insert(send),
                        Err(error) => {
                            failures += 1;
                            errors.push(format!("connect: {error}"));
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        }
                    },
                };
                let id = k as u64 + 1;
                match tokio::time::timeout(
                    Duration::from_secs(10),
                    loadgen::open_session(send, &host, id),
                )
                .await
                {
                    Ok(Ok(session)) => ids.push(session),
                    Ok(Err(error)) => {
                        failures += 1;
                        errors.push(error);
                        sender = None;
                    }
                    Err(_) => {
                        failures += 1;
                        errors.push("opening a session took more than 10 s".into());
                        sender = None;
                    }
                }
            }
            errors.truncate(3);
            (ids, failures, errors)
        }));
    }
    let mut wave = Wave {
        ids: Vec::with_capacity(n),
        failures: 0,
        errors: Vec::new(),
        time: Duration::ZERO,
    };
    for task in tasks {
        match task.await {
            Ok((ids, failures, errors)) => {
                wave.ids.extend(ids);
                wave.failures += failures;
                for error in errors {
                    if wave.errors.len() < 5 {
                        wave.errors.push(error);
                    }
                }
            }
            Err(error) => {
                wave.failures += 1;
                wave.errors.push(error.to_string());
            }
        }
    }
    wave.time = started.elapsed();
    wave
}

/// One `tools/call` of `echo` (request `id`) in session `session`, on a
/// connection of its own: status, content type, body.
async fn legacy_call(
    addr: std::net::SocketAddr,
    session: &str,
    id: u64,
) -> Result<(u16, Option<String>, Bytes), String> {
    let host = http::HeaderValue::from_str(&addr.to_string()).map_err(|e| e.to_string())?;
    let mut sender = loadgen::connect(addr).await?;
    let request = loadgen::legacy_request(&host, Some(session), Workload::LegacyEcho.body(id))?;
    tokio::time::timeout(
        Duration::from_secs(10),
        loadgen::exchange(&mut sender, request),
    )
    .await
    .map_err(|_| "no reply within 10 s".to_owned())?
}

// ---------------------------------------------------------------------------
// Instructions per request (callgrind)

async fn instructions(options: &Options) -> Result<(), String> {
    let n = options.requests;
    let cases: Vec<(&str, &str, Vec<String>, Workload)> = vec![
        ("toolwire", "toolwire-echo", vec![], Workload::Echo),
        ("rmcp", "rmcp-echo", vec![], Workload::Echo),
        ("hyper (ceiling)", "hyper-echo", vec![], Workload::Echo),
        ("toolwire", "toolwire-echo", vec![], Workload::LegacyEcho),
        (
            "rmcp --sessions",
            "rmcp-echo",
            vec!["--sessions".into()],
            Workload::LegacyEcho,
        ),
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
        let count = callgrind_count(&path, &args, workload, n, None)
            .await?
            .instructions;
        println!(
            "| {label} | {} | {} |",
            workload.label(),
            thousands(count / n)
        );
    }
    println!();
    Ok(())
}

/// The toolwire rows of `instructions` alone (no peer is built or run): a
/// quick before/after count of the server's own cost per request.
async fn toolwire_instructions(options: &Options) -> Result<(), String> {
    let n = options.requests;
    let fillers = vec!["--fillers".into(), (LIST_TOOLS - REAL_TOOLS).to_string()];
    let cases: Vec<(Vec<String>, Workload)> = vec![
        (vec![], Workload::Echo),
        (vec![], Workload::LegacyEcho),
        (fillers, Workload::ToolsList),
    ];
    println!(
        "## toolwire instructions per request (user space, callgrind; {n} requests after 100 of warm-up)\n"
    );
    println!("| request | instructions per request |");
    println!("|---|---:|");
    let path = binary("toolwire-echo")?;
    for (args, workload) in cases {
        let count = callgrind_count(&path, &args, workload, n, None).await?;
        println!(
            "| {} | {} |",
            workload.label(),
            thousands(count.instructions / n)
        );
    }
    println!();
    Ok(())
}

/// How the cost of a call and of one list page grows with the number of
/// tools registered: tools/call echo with 10, 1,000 and 10,000 tools, and
/// the first tools/list page (100 tools) with 100, 1,000 and 10,000.
async fn toolwire_growth(options: &Options) -> Result<(), String> {
    let n = options.requests;
    println!(
        "## toolwire: instructions per request by tools registered (callgrind; {n} requests after 100 of warm-up)\n"
    );
    println!("| request | tools registered | instructions per request |");
    println!("|---|---:|---:|");
    let path = binary("toolwire-echo")?;
    let cases = [
        (Workload::Echo, [10, 1_000, 10_000]),
        (Workload::ToolsList, [LIST_TOOLS, 1_000, 10_000]),
    ];
    for (workload, sizes) in cases {
        for tools in sizes {
            let args = vec!["--fillers".to_owned(), (tools - REAL_TOOLS).to_string()];
            let count = callgrind_count(&path, &args, workload, n, None).await?;
            println!(
                "| {} | {} | {} |",
                workload.label(),
                thousands(tools as u64),
                thousands(count.instructions / n)
            );
        }
    }
    println!();
    Ok(())
}

/// Instructions per request under callgrind of echo (a rate-limit check)
/// and bump (the check and a handle modify), stores in memory and in Redis,
/// for toolwire-echo and for its own `redis-server` (also under callgrind,
/// counted apart), and what the counted requests sent Redis.
async fn redis_instructions(options: &Options) -> Result<(), String> {
    let n = options.requests;
    let dir = std::env::temp_dir().join(format!("toolwire-bench-redis-cg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let outcome = async {
        let redis = RedisProcess::start_under_callgrind(&dir)?;
        let url = || vec!["--redis".to_owned(), redis.url.clone()];
        let counters = || vec!["--counter-tools".to_owned()];
        let cases: Vec<(&str, Vec<String>, Workload)> = vec![
            ("echo, buckets in memory", vec![], Workload::Echo),
            ("echo --redis, buckets in Redis", url(), Workload::Echo),
            ("bump, counters in memory", counters(), Workload::Bump),
            (
                "bump --redis, counters in Redis",
                [counters(), url()].concat(),
                Workload::Bump,
            ),
        ];
        println!(
            "## Instructions per request, stores in memory and in Redis (user space under callgrind, \
             toolwire-echo and redis-server counted apart; {n} requests after 100 of warm-up)\n"
        );
        println!(
            "| server | request | toolwire-echo instructions per request | redis-server instructions per request | \
             Redis round trips (per request) | of them script calls | commands run by the scripts per request |"
        );
        println!("|---|---|---:|---:|---:|---:|---:|");
        let path = binary("toolwire-echo")?;
        for (label, args, workload) in cases {
            let counted = callgrind_count(&path, &args, workload, n, Some(&redis)).await?;
            let sent = counted.sent.unwrap_or_default();
            let per = |v: u64| v as f64 / n as f64;
            println!(
                "| {label} | {} | {} | {} | {} ({:.3}) | {} | {:.2} |",
                workload.label(),
                thousands(counted.instructions / n),
                thousands(counted.redis_instructions.unwrap_or(0) / n),
                thousands(sent.round_trips),
                per(sent.round_trips),
                thousands(sent.scripts),
                per(sent.inner),
            );
        }
        println!();
        Ok(())
    }
    .await;
    let _ = std::fs::remove_dir_all(&dir);
    outcome
}

/// Instructions per `tools/call echo` under callgrind: toolwire-echo
/// directly, and `toolwire gateway` (the `gateway` scenario's config) in
/// front of a toolwire-echo that runs beside it, not under callgrind.
async fn gateway_instructions(options: &Options) -> Result<(), String> {
    let n = options.requests;
    let toolwire = toolwire_bin()?;
    let echo = binary("toolwire-echo")?;
    let dir = std::env::temp_dir().join(format!("toolwire-bench-gw-cg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let outcome = async {
        let upstream = ServerProcess::start(&echo, &[])?;
        println!(
            "## Instructions per tools/call echo, directly and through `toolwire gateway` \
             (user space under callgrind, the gateway's process alone; {n} requests after 100 of warm-up)\n"
        );
        println!("| request | toolwire-echo directly | toolwire gateway | gateway ÷ direct |");
        println!("|---|---:|---:|---:|");
        for workload in [Workload::LegacyEcho, Workload::Echo] {
            let direct = callgrind_count(&echo, &[], workload, n, None).await?;
            let port = toolwire_bench::process::free_port().map_err(|e| e.to_string())?;
            let config = write_gateway_config(&dir, port, &upstream, Some(GATEWAY_CALL_LIMIT))?;
            let args = ["gateway".to_owned(), "--config".to_owned(), config];
            let gateway = callgrind_count_on(&toolwire, &args, port, workload, n, None).await?;
            let (direct, gateway) = (direct.instructions / n, gateway.instructions / n);
            println!(
                "| {} | {} | {} | {:.1}× |",
                workload.label(),
                thousands(direct),
                thousands(gateway),
                gateway as f64 / direct.max(1) as f64,
            );
        }
        println!();
        upstream.stop();
        Ok(())
    }
    .await;
    let _ = std::fs::remove_dir_all(&dir);
    outcome
}

/// Runs `binary <port> args` under callgrind and counts the instructions of
/// `n` requests of `workload` (after 100 not counted); with `redis`, also
/// what those `n` requests sent it (and its instructions, if it runs under
/// callgrind).
async fn callgrind_count(
    binary: &Path,
    args: &[String],
    workload: Workload,
    n: u64,
    redis: Option<&RedisProcess>,
) -> Result<Counted, String> {
    let port = toolwire_bench::process::free_port().map_err(|e| e.to_string())?;
    let args = [&[port.to_string()], args].concat();
    callgrind_count_on(binary, &args, port, workload, n, redis).await
}

/// [`callgrind_count`] of `binary args`, a server that listens on `port`
/// (named in `args`, or in a file they name).
async fn callgrind_count_on(
    binary: &Path,
    args: &[String],
    port: u16,
    workload: Workload,
    n: u64,
    redis: Option<&RedisProcess>,
) -> Result<Counted, String> {
    let dir = std::env::temp_dir().join(format!("toolwire-bench-cg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let out = dir.join("callgrind.out");
    let mut child = std::process::Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(binary)
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
        // Legacy calls go to sessions opened here, before the counters are
        // zeroed, so the count holds calls only (no initialize).
        let sessions = if workload.is_legacy() {
            let wave = open_sessions(addr, 4, 1).await;
            if wave.failures > 0 {
                return Err(format!("could not open sessions: {:?}", wave.errors));
            }
            wave.ids
        } else {
            Vec::new()
        };
        // Counters too, so that the count holds bumps only.
        let counters = if workload == Workload::Bump {
            loadgen::open_counters(addr, 4).await?
        } else {
            Vec::new()
        };
        let load = |requests: u64| LoadConfig {
            addr,
            connections: 4,
            warmup: Duration::ZERO,
            duration: Duration::from_secs(600),
            request_timeout: Duration::from_secs(60),
            workload,
            max_requests: Some(requests),
            sessions: sessions.clone(),
            counters: counters.clone(),
        };
        let warm = loadgen::run(&load(100)).await;
        // redis-server too, when it runs under callgrind: zeroed after the
        // first INFO and dumped before the second, so it counts the calls.
        let redis_pid = redis
            .filter(|r| r.callgrind_dir.is_some())
            .map(|r| r.pid().to_string());
        control("-z", &pid)?;
        let before = redis.map(RedisProcess::stats).transpose()?;
        if let Some(redis_pid) = &redis_pid {
            control("-z", redis_pid)?;
        }
        let run = loadgen::run(&load(n)).await;
        if let Some(redis_pid) = &redis_pid {
            control("-d", redis_pid)?;
        }
        let sent = match (redis, before) {
            (Some(redis), Some(before)) => Some(redis.stats()?.since(before)),
            _ => None,
        };
        control("-d", &pid)?;
        if warm.errors + run.errors > 0 || run.ok + run.errors < n {
            return Err(format!(
                "{}: errors under callgrind: {:?}",
                workload.label(),
                run.sample_errors
            ));
        }
        let redis_count = match redis.and_then(|r| r.callgrind_dir.as_deref()) {
            Some(redis_dir) => Some(last_dump_total(redis_dir)?),
            None => None,
        };
        Ok(Counted {
            instructions: last_dump_total(&dir)?,
            sent,
            redis_instructions: redis_count,
        })
    }
    .await;
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
    outcome
}

/// `callgrind_control -z` (zero) or `-d` (dump) for process `pid`.
fn control(what: &str, pid: &str) -> Result<std::process::ExitStatus, String> {
    std::process::Command::new("callgrind_control")
        .arg(what)
        .arg(pid)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("callgrind_control {what}: {e}"))
}

/// The instructions of the newest dump in `dir` (`callgrind.out.N`, the
/// highest N: the one after the last zeroing).
fn last_dump_total(dir: &Path) -> Result<u64, String> {
    let dump = std::fs::read_dir(dir)
        .map_err(|e| e.to_string())?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter_map(|p| {
            let n = p.extension()?.to_string_lossy().parse::<u32>().ok()?;
            Some((n, p))
        })
        .max()
        .ok_or("callgrind wrote no dump")?
        .1;
    let text = std::fs::read_to_string(&dump).map_err(|e| e.to_string())?;
    text.lines()
        .find_map(|l| {
            l.strip_prefix("summary:")
                .or_else(|| l.strip_prefix("totals:"))
        })
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .ok_or_else(|| format!("no totals in {}", dump.display()))
}

/// What [`callgrind_count`] counted over the counted requests.
struct Counted {
    /// The server's instructions.
    instructions: u64,
    /// What it sent Redis, if it was given one.
    sent: Option<RedisStats>,
    /// redis-server's instructions, if it ran under callgrind.
    redis_instructions: Option<u64>,
}

/// 87511 -> "87,511".
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
