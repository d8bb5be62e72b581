//! The stdio transport's line framing: `stdio::serve` over in-memory pipes
//! fed arbitrary bytes (lines of any length, partial lines, CRLF, non-UTF-8,
//! legacy `initialize` then requests, cancellations ...).
//!
//! The input is what the client writes; the target checks that serving ends
//! once input ends (within 5 s) and that everything written to stdout is a
//! line holding exactly one JSON-RPC message.
#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use toolwire_fuzz::{RT, SERVER};
use toolwire_protocol::Message;
use toolwire_server::stdio::{StdioConfig, serve};

fuzz_target!(|data: &[u8]| {
    let config = StdioConfig {
        max_in_flight: 4,
        max_line_bytes: 1024,
        shutdown_grace: Duration::from_millis(100),
        ..StdioConfig::default()
    };
    let input = data.to_vec();
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
        for line in output.split(|&b| b == b'\n') {
            if line.is_empty() {
                continue;
            }
            Message::from_slice(line).unwrap_or_else(|e| {
                panic!(
                    "stdout line is not a JSON-RPC message ({e}): {:?}",
                    String::from_utf8_lossy(line)
                )
            });
        }
        assert!(output.is_empty() || output.ends_with(b"\n"), "stdout ends mid-line");
    });
});
