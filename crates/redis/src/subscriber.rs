//! A pub/sub subscription held for as long as its task runs: subscribes,
//! hands over every message, checks the connection with PING, and after a
//! failure subscribes again (waits of 100 ms doubling to 5 s), with one
//! warning per outage. What listens says what to do once subscribed (pub/sub
//! keeps nothing for an absent subscriber, so it may have missed messages).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use redis::aio::PubSub;
use tokio::sync::mpsc;
use tokio::time::{Instant, timeout};

use crate::connection::{Failure, RedisConnection};

/// The first wait before subscribing again after a failure.
const FIRST_RETRY: Duration = Duration::from_millis(100);

/// The longest wait between two subscription attempts.
pub(crate) const LAST_RETRY: Duration = Duration::from_secs(5);

/// How often the subscription is checked with PING: a connection that
/// died without closing (a lost peer, a dropped NAT entry) is noticed.
const PING_EVERY: Duration = Duration::from_secs(10);

/// What listens on a channel.
pub(crate) trait Listener: Send + Sync + 'static {
    /// What listens, for the logs ("change feed", "session events").
    fn name(&self) -> &str;

    /// Just subscribed; `missed` when messages may have been lost since the
    /// last subscription (or before the first). An error drops this
    /// subscription and subscribes again.
    fn subscribed(&self, missed: bool) -> impl Future<Output = Result<(), Failure>> + Send;

    /// One message on the channel.
    fn receive(&self, payload: &[u8]);
}

/// Keeps `listener` subscribed to `channel` for ever (abort the task to stop).
pub(crate) async fn listen_for_ever<L: Listener>(
    redis: RedisConnection,
    channel: String,
    listener: Arc<L>,
) {
    let mut delay = FIRST_RETRY;
    let mut outage = false;
    let mut missed = false;
    loop {
        let failure = match subscribe(&redis, &channel).await {
            Ok(pubsub) => {
                if outage {
                    tracing::info!(channel, "{} subscribed to Redis again", listener.name());
                    outage = false;
                }
                let since = Instant::now();
                let failure = match listener.subscribed(missed).await {
                    Ok(()) => relay(&redis, pubsub, &*listener).await,
                    Err(failure) => failure,
                };
                if since.elapsed() >= LAST_RETRY {
                    delay = FIRST_RETRY;
                }
                failure
            }
            Err(failure) => failure,
        };
        missed = true;
        if !outage {
            outage = true;
            tracing::warn!(%failure, channel, "{} lost its Redis subscription; messages from other instances are missed until it is back", listener.name());
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(LAST_RETRY);
    }
}

/// A pub/sub connection subscribed to `channel`.
async fn subscribe(redis: &RedisConnection, channel: &str) -> Result<PubSub, Failure> {
    let limit = redis.connect_timeout();
    let mut pubsub = match timeout(limit, redis.client().get_async_pubsub()).await {
        Ok(Ok(pubsub)) => pubsub,
        Ok(Err(error)) => return Err(redis.failure(&error)),
        Err(_) => return Err(redis.failure(&format!("no connection within {limit:?}"))),
    };
    let limit = redis.command_timeout();
    match timeout(limit, pubsub.subscribe(channel)).await {
        Ok(Ok(())) => Ok(pubsub),
        Ok(Err(error)) => Err(redis.failure(&error)),
        Err(_) => Err(redis.failure(&format!("no answer within {limit:?}"))),
    }
}

/// Hands every message to `listener` until the connection fails; returns
/// why it did.
async fn relay<L: Listener>(redis: &RedisConnection, pubsub: PubSub, listener: &L) -> Failure {
    let (mut sink, mut messages) = pubsub.split();
    let mut ping = tokio::time::interval_at(Instant::now() + PING_EVERY, PING_EVERY);
    let limit = redis.command_timeout();
    loop {
        tokio::select! {
            message = messages.next() => match message {
                Some(message) => listener.receive(message.get_payload_bytes()),
                None => return redis.failure(&"connection closed"),
            },
            _ = ping.tick() => match timeout(limit, sink.ping::<redis::Value>()).await {
                Ok(Ok(_)) => {}
                Ok(Err(error)) => return redis.failure(&error),
                Err(_) => return redis.failure(&format!("no answer to PING within {limit:?}")),
            },
        }
    }
}

/// PUBLISHes each message of `queue` on `channel` until the queue closes;
/// one warning per outage, naming `what` is not getting out.
pub(crate) async fn publish_queued(
    redis: RedisConnection,
    channel: String,
    mut queue: mpsc::Receiver<String>,
    what: &'static str,
) {
    let mut down = false;
    while let Some(message) = queue.recv().await {
        match redis.publish(&channel, &message).await {
            Ok(()) if down => {
                down = false;
                tracing::info!(
                    address = redis.address(),
                    "{what} reach other instances again"
                );
            }
            Ok(()) => {}
            Err(failure) if !down => {
                down = true;
                tracing::warn!(%failure, "{what} do not reach other instances while Redis is unreachable");
            }
            Err(_) => {}
        }
    }
}
