//! The load generator on its own, against a server that is already running
//! on 127.0.0.1 (the `bench` command starts servers itself).
//!
//! ```text
//! loadgen <port> [echo|sse|list|order|order_loose|legacy|bump] [--connections N] [--duration SECS] [--warmup SECS] [--requests N]
//! ```
//!
//! `--requests N` stops after N requests in all (for instruction counts
//! under callgrind: run the server under valgrind and send a fixed number).
//! `legacy` is a 2025-11-25 client: each connection opens a session
//! (`initialize`, `notifications/initialized`), then calls `echo` in it.
//! `bump` needs `toolwire-echo --counter-tools`: each connection opens a
//! counter (`new_counter`), then calls `bump` on it.

use std::net::SocketAddr;
use std::time::Duration;

use toolwire_bench::loadgen::{LoadConfig, run};
use toolwire_bench::workload::Workload;

const USAGE: &str = "usage: loadgen <port> [echo|sse|list|order|order_loose|legacy|bump] [--connections N] [--duration SECS] [--warmup SECS] [--requests N]";

fn main() {
    let mut port: Option<u16> = None;
    let mut workload = Workload::Echo;
    let mut connections = 32;
    let mut duration = 5.0;
    let mut warmup = 2.0;
    let mut requests: Option<u64> = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut number = || -> f64 {
            args.next()
                .and_then(|v| v.parse().ok())
                .filter(|v: &f64| v.is_finite() && *v >= 0.0)
                .unwrap_or_else(|| fail(USAGE))
        };
        match arg.as_str() {
            "--connections" => connections = number().max(1.0) as usize,
            "--duration" => duration = number(),
            "--warmup" => warmup = number(),
            "--requests" => requests = Some(number() as u64),
            "echo" => workload = Workload::Echo,
            "sse" => workload = Workload::EchoProgress,
            "list" => workload = Workload::ToolsList,
            "order" => workload = Workload::Order,
            "order_loose" => workload = Workload::OrderLoose,
            "legacy" => workload = Workload::LegacyEcho,
            "bump" => workload = Workload::Bump,
            other => port = Some(other.parse().unwrap_or_else(|_| fail(USAGE))),
        }
    }
    let Some(port) = port else { fail(USAGE) };
    toolwire_bench::raise_nofile_limit();
    let config = LoadConfig {
        addr: SocketAddr::new(toolwire_bench::LOOPBACK, port),
        connections,
        warmup: Duration::from_secs_f64(warmup),
        duration: Duration::from_secs_f64(duration),
        request_timeout: Duration::from_secs(10),
        workload,
        max_requests: requests,
        sessions: Vec::new(),
        counters: Vec::new(),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let result = runtime.block_on(run(&config));
    let ms = |q: f64| result.latency.value_at_quantile(q) as f64 / 1000.0;
    println!(
        "{}: {:.0} req/s, p50 {:.3} ms, p99 {:.3} ms, p99.9 {:.3} ms, {} ok, {} errors ({} in warm-up)",
        workload.label(),
        result.rps(),
        ms(0.5),
        ms(0.99),
        ms(0.999),
        result.ok,
        result.errors,
        result.warmup_errors
    );
    for error in &result.sample_errors {
        println!("  error: {error}");
    }
    if result.errors > 0 {
        std::process::exit(1);
    }
}

fn fail(message: &str) -> ! {
    eprintln!("{message}");
    std::process::exit(2);
}
