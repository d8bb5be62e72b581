//! The resumable SSE streams of legacy sessions: every message of a stream
//! is kept (up to a bound) under an event id `<stream>-<seq>`, so that a
//! client that lost its connection, or was asked to reconnect (SSE polling,
//! SEP-1699), resumes with `Last-Event-ID` and misses nothing.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use toolwire_protocol::Message;

use crate::context::MessageSink;
use crate::context::encode::encode_message;

/// How long a client waits before reconnecting to a closed stream (the
/// SSE `retry` field of the priming event), in milliseconds.
pub(super) const RETRY_MS: u64 = 1000;

/// One stream's events, oldest first.
#[derive(Debug)]
pub(super) struct EventLog {
    stream: u64,
    capacity: usize,
    state: Mutex<LogState>,
    /// Wakes the waiting readers on every change. A reader holds the log,
    /// so the log outlives its readers and never has to tell them it is
    /// gone; one `Notify` is all a change costs (a `watch` channel woke
    /// eight shards on every change and again when dropped).
    changed: Notify,
}

#[derive(Debug, Default)]
struct LogState {
    /// The sequence number of the last event pushed (events start at 1).
    last_seq: u64,
    events: VecDeque<(u64, Bytes)>,
    /// The final response is in: readers end after it.
    finished: bool,
    /// The last event sent on each connection `close_stream` ended: a
    /// reader of connection `n` ends after event `closed_after[n]`.
    closed_after: Vec<u64>,
    /// A response that came before any other message, kept apart (as
    /// JSON): it is sent as plain JSON.
    only_response: Option<Vec<u8>>,
}

/// What a reader gets next.
pub(super) enum Read {
    Event(u64, Bytes),
    /// Nothing more will come on this connection.
    End,
    /// Nothing yet.
    Wait,
}

/// How a request's stream began, for choosing JSON or SSE.
pub(super) enum Opening {
    /// The request finished before sending anything else: its response
    /// alone, as JSON.
    OnlyResponse(Vec<u8>),
    /// Something came before the response: stream it.
    Streaming,
}

impl EventLog {
    pub(super) fn new(stream: u64, capacity: usize) -> Arc<EventLog> {
        Arc::new(EventLog {
            stream,
            capacity: capacity.max(1),
            state: Mutex::default(),
            changed: Notify::new(),
        })
    }

    /// The stream number (the part of event ids before the `-`).
    pub(super) fn stream(&self) -> u64 {
        self.stream
    }

    /// Appends a message as the next event.
    pub(super) fn push(&self, message: &Message) {
        let mut json = Vec::with_capacity(256);
        encode_message(&mut json, message);
        self.append(&json, false);
    }

    /// Appends the final response, given as its JSON; readers end after
    /// it. A response that comes before anything else is kept apart for
    /// [`EventLog::opening`].
    pub(super) fn finish(&self, json: Vec<u8>) {
        {
            let mut state = self.lock();
            if state.last_seq == 0 && !state.finished {
                state.only_response = Some(json);
                state.finished = true;
                drop(state);
                self.bump();
                return;
            }
        }
        self.append(&json, true);
    }

    /// Ends the log without a response (the request was cancelled).
    pub(super) fn abandon(&self) {
        self.lock().finished = true;
        self.bump();
    }

    /// The sequence number of the newest event (0 before the first).
    pub(super) fn last_seq(&self) -> u64 {
        self.lock().last_seq
    }

    /// True once the final response (or the cancellation) is in.
    pub(super) fn is_finished(&self) -> bool {
        self.lock().finished
    }

    fn append(&self, json: &[u8], last: bool) {
        let mut state = self.lock();
        if state.finished {
            return;
        }
        state.last_seq += 1;
        let seq = state.last_seq;
        let mut bytes = Vec::with_capacity(json.len() + 32);
        bytes.extend_from_slice(format!("id: {}-{seq}\ndata: ", self.stream).as_bytes());
        bytes.extend_from_slice(json);
        bytes.extend_from_slice(b"\n\n");
        state.events.push_back((seq, Bytes::from(bytes)));
        while state.events.len() > self.capacity {
            state.events.pop_front();
        }
        state.finished = last;
        drop(state);
        self.bump();
    }

    /// Waits until the request either answered with nothing before its
    /// response, or sent something else first.
    pub(super) async fn opening(&self) -> Opening {
        loop {
            // Registered before reading, so a change in between wakes us.
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            {
                let mut state = self.lock();
                if let Some(json) = state.only_response.take() {
                    return Opening::OnlyResponse(json);
                }
                if state.last_seq > 0 || state.finished {
                    return Opening::Streaming;
                }
            }
            changed.await;
        }
    }

    /// The SSE body of one connection reading this log after event `after`
    /// (0: from the start), led by a priming event when `prime` is set. The
    /// first connection of a request's stream is `first`; a resumed one is
    /// the newest.
    pub(super) fn reader(
        self: &Arc<Self>,
        first: bool,
        after: u64,
        prime: bool,
        keep_alive: Option<Duration>,
        stop: CancellationToken,
        guard: Option<Box<dyn Send + Sync>>,
    ) -> impl futures::Stream<Item = Result<Bytes, Infallible>> + Send + 'static {
        let connection = if first {
            0
        } else {
            self.lock().closed_after.len()
        };
        let priming = prime.then(|| {
            Bytes::from(format!(
                "id: {}-{after}\nretry: {RETRY_MS}\ndata: \n\n",
                self.stream
            ))
        });
        let reader = Reader {
            log: Arc::clone(self),
            cursor: after,
            connection,
            priming,
            keep_alive,
            stop,
            _guard: guard,
        };
        futures::stream::unfold(reader, Reader::next_chunk)
    }

    fn read(&self, cursor: u64, connection: usize) -> Read {
        let state = self.lock();
        if state
            .closed_after
            .get(connection)
            .is_some_and(|last| cursor >= *last)
        {
            return Read::End;
        }
        if let Some((seq, event)) = state.events.iter().find(|(seq, _)| *seq > cursor) {
            return Read::Event(*seq, event.clone());
        }
        if state.finished {
            Read::End
        } else {
            Read::Wait
        }
    }

    fn bump(&self) {
        self.changed.notify_waiters();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LogState> {
        self.state.lock().expect("event log lock")
    }
}

impl MessageSink for EventLog {
    fn send(&self, message: Message) {
        self.push(&message);
    }

    fn close_stream(&self) {
        let mut state = self.lock();
        let last = state.last_seq;
        state.closed_after.push(last);
        drop(state);
        self.bump();
    }
}

/// One connection reading a log.
struct Reader {
    log: Arc<EventLog>,
    cursor: u64,
    connection: usize,
    priming: Option<Bytes>,
    keep_alive: Option<Duration>,
    /// Ends the connection (the session ended).
    stop: CancellationToken,
    /// Held while the connection is open (e.g. marks the standalone stream taken).
    _guard: Option<Box<dyn Send + Sync>>,
}

impl Reader {
    async fn next_chunk(mut self) -> Option<(Result<Bytes, Infallible>, Reader)> {
        if let Some(priming) = self.priming.take() {
            return Some((Ok(priming), self));
        }
        // The wake-up registration borrows the log while `self` is handed
        // back with a chunk, so it borrows a handle of its own.
        let log = Arc::clone(&self.log);
        loop {
            // Registered before reading, so a push in between wakes us.
            let changed = log.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            match self.log.read(self.cursor, self.connection) {
                Read::Event(seq, event) => {
                    self.cursor = seq;
                    return Some((Ok(event), self));
                }
                Read::End => return None,
                Read::Wait => {}
            }
            let waited = tokio::select! {
                biased;
                () = self.stop.cancelled() => return None,
                waited = wait(changed, self.keep_alive) => waited,
            };
            match waited {
                Waited::Changed => {}
                Waited::Quiet => return Some((Ok(Bytes::from_static(b":\n\n")), self)),
            }
        }
    }
}

enum Waited {
    Changed,
    /// The keep-alive interval passed with nothing new.
    Quiet,
}

async fn wait(changed: impl Future<Output = ()>, keep_alive: Option<Duration>) -> Waited {
    match keep_alive {
        Some(interval) => match tokio::time::timeout(interval, changed).await {
            Ok(()) => Waited::Changed,
            Err(_) => Waited::Quiet,
        },
        None => {
            changed.await;
            Waited::Changed
        }
    }
}

/// `<stream>-<seq>` from a `Last-Event-ID` header.
pub(super) fn parse_event_id(id: &str) -> Option<(u64, u64)> {
    let (stream, seq) = id.trim().split_once('-')?;
    Some((stream.parse().ok()?, seq.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use toolwire_protocol::Notification;

    fn note(n: i64) -> Message {
        Message::Notification(Notification::new(format!("n{n}"), None))
    }

    #[tokio::test]
    async fn a_reader_resumes_after_the_last_event_it_saw_and_ends_with_the_log() {
        let log = EventLog::new(3, 8);
        log.push(&note(1));
        log.push(&note(2));
        log.abandon();
        let chunks: Vec<Bytes> = log
            .reader(true, 1, false, None, CancellationToken::new(), None)
            .map(|c| c.unwrap())
            .collect()
            .await;
        assert_eq!(
            chunks,
            [Bytes::from_static(
                b"id: 3-2\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"n2\"}\n\n"
            )]
        );
    }

    #[tokio::test]
    async fn the_log_keeps_only_its_capacity_and_close_stream_ends_readers() {
        let log = EventLog::new(1, 2);
        for n in 1..=5 {
            log.push(&note(n));
        }
        let mut reader = Box::pin(log.reader(true, 0, true, None, CancellationToken::new(), None));
        assert_eq!(
            reader.next().await.unwrap().unwrap(),
            Bytes::from_static(b"id: 1-0\nretry: 1000\ndata: \n\n")
        );
        let first = reader.next().await.unwrap().unwrap();
        assert!(first.starts_with(b"id: 1-4\n"), "{first:?}");
        let _ = reader.next().await;
        log.close_stream();
        assert!(reader.next().await.is_none());
        assert_eq!(parse_event_id(" 1-4 "), Some((1, 4)));
        assert_eq!(parse_event_id("x"), None);
    }

    /// `future`'s output, or a panic when it does not come within 5 s (a
    /// missed wake-up fails the test instead of hanging it).
    async fn within<F: std::future::Future>(future: F) -> F::Output {
        tokio::time::timeout(Duration::from_secs(5), future)
            .await
            .expect("woken within 5 s")
    }

    /// A reader that found nothing waits, and wakes for the next push; one
    /// given a keep-alive interval sends a comment when nothing comes.
    #[tokio::test(start_paused = true)]
    async fn a_waiting_reader_wakes_for_a_push_and_keeps_alive_when_quiet() {
        let log = EventLog::new(2, 8);
        let stop = CancellationToken::new();
        let mut reader = Box::pin(log.reader(true, 0, false, None, stop.clone(), None));
        let next = tokio::spawn(async move { (reader.next().await, reader) });
        tokio::task::yield_now().await;
        assert!(!next.is_finished());
        log.push(&note(1));
        let (chunk, mut reader) = within(next).await.unwrap();
        assert!(chunk.unwrap().unwrap().starts_with(b"id: 2-1\n"));
        log.finish(b"{}".to_vec());
        let last = reader.next().await.unwrap().unwrap();
        assert_eq!(last, Bytes::from_static(b"id: 2-2\ndata: {}\n\n"));
        assert!(reader.next().await.is_none());

        let quiet = EventLog::new(3, 8);
        let keep_alive = Some(Duration::from_secs(15));
        let mut reader = Box::pin(quiet.reader(true, 0, false, keep_alive, stop, None));
        assert_eq!(
            reader.next().await.unwrap().unwrap(),
            Bytes::from_static(b":\n\n")
        );
    }

    /// `opening` waits for the request's first message: its response alone
    /// is answered as JSON, anything before it makes a stream.
    #[tokio::test]
    async fn opening_waits_for_the_first_message() {
        let log = EventLog::new(4, 8);
        let waiting = {
            let log = Arc::clone(&log);
            tokio::spawn(async move { log.opening().await })
        };
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        log.finish(b"{\"ok\":1}".to_vec());
        match within(waiting).await.unwrap() {
            Opening::OnlyResponse(json) => assert_eq!(json, b"{\"ok\":1}"),
            Opening::Streaming => panic!("a lone response is sent as JSON"),
        }

        let log = EventLog::new(5, 8);
        let waiting = {
            let log = Arc::clone(&log);
            tokio::spawn(async move { log.opening().await })
        };
        tokio::task::yield_now().await;
        log.push(&note(1));
        assert!(matches!(within(waiting).await.unwrap(), Opening::Streaming));
    }
}
