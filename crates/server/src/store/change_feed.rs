//! The fan-out of `list_changed` and `resources/updated`: what the server
//! publishes reaches every open `subscriptions/listen` request that asked
//! for it. [`InMemoryChangeFeed`] serves one process; a feed shared by
//! several instances (Redis pub/sub, say) implements [`ChangeFeed`].

use std::collections::HashSet;
use std::fmt;
use std::time::Duration;

use futures::stream::BoxStream;
use tokio::sync::{broadcast, watch};

/// How long a subscriber waits after a list change for more changes, so
/// that a burst of edits becomes one notification.
const COALESCE_WINDOW: Duration = Duration::from_millis(20);

/// `resources/updated` events buffered per subscriber before the oldest are dropped.
const UPDATE_BUFFER: usize = 256;

/// One change a listener may be told about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The tools list changed.
    ToolsListChanged,
    /// The prompts list changed.
    PromptsListChanged,
    /// The resources list changed.
    ResourcesListChanged,
    /// The resource with this URI changed.
    ResourceUpdated(String),
}

/// What one subscriber wants to hear about.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChangeTopics {
    /// [`Change::ToolsListChanged`].
    pub tools: bool,
    /// [`Change::PromptsListChanged`].
    pub prompts: bool,
    /// [`Change::ResourcesListChanged`].
    pub resources: bool,
    /// [`Change::ResourceUpdated`] for these URIs (`None`: none).
    pub resource_uris: Option<HashSet<String>>,
}

/// Where changes are published and subscribed to. The default is
/// [`InMemoryChangeFeed`]; install another with
/// [`ServerBuilder::change_feed`](crate::ServerBuilder::change_feed).
pub trait ChangeFeed: Send + Sync + fmt::Debug + 'static {
    /// Tells every current subscriber that asked for it about `change`.
    fn publish(&self, change: Change);

    /// The changes in `topics` published from now on. A burst of changes
    /// to one list may arrive as one; the stream ends only when the feed does.
    fn subscribe(&self, topics: ChangeTopics) -> BoxStream<'static, Change>;
}

/// The changes of one process: a watch channel per list (which coalesces)
/// and a broadcast channel of updated URIs.
#[derive(Debug)]
pub struct InMemoryChangeFeed {
    tools: watch::Sender<u64>,
    prompts: watch::Sender<u64>,
    resources: watch::Sender<u64>,
    updates: broadcast::Sender<String>,
}

impl Default for InMemoryChangeFeed {
    fn default() -> Self {
        InMemoryChangeFeed {
            tools: watch::channel(0).0,
            prompts: watch::channel(0).0,
            resources: watch::channel(0).0,
            updates: broadcast::channel(UPDATE_BUFFER).0,
        }
    }
}

impl InMemoryChangeFeed {
    /// An empty feed.
    pub fn new() -> Self {
        Self::default()
    }
}

impl ChangeFeed for InMemoryChangeFeed {
    fn publish(&self, change: Change) {
        let bump = |list: &watch::Sender<u64>| list.send_modify(|version| *version += 1);
        match change {
            Change::ToolsListChanged => bump(&self.tools),
            Change::PromptsListChanged => bump(&self.prompts),
            Change::ResourcesListChanged => bump(&self.resources),
            Change::ResourceUpdated(uri) => {
                let _ = self.updates.send(uri);
            }
        }
    }

    fn subscribe(&self, topics: ChangeTopics) -> BoxStream<'static, Change> {
        let watches = Watches {
            tools: topics.tools.then(|| self.tools.subscribe()),
            prompts: topics.prompts.then(|| self.prompts.subscribe()),
            resources: topics.resources.then(|| self.resources.subscribe()),
            updates: topics
                .resource_uris
                .map(|uris| (self.updates.subscribe(), uris)),
        };
        Box::pin(futures::stream::unfold(watches, |mut watches| async move {
            let change = watches.next().await;
            Some((change, watches))
        }))
    }
}

/// What one subscriber watches.
struct Watches {
    tools: Option<watch::Receiver<u64>>,
    prompts: Option<watch::Receiver<u64>>,
    resources: Option<watch::Receiver<u64>>,
    updates: Option<(broadcast::Receiver<String>, HashSet<String>)>,
}

impl Watches {
    /// The next change; pending for ever when nothing watched changes.
    ///
    /// Only the branch `select!` reports has seen its change (`changed` is
    /// cancel safe), so two lists changed together are both reported, one
    /// after the other. The coalescing wait comes after the choice, for
    /// the one list chosen.
    async fn next(&mut self) -> Change {
        let (change, list) = tokio::select! {
            _ = changed(&mut self.tools) => (Change::ToolsListChanged, &mut self.tools),
            _ = changed(&mut self.prompts) => (Change::PromptsListChanged, &mut self.prompts),
            _ = changed(&mut self.resources) => (Change::ResourcesListChanged, &mut self.resources),
            uri = updated(&mut self.updates) => return Change::ResourceUpdated(uri),
        };
        // A burst of edits to one list becomes one notification.
        tokio::time::sleep(COALESCE_WINDOW).await;
        if let Some(rx) = list {
            rx.borrow_and_update();
        }
        change
    }
}

/// Waits for the next change of one list; never returns when not watched.
async fn changed(receiver: &mut Option<watch::Receiver<u64>>) {
    let Some(rx) = receiver else {
        return std::future::pending().await;
    };
    if rx.changed().await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Waits for an update to one of the watched URIs; never returns when not watched.
async fn updated(receiver: &mut Option<(broadcast::Receiver<String>, HashSet<String>)>) -> String {
    let Some((rx, uris)) = receiver else {
        return std::future::pending().await;
    };
    loop {
        match rx.recv().await {
            Ok(uri) if uris.contains(&uri) => return uri,
            Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => continue,
            Err(broadcast::error::RecvError::Closed) => return std::future::pending().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::*;

    #[tokio::test]
    async fn a_burst_of_list_changes_is_one_and_updates_are_filtered() {
        let feed = InMemoryChangeFeed::new();
        let topics = ChangeTopics {
            tools: true,
            resource_uris: Some(HashSet::from(["file:///a".to_owned()])),
            ..ChangeTopics::default()
        };
        let mut changes = feed.subscribe(topics);
        feed.publish(Change::PromptsListChanged);
        feed.publish(Change::ToolsListChanged);
        feed.publish(Change::ToolsListChanged);
        assert_eq!(changes.next().await, Some(Change::ToolsListChanged));
        feed.publish(Change::ResourceUpdated("file:///b".into()));
        feed.publish(Change::ResourceUpdated("file:///a".into()));
        let next = changes.next().await;
        assert_eq!(next, Some(Change::ResourceUpdated("file:///a".into())));
    }

    #[tokio::test]
    async fn two_lists_changed_together_are_both_reported() {
        let feed = InMemoryChangeFeed::new();
        let topics = ChangeTopics {
            tools: true,
            prompts: true,
            resources: true,
            ..ChangeTopics::default()
        };
        let mut changes = feed.subscribe(topics);
        feed.publish(Change::ToolsListChanged);
        feed.publish(Change::PromptsListChanged);
        feed.publish(Change::ResourcesListChanged);
        let mut seen = Vec::new();
        for _ in 0..3 {
            let next = tokio::time::timeout(Duration::from_secs(2), changes.next()).await;
            seen.push(
                next.expect("a change within 2 s")
                    .expect("the stream goes on"),
            );
        }
        seen.sort_by_key(|c| format!("{c:?}"));
        assert_eq!(
            seen,
            [
                Change::PromptsListChanged,
                Change::ResourcesListChanged,
                Change::ToolsListChanged
            ]
        );
        // Nothing more: each was reported once.
        let more = tokio::time::timeout(Duration::from_millis(100), changes.next()).await;
        assert!(more.is_err(), "{more:?}");
    }
}
