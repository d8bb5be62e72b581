//! Which lists an open subscription keeps honest, for the cache of a
//! legacy server's results (they carry no cache hints of their own).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use toolwire_protocol::SubscriptionFilter;

use crate::cache::Cache;

/// The lists open subscriptions keep honest. Results of a legacy server
/// carry no cache hints, so they are cached only while a subscription
/// would tell the client they changed; when the last one ends, what was
/// kept becomes stale.
#[derive(Debug, Clone)]
pub(crate) struct Watched {
    counts: Arc<Mutex<HashMap<&'static str, usize>>>,
    cache: Cache,
    server: String,
}

impl Watched {
    pub(crate) fn new(cache: Cache, server: String) -> Self {
        Watched {
            counts: Arc::default(),
            cache,
            server,
        }
    }

    /// True while an open subscription reports changes of `method`'s list.
    pub(crate) fn is_watched(&self, method: &str) -> bool {
        lock(&self.counts).get(method).is_some_and(|n| *n > 0)
    }

    pub(crate) fn watch(&self, methods: Vec<&'static str>) -> WatchGuard {
        let mut counts = lock(&self.counts);
        for method in &methods {
            *counts.entry(method).or_default() += 1;
        }
        WatchGuard {
            watched: self.clone(),
            methods,
        }
    }
}

/// Ends a subscription's watch when its stream ends.
pub(crate) struct WatchGuard {
    watched: Watched,
    methods: Vec<&'static str>,
}

impl Drop for WatchGuard {
    fn drop(&mut self) {
        let mut counts = lock(&self.watched.counts);
        for method in &self.methods {
            let Some(n) = counts.get_mut(method) else {
                continue;
            };
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.watched
                    .cache
                    .invalidate_method(&self.watched.server, method);
            }
        }
    }
}

/// The list methods whose changes `filter` reports.
pub(crate) fn watched_methods(filter: &SubscriptionFilter) -> Vec<&'static str> {
    let mut methods = Vec::new();
    if filter.tools_list_changed == Some(true) {
        methods.push("tools/list");
    }
    if filter.prompts_list_changed == Some(true) {
        methods.push("prompts/list");
    }
    if filter.resources_list_changed == Some(true) {
        methods.extend(["resources/list", "resources/templates/list"]);
    }
    methods
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
