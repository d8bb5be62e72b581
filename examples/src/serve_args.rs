//! The command line the example servers share: stdio by default, Streamable
//! HTTP at `http://ADDR/mcp` with `--http ADDR` (or `--http=ADDR`).
//!
//! Either way the server is toolwire's own transport, so it answers
//! 2026-07-28 clients statelessly and older clients (2025-11-25, 2025-06-18,
//! 2025-03-26) that open with `initialize`; the examples need no code for
//! that. See "Protocol revisions" in the top-level README.

use std::net::SocketAddr;

use toolwire::server::Server;
use toolwire::server::http::{HttpConfig, HttpServer};

/// How to serve: stdio unless `--http ADDR` is given.
///
/// ```
/// use toolwire_examples::serve_args::{Mode, parse_args};
/// let args = |words: &[&str]| words.iter().map(|w| w.to_string()).collect::<Vec<_>>();
/// assert_eq!(parse_args("demo", args(&[])), Ok(Mode::Stdio));
/// let addr = "127.0.0.1:8080".parse().unwrap();
/// assert_eq!(parse_args("demo", args(&["--http", "127.0.0.1:8080"])), Ok(Mode::Http(addr)));
/// assert_eq!(parse_args("demo", args(&["--http=127.0.0.1:8080"])), Ok(Mode::Http(addr)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// One JSON-RPC message per line on stdin and stdout.
    Stdio,
    /// Streamable HTTP on this address, at `/mcp`.
    Http(SocketAddr),
}

/// Reads how to serve from `args`, the arguments after the program's name;
/// the last `--http` wins. A message for the user when they are wrong
/// (`program` names the program in its usage line).
///
/// ```
/// use toolwire_examples::serve_args::parse_args;
/// let error = parse_args("demo", vec!["--verbose".to_owned()]).unwrap_err();
/// assert_eq!(error, "unknown argument \"--verbose\"; usage: demo [--http ADDR]");
/// ```
pub fn parse_args(program: &str, args: impl IntoIterator<Item = String>) -> Result<Mode, String> {
    let mut args = args.into_iter();
    let mut mode = Mode::Stdio;
    while let Some(arg) = args.next() {
        let addr = match arg.as_str() {
            "--http" => args
                .next()
                .ok_or("--http needs an address, e.g. --http 127.0.0.1:8080")?,
            other => match other.strip_prefix("--http=") {
                Some(addr) => addr.to_owned(),
                None => {
                    return Err(format!(
                        "unknown argument {other:?}; usage: {program} [--http ADDR]"
                    ));
                }
            },
        };
        let addr = addr
            .parse()
            .map_err(|e| format!("--http {addr:?}: not an address like 127.0.0.1:8080 ({e})"))?;
        mode = Mode::Http(addr);
    }
    Ok(mode)
}

/// Serves the server `build_server` makes as the process's command line
/// asks (see [`parse_args`]): over stdio, or over HTTP until Ctrl-C. A wrong
/// command line is told on stderr, prefixed with `program`, and the process
/// exits with status 2.
///
/// ```no_run
/// use toolwire::server::Server;
///
/// #[tokio::main]
/// async fn main() -> std::io::Result<()> {
///     let build = || Server::builder("demo", "1.0.0").build().expect("valid");
///     toolwire_examples::serve_args::serve("demo", build).await
/// }
/// ```
pub async fn serve(program: &str, build_server: impl FnOnce() -> Server) -> std::io::Result<()> {
    let mode = match parse_args(program, std::env::args().skip(1)) {
        Ok(mode) => mode,
        Err(message) => {
            eprintln!("{program}: {message}");
            std::process::exit(2);
        }
    };
    match mode {
        Mode::Stdio => toolwire::server::stdio::serve_stdio(build_server()).await,
        Mode::Http(addr) => {
            let http = HttpServer::bind(addr, build_server(), HttpConfig::new()).await?;
            eprintln!(
                "{program}: serving MCP at http://{}/mcp (Ctrl-C to stop)",
                http.local_addr()
            );
            http.run_until(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
        }
    }
}
