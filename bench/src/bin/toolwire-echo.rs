//! toolwire over Streamable HTTP (JSON replies unless a request asks for
//! notifications), or over stdio with `--stdio`.
//!
//! ```text
//! toolwire-echo <port> [--order-tools] [--fillers N] [--max-listeners N]
//! toolwire-echo --stdio [--order-tools] [--fillers N]
//! ```
//!
//! Tools: `echo` and `echo_progress` (the two rmcp-echo has), with
//! `--order-tools` also `order` and `order_loose`, and `--fillers` more (see
//! `toolwire_bench::servers`). Served with `HttpConfig::new()`, the
//! SDK's defaults: loopback Host/Origin checks, 4 MiB body limit,
//! TCP_NODELAY.

use std::net::SocketAddr;

use toolwire_bench::servers::{ToolwireOptions, toolwire_server};
use toolwire_server::http::{HttpConfig, HttpServer};

fn usage() -> ! {
    eprintln!(
        "usage: toolwire-echo <port> [--order-tools] [--fillers N] [--max-listeners N] | --stdio [--order-tools] [--fillers N]"
    );
    std::process::exit(2);
}

fn main() -> std::io::Result<()> {
    let mut port: Option<u16> = None;
    let mut stdio = false;
    let mut options = ToolwireOptions {
        fillers: 0,
        max_listeners: None,
        order_tools: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut number = || -> usize {
            args.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| usage())
        };
        match arg.as_str() {
            "--stdio" => stdio = true,
            "--fillers" => options.fillers = number(),
            "--max-listeners" => options.max_listeners = Some(number()),
            "--order-tools" => options.order_tools = true,
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
        let server = toolwire_server(options);
        if stdio {
            return toolwire_server::stdio::serve_stdio(server).await;
        }
        let Some(port) = port else { usage() };
        toolwire_bench::raise_nofile_limit();
        let addr = SocketAddr::new(toolwire_bench::LOOPBACK, port);
        HttpServer::bind(addr, server, HttpConfig::new())
            .await?
            .run()
            .await
    })
}
