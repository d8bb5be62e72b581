//! The ceiling: bare hyper 1.x (HTTP/1.1, keep-alive, TCP_NODELAY) that
//! parses the JSON-RPC body with serde_json and answers `tools/call` with a
//! fixed-shape result echoing `arguments.text`, in the same shape toolwire
//! answers. No header checks, no `_meta` checks, no schema: what no MCP
//! server can beat.
//!
//! So that SDK clients can be pointed at it (`client-load`), it also answers
//! what they send besides calls (`server/discover`, `initialize`,
//! `tools/list`, notifications; see `toolwire_bench::echo_other`). The echo
//! path is unchanged but for one string comparison: a body is parsed as a
//! `tools/call` first, as before, and only one that is not (it does not
//! parse as one, or its `method` is not `tools/call`) goes to
//! `echo_other`, which parses it again for its method. Under callgrind an
//! echo costs what it did before (28.0 k instructions per request either
//! way, `loadgen --connections 4`, 2,000 requests after 100).
//!
//! ```text
//! hyper-echo <port>
//! ```
//!
//! `HYPER_ECHO_SPIN_NS=N` (read once at start) makes every `tools/call`
//! busy-wait N nanoseconds first: the ceiling with a known amount of extra
//! CPU per request, to see how a figure (the p99 at 64 connections, say)
//! moves with the server's work alone. Unset, the echo is unchanged.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{CONTENT_TYPE, HeaderValue};
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use tokio::net::TcpListener;

#[derive(Deserialize)]
struct Call<'a> {
    #[serde(borrow)]
    id: &'a RawValue,
    method: String,
    params: Params,
}

#[derive(Deserialize)]
struct Params {
    #[allow(dead_code)]
    name: String,
    arguments: Arguments,
}

#[derive(Deserialize)]
struct Arguments {
    text: String,
}

#[derive(Serialize)]
struct Reply<'a> {
    jsonrpc: &'static str,
    id: &'a RawValue,
    result: CallResult,
}

#[derive(Serialize)]
struct CallResult {
    content: [Text; 1],
    #[serde(rename = "resultType")]
    result_type: &'static str,
    #[serde(rename = "_meta")]
    meta: ResultMeta,
}

#[derive(Serialize)]
struct Text {
    #[serde(rename = "type")]
    kind: &'static str,
    text: String,
}

#[derive(Serialize)]
struct ResultMeta {
    #[serde(rename = "io.modelcontextprotocol/serverInfo")]
    server_info: ServerInfo,
}

#[derive(Serialize)]
struct ServerInfo {
    name: &'static str,
    version: &'static str,
}

/// `HYPER_ECHO_SPIN_NS`: the busy work added to every call (none when unset).
static SPIN: OnceLock<Option<Duration>> = OnceLock::new();

/// Busy-waits `spin` (without yielding: CPU work, as a heavier server's).
fn spin(spin: Duration) {
    let until = Instant::now() + spin;
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

async fn handle(request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let body = match request.into_body().collect().await {
        Ok(body) => body.to_bytes(),
        Err(_) => return Ok(status(StatusCode::BAD_REQUEST)),
    };
    let call = match serde_json::from_slice::<Call<'_>>(&body) {
        Ok(call) if call.method == "tools/call" => {
            if let Some(&Some(busy)) = SPIN.get() {
                spin(busy);
            }
            call
        }
        // Not a tools/call echo: a handshake, a listing or a notification.
        _ => return Ok(toolwire_bench::echo_other::other_message(&body)),
    };
    let reply = Reply {
        jsonrpc: "2.0",
        id: call.id,
        result: CallResult {
            content: [Text {
                kind: "text",
                text: call.params.arguments.text,
            }],
            result_type: "complete",
            meta: ResultMeta {
                server_info: ServerInfo {
                    name: "hyper-echo",
                    version: "0.1.0",
                },
            },
        },
    };
    let bytes = serde_json::to_vec(&reply).unwrap_or_default();
    let mut response = Response::new(Full::new(Bytes::from(bytes)));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(response)
}

fn status(code: StatusCode) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = code;
    response
}

toolwire_bench::allocator_from_features!();

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let port: u16 = match std::env::args().nth(1).and_then(|p| p.parse().ok()) {
        Some(port) => port,
        None => {
            eprintln!("usage: hyper-echo <port>");
            std::process::exit(2);
        }
    };
    let busy = std::env::var("HYPER_ECHO_SPIN_NS")
        .ok()
        .map(|ns| match ns.parse() {
            Ok(ns) => Duration::from_nanos(ns),
            Err(_) => {
                eprintln!("hyper-echo: HYPER_ECHO_SPIN_NS must be a number of nanoseconds");
                std::process::exit(2);
            }
        });
    SPIN.set(busy).expect("set once, at start");
    toolwire_bench::raise_nofile_limit();
    let listener = TcpListener::bind(SocketAddr::new(toolwire_bench::LOOPBACK, port)).await?;
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(_) => {
                // Out of descriptors or similar: back off instead of spinning.
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        tokio::spawn(async move {
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service_fn(handle))
                .await;
        });
    }
}
