//! The `toolwire` program: serve a demo MCP server (to 2026-07-28 clients and
//! to older ones that open with `initialize`), and discover, list, call, read
//! and prompt any MCP (2026-07-28) server over HTTP or stdio.
#![warn(missing_docs)]

mod commands;
mod confirm;
mod connect;
mod demo;
mod eras;
mod explain;
mod failure;
mod forms;
mod gateway;
mod kv;
mod log_fields;
mod log_sink;
mod log_time;
mod logging;
mod render;
mod safe_json;
mod safe_text;
mod serve;
mod terminal;

use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use crate::failure::Failure;

/// mimalloc, not the system's allocator: a request allocates and frees many
/// small blocks, and glibc's malloc and free cost several times more
/// instructions for each (see `bench/README.md`, Gateway overhead). The SDK
/// crates leave this choice to the program that uses them.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Serve, discover, list and call MCP (Model Context Protocol, revision
/// 2026-07-28) servers.
///
/// Start the demo server in one terminal:
///
///   toolwire serve
///
/// then talk to it from another:
///
///   toolwire list http://127.0.0.1:8931/mcp
///   toolwire call http://127.0.0.1:8931/mcp echo text=hello
///
/// A server reached over stdio is given as a command after `--`:
///
///   toolwire list -- toolwire serve --stdio
///
/// Exit codes: 0 success, 1 the tool reported an error, 2 protocol, transport
/// or usage error, 3 denied (you answered no at a confirmation prompt).
#[derive(Debug, Parser)]
#[command(name = "toolwire", version, about, long_about, verbatim_doc_comment)]
struct Cli {
    #[command(subcommand)]
    command: Command,

    /// How log lines are written on stderr: `text` (one readable line
    /// each), or `json` (one JSON object per line: timestamp, level,
    /// target, fields, for a log collector). RUST_LOG filters both.
    #[arg(long, value_name = "FORMAT", global = true, default_value = "text")]
    log_format: LogFormat,

    /// Send OpenTelemetry traces and metrics with OTLP, where the standard
    /// OTEL_EXPORTER_OTLP_* variables say (default http://localhost:4318,
    /// HTTP/protobuf). Also on when an OTLP endpoint variable is set; off
    /// whenever OTEL_SDK_DISABLED=true.
    #[arg(long, global = true)]
    otel: bool,

    /// Threads the async runtime runs tasks on (default: one per CPU).
    /// One thread can serve a gateway or server better on a small machine
    /// it shares with its upstreams: the threads no longer wake each other
    /// for every request (see bench/README.md, Gateway overhead).
    #[arg(
        long,
        value_name = "N",
        global = true,
        env = "TOOLWIRE_WORKER_THREADS",
        value_parser = clap::value_parser!(u16).range(1..=1024)
    )]
    worker_threads: Option<u16>,

    /// Threads that serve the HTTP connections of `serve` and `gateway`, each
    /// with a single-threaded runtime of its own, so that a connection and
    /// the work its requests start stay on one thread; 0 serves them on the
    /// async runtime's threads. Default: one per CPU for `gateway`, 0 for
    /// `serve`. See bench/README.md, "Connection threads".
    #[arg(
        long,
        value_name = "N",
        global = true,
        env = "TOOLWIRE_CONNECTION_THREADS",
        value_parser = clap::value_parser!(u16).range(0..=1024)
    )]
    connection_threads: Option<u16>,
}

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum LogFormat {
    /// One readable line per event.
    Text,
    /// One JSON object per line.
    Json,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the built-in demo server (HTTP on 127.0.0.1:8931/mcp, or stdio).
    Serve(serve::ServeArgs),
    /// Serve many MCP servers behind one endpoint, as a configuration file
    /// says (`toolwire gateway check --config FILE` shows what it would serve).
    Gateway(gateway::GatewayArgs),
    /// Show what a server supports: versions, capabilities, instructions.
    #[command(override_usage = "toolwire discover [OPTIONS] <SERVER>\n       \
                                toolwire discover [OPTIONS] -- <COMMAND>...")]
    Discover(commands::DiscoverArgs),
    /// List a server's tools (or its resources and prompts).
    #[command(override_usage = "toolwire list [OPTIONS] <SERVER>\n       \
                                toolwire list [OPTIONS] -- <COMMAND>...")]
    List(commands::ListArgs),
    /// Call a tool, after showing it and its exact arguments and asking you.
    #[command(
        override_usage = "toolwire call [OPTIONS] <SERVER> <TOOL> [KEY=VALUE]...\n       \
                          toolwire call [OPTIONS] <TOOL> [KEY=VALUE]... -- <COMMAND>...",
        after_help = "Examples:\n  \
            toolwire call http://127.0.0.1:8931/mcp echo text=hello\n  \
            toolwire call http://127.0.0.1:8931/mcp stats 'numbers=[1,2,3.5]' --yes --json\n  \
            toolwire call http://127.0.0.1:8931/mcp countdown --args '{\"seconds\": 3}'\n  \
            toolwire call --yes echo text=hi -- toolwire serve --stdio"
    )]
    Call(commands::CallArgs),
    /// Follow a long-running call the server made a task: its status, its
    /// result once it ends, or cancel it.
    #[command(after_help = "Examples:\n  \
            toolwire call --detach --yes http://127.0.0.1:8931/mcp build_report seconds=30\n  \
            toolwire task get http://127.0.0.1:8931/mcp ID\n  \
            toolwire task wait http://127.0.0.1:8931/mcp ID\n  \
            toolwire task cancel http://127.0.0.1:8931/mcp ID")]
    Task(commands::TaskArgs),
    /// Read a resource by URI.
    #[command(override_usage = "toolwire read [OPTIONS] <SERVER> <URI>\n       \
                                toolwire read [OPTIONS] <URI> -- <COMMAND>...")]
    Read(commands::ReadArgs),
    /// Get a prompt, filled in with arguments.
    #[command(
        override_usage = "toolwire prompt [OPTIONS] <SERVER> <NAME> [KEY=VALUE]...\n       \
                                toolwire prompt [OPTIONS] <NAME> [KEY=VALUE]... -- <COMMAND>..."
    )]
    Prompt(commands::PromptArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let serving = matches!(cli.command, Command::Serve(_) | Command::Gateway(_));
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    // An idle worker writes the log lines gathered while it was busy.
    builder.on_thread_park(log_sink::flush_stderr);
    if let Some(threads) = cli.worker_threads {
        builder.worker_threads(usize::from(threads));
    }
    let runtime = match builder.enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("toolwire: cannot start the async runtime: {error}");
            return ExitCode::from(Failure::PROTOCOL);
        }
    };
    let service = match cli.command {
        Command::Gateway(_) => "toolwire-gateway",
        _ => "toolwire",
    };
    // The exporters run on the runtime: set them up inside it.
    let telemetry = {
        let _inside = runtime.enter();
        logging::init(serving, cli.log_format, cli.otel, service)
    };
    let telemetry = match telemetry {
        Ok(telemetry) => telemetry,
        Err(error) => {
            eprintln!("toolwire: {error}");
            return ExitCode::from(Failure::PROTOCOL);
        }
    };
    let threads = cli.connection_threads.map(usize::from);
    let outcome = runtime.block_on(run(cli.command, threads));
    // Sends the spans still buffered, while the runtime still runs.
    drop(telemetry);
    log_sink::flush_stderr();
    // Blocking stdin reads may still be parked; do not wait for them.
    runtime.shutdown_background();
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            failure.report();
            ExitCode::from(failure.code)
        }
    }
}

/// Runs `command`; `connection_threads` (`--connection-threads`) is for the
/// HTTP servers of `serve` and `gateway`.
async fn run(command: Command, connection_threads: Option<usize>) -> Result<(), Failure> {
    match command {
        // A tool may compute for a while: its connection's neighbours are
        // better off on threads that steal work from each other.
        Command::Serve(args) => serve::run(args, connection_threads.unwrap_or(0)).await,
        // Forwarding waits on I/O: each connection's calls stay on one thread.
        Command::Gateway(args) => {
            let per_cpu = std::thread::available_parallelism().map_or(1, |n| n.get());
            gateway::run(args, connection_threads.unwrap_or(per_cpu)).await
        }
        Command::Discover(args) => commands::discover(args).await,
        Command::List(args) => commands::list(args).await,
        Command::Call(args) => commands::call(args).await,
        Command::Task(args) => commands::task(args).await,
        Command::Read(args) => commands::read(args).await,
        Command::Prompt(args) => commands::prompt(args).await,
    }
}
