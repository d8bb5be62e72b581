//! The client's SSE parser (`toolwire_client::transport::sse::SseParser`,
//! exposed by the client's `fuzzing` feature).
//!
//! Input: one byte choosing a chunk size, then the stream. The stream is
//! parsed in one piece and again in chunks of that size; both must give the
//! same events, the same last event id and the same retry, and no event may
//! be larger than the limit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolwire_client::transport::sse::{EventTooLarge, SseParser};

const MAX_EVENT: usize = 512;

#[derive(Debug, PartialEq)]
struct Parsed {
    events: Result<Vec<String>, EventTooLarge>,
    last_event_id: Option<String>,
    retry_ms: Option<u64>,
}

fn parse(stream: &[u8], chunk: usize) -> Parsed {
    let mut parser = SseParser::new(MAX_EVENT);
    let mut events = Vec::new();
    for piece in stream.chunks(chunk) {
        match parser.push(piece) {
            Ok(more) => events.extend(more),
            Err(too_large) => {
                return Parsed {
                    events: Err(too_large),
                    last_event_id: parser.last_event_id,
                    retry_ms: parser.retry_ms,
                };
            }
        }
    }
    events.extend(parser.finish());
    Parsed {
        events: Ok(events),
        last_event_id: parser.last_event_id,
        retry_ms: parser.retry_ms,
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, stream)) = data.split_first() else {
        return;
    };
    let whole = parse(stream, stream.len().max(1));
    let chunked = parse(stream, usize::from(selector % 16) + 1);
    match (&whole.events, &chunked.events) {
        // Where the limit is hit depends on the chunking only in which
        // events came out before it; the error itself must agree.
        (Err(a), Err(b)) => assert_eq!(a, b),
        _ => assert_eq!(whole, chunked, "chunk size {}", selector % 16 + 1),
    }
    if let Ok(events) = &whole.events {
        for event in events {
            assert!(event.len() <= MAX_EVENT, "{} bytes", event.len());
        }
    }
});
