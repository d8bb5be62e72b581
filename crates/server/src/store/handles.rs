//! Where state handles live ([`HandleStore`]): the trait and the in-memory
//! store. The [`Handles`](crate::Handles) of a tool mint and check the ids.

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;

/// Why a store could not do what was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandleStoreError {
    /// The owner already holds the most handles allowed.
    #[error("too many handles (limit {limit})")]
    Full {
        /// The limit.
        limit: usize,
    },
    /// The store is not reachable (a shared store's backend is down).
    #[error("handle store unavailable: {0}")]
    Unavailable(String),
}

/// Where handle state lives. The default is [`InMemoryHandles`]; a shared
/// store (a database, Redis) implements this trait so that any instance
/// can serve any handle.
///
/// Every method names the owner (the principal's key): a store must treat
/// a handle of another owner exactly like a missing one.
pub trait HandleStore<T>: Send + Sync + 'static {
    /// Stores `value` under `id` for `owner`, expiring after `idle` without
    /// use; fails with [`HandleStoreError::Full`] when `owner` already holds
    /// `max_per_owner` live handles.
    fn insert<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
        value: T,
        idle: Duration,
        max_per_owner: usize,
    ) -> BoxFuture<'a, Result<(), HandleStoreError>>;

    /// Runs `change` on the value of `id` when it exists, belongs to
    /// `owner` and has not expired, and restarts its idle clock. Returns
    /// whether it ran.
    fn modify<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
        change: Box<dyn FnOnce(&mut T) + Send + 'a>,
    ) -> BoxFuture<'a, Result<bool, HandleStoreError>>;

    /// Removes `id` when it belongs to `owner`; returns whether it did.
    fn remove<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
    ) -> BoxFuture<'a, Result<bool, HandleStoreError>>;
}

struct Entry<T> {
    owner: String,
    value: T,
    last_used: Instant,
    idle: Duration,
}

impl<T> Entry<T> {
    fn expired(&self, now: Instant) -> bool {
        now.duration_since(self.last_used) >= self.idle
    }
}

struct Table<T> {
    entries: HashMap<String, Entry<T>>,
    per_owner: HashMap<String, usize>,
    next_sweep: usize,
}

/// Handles in this process's memory, with expiry. Expired handles are
/// dropped when touched and swept as the table grows.
pub struct InMemoryHandles<T> {
    table: Mutex<Table<T>>,
}

impl<T> fmt::Debug for InMemoryHandles<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let len = self.table.lock().map_or(0, |t| t.entries.len());
        f.debug_struct("InMemoryHandles")
            .field("handles", &len)
            .finish()
    }
}

impl<T> Default for InMemoryHandles<T> {
    fn default() -> Self {
        InMemoryHandles {
            table: Mutex::new(Table {
                entries: HashMap::new(),
                per_owner: HashMap::new(),
                next_sweep: 64,
            }),
        }
    }
}

impl<T> InMemoryHandles<T> {
    /// An empty store.
    pub fn new() -> Self {
        InMemoryHandles::default()
    }

    /// Live (unexpired) handles.
    pub fn len(&self) -> usize {
        let now = Instant::now();
        let table = self.table.lock().expect("handle lock");
        table.entries.values().filter(|e| !e.expired(now)).count()
    }

    /// True when no live handle exists.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T> Table<T> {
    fn drop_entry(&mut self, id: &str) -> Option<Entry<T>> {
        let entry = self.entries.remove(id)?;
        if let Some(count) = self.per_owner.get_mut(&entry.owner) {
            *count -= 1;
            if *count == 0 {
                self.per_owner.remove(&entry.owner);
            }
        }
        Some(entry)
    }

    fn sweep(&mut self, now: Instant) {
        let expired: Vec<String> = self
            .entries
            .iter()
            .filter(|(_, e)| e.expired(now))
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            self.drop_entry(&id);
        }
        self.next_sweep = (self.entries.len() * 2).max(64);
    }

    /// The live entry `id` of `owner`; an expired one is dropped on the way.
    fn live(&mut self, id: &str, owner: &str, now: Instant) -> Option<&mut Entry<T>> {
        let expired = self.entries.get(id)?.expired(now);
        if expired {
            self.drop_entry(id);
            return None;
        }
        self.entries.get_mut(id).filter(|e| e.owner == owner)
    }
}

impl<T: Send + 'static> HandleStore<T> for InMemoryHandles<T> {
    fn insert<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
        value: T,
        idle: Duration,
        max_per_owner: usize,
    ) -> BoxFuture<'a, Result<(), HandleStoreError>> {
        let now = Instant::now();
        let mut table = self.table.lock().expect("handle lock");
        if table.entries.len() >= table.next_sweep
            || table.per_owner.get(owner).copied().unwrap_or(0) >= max_per_owner
        {
            table.sweep(now);
        }
        let outcome = if table.per_owner.get(owner).copied().unwrap_or(0) >= max_per_owner {
            Err(HandleStoreError::Full {
                limit: max_per_owner,
            })
        } else {
            *table.per_owner.entry(owner.to_owned()).or_insert(0) += 1;
            let entry = Entry {
                owner: owner.to_owned(),
                value,
                last_used: now,
                idle,
            };
            if let Some(old) = table.entries.insert(id.to_owned(), entry) {
                // Ids are random, so this does not happen; keep the counts right if it does.
                if let Some(count) = table.per_owner.get_mut(&old.owner) {
                    *count -= 1;
                }
            }
            Ok(())
        };
        Box::pin(std::future::ready(outcome))
    }

    fn modify<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
        change: Box<dyn FnOnce(&mut T) + Send + 'a>,
    ) -> BoxFuture<'a, Result<bool, HandleStoreError>> {
        let now = Instant::now();
        let mut table = self.table.lock().expect("handle lock");
        let ran = match table.live(id, owner, now) {
            Some(entry) => {
                entry.last_used = now;
                change(&mut entry.value);
                true
            }
            None => false,
        };
        Box::pin(std::future::ready(Ok(ran)))
    }

    fn remove<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
    ) -> BoxFuture<'a, Result<bool, HandleStoreError>> {
        let now = Instant::now();
        let mut table = self.table.lock().expect("handle lock");
        let found = table.live(id, owner, now).is_some();
        if found {
            table.drop_entry(id);
        }
        Box::pin(std::future::ready(Ok(found)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_binds_and_expires() {
        let store = InMemoryHandles::<u32>::new();
        let run = |f: BoxFuture<'_, Result<bool, HandleStoreError>>| {
            futures::executor::block_on(f).unwrap()
        };
        futures::executor::block_on(store.insert("h", "alice", 1, Duration::from_secs(60), 10))
            .unwrap();
        assert!(run(store.modify("h", "alice", Box::new(|v| *v += 1))));
        assert!(!run(store.modify("h", "bob", Box::new(|v| *v += 1))));
        assert!(!run(store.remove("h", "bob")));
        assert!(run(store.remove("h", "alice")));
        assert!(!run(store.modify("h", "alice", Box::new(|_| {}))));
        futures::executor::block_on(store.insert("e", "alice", 1, Duration::ZERO, 10)).unwrap();
        assert!(!run(store.modify("e", "alice", Box::new(|_| {}))));
        assert!(store.is_empty());
    }

    #[test]
    fn owners_are_capped() {
        let store = InMemoryHandles::<()>::new();
        let idle = Duration::from_secs(60);
        for i in 0..3 {
            futures::executor::block_on(store.insert(&i.to_string(), "a", (), idle, 3)).unwrap();
        }
        let full = futures::executor::block_on(store.insert("x", "a", (), idle, 3));
        assert_eq!(full, Err(HandleStoreError::Full { limit: 3 }));
        futures::executor::block_on(store.insert("y", "b", (), idle, 3)).unwrap();
    }
}
