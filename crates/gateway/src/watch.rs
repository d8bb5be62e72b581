//! Keeping each upstream's tools current while the gateway serves: a
//! `subscriptions/listen` stream per upstream (its `list_changed` makes the
//! gateway list it again; its `resources/updated` for a resource served
//! from it reaches the clients that subscribed to it), a refetch every [`POLL_EVERY`] when it offers no
//! stream, and when it goes away its tools leave the list until it is back
//! (tried again with waits from 1 s doubling to 30 s; a stdio upstream's
//! process is started again by its transport). A lazy upstream is followed
//! from the first call of one of its tools.

use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::time::Instant;

use toolwire_client::ListenEvent;
use toolwire_server::protocol::SubscriptionFilter;

use crate::gateway::Gateway;

/// How often an upstream without a listen stream is listed again.
pub const POLL_EVERY: Duration = Duration::from_secs(30);

const FIRST_RETRY: Duration = Duration::from_secs(1);
const LAST_RETRY: Duration = Duration::from_secs(30);

impl Gateway {
    /// Starts following every upstream (call it once, within the Tokio
    /// runtime that serves the gateway). The tasks end when the gateway's
    /// last clone is dropped.
    pub fn watch_upstreams(&self) {
        self.inner.watching.store(true, Ordering::SeqCst);
        for index in 0..self.inner.slots().len() {
            self.watch(index);
        }
    }

    pub(crate) fn is_watching(&self) -> bool {
        self.inner.watching.load(Ordering::SeqCst)
    }

    /// Follows upstream `index` from now on (a lazy one from its first
    /// use) until a reload retires it.
    pub(crate) fn watch(&self, index: usize) {
        let weak = std::sync::Arc::downgrade(&self.inner);
        let slot = self.inner.slot(index);
        let mut started = slot.started.subscribe();
        let mut retired = slot.retired.subscribe();
        drop(slot);
        let follow = async move {
            if started.wait_for(|started| *started).await.is_err() {
                return;
            }
            let mut delay = FIRST_RETRY;
            loop {
                let Some(inner) = weak.upgrade() else { return };
                let gateway = Gateway { inner };
                let Some(wait) = gateway.follow(index, &mut delay).await else {
                    return;
                };
                drop(gateway);
                tokio::time::sleep(wait).await;
            }
        };
        tokio::spawn(async move {
            tokio::select! {
                () = follow => {}
                _ = retired.wait_for(|retired| *retired) => {}
            }
        });
    }

    /// Follows upstream `index` until its stream ends or it fails; returns
    /// how long to wait before the next attempt (`None`: there is no client
    /// to follow it with).
    async fn follow(&self, index: usize, delay: &mut Duration) -> Option<Duration> {
        let slot = self.inner.slot(index);
        let client = slot.client.clone()?;
        // Updates of the resources served from it, as known so far.
        let watched = self.inner.lock().resource_uris_of(index);
        let filter = SubscriptionFilter {
            tools_list_changed: Some(true),
            prompts_list_changed: Some(true),
            resources_list_changed: Some(true),
            resource_subscriptions: (!watched.is_empty()).then(|| watched.clone()),
            task_ids: None,
        };
        let subscription = client.listen(filter).await;
        // Listed after subscribing: a change made in between is in this
        // listing or in a notification that follows it.
        let listing = self.list(index).await;
        let listed = listing.is_ok();
        self.apply(index, listing);
        if !listed {
            let wait = backoff(delay);
            slot.health_mut().retry_at(Instant::now() + wait);
            return Some(wait);
        }
        if subscription.is_ok() && self.inner.lock().resource_uris_of(index) != watched {
            // Listen again, for the resources it serves now.
            return Some(Duration::ZERO);
        }
        let mut subscription = match subscription {
            Ok(subscription) => subscription,
            Err(error) => {
                let upstream = &slot.upstream.name;
                tracing::debug!(%error, upstream, "no listen stream; polling its tool list");
                *delay = FIRST_RETRY;
                return Some(POLL_EVERY);
            }
        };
        let since = Instant::now();
        while let Some(event) = subscription.next_event().await {
            match event {
                Ok(
                    ListenEvent::ToolsListChanged
                    | ListenEvent::PromptsListChanged
                    | ListenEvent::ResourcesListChanged,
                ) => {
                    let listing = self.list(index).await;
                    self.apply(index, listing);
                    if self.inner.lock().resource_uris_of(index) != watched {
                        *delay = FIRST_RETRY;
                        return Some(Duration::ZERO);
                    }
                }
                Ok(ListenEvent::ResourceUpdated { uri }) if watched.contains(&uri) => {
                    self.inner.server.notify_resource_updated(&uri);
                }
                Ok(_) => {}
                Err(error) => {
                    let upstream = &slot.upstream.name;
                    tracing::debug!(%error, upstream, "its listen stream failed");
                    break;
                }
            }
        }
        // The stream ended: list again at once (the upstream may be gone),
        // unless streams keep ending as soon as they start.
        if since.elapsed() < LAST_RETRY {
            return Some(backoff(delay));
        }
        *delay = FIRST_RETRY;
        Some(Duration::ZERO)
    }
}

/// The wait now, doubling the next one (at most [`LAST_RETRY`]).
fn backoff(delay: &mut Duration) -> Duration {
    let wait = *delay;
    *delay = (*delay * 2).min(LAST_RETRY);
    wait
}
