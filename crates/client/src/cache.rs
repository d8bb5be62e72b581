//! A cache of complete results that honours `ttlMs` and `cacheScope`.
//!
//! Entries are keyed by server, method and the parameters that affect the
//! result (the `cursor` of a page, the `uri` of a read), so each page is cached
//! on its own. `private` entries are also keyed by the credentials in use and
//! never served to other credentials. A list-changed notification marks
//! entries stale at once. Stale entries are kept so that one can be served,
//! flagged [`Freshness::Stale`], when a refetch fails.
//!
//! Results of multi round-trip retries are never stored: the client only
//! caches results that completed on the first request.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;
use toolwire_protocol::{CacheScope, JsonObject};

/// Where a result came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Freshness {
    /// Fetched from the server just now.
    Fetched,
    /// Served from the cache while fresh.
    Cached,
    /// Served from the cache after its freshness ran out (or a notification
    /// invalidated it) because fetching it again failed.
    Stale,
}

impl Freshness {
    /// The least fresh of two (for results made of several pages).
    pub fn worst(self, other: Freshness) -> Freshness {
        self.max(other)
    }
}

/// The caching hints a server gave a result (`ttlMs`, `cacheScope`), read
/// as the cache reads them: an absent or negative `ttlMs` is 0, an absent
/// `cacheScope` is private. For a list walked over several pages, the most
/// cautious of its pages' hints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheHints {
    /// How long the result may be considered fresh, in milliseconds.
    pub ttl_ms: u64,
    /// Who may cache it.
    pub scope: CacheScope,
}

impl CacheHints {
    /// The hints `result` carries.
    pub fn of(result: &JsonObject) -> CacheHints {
        let scope = match result.get("cacheScope").and_then(Value::as_str) {
            Some("public") => CacheScope::Public,
            _ => CacheScope::Private,
        };
        CacheHints {
            ttl_ms: result.get("ttlMs").and_then(Value::as_u64).unwrap_or(0),
            scope,
        }
    }

    /// The more cautious of two: the shorter freshness, and private over
    /// public.
    pub fn strictest(self, other: CacheHints) -> CacheHints {
        let scope = match (self.scope, other.scope) {
            (CacheScope::Public, CacheScope::Public) => CacheScope::Public,
            _ => CacheScope::Private,
        };
        CacheHints {
            ttl_ms: self.ttl_ms.min(other.ttl_ms),
            scope,
        }
    }
}

/// A shareable result cache; clone it to share it between clients.
///
/// ```
/// use toolwire_client::Cache;
/// let cache = Cache::with_capacity(100);
/// assert!(cache.is_empty());
/// ```
#[derive(Debug, Clone)]
pub struct Cache {
    inner: Arc<Mutex<CacheInner>>,
}

#[derive(Debug)]
struct CacheInner {
    entries: HashMap<CacheKey, Entry>,
    capacity: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct CacheKey {
    server: String,
    /// `None` for public entries; the credentials key for private ones.
    partition: Option<String>,
    method: String,
    params: String,
}

#[derive(Debug, Clone)]
struct Entry {
    value: JsonObject,
    stored: Instant,
    ttl: Duration,
    invalidated: bool,
}

impl Entry {
    fn is_fresh(&self, now: Instant) -> bool {
        !self.invalidated && now < self.stored + self.ttl
    }
}

/// Identifies one request for the cache.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Slot<'a> {
    pub server: &'a str,
    pub credentials: &'a str,
    pub method: &'a str,
    pub params: &'a str,
}

impl Slot<'_> {
    fn key(&self, scope: CacheScope) -> CacheKey {
        CacheKey {
            server: self.server.to_owned(),
            partition: match scope {
                CacheScope::Public => None,
                CacheScope::Private => Some(self.credentials.to_owned()),
            },
            method: self.method.to_owned(),
            params: self.params.to_owned(),
        }
    }
}

/// A cached result and whether it is still fresh.
#[derive(Debug, Clone)]
pub(crate) struct Hit {
    pub value: JsonObject,
    pub fresh: bool,
}

impl Default for Cache {
    fn default() -> Self {
        Cache::with_capacity(4096)
    }
}

impl Cache {
    /// A cache holding at most `capacity` results (the oldest go first).
    pub fn with_capacity(capacity: usize) -> Self {
        Cache {
            inner: Arc::new(Mutex::new(CacheInner {
                entries: HashMap::new(),
                capacity: capacity.max(1),
            })),
        }
    }

    /// True when nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.lock().entries.is_empty()
    }

    /// How many results are stored (fresh or stale).
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// Forgets everything.
    pub fn clear(&self) {
        self.lock().entries.clear();
    }

    /// The newest entry for `slot` that these credentials may see.
    pub(crate) fn lookup(&self, slot: Slot<'_>) -> Option<Hit> {
        let inner = self.lock();
        let public = inner.entries.get(&slot.key(CacheScope::Public));
        let private = inner.entries.get(&slot.key(CacheScope::Private));
        let entry = match (public, private) {
            (Some(a), Some(b)) => Some(if a.stored >= b.stored { a } else { b }),
            (a, b) => a.or(b),
        }?;
        Some(Hit {
            value: entry.value.clone(),
            fresh: entry.is_fresh(Instant::now()),
        })
    }

    /// Stores a complete result under the scope and TTL it carries
    /// (absent `cacheScope` reads as private, absent or negative `ttlMs` as 0).
    pub(crate) fn store(&self, slot: Slot<'_>, value: &JsonObject) {
        let hints = CacheHints::of(value);
        self.store_for(
            slot,
            value,
            Duration::from_millis(hints.ttl_ms),
            hints.scope,
        );
    }

    /// Stores `value` for `ttl` in `scope`, whatever hints it carries.
    pub(crate) fn store_for(
        &self,
        slot: Slot<'_>,
        value: &JsonObject,
        ttl: Duration,
        scope: CacheScope,
    ) {
        let entry = Entry {
            value: value.clone(),
            stored: Instant::now(),
            ttl,
            invalidated: false,
        };
        let mut inner = self.lock();
        inner.make_room();
        inner.entries.insert(slot.key(scope), entry);
    }

    /// Marks every entry of `method` on `server` stale (all pages, all credentials).
    pub(crate) fn invalidate_method(&self, server: &str, method: &str) {
        self.invalidate_where(|k| k.server == server && k.method == method);
    }

    /// Marks the entries of one request stale (all credentials).
    pub(crate) fn invalidate(&self, server: &str, method: &str, params: &str) {
        self.invalidate_where(|k| k.server == server && k.method == method && k.params == params);
    }

    /// Drops every page of `method` on `server` (e.g. after a cursor went bad).
    pub(crate) fn discard_method(&self, server: &str, method: &str) {
        self.lock()
            .entries
            .retain(|k, _| !(k.server == server && k.method == method));
    }

    fn invalidate_where(&self, matches: impl Fn(&CacheKey) -> bool) {
        for (_, entry) in self.lock().entries.iter_mut().filter(|(k, _)| matches(k)) {
            entry.invalidated = true;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CacheInner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl CacheInner {
    fn make_room(&mut self) {
        while self.entries.len() >= self.capacity {
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(_, e)| e.stored)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(key) => self.entries.remove(&key),
                None => break,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn slot<'a>(credentials: &'a str, params: &'a str) -> Slot<'a> {
        Slot {
            server: "s",
            credentials,
            method: "tools/list",
            params,
        }
    }

    fn result(ttl: u64, scope: &str) -> JsonObject {
        json!({"tools": [], "ttlMs": ttl, "cacheScope": scope})
            .as_object()
            .unwrap()
            .clone()
    }

    #[test]
    fn public_entries_are_shared_and_private_ones_are_not() {
        let cache = Cache::default();
        cache.store(slot("alice", "p1"), &result(60_000, "public"));
        cache.store(slot("alice", "p2"), &result(60_000, "private"));
        assert!(cache.lookup(slot("bob", "p1")).is_some());
        assert!(cache.lookup(slot("bob", "p2")).is_none());
        assert!(cache.lookup(slot("alice", "p2")).unwrap().fresh);
    }

    #[test]
    fn zero_ttl_and_absent_hints_are_stale_at_once() {
        let cache = Cache::default();
        cache.store(slot("", "a"), &result(0, "public"));
        cache.store(
            slot("", "b"),
            &json!({"tools": []}).as_object().unwrap().clone(),
        );
        assert!(!cache.lookup(slot("", "a")).unwrap().fresh);
        let hit = cache.lookup(slot("", "b")).unwrap();
        assert!(!hit.fresh, "absent ttlMs means 0");
        assert!(
            cache.lookup(slot("other", "b")).is_none(),
            "absent cacheScope means private"
        );
    }

    #[test]
    fn negative_ttl_is_treated_as_zero() {
        let cache = Cache::default();
        let mut value = result(0, "public");
        value.insert("ttlMs".into(), json!(-5));
        cache.store(slot("", "a"), &value);
        assert!(!cache.lookup(slot("", "a")).unwrap().fresh);
    }

    #[test]
    fn invalidation_marks_every_page_stale_but_keeps_them() {
        let cache = Cache::default();
        cache.store(slot("", "p1"), &result(60_000, "public"));
        cache.store(slot("", "p2"), &result(60_000, "public"));
        cache.invalidate_method("s", "tools/list");
        assert!(!cache.lookup(slot("", "p1")).unwrap().fresh);
        assert!(!cache.lookup(slot("", "p2")).unwrap().fresh);
        cache.discard_method("s", "tools/list");
        assert!(cache.is_empty());
    }

    #[test]
    fn capacity_evicts_the_oldest() {
        let cache = Cache::with_capacity(2);
        cache.store(slot("", "1"), &result(60_000, "public"));
        cache.store(slot("", "2"), &result(60_000, "public"));
        cache.store(slot("", "3"), &result(60_000, "public"));
        assert_eq!(cache.len(), 2);
    }

    #[test]
    fn freshness_combines_to_the_worst() {
        assert_eq!(
            Freshness::Fetched.worst(Freshness::Cached),
            Freshness::Cached
        );
        assert_eq!(Freshness::Stale.worst(Freshness::Fetched), Freshness::Stale);
    }

    #[test]
    fn hints_are_read_as_the_cache_reads_them_and_combine_to_the_strictest() {
        let public = CacheHints::of(&result(5_000, "public"));
        assert_eq!(
            public,
            CacheHints {
                ttl_ms: 5_000,
                scope: CacheScope::Public
            }
        );
        let private = CacheHints::of(&result(60_000, "private"));
        assert_eq!(
            public.strictest(private),
            CacheHints {
                ttl_ms: 5_000,
                scope: CacheScope::Private
            }
        );
        assert_eq!(public.strictest(public), public);
        let legacy = CacheHints::of(&serde_json::Map::new());
        assert_eq!(
            legacy,
            CacheHints {
                ttl_ms: 0,
                scope: CacheScope::Private
            },
            "absent hints: immediately stale, private"
        );
    }
}
