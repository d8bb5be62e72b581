//! toolwire over Streamable HTTP (JSON replies unless a request asks for
//! notifications), or over stdio with `--stdio`.
//!
//! ```text
//! toolwire-echo <port> [--order-tools] [--counter-tools] [--fillers N] [--max-listeners N]
//!               [--session-idle-timeout SECS] [--max-sessions N] [--redis URL]
//!               [--connection-threads N]
//! toolwire-echo --stdio [--order-tools] [--fillers N]
//! ```
//!
//! Tools: `echo` and `echo_progress` (the two rmcp-echo has), with
//! `--order-tools` also `order` and `order_loose`, with `--counter-tools`
//! `new_counter` and `bump` (a counter handle, read-modify-write per call),
//! and `--fillers` more (see `toolwire_bench::servers`). Served with `HttpConfig::new()`, the
//! SDK's defaults: loopback Host/Origin checks, 4 MiB body limit,
//! TCP_NODELAY, legacy (2025-11-25) sessions ending after 30 minutes unused,
//! at most 10,000 at once. `--session-idle-timeout` and `--max-sessions` set
//! those two (`HttpConfig::session_idle_timeout`, `HttpConfig::max_sessions`).
//! `--redis URL` keeps the rate-limit buckets in Redis (`RedisRateLimits`)
//! and the counters too (`RedisHandles`, store name `counters`): every call
//! then checks its bucket with one Redis round trip, and `bump` adds the two
//! of a handle modify. `--connection-threads N` serves the connections on N
//! threads of their own (`HttpConfig::connection_threads`; 0, the default,
//! on the runtime's).

use std::net::SocketAddr;

use std::sync::Arc;

use toolwire_bench::servers::{ToolwireOptions, counter_tools, counters, toolwire_builder};
use toolwire_redis::{RedisConfig, RedisHandles, RedisRateLimits};
use toolwire_server::http::{HttpConfig, HttpServer};

fn usage() -> ! {
    eprintln!(
        "usage: toolwire-echo <port> [--order-tools] [--counter-tools] [--fillers N] [--max-listeners N] \
         [--session-idle-timeout SECS] [--max-sessions N] [--redis URL] [--connection-threads N] \
         | --stdio [--order-tools] \
         [--fillers N]"
    );
    std::process::exit(2);
}

toolwire_bench::allocator_from_features!();

fn main() -> std::io::Result<()> {
    let mut port: Option<u16> = None;
    let mut stdio = false;
    let mut options = ToolwireOptions {
        fillers: 0,
        max_listeners: None,
        order_tools: false,
    };
    let mut session_idle_timeout: Option<u64> = None;
    let mut max_sessions: Option<usize> = None;
    let mut connection_threads = 0;
    let mut redis: Option<String> = None;
    let mut counter_tools_on = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut number = || -> usize {
            args.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| usage())
        };
        if arg == "--redis" {
            redis = Some(args.next().unwrap_or_else(|| usage()));
            continue;
        }
        match arg.as_str() {
            "--stdio" => stdio = true,
            "--fillers" => options.fillers = number(),
            "--max-listeners" => options.max_listeners = Some(number()),
            "--order-tools" => options.order_tools = true,
            "--counter-tools" => counter_tools_on = true,
            "--session-idle-timeout" => session_idle_timeout = Some(number() as u64),
            "--max-sessions" => max_sessions = Some(number()),
            "--connection-threads" => connection_threads = number(),
            other => port = Some(other.parse().unwrap_or_else(|_| usage())),
        }
    }
    if stdio {
        toolwire_bench::raise_nofile_limit();
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let mut builder = toolwire_builder(options);
        let mut counters = counters();
        if let Some(url) = redis {
            let connection = RedisConfig::new(url)
                .connect()
                .await
                .map_err(std::io::Error::other)?;
            counters = counters.store(Arc::new(RedisHandles::new(connection.clone(), "counters")));
            builder = builder.rate_limit_store(Arc::new(RedisRateLimits::new(connection)));
        }
        if counter_tools_on {
            for tool in counter_tools(&counters) {
                builder = builder.tool(tool);
            }
        }
        let server = builder.build().map_err(std::io::Error::other)?;
        if stdio {
            return toolwire_server::stdio::serve_stdio(server).await;
        }
        let Some(port) = port else { usage() };
        toolwire_bench::raise_nofile_limit();
        let addr = SocketAddr::new(toolwire_bench::LOOPBACK, port);
        let mut config = HttpConfig::new().connection_threads(connection_threads);
        if let Some(secs) = session_idle_timeout {
            config = config.session_idle_timeout(std::time::Duration::from_secs(secs));
        }
        if let Some(n) = max_sessions {
            config = config.max_sessions(n);
        }
        HttpServer::bind(addr, server, config).await?.run().await
    })
}
