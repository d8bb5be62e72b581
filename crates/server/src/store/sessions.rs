//! Where the records of legacy (2025-11-25) HTTP sessions live
//! ([`SessionStore`]), so that any instance can serve a session's next
//! request, and how the instances sharing them tell each other about
//! answers, cancellations, changes and endings ([`SessionEvent`]).
//!
//! What a session runs (its streams, the requests it waits on) stays in the
//! memory of the instance that runs it; the store holds what another
//! instance needs to take over the session: what `initialize` settled and
//! what the client asked for since.

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::broadcast;
use toolwire_protocol::{ClientCapabilities, Implementation, LoggingLevel, RequestId};

/// What a legacy session settled at `initialize`, and what its client
/// asked for since: enough for any instance to serve its next request.
///
/// ```
/// use toolwire_server::SessionRecord;
/// let record: SessionRecord = serde_json::from_value(serde_json::json!({
///     "principal": "anonymous",
///     "protocolVersion": "2025-11-25",
///     "clientCapabilities": {},
///     "clientInfo": {"name": "inspector", "version": "1.0.0"},
///     "logLevel": "info",
///     "subscriptions": ["file:///notes.txt"]
/// })).unwrap();
/// assert_eq!(record.protocol_version, "2025-11-25");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRecord {
    /// The key of the principal that opened it; no one else may use it.
    pub principal: String,
    /// The negotiated protocol version.
    pub protocol_version: String,
    /// What the client declared at `initialize`.
    pub client_capabilities: ClientCapabilities,
    /// Who the client said it is.
    pub client_info: Implementation,
    /// The level set with `logging/setLevel` (debug until then).
    pub log_level: LoggingLevel,
    /// The URIs subscribed to with `resources/subscribe`.
    #[serde(default)]
    pub subscriptions: Vec<String>,
}

/// A message between the instances that share sessions.
///
/// ```
/// use toolwire_server::SessionEvent;
/// let event = SessionEvent::Ended { session: "4f1c".into() };
/// assert_eq!(event.session(), "4f1c");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "camelCase")]
pub enum SessionEvent {
    /// The client's answer to a request a server sent it (an elicitation,
    /// a sampling or roots request), for the instance waiting on it.
    Answer {
        /// The session id.
        session: String,
        /// The JSON-RPC response as the client sent it.
        message: Value,
    },
    /// The client cancelled one of its requests.
    Cancel {
        /// The session id.
        session: String,
        /// The id of the cancelled request.
        request: RequestId,
    },
    /// The record changed (log level, subscriptions).
    Updated {
        /// The session id.
        session: String,
        /// The record as it is now.
        record: Box<SessionRecord>,
    },
    /// The session ended (`DELETE`).
    Ended {
        /// The session id.
        session: String,
    },
}

impl SessionEvent {
    /// The session the event is about.
    pub fn session(&self) -> &str {
        match self {
            SessionEvent::Answer { session, .. }
            | SessionEvent::Cancel { session, .. }
            | SessionEvent::Updated { session, .. }
            | SessionEvent::Ended { session } => session,
        }
    }
}

/// What [`SessionStore::refresh`] found.
#[derive(Debug, Clone, PartialEq)]
pub enum Refreshed {
    /// The session ended, expired or never existed.
    Gone,
    /// Its record as it is now, and the revision to name next time (0: the
    /// store keeps none, so it never answers [`Refreshed::Unchanged`]).
    Record {
        /// The record (boxed: the other answers are small).
        record: Box<SessionRecord>,
        /// The store's revision of it.
        revision: u64,
    },
    /// The record is still the revision the caller saw.
    Unchanged,
}

/// The store could not be reached.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SessionStoreUnavailable(pub String);

/// Where the records of legacy HTTP sessions live. The default,
/// [`InMemorySessionStore`], serves one instance; a shared store (Redis)
/// lets several instances behind one load balancer serve every session.
///
/// A record expires `ttl` after it was last created, loaded or saved.
///
/// ```
/// # async fn demo() {
/// use std::time::Duration;
/// use toolwire_server::{InMemorySessionStore, SessionStore};
/// let store = InMemorySessionStore::new();
/// assert_eq!(store.load("unknown", Duration::from_secs(60)).await, Ok(None));
/// # }
/// ```
pub trait SessionStore: Send + Sync + fmt::Debug + 'static {
    /// Stores the record of a new session.
    fn create<'a>(
        &'a self,
        id: &'a str,
        record: &'a SessionRecord,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), SessionStoreUnavailable>>;

    /// The record of `id`, its expiry pushed back to `ttl` from now; `None`
    /// when it ended, expired or never existed.
    fn load<'a>(
        &'a self,
        id: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Option<SessionRecord>, SessionStoreUnavailable>>;

    /// [`load`](Self::load) for a session this instance already runs, whose
    /// record it last had at `seen` (a [`Refreshed::Record`]'s revision):
    /// [`Refreshed::Unchanged`] when the record is still that one, which
    /// spares copying it on every request. The default, for stores that
    /// keep no revisions, is `load`'s answer at revision 0 (never seen).
    ///
    /// ```
    /// # async fn demo() {
    /// use std::time::Duration;
    /// use toolwire_server::{InMemorySessionStore, Refreshed, SessionStore};
    /// let store = InMemorySessionStore::new();
    /// let ttl = Duration::from_secs(60);
    /// assert_eq!(store.refresh("unknown", ttl, None).await, Ok(Refreshed::Gone));
    /// # }
    /// ```
    fn refresh<'a>(
        &'a self,
        id: &'a str,
        ttl: Duration,
        seen: Option<u64>,
    ) -> BoxFuture<'a, Result<Refreshed, SessionStoreUnavailable>> {
        let _ = seen;
        Box::pin(async move {
            Ok(match self.load(id, ttl).await? {
                Some(record) => Refreshed::Record {
                    record: Box::new(record),
                    revision: 0,
                },
                None => Refreshed::Gone,
            })
        })
    }

    /// Replaces the record of a session that still exists; false when it
    /// does not.
    fn save<'a>(
        &'a self,
        id: &'a str,
        record: &'a SessionRecord,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, SessionStoreUnavailable>>;

    /// Removes the record of `id`; false when there was none.
    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, SessionStoreUnavailable>>;

    /// Tells every instance sharing the store (this one may hear it too).
    /// Never waits; an event that cannot be sent is lost.
    fn publish(&self, event: SessionEvent);

    /// The events published from now on, by any instance.
    fn events(&self) -> BoxStream<'static, SessionEvent>;
}

/// Events waiting for a slow in-process listener before the oldest are lost.
const EVENT_BUFFER: usize = 1024;

/// Session records in this process's memory, with expiry (swept as the
/// table grows). Several HTTP endpoints of one process can share one.
pub struct InMemorySessionStore {
    records: Mutex<Records>,
    events: broadcast::Sender<SessionEvent>,
}

struct Records {
    /// By session id: ids this server made (random), which a client only
    /// looks up, so a fast hasher serves.
    entries: HashMap<String, Stored, foldhash::fast::RandomState>,
    next_sweep: usize,
    /// The revision the next create or save gives its record (from 1, so
    /// that 0 never names one).
    next_revision: u64,
}

struct Stored {
    record: SessionRecord,
    expiry: Instant,
    revision: u64,
}

impl fmt::Debug for InMemorySessionStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let len = self.records.lock().map_or(0, |r| r.entries.len());
        f.debug_struct("InMemorySessionStore")
            .field("records", &len)
            .finish()
    }
}

impl Default for InMemorySessionStore {
    fn default() -> Self {
        InMemorySessionStore {
            records: Mutex::new(Records {
                entries: HashMap::default(),
                next_sweep: 64,
                next_revision: 1,
            }),
            events: broadcast::channel(EVENT_BUFFER).0,
        }
    }
}

impl InMemorySessionStore {
    /// An empty store.
    pub fn new() -> Self {
        InMemorySessionStore::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Records> {
        self.records.lock().expect("session records lock")
    }
}

impl Records {
    /// The live record `id`, its expiry moved to `ttl` from `now`.
    fn refresh(&mut self, id: &str, now: Instant, ttl: Duration) -> Option<&mut Stored> {
        if self
            .entries
            .get(id)
            .is_some_and(|stored| stored.expiry <= now)
        {
            self.entries.remove(id);
        }
        let stored = self.entries.get_mut(id)?;
        stored.expiry = now + ttl;
        Some(stored)
    }

    fn take_revision(&mut self) -> u64 {
        let revision = self.next_revision;
        self.next_revision += 1;
        revision
    }

    fn sweep(&mut self, now: Instant) {
        self.entries.retain(|_, stored| stored.expiry > now);
        self.next_sweep = (self.entries.len() * 2).max(64);
    }
}

fn ready<T: Send + 'static>(value: T) -> BoxFuture<'static, T> {
    Box::pin(std::future::ready(value))
}

impl SessionStore for InMemorySessionStore {
    fn create<'a>(
        &'a self,
        id: &'a str,
        record: &'a SessionRecord,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), SessionStoreUnavailable>> {
        let now = Instant::now();
        let mut records = self.lock();
        if records.entries.len() >= records.next_sweep {
            records.sweep(now);
        }
        let stored = Stored {
            record: record.clone(),
            expiry: now + ttl,
            revision: records.take_revision(),
        };
        records.entries.insert(id.to_owned(), stored);
        ready(Ok(()))
    }

    fn load<'a>(
        &'a self,
        id: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Option<SessionRecord>, SessionStoreUnavailable>> {
        let mut records = self.lock();
        let record = records.refresh(id, Instant::now(), ttl);
        ready(Ok(record.map(|stored| stored.record.clone())))
    }

    fn refresh<'a>(
        &'a self,
        id: &'a str,
        ttl: Duration,
        seen: Option<u64>,
    ) -> BoxFuture<'a, Result<Refreshed, SessionStoreUnavailable>> {
        let mut records = self.lock();
        let refreshed = match records.refresh(id, Instant::now(), ttl) {
            None => Refreshed::Gone,
            Some(stored) if seen == Some(stored.revision) => Refreshed::Unchanged,
            Some(stored) => Refreshed::Record {
                record: Box::new(stored.record.clone()),
                revision: stored.revision,
            },
        };
        ready(Ok(refreshed))
    }

    fn save<'a>(
        &'a self,
        id: &'a str,
        record: &'a SessionRecord,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, SessionStoreUnavailable>> {
        let mut records = self.lock();
        let revision = records.take_revision();
        let saved = match records.refresh(id, Instant::now(), ttl) {
            Some(stored) => {
                stored.record = record.clone();
                stored.revision = revision;
                true
            }
            None => false,
        };
        ready(Ok(saved))
    }

    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, SessionStoreUnavailable>> {
        let now = Instant::now();
        let removed = self
            .lock()
            .entries
            .remove(id)
            .is_some_and(|stored| stored.expiry > now);
        ready(Ok(removed))
    }

    fn publish(&self, event: SessionEvent) {
        // No listener is no error: nothing needs telling.
        let _ = self.events.send(event);
    }

    fn events(&self) -> BoxStream<'static, SessionEvent> {
        let receiver = self.events.subscribe();
        Box::pin(futures::stream::unfold(receiver, |mut receiver| async {
            loop {
                match receiver.recv().await {
                    Ok(event) => return Some((event, receiver)),
                    Err(broadcast::error::RecvError::Lagged(missed)) => {
                        tracing::warn!(missed, "a session listener fell behind; events lost");
                    }
                    Err(broadcast::error::RecvError::Closed) => return None,
                }
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    fn record(principal: &str) -> SessionRecord {
        SessionRecord {
            principal: principal.into(),
            protocol_version: "2025-11-25".into(),
            client_capabilities: ClientCapabilities::default(),
            client_info: Implementation::new("client", "1.0.0"),
            log_level: LoggingLevel::Debug,
            subscriptions: Vec::new(),
        }
    }

    #[tokio::test]
    async fn records_expire_unless_used_and_are_saved_only_while_they_exist() {
        let store = InMemorySessionStore::new();
        let ttl = Duration::from_millis(60);
        store.create("a", &record("p"), ttl).await.unwrap();
        for _ in 0..3 {
            tokio::time::sleep(Duration::from_millis(30)).await;
            assert_eq!(store.load("a", ttl).await.unwrap(), Some(record("p")));
        }
        let mut changed = record("p");
        changed.log_level = LoggingLevel::Error;
        assert_eq!(store.save("a", &changed, ttl).await, Ok(true));
        assert_eq!(store.load("a", ttl).await.unwrap(), Some(changed.clone()));
        tokio::time::sleep(Duration::from_millis(80)).await;
        assert_eq!(store.load("a", ttl).await, Ok(None));
        assert_eq!(store.save("a", &changed, ttl).await, Ok(false));
        assert_eq!(store.remove("a").await, Ok(false));

        store.create("b", &record("p"), ttl).await.unwrap();
        assert_eq!(store.remove("b").await, Ok(true));
        assert_eq!(store.load("b", ttl).await, Ok(None));
    }

    #[tokio::test]
    async fn refresh_copies_a_record_only_when_it_changed_since_the_revision_seen() {
        let store = InMemorySessionStore::new();
        let ttl = Duration::from_secs(60);
        store.create("a", &record("p"), ttl).await.unwrap();
        let Ok(Refreshed::Record {
            record: found,
            revision,
        }) = store.refresh("a", ttl, None).await
        else {
            panic!("a record was expected");
        };
        assert_eq!(*found, record("p"));
        assert_ne!(revision, 0);
        let unchanged = store.refresh("a", ttl, Some(revision)).await;
        assert_eq!(unchanged, Ok(Refreshed::Unchanged));

        let mut changed = record("p");
        changed.log_level = LoggingLevel::Error;
        store.save("a", &changed, ttl).await.unwrap();
        let Ok(Refreshed::Record {
            record: found,
            revision: newer,
        }) = store.refresh("a", ttl, Some(revision)).await
        else {
            panic!("the saved record was expected");
        };
        assert_eq!((*found, newer > revision), (changed, true));

        // A session made again under the same id is never "unchanged".
        store.remove("a").await.unwrap();
        assert_eq!(
            store.refresh("a", ttl, Some(newer)).await,
            Ok(Refreshed::Gone)
        );
        store.create("a", &record("p"), ttl).await.unwrap();
        let again = store.refresh("a", ttl, Some(newer)).await;
        assert!(matches!(again, Ok(Refreshed::Record { .. })), "{again:?}");
    }

    #[tokio::test]
    async fn events_reach_every_listener() {
        let store = InMemorySessionStore::new();
        let (mut one, mut two) = (store.events(), store.events());
        let event = SessionEvent::Ended {
            session: "a".into(),
        };
        store.publish(event.clone());
        assert_eq!(one.next().await, Some(event.clone()));
        assert_eq!(two.next().await, Some(event));
    }

    #[test]
    fn events_travel_as_tagged_json() {
        let event = SessionEvent::Cancel {
            session: "s".into(),
            request: RequestId::Number(7),
        };
        let json = serde_json::to_value(&event).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"event": "cancel", "session": "s", "request": 7})
        );
        assert_eq!(serde_json::from_value::<SessionEvent>(json).unwrap(), event);
    }
}
