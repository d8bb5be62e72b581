//! The `toolwire` program.
use clap::Parser;

/// Serve, discover, list and call MCP (2026-07-28) servers.
#[derive(Debug, Parser)]
#[command(name = "toolwire", version, about)]
struct Cli {}

fn main() {
    let _cli = Cli::parse();
}
