//! The conformance fixture server.
//!
//! ```text
//! conformance-server --port N     serve http://127.0.0.1:N/mcp (or set PORT)
//! conformance-server --stdio      serve the same fixture over stdin/stdout
//! ```

use std::net::{Ipv4Addr, SocketAddr};
use std::process::ExitCode;

use toolwire::server::http::{HttpConfig, HttpServer};
use toolwire_conformance::fixture_server;

const USAGE: &str = "usage: conformance-server [--port N | --stdio]  (or PORT=N)";

enum Mode {
    Http(u16),
    Stdio,
}

fn parse_args() -> Result<Mode, String> {
    let mut args = std::env::args().skip(1);
    let mut port = None;
    let mut stdio = false;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--stdio" => stdio = true,
            "--port" => port = Some(args.next().ok_or("--port needs a value")?),
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other => match other.strip_prefix("--port=") {
                Some(value) => port = Some(value.to_owned()),
                None => return Err(format!("unknown argument {other:?}\n{USAGE}")),
            },
        }
    }
    if stdio {
        if port.is_some() {
            return Err(format!("--stdio and --port exclude each other\n{USAGE}"));
        }
        return Ok(Mode::Stdio);
    }
    let port = port
        .or_else(|| std::env::var("PORT").ok())
        .ok_or_else(|| format!("no port given\n{USAGE}"))?;
    port.trim()
        .parse()
        .map(Mode::Http)
        .map_err(|_| format!("invalid port {port:?}"))
}

#[tokio::main]
async fn main() -> ExitCode {
    let mode = match parse_args() {
        Ok(mode) => mode,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    let server = fixture_server();
    let outcome = match mode {
        Mode::Stdio => toolwire::server::stdio::serve_stdio(server).await,
        Mode::Http(port) => {
            let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
            match HttpServer::bind(addr, server, HttpConfig::new()).await {
                Ok(http) => {
                    eprintln!("conformance-server: http://{}/mcp", http.local_addr());
                    http.run().await
                }
                Err(error) => Err(error),
            }
        }
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("conformance-server: {error}");
            ExitCode::FAILURE
        }
    }
}
