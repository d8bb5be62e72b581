//! The legacy sessions of one HTTP endpoint: minted at `initialize` with
//! 128 random bits, bound to the principal that opened them, ended by
//! `DELETE` or after an idle timeout, and capped in number.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use rand::TryRngCore;
use tokio_util::sync::CancellationToken;
use toolwire_protocol::RequestId;

use super::config::HttpConfig;
use super::event_log::EventLog;
use crate::context::Principal;
use crate::transport::legacy::LegacySession;

/// Finished request streams a session keeps for resumption.
const FINISHED_STREAMS_KEPT: usize = 8;

/// The stream number of a session's standalone (GET) stream.
pub(super) const STANDALONE_STREAM: u64 = 0;

/// The open legacy sessions of an endpoint.
///
/// ```
/// # async fn demo(server: toolwire_server::Server) -> std::io::Result<()> {
/// use toolwire_server::http::{HttpConfig, HttpServer};
/// let http = HttpServer::bind("127.0.0.1:0".parse().unwrap(), server, HttpConfig::new()).await?;
/// assert_eq!(http.sessions().len(), 0);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SessionTable {
    inner: Arc<TableInner>,
}

#[derive(Debug)]
struct TableInner {
    sessions: Mutex<HashMap<String, Arc<HttpSession>>>,
    idle_timeout: Duration,
    max_sessions: usize,
    replay_events: usize,
    sweeping: AtomicBool,
}

/// Why a session could not be opened.
#[derive(Debug)]
pub(super) struct TableFull(pub(super) usize);

impl SessionTable {
    pub(super) fn for_config(config: &HttpConfig) -> Self {
        SessionTable {
            inner: Arc::new(TableInner {
                sessions: Mutex::default(),
                idle_timeout: config.session_idle_timeout,
                max_sessions: config.max_sessions,
                replay_events: config.replay_events,
                sweeping: AtomicBool::new(false),
            }),
        }
    }

    /// Sessions open right now.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// True when no session is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Opens a session for `principal`, unless the table is full.
    pub(super) fn open(
        &self,
        legacy: LegacySession,
        principal: &Principal,
    ) -> Result<Arc<HttpSession>, TableFull> {
        self.start_sweeping();
        let mut sessions = self.lock();
        if sessions.len() >= self.inner.max_sessions {
            return Err(TableFull(self.inner.max_sessions));
        }
        let session = Arc::new(HttpSession {
            id: new_session_id(),
            principal: principal.key().to_owned(),
            legacy,
            replay_events: self.inner.replay_events,
            last_used: Mutex::new(Instant::now()),
            streams: Mutex::default(),
            in_flight: Mutex::default(),
            ended: CancellationToken::new(),
            standalone_open: AtomicBool::new(false),
            forwarding: AtomicBool::new(false),
        });
        sessions.insert(session.id.clone(), Arc::clone(&session));
        Ok(session)
    }

    /// The session `id` of `principal`, marked as used; `None` when unknown,
    /// ended, expired or opened by someone else.
    pub(super) fn get(&self, id: &str, principal: &Principal) -> Option<Arc<HttpSession>> {
        let session = self.lock().get(id).cloned()?;
        if session.principal != principal.key() {
            return None;
        }
        session.touch();
        Some(session)
    }

    /// Ends the session `id` of `principal`; false when there is none.
    pub(super) fn end(&self, id: &str, principal: &Principal) -> bool {
        let mut sessions = self.lock();
        match sessions.get(id) {
            Some(session) if session.principal == principal.key() => {
                let session = sessions.remove(id).expect("present");
                drop(sessions);
                session.end();
                true
            }
            _ => false,
        }
    }

    /// Ends every session (the server is shutting down).
    pub(super) fn end_all(&self) {
        let sessions: Vec<Arc<HttpSession>> = self.lock().drain().map(|(_, s)| s).collect();
        for session in sessions {
            session.end();
        }
    }

    /// Ends every session idle longer than the timeout.
    fn sweep(&self) {
        let now = Instant::now();
        let idle = self.inner.idle_timeout;
        let expired: Vec<Arc<HttpSession>> = {
            let mut sessions = self.lock();
            let ids: Vec<String> = sessions
                .values()
                .filter(|s| s.is_idle(now, idle))
                .map(|s| s.id.clone())
                .collect();
            ids.iter().filter_map(|id| sessions.remove(id)).collect()
        };
        for session in expired {
            session.end();
        }
        let mut sessions = self.lock();
        if sessions.is_empty() && sessions.capacity() > 64 {
            sessions.shrink_to_fit();
        }
    }

    /// Starts the sweeper task once; it stops when the table is dropped.
    fn start_sweeping(&self) {
        if self.inner.sweeping.swap(true, Ordering::AcqRel) {
            return;
        }
        let table = Arc::downgrade(&self.inner);
        let period =
            (self.inner.idle_timeout / 4).clamp(Duration::from_millis(50), Duration::from_secs(30));
        tokio::spawn(sweep_until_dropped(table, period));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<HttpSession>>> {
        self.inner.sessions.lock().expect("session table lock")
    }
}

async fn sweep_until_dropped(table: Weak<TableInner>, period: Duration) {
    let mut ticks = tokio::time::interval(period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let Some(inner) = table.upgrade() else {
            return;
        };
        SessionTable { inner }.sweep();
    }
}

/// 128 random bits as 32 lowercase hex digits (visible ASCII, as required).
fn new_session_id() -> String {
    let mut bytes = [0u8; 16];
    rand::rngs::OsRng
        .try_fill_bytes(&mut bytes)
        .expect("the operating system's random number generator works");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// One legacy session over HTTP.
#[derive(Debug)]
pub(super) struct HttpSession {
    pub(super) id: String,
    principal: String,
    pub(super) legacy: LegacySession,
    replay_events: usize,
    last_used: Mutex<Instant>,
    streams: Mutex<Streams>,
    in_flight: Mutex<HashMap<RequestId, CancellationToken>>,
    /// Fired when the session ends: its streams and requests stop.
    pub(super) ended: CancellationToken,
    standalone_open: AtomicBool,
    forwarding: AtomicBool,
}

/// The resumable streams of a session.
#[derive(Debug, Default)]
struct Streams {
    next: u64,
    open: HashMap<u64, Arc<EventLog>>,
}

impl HttpSession {
    fn touch(&self) {
        *self.last_used.lock().expect("last-used lock") = Instant::now();
    }

    /// Idle: unused for `idle`, with no request running and no stream open.
    fn is_idle(&self, now: Instant, idle: Duration) -> bool {
        let last = *self.last_used.lock().expect("last-used lock");
        now.duration_since(last) >= idle
            && self.in_flight.lock().expect("in-flight lock").is_empty()
            && !self.standalone_open.load(Ordering::Acquire)
    }

    fn end(&self) {
        self.ended.cancel();
        for token in self.in_flight.lock().expect("in-flight lock").values() {
            token.cancel();
        }
    }

    /// A new stream for one request's messages. Finished streams are kept
    /// a while for resumption; the oldest beyond the bound are forgotten.
    pub(super) fn new_stream(&self) -> Arc<EventLog> {
        let mut streams = self.streams.lock().expect("streams lock");
        let mut finished: Vec<u64> = streams
            .open
            .iter()
            .filter(|(n, log)| **n != STANDALONE_STREAM && log.is_finished())
            .map(|(n, _)| *n)
            .collect();
        if finished.len() > FINISHED_STREAMS_KEPT {
            finished.sort_unstable();
            for old in &finished[..finished.len() - FINISHED_STREAMS_KEPT] {
                streams.open.remove(old);
            }
        }
        streams.next += 1;
        let number = streams.next;
        let log = EventLog::new(number, self.replay_events);
        streams.open.insert(number, Arc::clone(&log));
        log
    }

    /// Forgets a stream that was answered as plain JSON.
    pub(super) fn drop_stream(&self, stream: u64) {
        self.streams
            .lock()
            .expect("streams lock")
            .open
            .remove(&stream);
    }

    /// The stream numbered `stream`, if it is still kept.
    pub(super) fn stream(&self, stream: u64) -> Option<Arc<EventLog>> {
        self.streams
            .lock()
            .expect("streams lock")
            .open
            .get(&stream)
            .cloned()
    }

    /// The standalone stream, made on first use; `true` the first time.
    pub(super) fn standalone(&self) -> (Arc<EventLog>, bool) {
        let mut streams = self.streams.lock().expect("streams lock");
        if let Some(log) = streams.open.get(&STANDALONE_STREAM) {
            return (Arc::clone(log), false);
        }
        let log = EventLog::new(STANDALONE_STREAM, self.replay_events);
        streams.open.insert(STANDALONE_STREAM, Arc::clone(&log));
        let first = !self.forwarding.swap(true, Ordering::AcqRel);
        (log, first)
    }

    /// Marks the standalone stream connected; `None` if it already is.
    pub(super) fn claim_standalone(self: &Arc<Self>) -> Option<StandaloneClaim> {
        if self.standalone_open.swap(true, Ordering::AcqRel) {
            return None;
        }
        Some(StandaloneClaim(Arc::clone(self)))
    }

    /// Registers a running request, for `notifications/cancelled`.
    pub(super) fn start_request(&self, id: RequestId) -> CancellationToken {
        let token = self.ended.child_token();
        self.in_flight
            .lock()
            .expect("in-flight lock")
            .insert(id, token.clone());
        token
    }

    pub(super) fn finish_request(&self, id: &RequestId) {
        self.in_flight.lock().expect("in-flight lock").remove(id);
        self.touch();
    }

    /// Cancels the running request `id`, if any.
    pub(super) fn cancel_request(&self, id: &RequestId) {
        if let Some(token) = self.in_flight.lock().expect("in-flight lock").get(id) {
            token.cancel();
        }
    }
}

/// Held while a client reads the standalone stream.
#[derive(Debug)]
pub(super) struct StandaloneClaim(Arc<HttpSession>);

impl Drop for StandaloneClaim {
    fn drop(&mut self) {
        self.0.standalone_open.store(false, Ordering::Release);
        self.0.touch();
    }
}
