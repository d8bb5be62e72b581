//! The fan-out of `list_changed` and `resources/updated`: what the server
//! publishes reaches every open `subscriptions/listen` request that asked
//! for it. [`InMemoryChangeFeed`] serves one process; a feed shared by
//! several instances (Redis pub/sub, say) implements [`ChangeFeed`].

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use futures::Stream;
use futures::stream::BoxStream;

/// How long a subscriber waits after a list change for more changes, so
/// that a burst of edits becomes one notification.
const COALESCE_WINDOW: Duration = Duration::from_millis(20);

/// `resources/updated` events kept for subscribers that have not looked yet
/// before the oldest are dropped.
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

/// The changes of one process, fanned out to every subscriber from one
/// place: a version number per list, the latest updated URIs, and the
/// wakers of the subscribers waiting for more. A subscriber holds only what
/// it has seen, so thousands of open subscriptions cost little each.
///
/// A burst of changes to one list becomes one notification: the feed makes
/// a list change visible 20 ms after the first of the burst
/// (one timer for the feed, not one per subscriber; at once when no Tokio
/// runtime runs).
#[derive(Debug, Default)]
pub struct InMemoryChangeFeed {
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<FeedState>,
}

#[derive(Debug, Default)]
struct FeedState {
    /// Tools, prompts, resources: each list's changes published so far, and
    /// how many of them are visible (the rest wait for the window to close).
    lists: [(u64, u64); 3],
    /// Whether a flush of the waiting list changes is scheduled.
    flushing: bool,
    /// The latest updated URIs, numbered (at most [`UPDATE_BUFFER`]).
    updates: VecDeque<(u64, String)>,
    /// The number the next update gets.
    next_update: u64,
    /// The subscribers waiting for a change, by key.
    waiting: HashMap<u64, Waker>,
    /// The key the next subscriber gets.
    next_key: u64,
}

/// The three lists in [`FeedState::lists`] order.
const LISTS: [Change; 3] = [
    Change::ToolsListChanged,
    Change::PromptsListChanged,
    Change::ResourcesListChanged,
];

impl InMemoryChangeFeed {
    /// An empty feed.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, FeedState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Makes the waiting list changes visible and wakes every subscriber.
    fn flush(&self) {
        let waiting = {
            let mut state = self.lock();
            for (published, visible) in &mut state.lists {
                *visible = *published;
            }
            state.flushing = false;
            std::mem::take(&mut state.waiting)
        };
        waiting.into_values().for_each(Waker::wake);
    }
}

impl ChangeFeed for InMemoryChangeFeed {
    fn publish(&self, change: Change) {
        let Some(list) = LISTS.iter().position(|l| *l == change) else {
            if let Change::ResourceUpdated(uri) = change {
                let waiting = {
                    let mut state = self.shared.lock();
                    let number = state.next_update;
                    state.next_update += 1;
                    state.updates.push_back((number, uri));
                    if state.updates.len() > UPDATE_BUFFER {
                        state.updates.pop_front();
                    }
                    std::mem::take(&mut state.waiting)
                };
                waiting.into_values().for_each(Waker::wake);
            }
            return;
        };
        let schedule = {
            let mut state = self.shared.lock();
            state.lists[list].0 += 1;
            !std::mem::replace(&mut state.flushing, true)
        };
        if schedule {
            let shared = Arc::clone(&self.shared);
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => {
                    runtime.spawn(async move {
                        tokio::time::sleep(COALESCE_WINDOW).await;
                        shared.flush();
                    });
                }
                Err(_) => shared.flush(),
            }
        }
    }

    fn subscribe(&self, topics: ChangeTopics) -> BoxStream<'static, Change> {
        let mut state = self.shared.lock();
        let key = state.next_key;
        state.next_key += 1;
        Box::pin(Subscriber {
            shared: Arc::clone(&self.shared),
            lists: [topics.tools, topics.prompts, topics.resources],
            // A change published before now, still in its window, is not
            // this subscriber's to hear.
            seen: state.lists.map(|(published, _)| published),
            uris: topics.resource_uris,
            next_update: state.next_update,
            key,
        })
    }
}

/// One subscriber: what it asked for and what it has seen.
struct Subscriber {
    shared: Arc<Shared>,
    /// Whether it listens to tools, prompts, resources.
    lists: [bool; 3],
    /// How many changes of each list it was told about (or were published
    /// before it subscribed).
    seen: [u64; 3],
    /// The updated URIs it listens to (`None`: none).
    uris: Option<HashSet<String>>,
    /// The number of the next update it has not looked at.
    next_update: u64,
    /// Its place among the waiting.
    key: u64,
}

impl Subscriber {
    /// The next change for this subscriber that is already visible. An
    /// update that fell out of the buffer before it looked is missed.
    fn next_change(&mut self, state: &FeedState) -> Option<Change> {
        for (list, change) in LISTS.iter().enumerate() {
            let visible = state.lists[list].1;
            if self.lists[list] && visible > self.seen[list] {
                self.seen[list] = visible;
                return Some(change.clone());
            }
        }
        let uris = self.uris.as_ref()?;
        for (number, uri) in &state.updates {
            if *number < self.next_update {
                continue;
            }
            self.next_update = number + 1;
            if uris.contains(uri) {
                return Some(Change::ResourceUpdated(uri.clone()));
            }
        }
        self.next_update = state.next_update;
        None
    }
}

impl Stream for Subscriber {
    type Item = Change;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Change>> {
        let this = self.get_mut();
        let shared = Arc::clone(&this.shared);
        let mut state = shared.lock();
        if let Some(change) = this.next_change(&state) {
            return Poll::Ready(Some(change));
        }
        match state.waiting.get_mut(&this.key) {
            Some(waker) if waker.will_wake(cx.waker()) => {}
            _ => {
                state.waiting.insert(this.key, cx.waker().clone());
            }
        }
        Poll::Pending
    }
}

impl Drop for Subscriber {
    fn drop(&mut self) {
        self.shared.lock().waiting.remove(&self.key);
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

    #[tokio::test]
    async fn a_change_before_the_subscription_is_not_heard() {
        let feed = InMemoryChangeFeed::new();
        feed.publish(Change::ToolsListChanged);
        let topics = ChangeTopics {
            tools: true,
            ..ChangeTopics::default()
        };
        let mut changes = feed.subscribe(topics);
        let early = tokio::time::timeout(Duration::from_millis(100), changes.next()).await;
        assert!(early.is_err(), "{early:?}");
        feed.publish(Change::ToolsListChanged);
        let next = tokio::time::timeout(Duration::from_secs(2), changes.next()).await;
        assert_eq!(next.unwrap(), Some(Change::ToolsListChanged));
    }

    #[tokio::test]
    async fn a_change_after_the_subscription_in_the_same_window_is_heard() {
        let feed = InMemoryChangeFeed::new();
        feed.publish(Change::ToolsListChanged);
        let topics = ChangeTopics {
            tools: true,
            ..ChangeTopics::default()
        };
        let mut changes = feed.subscribe(topics);
        // Still within the window the first change opened.
        feed.publish(Change::ToolsListChanged);
        let next = tokio::time::timeout(Duration::from_secs(2), changes.next()).await;
        assert_eq!(next.unwrap(), Some(Change::ToolsListChanged));
        let more = tokio::time::timeout(Duration::from_millis(100), changes.next()).await;
        assert!(more.is_err(), "{more:?}");
    }

    #[tokio::test]
    async fn one_change_reaches_every_subscriber_and_a_dropped_one_is_forgotten() {
        let feed = InMemoryChangeFeed::new();
        let topics = || ChangeTopics {
            prompts: true,
            ..ChangeTopics::default()
        };
        let mut subscribers: Vec<_> = (0..100).map(|_| feed.subscribe(topics())).collect();
        let mut waiting = tokio::spawn(async move {
            for changes in &mut subscribers {
                assert_eq!(changes.next().await, Some(Change::PromptsListChanged));
            }
            subscribers
        });
        // Every subscriber is waiting before the change is published.
        tokio::time::sleep(Duration::from_millis(50)).await;
        feed.publish(Change::PromptsListChanged);
        let subscribers = tokio::time::timeout(Duration::from_secs(2), &mut waiting)
            .await
            .expect("every subscriber heard it within 2 s")
            .unwrap();
        drop(subscribers);
        assert!(feed.shared.lock().waiting.is_empty());
    }

    #[test]
    fn without_a_runtime_a_change_is_visible_at_once() {
        let feed = InMemoryChangeFeed::new();
        let topics = ChangeTopics {
            resources: true,
            ..ChangeTopics::default()
        };
        let mut changes = feed.subscribe(topics);
        feed.publish(Change::ResourcesListChanged);
        let next = futures::executor::block_on(changes.next());
        assert_eq!(next, Some(Change::ResourcesListChanged));
    }
}
