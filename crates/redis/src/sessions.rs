//! [`RedisSessionStore`]: the records of legacy (2025-11-25) HTTP sessions
//! in Redis, and the events between the instances serving them.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;
use toolwire_server::{
    InMemorySessionStore, SessionEvent, SessionRecord, SessionStore, SessionStoreUnavailable,
};

use crate::connection::{Failure, RedisConnection};
use crate::keys::session_key;
use crate::subscriber::{self, listen_for_ever, publish_queued};

/// Events waiting to be sent to Redis; past it new ones are dropped.
const OUTGOING_BUFFER: usize = 1024;

/// Legacy session records shared by every instance on the same Redis and
/// key prefix, so that a session opened on one instance is served by any:
/// no sticky sessions at the load balancer.
///
/// * A record is a JSON string under `{prefix}session:ID` with a TTL of the
///   endpoint's idle timeout: `SET … PX` creates it, `GETEX … PX` loads it
///   and pushes its expiry back (one round trip per legacy request),
///   `SET … XX PX` saves a change, `DEL` ends it. Expiry is Redis's own.
/// * Events (an answer or a cancellation for a request running on another
///   instance, a record change, an ending) are published on
///   `{prefix}sessions` as `{"from":"<instance>","event":{…}}`; each
///   instance skips its own, and also hears them in process. Publishing
///   never waits for Redis.
///
/// While Redis is unreachable every store method fails, naming Redis and
/// its address: new sessions are refused (503), a session this instance
/// runs goes on, a session it does not run is refused (503) until Redis is
/// back. Events sent meanwhile are lost: an answer meant for another
/// instance is waited for until the request to the client times out; an
/// ending or change is caught up by the next load of the record. A record
/// that is not a valid JSON record is treated as absent (and logged).
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use toolwire_redis::{RedisConfig, RedisSessionStore};
/// use toolwire_server::http::HttpConfig;
///
/// let redis = RedisConfig::new("redis://127.0.0.1:6379").connect().await?;
/// let config = HttpConfig::new().session_store(Arc::new(RedisSessionStore::new(&redis)));
/// # drop(config);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct RedisSessionStore {
    redis: RedisConnection,
    local: Arc<InMemorySessionStore>,
    id: Arc<str>,
    outgoing: mpsc::Sender<String>,
    subscriber: AbortHandle,
}

impl RedisSessionStore {
    /// A store on `redis`, listening on `{prefix}sessions` in the background.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime: it spawns its two tasks.
    pub fn new(redis: &RedisConnection) -> Self {
        let local = Arc::new(InMemorySessionStore::new());
        let id: Arc<str> = Arc::from(format!("{:016x}", rand::random::<u64>()));
        let channel = format!("{}sessions", redis.key_prefix());
        let (outgoing, queue) = mpsc::channel(OUTGOING_BUFFER);
        let what = "session events";
        tokio::spawn(publish_queued(redis.clone(), channel.clone(), queue, what));
        let listener = Arc::new(Listener {
            id: id.clone(),
            local: local.clone(),
        });
        let subscriber = tokio::spawn(listen_for_ever(redis.clone(), channel, listener));
        RedisSessionStore {
            redis: redis.clone(),
            local,
            id,
            outgoing,
            subscriber: subscriber.abort_handle(),
        }
    }

    fn key(&self, id: &str) -> String {
        session_key(self.redis.key_prefix(), id)
    }

    /// `SET key json PX ttl [XX]`; true when Redis set it.
    async fn set(
        &self,
        id: &str,
        record: &SessionRecord,
        ttl: Duration,
        only_if_present: bool,
    ) -> Result<bool, SessionStoreUnavailable> {
        let json = serde_json::to_string(record).expect("a record serializes");
        let mut command = redis::cmd("SET");
        command
            .arg(self.key(id))
            .arg(json)
            .arg("PX")
            .arg(millis(ttl));
        if only_if_present {
            command.arg("XX");
        }
        let reply: Option<String> = self.redis.query(&command).await.map_err(unavailable)?;
        Ok(reply.is_some())
    }
}

impl Drop for RedisSessionStore {
    fn drop(&mut self) {
        self.subscriber.abort();
    }
}

fn millis(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1)
}

fn unavailable(failure: Failure) -> SessionStoreUnavailable {
    SessionStoreUnavailable(failure.0)
}

impl SessionStore for RedisSessionStore {
    fn create<'a>(
        &'a self,
        id: &'a str,
        record: &'a SessionRecord,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), SessionStoreUnavailable>> {
        Box::pin(async move { self.set(id, record, ttl, false).await.map(drop) })
    }

    fn load<'a>(
        &'a self,
        id: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Option<SessionRecord>, SessionStoreUnavailable>> {
        Box::pin(async move {
            let mut command = redis::cmd("GETEX");
            command.arg(self.key(id)).arg("PX").arg(millis(ttl));
            let json: Option<String> = self.redis.query(&command).await.map_err(unavailable)?;
            let Some(json) = json else {
                return Ok(None);
            };
            match serde_json::from_str(&json) {
                Ok(record) => Ok(Some(record)),
                Err(error) => {
                    tracing::warn!(session = id, %error, "a session record in Redis is not valid; the session is treated as ended");
                    Ok(None)
                }
            }
        })
    }

    fn save<'a>(
        &'a self,
        id: &'a str,
        record: &'a SessionRecord,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, SessionStoreUnavailable>> {
        Box::pin(self.set(id, record, ttl, true))
    }

    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, SessionStoreUnavailable>> {
        Box::pin(async move {
            let mut command = redis::cmd("DEL");
            command.arg(self.key(id));
            let removed: i64 = self.redis.query(&command).await.map_err(unavailable)?;
            Ok(removed > 0)
        })
    }

    fn publish(&self, event: SessionEvent) {
        let wire = Wire {
            from: self.id.to_string(),
            event: event.clone(),
        };
        let message = serde_json::to_string(&wire).expect("an event serializes");
        if self.outgoing.try_send(message).is_err() {
            tracing::debug!(
                "session event not sent to other instances: the outgoing queue is full"
            );
        }
        self.local.publish(event);
    }

    fn events(&self) -> BoxStream<'static, SessionEvent> {
        self.local.events()
    }
}

/// One message on the channel.
#[derive(Debug, Serialize, Deserialize)]
struct Wire {
    from: String,
    event: SessionEvent,
}

/// Hears other instances' events and tells this process's listeners.
struct Listener {
    id: Arc<str>,
    local: Arc<InMemorySessionStore>,
}

impl subscriber::Listener for Listener {
    fn name(&self) -> &str {
        "session events"
    }

    /// Nothing to catch up: a missed ending or change is seen at the
    /// record's next load; a missed answer times out.
    async fn subscribed(&self, _missed: bool) -> Result<(), Failure> {
        Ok(())
    }

    fn receive(&self, payload: &[u8]) {
        match serde_json::from_slice::<Wire>(payload) {
            Ok(wire) if *wire.from == *self.id => {}
            Ok(wire) => self.local.publish(wire.event),
            Err(error) => {
                let message = String::from_utf8_lossy(payload);
                tracing::debug!(%error, %message, "ignored a message on the session channel");
            }
        }
    }
}
