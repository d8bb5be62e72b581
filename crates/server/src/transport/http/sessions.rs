//! The legacy sessions of one HTTP endpoint: minted at `initialize` with
//! 128 random bits, bound to the principal that opened them, ended by
//! `DELETE` or after an idle timeout, and capped in number.
//!
//! Each session's record sits in the endpoint's [`SessionStore`]; the
//! table holds the sessions this instance runs. A request naming a session
//! this instance does not run (another instance opened it, behind the same
//! load balancer and shared store) takes it over from its record. Answers
//! and cancellations meant for a request running elsewhere, record changes
//! and endings travel as [`SessionEvent`]s.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use futures::StreamExt;
use rand::TryRngCore;
use tokio_util::sync::CancellationToken;
use toolwire_protocol::{Message, RequestId};

use super::config::HttpConfig;
use super::event_log::EventLog;
use crate::context::Principal;
use crate::server::Server;
use crate::store::sessions::{Refreshed, SessionEvent, SessionStore, SessionStoreUnavailable};
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

type SessionsById = HashMap<String, Arc<HttpSession>, foldhash::fast::RandomState>;

#[derive(Debug)]
struct TableInner {
    /// By session id. The ids are this server's (random): a client's header
    /// only looks one up, so a fast hasher serves.
    sessions: Mutex<SessionsById>,
    store: Arc<dyn SessionStore>,
    server: Server,
    /// Starts the ids of this instance's requests to clients.
    tag: String,
    idle_timeout: Duration,
    max_sessions: usize,
    replay_events: usize,
    started: AtomicBool,
}

/// Why a session could not be opened.
#[derive(Debug)]
pub(super) enum OpenRefused {
    /// This instance runs its limit of sessions.
    Full(usize),
    /// The session store cannot be reached.
    Store(SessionStoreUnavailable),
}

impl SessionTable {
    pub(super) fn for_config(config: &HttpConfig, server: &Server) -> Self {
        SessionTable {
            inner: Arc::new(TableInner {
                sessions: Mutex::default(),
                store: Arc::clone(&config.session_store),
                server: server.clone(),
                tag: random_hex(4),
                idle_timeout: config.session_idle_timeout,
                max_sessions: config.max_sessions,
                replay_events: config.replay_events,
                started: AtomicBool::new(false),
            }),
        }
    }

    /// Sessions this instance runs right now.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// True when this instance runs no session.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Opens a session for `principal`, unless this instance is full or
    /// the store cannot record it.
    pub(super) async fn open(
        &self,
        legacy: LegacySession,
        principal: &Principal,
    ) -> Result<Arc<HttpSession>, OpenRefused> {
        self.start_background_tasks();
        if self.len() >= self.inner.max_sessions {
            return Err(OpenRefused::Full(self.inner.max_sessions));
        }
        let id = random_hex(16);
        let legacy = legacy.tag_requests(&self.inner.tag);
        let record = legacy.record(&principal.key());
        self.inner
            .store
            .create(&id, &record, self.inner.idle_timeout)
            .await
            .map_err(OpenRefused::Store)?;
        let session = self.run_here(id, &principal.key(), legacy);
        Ok(session)
    }

    /// The session `id` of `principal`, marked as used and taken over from
    /// its record when another instance opened it; `None` when unknown,
    /// ended, expired or someone else's. A session this instance runs is
    /// served while the store is unreachable; another is refused.
    pub(super) async fn get(
        &self,
        id: &str,
        principal: &Principal,
    ) -> Result<Option<Arc<HttpSession>>, SessionStoreUnavailable> {
        self.start_background_tasks();
        let local = self.lock().get(id).cloned();
        let seen = local.as_ref().map(|session| session.seen_revision());
        let refreshed = match self
            .inner
            .store
            .refresh(id, self.inner.idle_timeout, seen)
            .await
        {
            Ok(refreshed) => refreshed,
            Err(unavailable) => {
                let session = local.ok_or(unavailable)?;
                tracing::warn!(
                    session = id,
                    "session store unreachable; serving this instance's copy of the session"
                );
                return Ok(session.owned_by(principal).then_some(session));
            }
        };
        let session = match (refreshed, local) {
            (Refreshed::Gone, local) => {
                if local.is_some() {
                    self.end_here(id);
                }
                return Ok(None);
            }
            (Refreshed::Unchanged, Some(session)) if session.owned_by(principal) => session,
            (Refreshed::Unchanged, _) => return Ok(None),
            (Refreshed::Record { record, .. }, _) if !principal.has_key(&record.principal) => {
                return Ok(None);
            }
            (Refreshed::Record { record, revision }, Some(session)) => {
                session.legacy.apply(&record);
                session.saw_revision(revision);
                session
            }
            (Refreshed::Record { record, revision }, None) => {
                let legacy = LegacySession::resume(&self.inner.server, *record)
                    .tag_requests(&self.inner.tag);
                let session = self.run_here(id.to_owned(), &principal.key(), legacy);
                session.saw_revision(revision);
                session
            }
        };
        session.touch();
        Ok(Some(session))
    }

    /// Ends the session `id` of `principal` on every instance; false when
    /// there is none.
    pub(super) async fn end(
        &self,
        id: &str,
        principal: &Principal,
    ) -> Result<bool, SessionStoreUnavailable> {
        let store = &self.inner.store;
        match store.load(id, self.inner.idle_timeout).await? {
            Some(record) if record.principal == principal.key() => {}
            _ => return Ok(false),
        }
        let removed = store.remove(id).await?;
        self.end_here(id);
        store.publish(SessionEvent::Ended {
            session: id.to_owned(),
        });
        Ok(removed)
    }

    /// Saves what the client changed in `session` (log level,
    /// subscriptions) and tells the other instances.
    pub(super) async fn save(&self, session: &HttpSession) {
        let record = session.legacy.record(&session.principal);
        let ttl = self.inner.idle_timeout;
        match self.inner.store.save(&session.id, &record, ttl).await {
            Ok(true) => self.inner.store.publish(SessionEvent::Updated {
                session: session.id.clone(),
                record: Box::new(record),
            }),
            Ok(false) => self.end_here(&session.id),
            Err(unavailable) => {
                tracing::warn!(session = %session.id, %unavailable, "a session change reaches this instance only");
            }
        }
    }

    /// Hands a client's message that nothing here waits for to the other
    /// instances: an answer to one of their requests, or a cancellation of
    /// a request one of them runs.
    pub(super) fn pass_on(&self, session: &str, event: SessionEvent) {
        debug_assert_eq!(event.session(), session);
        self.inner.store.publish(event);
    }

    /// Ends every session this instance runs (it is shutting down); their
    /// records stay for the other instances.
    pub(super) fn end_all(&self) {
        let sessions: Vec<Arc<HttpSession>> = self.lock().drain().map(|(_, s)| s).collect();
        for session in sessions {
            session.end();
        }
    }

    fn run_here(&self, id: String, principal: &str, legacy: LegacySession) -> Arc<HttpSession> {
        let session = Arc::new(HttpSession {
            id: id.clone(),
            principal: principal.to_owned(),
            legacy,
            replay_events: self.inner.replay_events,
            last_used: Mutex::new(Instant::now()),
            streams: Mutex::default(),
            in_flight: Mutex::default(),
            ended: CancellationToken::new(),
            standalone_open: AtomicBool::new(false),
            forwarding: AtomicBool::new(false),
            seen_revision: AtomicU64::new(0),
        });
        // Two requests taking over the same session at once: one copy wins.
        Arc::clone(self.lock().entry(id).or_insert(session))
    }

    /// Stops running session `id` here (its requests and streams end).
    fn end_here(&self, id: &str) {
        let removed = self.lock().remove(id);
        if let Some(session) = removed {
            session.end();
        }
    }

    /// What another instance told: an answer or cancellation for a request
    /// of a session running here, a change, an ending.
    fn receive(&self, event: SessionEvent) {
        let Some(session) = self.lock().get(event.session()).cloned() else {
            return;
        };
        match event {
            SessionEvent::Answer { message, .. } => {
                if let Ok(message) = serde_json::from_value::<Message>(message) {
                    session.legacy.answer(message);
                }
            }
            SessionEvent::Cancel { request, .. } => {
                session.cancel_request(&request);
            }
            SessionEvent::Updated { record, .. } => session.legacy.apply(&record),
            SessionEvent::Ended { session } => self.end_here(&session),
        }
    }

    /// Stops running sessions idle longer than the timeout (their records
    /// expire in the store by themselves); keeps the records of busy ones
    /// alive, and stops those whose record is gone (ended elsewhere).
    async fn sweep(&self) {
        let now = Instant::now();
        let idle = self.inner.idle_timeout;
        let (idle_ids, busy_ids) = {
            let sessions = self.lock();
            let ids = |pick: &dyn Fn(&HttpSession) -> bool| -> Vec<String> {
                sessions
                    .values()
                    .filter(|s| pick(s))
                    .map(|s| s.id.clone())
                    .collect()
            };
            (ids(&|s| s.is_idle(now, idle)), ids(&HttpSession::is_busy))
        };
        for id in idle_ids {
            self.end_here(&id);
        }
        for id in busy_ids {
            if let Ok(None) = self.inner.store.load(&id, idle).await {
                self.end_here(&id);
            }
        }
        let mut sessions = self.lock();
        if sessions.is_empty() && sessions.capacity() > 64 {
            sessions.shrink_to_fit();
        }
    }

    /// Starts the sweeper and the event listener once; they stop when the
    /// table is dropped.
    fn start_background_tasks(&self) {
        if self.inner.started.swap(true, Ordering::AcqRel) {
            return;
        }
        let period =
            (self.inner.idle_timeout / 4).clamp(Duration::from_millis(50), Duration::from_secs(30));
        tokio::spawn(sweep_until_dropped(Arc::downgrade(&self.inner), period));
        let events = self.inner.store.events();
        tokio::spawn(listen_until_dropped(Arc::downgrade(&self.inner), events));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SessionsById> {
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
        SessionTable { inner }.sweep().await;
    }
}

async fn listen_until_dropped(
    table: Weak<TableInner>,
    mut events: futures::stream::BoxStream<'static, SessionEvent>,
) {
    while let Some(event) = events.next().await {
        let Some(inner) = table.upgrade() else {
            return;
        };
        SessionTable { inner }.receive(event);
    }
}

/// `bytes` random bytes as lowercase hex digits (visible ASCII, as session
/// ids must be).
fn random_hex(bytes: usize) -> String {
    let mut random = vec![0u8; bytes];
    rand::rngs::OsRng
        .try_fill_bytes(&mut random)
        .expect("the operating system's random number generator works");
    toolwire_protocol::hex::lower_hex(&random)
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
    /// The store's revision of the record last applied here (0: none).
    seen_revision: AtomicU64,
}

/// The resumable streams of a session.
#[derive(Debug, Default)]
struct Streams {
    next: u64,
    open: HashMap<u64, Arc<EventLog>>,
}

impl HttpSession {
    fn owned_by(&self, principal: &Principal) -> bool {
        principal.has_key(&self.principal)
    }

    /// The revision to name to [`SessionStore::refresh`]; 0 (no store
    /// revision) until a record was applied.
    fn seen_revision(&self) -> u64 {
        self.seen_revision.load(Ordering::Relaxed)
    }

    fn saw_revision(&self, revision: u64) {
        self.seen_revision.store(revision, Ordering::Relaxed);
    }

    fn touch(&self) {
        *self.last_used.lock().expect("last-used lock") = Instant::now();
    }

    /// Idle: unused for `idle`, with no request running and no stream open.
    fn is_idle(&self, now: Instant, idle: Duration) -> bool {
        let last = *self.last_used.lock().expect("last-used lock");
        now.duration_since(last) >= idle && !self.is_busy()
    }

    /// Busy: a request is running or the standalone stream is open.
    fn is_busy(&self) -> bool {
        !self.in_flight.lock().expect("in-flight lock").is_empty()
            || self.standalone_open.load(Ordering::Acquire)
    }

    fn end(&self) {
        self.ended.cancel();
        for token in self.in_flight.lock().expect("in-flight lock").values() {
            token.cancel();
        }
    }

    /// A new stream for one request's messages, not yet kept for
    /// resumption: see [`HttpSession::keep_stream`].
    pub(super) fn new_stream(&self) -> Arc<EventLog> {
        let number = {
            let mut streams = self.streams.lock().expect("streams lock");
            streams.next += 1;
            streams.next
        };
        EventLog::new(number, self.replay_events)
    }

    /// Keeps `log` for resumption (`GET` with `Last-Event-ID`) once it is
    /// sent as an SSE stream; a reply sent as plain JSON gave the client no
    /// event id to resume from, so it is never kept. Finished streams are
    /// kept up to a bound, the oldest forgotten first.
    pub(super) fn keep_stream(&self, log: &Arc<EventLog>) {
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
        streams.open.insert(log.stream(), Arc::clone(log));
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

    /// Cancels the running request `id`; false when none runs here.
    pub(super) fn cancel_request(&self, id: &RequestId) -> bool {
        match self.in_flight.lock().expect("in-flight lock").get(id) {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
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
