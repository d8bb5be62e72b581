//! [`RedisChangeFeed`]: `list_changed` and `resources/updated` fanned out
//! to every instance through Redis pub/sub.

use std::sync::Arc;

use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;
use toolwire_server::{Change, ChangeFeed, ChangeTopics, InMemoryChangeFeed};

use crate::connection::{Failure, RedisConnection};
use crate::subscriber::{self, listen_for_ever, publish_queued};

/// Changes waiting to be sent to Redis; past it new ones are not sent
/// (local subscribers still hear them).
const OUTGOING_BUFFER: usize = 1024;

/// A [`ChangeFeed`] shared by every instance on the same Redis and key
/// prefix: a change published on one reaches the `subscriptions/listen`
/// streams (and legacy session streams) of all of them.
///
/// It wraps an [`InMemoryChangeFeed`]. [`ChangeFeed::publish`] tells the
/// local subscribers at once and hands the change to a background task,
/// which sends it with `PUBLISH {prefix}changes <json>` (the caller never
/// waits for Redis). Another task holds a pub/sub connection subscribed to
/// `{prefix}changes` and publishes locally every change another instance
/// sent; each instance tags its messages with a random id and skips its
/// own, so a local subscriber hears a local change once.
///
/// Messages are small JSON objects: `{"from":"<id>","change":"tools"}`
/// (also `"prompts"`, `"resources"`, and `"lists"` for all three),
/// `{"from":"<id>","change":"resource","uri":"<uri>"}`. Anything else on
/// the channel is ignored (logged at debug level).
///
/// When the subscription drops, one warning is logged and it subscribes
/// again (waits of 100 ms doubling to 5 s). Pub/sub keeps nothing for an
/// absent subscriber, so once subscribed again the feed publishes
/// tools, prompts and resources `list_changed` locally, and asks every
/// other instance to do the same (its own changes may not have reached
/// them): listeners re-list. Resource updates missed meanwhile are lost;
/// they cannot be replayed. Changes published while Redis is unreachable
/// reach the local subscribers only (one warning per outage).
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use toolwire_redis::{RedisChangeFeed, RedisConfig};
/// use toolwire_server::Server;
///
/// let redis = RedisConfig::new("redis://127.0.0.1:6379").connect().await?;
/// let server = Server::builder("shop", "1.0.0")
///     .change_feed(Arc::new(RedisChangeFeed::new(&redis)))
///     .build()?;
/// # drop(server);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct RedisChangeFeed {
    local: Arc<InMemoryChangeFeed>,
    outgoing: mpsc::Sender<String>,
    id: Arc<str>,
    channel: String,
    /// The subscriber task, stopped when the feed is dropped (the sender
    /// task stops by itself once `outgoing` closes).
    subscriber: AbortHandle,
}

impl RedisChangeFeed {
    /// A feed on the channel `{prefix}changes` of `redis`. It subscribes in
    /// the background (changes other instances publish before the
    /// subscription is in place are not heard).
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime: it spawns its two tasks.
    pub fn new(redis: &RedisConnection) -> Self {
        let local = Arc::new(InMemoryChangeFeed::new());
        let id: Arc<str> = Arc::from(format!("{:016x}", rand::random::<u64>()));
        let channel = format!("{}changes", redis.key_prefix());
        let (outgoing, queue) = mpsc::channel(OUTGOING_BUFFER);
        tokio::spawn(publish_queued(
            redis.clone(),
            channel.clone(),
            queue,
            "changes",
        ));
        let listener = Listener {
            id: id.clone(),
            local: local.clone(),
            outgoing: outgoing.clone(),
        };
        let subscriber = tokio::spawn(listen_for_ever(
            redis.clone(),
            channel.clone(),
            Arc::new(listener),
        ))
        .abort_handle();
        RedisChangeFeed {
            local,
            outgoing,
            id,
            channel,
            subscriber,
        }
    }

    /// The pub/sub channel: `{prefix}changes`.
    pub fn channel(&self) -> &str {
        &self.channel
    }

    /// The random id this instance tags its messages with.
    pub fn instance_id(&self) -> &str {
        &self.id
    }
}

impl Drop for RedisChangeFeed {
    fn drop(&mut self) {
        self.subscriber.abort();
    }
}

impl ChangeFeed for RedisChangeFeed {
    fn publish(&self, change: Change) {
        let message = encode(&self.id, &change);
        self.local.publish(change);
        queue(&self.outgoing, message);
    }

    /// One local subscription per topic, merged: a subscription to several
    /// lists of [`InMemoryChangeFeed`] reports only one of two lists that
    /// change together (as after a catch-up), the other's wait being
    /// dropped once it has seen its change.
    fn subscribe(&self, topics: ChangeTopics) -> BoxStream<'static, Change> {
        let only = ChangeTopics::default;
        let lists = [
            (
                topics.tools,
                ChangeTopics {
                    tools: true,
                    ..only()
                },
            ),
            (
                topics.prompts,
                ChangeTopics {
                    prompts: true,
                    ..only()
                },
            ),
            (
                topics.resources,
                ChangeTopics {
                    resources: true,
                    ..only()
                },
            ),
        ];
        let mut streams: Vec<_> = lists
            .into_iter()
            .filter(|(wanted, _)| *wanted)
            .map(|(_, one)| self.local.subscribe(one))
            .collect();
        if let Some(uris) = topics.resource_uris {
            let updates = ChangeTopics {
                resource_uris: Some(uris),
                ..only()
            };
            streams.push(self.local.subscribe(updates));
        }
        match streams.len() {
            // Nothing to hear: pending for as long as the feed lives.
            0 => self.local.subscribe(only()),
            1 => streams.remove(0),
            _ => Box::pin(futures::stream::select_all(streams)),
        }
    }
}

/// Hands `message` to the sender task without waiting.
fn queue(outgoing: &mpsc::Sender<String>, message: String) {
    if outgoing.try_send(message).is_err() {
        tracing::debug!("change not sent to other instances: the outgoing queue is full");
    }
}

/// One message on the channel.
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
struct Wire {
    from: String,
    change: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    uri: Option<String>,
}

/// The JSON message for `change`, sent by instance `from`.
fn encode(from: &str, change: &Change) -> String {
    let (kind, uri) = match change {
        Change::ToolsListChanged => ("tools", None),
        Change::PromptsListChanged => ("prompts", None),
        Change::ResourcesListChanged => ("resources", None),
        Change::ResourceUpdated(uri) => ("resource", Some(uri.clone())),
    };
    wire(from, kind, uri)
}

fn wire(from: &str, kind: &str, uri: Option<String>) -> String {
    let message = Wire {
        from: from.to_owned(),
        change: kind.to_owned(),
        uri,
    };
    serde_json::to_string(&message).expect("a string-only struct serializes")
}

/// The sender and the changes of one message, or why it is not one.
fn decode(payload: &[u8]) -> Result<(String, Vec<Change>), String> {
    let message: Wire = serde_json::from_slice(payload).map_err(|e| e.to_string())?;
    let changes = match (message.change.as_str(), message.uri) {
        ("tools", None) => vec![Change::ToolsListChanged],
        ("prompts", None) => vec![Change::PromptsListChanged],
        ("resources", None) => vec![Change::ResourcesListChanged],
        ("lists", None) => all_lists(),
        ("resource", Some(uri)) => vec![Change::ResourceUpdated(uri)],
        (kind, _) => return Err(format!("unknown change {kind:?}")),
    };
    Ok((message.from, changes))
}

/// A change to every list.
fn all_lists() -> Vec<Change> {
    vec![
        Change::ToolsListChanged,
        Change::PromptsListChanged,
        Change::ResourcesListChanged,
    ]
}

/// The subscriber task's state.
struct Listener {
    id: Arc<str>,
    local: Arc<InMemoryChangeFeed>,
    outgoing: mpsc::Sender<String>,
}

impl subscriber::Listener for Listener {
    fn name(&self) -> &str {
        "change feed"
    }

    async fn subscribed(&self, missed: bool) -> Result<(), Failure> {
        if missed {
            self.catch_up();
        }
        Ok(())
    }

    /// Publishes one message's changes locally, unless this instance sent it.
    fn receive(&self, payload: &[u8]) {
        match decode(payload) {
            Ok((from, _)) if *from == *self.id => {}
            Ok((_, changes)) => changes.into_iter().for_each(|c| self.local.publish(c)),
            Err(reason) => {
                let message = String::from_utf8_lossy(payload);
                tracing::debug!(%reason, %message, "ignored a message on the change channel");
            }
        }
    }
}

impl Listener {
    /// After missing messages: every list may have changed, here and (for
    /// this instance's changes that did not get out) elsewhere.
    fn catch_up(&self) {
        all_lists().into_iter().for_each(|c| self.local.publish(c));
        queue(&self.outgoing, wire(&self.id, "lists", None));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip() {
        let changes = [
            Change::ToolsListChanged,
            Change::PromptsListChanged,
            Change::ResourcesListChanged,
            Change::ResourceUpdated("file:///a b".into()),
        ];
        for change in changes {
            let message = encode("id1", &change);
            assert_eq!(decode(message.as_bytes()), Ok(("id1".into(), vec![change])));
        }
        assert_eq!(
            encode("x", &Change::ResourceUpdated("u".into())),
            r#"{"from":"x","change":"resource","uri":"u"}"#
        );
        assert_eq!(
            encode("x", &Change::ToolsListChanged),
            r#"{"from":"x","change":"tools"}"#
        );
        let lists = wire("x", "lists", None);
        assert_eq!(decode(lists.as_bytes()), Ok(("x".into(), all_lists())));
    }

    #[test]
    fn malformed_and_unknown_messages_are_refused() {
        for bad in [
            &b"not json"[..],
            br#"{"change":"tools"}"#,
            br#"{"from":"x","change":"weather"}"#,
            br#"{"from":"x","change":"resource"}"#,
            br#"{"from":"x","change":"tools","uri":"u"}"#,
            b"\xff\xfe",
        ] {
            assert!(decode(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }
}
