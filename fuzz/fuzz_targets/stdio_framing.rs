//! The stdio transport's line framing: `stdio::serve` over in-memory pipes
//! fed arbitrary bytes (lines of any length, partial lines, CRLF, non-UTF-8,
//! legacy `initialize` then requests, cancellations ...).
//!
//! The input is what the client writes, followed by a newline and one good
//! `tools/list` request (id `"fuzz-final"`); the target checks that serving
//! ends once input ends (within 5 s), that everything written to stdout is a
//! line holding exactly one JSON-RPC message, and that the final request was
//! answered: no input, however broken, ends the session early or blocks it.
#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use toolwire_fuzz::{RT, SERVER, meta};
use toolwire_protocol::Message;
use toolwire_server::stdio::{StdioConfig, serve};

fuzz_target!(|data: &[u8]| {
    let config = StdioConfig {
        max_in_flight: 4,
        max_line_bytes: 1024,
        shutdown_grace: Duration::from_millis(100),
        ..StdioConfig::default()
    };
    let mut input = data.to_vec();
    let last = serde_json::json!({"jsonrpc": "2.0", "id": "fuzz-final", "method": "tools/list",
        "params": {"_meta": meta()}});
    input.push(b'\n');
    input.extend_from_slice(last.to_string().as_bytes());
    input.push(b'\n');
    RT.block_on(async move {
        let (mut client_in, server_in) = tokio::io::duplex(64 * 1024);
        let (server_out, mut client_out) = tokio::io::duplex(64 * 1024);
        let served = tokio::spawn(serve(SERVER.clone(), server_in, server_out, config));
        let writer = tokio::spawn(async move {
            // The server may stop reading (e.g. after an I/O error): then
            // this write fails, which is fine.
            let _ = client_in.write_all(&input).await;
            let _ = client_in.shutdown().await;
        });
        let mut output = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(5), client_out.read_to_end(&mut output));
        read.await
            .expect("stdio serve did not close stdout within 5 s of stdin closing")
            .expect("reading the server's stdout");
        let _ = served.await.expect("the serve task panicked");
        let _ = writer.await;
        let mut answered = false;
        for line in output.split(|&b| b == b'\n') {
            if line.is_empty() {
                continue;
            }
            let message = Message::from_slice(line).unwrap_or_else(|e| {
                panic!(
                    "stdout line is not a JSON-RPC message ({e}): {:?}",
                    String::from_utf8_lossy(line)
                )
            });
            let final_id = toolwire_protocol::RequestId::from("fuzz-final");
            answered |= match &message {
                Message::Result(response) => response.id == final_id,
                Message::Error(response) => response.id.as_ref() == Some(&final_id),
                _ => false,
            };
        }
        assert!(answered, "the final tools/list was not answered");
        assert!(output.is_empty() || output.ends_with(b"\n"), "stdout ends mid-line");
    });
});
